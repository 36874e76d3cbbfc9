package store

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWriterBuffersWhileReaderHoldsFile(t *testing.T) {
	path := tracePath(t)
	w, err := NewWriter(path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.BeginSession(Session{Server: "https://127.0.0.1:6443"})
	if err != nil || s.ID != 1 {
		t.Fatalf("BeginSession: %+v, %v", s, err)
	}
	recs := onePod(10)
	w.Add(recs[:4]...)
	if n, err := w.Flush(); n != 4 || err != nil {
		t.Fatalf("Flush: %d, %v; want 4 written", n, err)
	}

	reader := openDB(t, path, Options{ReadOnly: true})
	w.Add(recs[4:]...)
	if n, err := w.Flush(); n != 0 || err != nil {
		t.Fatalf("Flush while a reader holds the file: %d, %v; want 0 and no error", n, err)
	}
	if n := w.Pending(); n != 6 {
		t.Fatalf("Pending = %d, want 6", n)
	}
	// The reader sees what was flushed before it opened.
	if got, err := reader.History(recs[0].UID); err != nil || len(got) != 4 {
		t.Fatalf("History while recording: %d records, %v; want 4", len(got), err)
	}
	// Blocking operations wait for the reader, up to the timeout.
	if err := w.EndSession(s.ID, time.Now()); !errors.Is(err, ErrLocked) {
		t.Fatalf("EndSession while a reader holds the file: %v, want ErrLocked", err)
	}
	reader.Close()

	if err := w.EndSession(s.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := w.Pending(); n != 0 {
		t.Errorf("EndSession left %d records pending", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Flush(); err == nil {
		t.Errorf("Flush after Close succeeded")
	}
	db := openDB(t, path, Options{ReadOnly: true})
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	checkHistories(t, db, recs)
	ss, err := db.Sessions()
	if err != nil || len(ss) != 1 || ss[0].Stopped.IsZero() {
		t.Errorf("Sessions after EndSession: %+v, %v", ss, err)
	}
}

func TestWriterWithConcurrentReaders(t *testing.T) {
	// A recorder flushes in a loop while readers open, query and close the
	// trace: no error on either side and no record lost.
	path := tracePath(t)
	w, err := NewWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wl := newWorkload(20, 2)
	var batches [][]Record
	var all []Record
	for range 60 {
		b := wl.batch(50)
		batches = append(batches, b)
		all = append(all, b...)
	}
	for i := range all {
		all[i].Seq = uint64(i + 1)
	}
	want := byUID(all)
	var uids []string
	for uid := range want {
		uids = append(uids, uid)
	}

	var done atomic.Bool
	var busy, reads atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Add(1)
	go func() { // the recorder
		defer wg.Done()
		defer done.Store(true)
		for _, b := range batches {
			w.Add(b...)
			n, err := w.Flush()
			if err != nil {
				errs <- err
				return
			}
			if n == 0 {
				busy.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for r := range 3 {
		wg.Add(1)
		go func() { // a reader: `podtrace diff` run again and again
			defer wg.Done()
			for i := 0; !done.Load(); i++ {
				db, err := Open(path, Options{ReadOnly: true, Timeout: 10 * time.Second})
				if err != nil {
					errs <- err
					return
				}
				uid := uids[(i*7+r)%len(uids)]
				got, err := db.History(uid)
				switch {
				case errors.Is(err, ErrNotFound):
					// Not flushed yet.
				case err != nil:
					errs <- err
				default:
					// What a reader sees is a prefix of what was written.
					if len(got) > len(want[uid]) {
						errs <- errors.New("History returned more revisions than were written")
					}
					for j := range got {
						if got[j].Seq != want[uid][j].Seq || !bytes.Equal(got[j].Object, want[uid][j].Object) {
							errs <- errors.New("History returned a revision that differs from the one written")
							break
						}
					}
				}
				if _, err := db.Stats(); err != nil {
					errs <- err
				}
				db.Close()
				reads.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reads; %d of %d flushes found the file held by a reader", reads.Load(), busy.Load(), len(batches))
	if reads.Load() == 0 {
		t.Errorf("no reader got in while recording")
	}

	db := openDB(t, path, Options{ReadOnly: true})
	st, err := db.Stats()
	if err != nil || st.Records != uint64(len(all)) {
		t.Fatalf("Stats after Close: %+v, %v; want %d records", st, err, len(all))
	}
	checkHistories(t, db, all)
	if diff := diffRecords(all, scanAll(t, db)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
}
