package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
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
	if _, err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
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

func TestWriterKeepsRecordsJSON(t *testing.T) {
	// A Writer's cache keeps the JSON of the records it was given instead
	// of a copy. With a cache that holds a few of the pods, revisions are
	// evicted and delta bases read back batch after batch: the memory of
	// the records kept must never be written into, and every revision
	// reads back as written, in the same payloads as with DB.Write.
	rv := 0
	pods := make([]*fakePod, 40)
	for i := range pods {
		pods[i] = newFakePod(i, "default", &rv)
	}
	var recs []Record
	for round := range 12 {
		for i, p := range pods {
			if (i+round)%3 != 0 {
				recs = append(recs, p.record(1))
			}
		}
	}
	orig := make([][]byte, len(recs))
	for i, r := range recs {
		orig[i] = bytes.Clone(r.Object)
	}
	rev := len(recs[0].Object)
	opts := Options{CacheBytes: 6 * (rev + lastRevOverhead), NoCompact: true}

	copied := openDB(t, tracePath(t), opts)
	writeAll(t, copied, slices.Clone(recs), 50)

	path := tracePath(t)
	w, err := NewWriter(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(recs); i += 50 {
		w.Add(recs[i:min(i+50, len(recs))]...)
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if w.enc.reloads == 0 {
		t.Error("no revision read back: the cache held every pod, the test does not churn it")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if !bytes.Equal(r.Object, orig[i]) {
			t.Fatalf("the JSON of record %d was changed by the Writer", i)
		}
	}
	db := openDB(t, path, Options{ReadOnly: true})
	want := slices.Clone(recs)
	for i := range want {
		want[i].Seq = uint64(i + 1)
	}
	checkHistories(t, db, want)
	if got, want := payloads(t, db), payloads(t, copied); !cmp.Equal(got, want) {
		t.Errorf("payload kinds through a Writer %v, through DB.Write %v", got, want)
	}
}

func TestWritersTakeTurnsOnManyObjects(t *testing.T) {
	// Two writers take turns on one file, each for one or two batches of
	// pods and their events: a writer keeps the summaries and the UID
	// numbers it wrote only while nobody else wrote since. The objects,
	// their refs and the numbers must come out as if one writer had
	// written everything; tracePath's check compares the summaries with
	// the records.
	path := tracePath(t)
	// Two Writers of one file are refused (ErrRecording), and a leased
	// Writer holds the file open between its flushes; a and b go without
	// the lease, as writers that do not know of it would, and close the
	// file after each flush.
	a, err := newWriter(path, Options{NoCompact: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newWriter(path, Options{NoCompact: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	wl := newWorkload(8, 2)
	var all []Record
	for i := range 40 {
		w := a
		if i%5 >= 3 { // a, a, a, b, b, a, a, a, b, b...
			w = b
		}
		batch := wl.batch(60)
		all = append(all, batch...)
		w.Add(batch...)
		if n, err := w.Flush(); n != len(batch) || err != nil {
			t.Fatalf("Flush of batch %d: %d, %v", i, n, err)
		}
	}
	if err := errors.Join(a.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	for i := range all {
		all[i].Seq = uint64(i + 1)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	checkHistories(t, db, all)
	objs, err := db.Objects(ObjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	byObj := byUID(all)
	if len(objs) != len(byObj) {
		t.Fatalf("%d objects, want %d", len(objs), len(byObj))
	}
	for _, o := range objs {
		recs := byObj[o.UID]
		last := recs[len(recs)-1]
		if o.Revisions != uint64(len(recs)) || o.FirstSeq != recs[0].Seq || o.LastSeq != last.Seq ||
			!o.LastObserved.Equal(last.Observed) || o.Deleted != (last.Type == Deleted) {
			t.Errorf("object %s: %+v; want %d revisions, seqs %d-%d", o.UID, o, len(recs), recs[0].Seq, last.Seq)
		}
		var refs []string
		for _, r := range recs {
			for _, ref := range r.Refs {
				if !slices.Contains(refs, ref) {
					refs = append(refs, ref)
				}
			}
		}
		if !slices.Equal(o.Refs, refs) {
			t.Errorf("object %s refs %v, want %v", o.UID, o.Refs, refs)
		}
	}
	// Each pod's events refer to it.
	for _, o := range objs {
		if o.Kind != "Pod" {
			continue
		}
		deps, err := db.Referring(o.UID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range all {
			if r.Kind == "Event" && slices.Contains(r.Refs, o.UID) && r.Type == Added {
				n++
			}
		}
		if len(deps) != n {
			t.Errorf("pod %s: %d referring objects, want %d", o.UID, len(deps), n)
		}
	}
}

func TestWriterHoldsTheFileUntilAReaderKnocks(t *testing.T) {
	if !canKnock {
		t.Skip("no flock(2) here: the Writer closes the file after each flush")
	}
	path := tracePath(t)
	w, err := NewWriter(path, Options{Timeout: time.Second, NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := onePod(12)
	w.Add(recs[:4]...)
	if n, err := w.Flush(); n != 4 || err != nil {
		t.Fatalf("Flush: %d, %v; want 4 written", n, err)
	}
	if _, err := os.Stat(path + ReadersSuffix); err != nil {
		t.Fatalf("the readers' file: %v", err)
	}
	// Held between flushes: a reader that does not knock (the bbolt CLI,
	// an older podtrace) cannot get in.
	if bdb, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: 300 * time.Millisecond}); err == nil {
		bdb.Close()
		t.Fatal("a reader that did not knock opened the trace between two flushes")
	}
	// One that knocks gets in, within a look at the readers' file and a
	// try of bbolt's lock.
	start := time.Now()
	reader, err := Open(path, Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("Open while the Writer holds the file: %v", err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Errorf("the reader waited %s for the Writer to let go", waited)
	}
	// While it reads, the records wait.
	w.Add(recs[4:8]...)
	if n, err := w.Flush(); n != 0 || err != nil || w.Pending() != 4 {
		t.Fatalf("Flush while a reader reads: %d, %v, %d pending; want 0, nil, 4", n, err, w.Pending())
	}
	if got, err := reader.History(recs[0].UID); err != nil || len(got) != 4 {
		t.Fatalf("History while recording: %d revisions, %v; want 4", len(got), err)
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	// Then the Writer writes them and holds the file again.
	if n, err := w.Flush(); n != 4 || err != nil {
		t.Fatalf("Flush after the reader closed: %d, %v; want 4", n, err)
	}
	if bdb, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: 300 * time.Millisecond}); err == nil {
		bdb.Close()
		t.Fatal("the Writer did not hold the file again after the reader left")
	}
	w.Add(recs[8:]...)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed: the file is free, the readers' file and the lease are gone.
	for _, p := range []string{path + ReadersSuffix, path + LockSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Close: %v; want it gone", p, err)
		}
	}
	db := openDB(t, path, Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if got, err := db.History(recs[0].UID); err != nil || len(got) != len(recs) {
		t.Fatalf("History after Close: %d revisions, %v; want %d", len(got), err, len(recs))
	}
}

// TestSizeIsTheData: what a recorder and an import show and leave is the
// trace's data, not bbolt's allocation 16 MiB ahead of it: the status line
// said 16 MiB for 91 objects, and an import left a file of 16 MiB that held
// 160 KiB.
func TestSizeIsTheData(t *testing.T) {
	path := tracePath(t)
	w, err := NewWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w.InUse() != 0 {
		t.Errorf("InUse before a flush = %d, want 0", w.InUse())
	}
	w.Add(onePod(10)...)
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if used := w.InUse(); used <= 0 || used > 1<<20 || used >= fi.Size() {
		t.Errorf("InUse = %d bytes for 10 revisions in a file of %d; want the pages in use, under 1 MiB", used, fi.Size())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() > 1<<20 {
		t.Errorf("file after Close: %d bytes, want it compacted to its pages", fi.Size())
	}

	// An import opens the trace for writing: Close cuts the file down to
	// its pages.
	db := openDB(t, path, Options{})
	if err := db.Write(onePod(10)[:3]); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 1<<20 {
		t.Errorf("file after a write and Close: %d bytes, want its pages alone, under 1 MiB", fi.Size())
	}
	db = openDB(t, path, Options{ReadOnly: true})
	if err := db.Check(); err != nil {
		t.Errorf("the trimmed trace: %v", err)
	}
}
