package app

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
)

// fakeWriter is a store.Writer whose flushes fail with err, and leave the
// records pending, while err is set.
type fakeWriter struct {
	err     error
	locked  bool // a reader holds the file: Flush writes nothing, no error
	pending []store.Record
	written []store.Record
	gaps    []store.Gap
	flushes int
}

func (w *fakeWriter) Add(recs ...store.Record) { w.pending = append(w.pending, recs...) }
func (w *fakeWriter) AddGap(g store.Gap)       { w.gaps = append(w.gaps, g) }
func (w *fakeWriter) Reconcile(store.Listing)  {}
func (w *fakeWriter) Pending() int             { return len(w.pending) }
func (w *fakeWriter) Flush() (int, error) {
	w.flushes++
	if w.err != nil {
		return 0, w.err
	}
	if w.locked {
		return 0, nil
	}
	n := len(w.pending)
	w.written, w.pending = append(w.written, w.pending...), nil
	return n, nil
}

func batch(at time.Time, n, size int) []store.Record {
	recs := make([]store.Record, n)
	for i := range recs {
		recs[i] = store.Record{UID: fmt.Sprint(i), Kind: "Pod", Observed: at, Object: make([]byte, size)}
	}
	return recs
}

// TestTraceSinkKeepsRecordsWhileTheDiskIsFull: a full disk neither stops
// the recording nor loses records while they fit in maxBacklog; it warns
// once, retries every retryEvery, and writes the backlog once it can.
func TestTraceSinkKeepsRecordsWhileTheDiskIsFull(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	diskFull := &fs.PathError{Op: "write", Path: "trace.db", Err: syscall.ENOSPC}
	w := &fakeWriter{err: fmt.Errorf("write 3 records to trace %q: %w", "trace.db", diskFull)}
	var warnings []string
	s := newTraceSink(w, "trace.db", 7, func(m string) { warnings = append(warnings, m) })
	s.now = func() time.Time { return now }

	for i := range 5 {
		if err := s.Write(batch(now, 3, 100)); err != nil {
			t.Fatalf("Write %d: %v; want the records kept", i, err)
		}
		now = now.Add(300 * time.Millisecond)
	}
	if w.flushes != 2 {
		t.Errorf("%d flushes in 1.5s of failures, want 2 (one a second)", w.flushes)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "no space left on device") {
		t.Errorf("warnings = %q, want one naming the error", warnings)
	}
	if got := s.backlogStatus(); got != "disk full: 15 waiting 1s, retrying" {
		t.Errorf("status = %q", got)
	}
	w.err = nil
	now = now.Add(time.Second)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if len(w.written) != 15 || w.written[0].Session != 7 || len(w.gaps) != 0 {
		t.Errorf("written %d records (session %d), gaps %v; want 15 in session 7, no gap (nothing dropped)", len(w.written), w.written[0].Session, w.gaps)
	}
	if got := s.backlogStatus(); got != "" {
		t.Errorf("status after the backlog was written = %q, want none", got)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[1], "again") {
		t.Errorf("warnings = %q, want one saying it writes again", warnings)
	}
}

// TestTraceSinkDropsPastTheBound: past maxBacklog new records are dropped
// and counted, and the episode is a GapWriteFailed gap once writing works.
func TestTraceSinkDropsPastTheBound(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := &fakeWriter{err: fmt.Errorf("write: %w", syscall.EDQUOT)}
	s := newTraceSink(w, "trace.db", 1, func(string) {})
	s.now = func() time.Time { return now }
	const size = 1 << 20
	kept := maxBacklog / size
	for range kept / 4 {
		if err := s.Write(batch(now, 4, size)); err != nil {
			t.Fatal(err)
		}
	}
	dropAt := now.Add(time.Second)
	for range 3 {
		s.add(batch(dropAt, 10, size))
	}
	if w.Pending() != kept {
		t.Errorf("%d records pending, want %d (256 MiB)", w.Pending(), kept)
	}
	if got, want := s.backlogStatus(), fmt.Sprintf("over disk quota: %s waiting 0s, 30 dropped, retrying", thousands(kept)); got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	w.err = nil
	now = now.Add(5 * time.Second)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	want := []store.Gap{{Session: 1, Cause: store.GapWriteFailed, Start: dropAt, End: now, Dropped: 30, Detail: "write: disk quota exceeded"}}
	if len(w.gaps) != 1 || w.gaps[0] != want[0] {
		t.Errorf("gaps = %+v, want %+v", w.gaps, want)
	}
	// The bound is free again.
	s.add(batch(now, 1, size))
	if w.Pending() != 1 {
		t.Errorf("%d pending after the backlog was written, want the new record", w.Pending())
	}
}

// TestTraceSinkStopsOnErrorsThatStay: a closed writer or an invalid record
// stops the recording, as every flush would fail again.
func TestTraceSinkStopsOnErrorsThatStay(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("record into trace: %w", store.ErrClosed),
		fmt.Errorf("write: %w: no UID", store.ErrInvalidRecord),
	} {
		w := &fakeWriter{err: err}
		s := newTraceSink(w, "trace.db", 1, func(string) {})
		if got := s.Write(batch(time.Now(), 1, 10)); !errors.Is(got, err) {
			t.Errorf("Write = %v, want %v", got, err)
		}
	}
}

// TestTraceSinkStatusNamesAReader: records held back by a reader show as
// waiting, with their age, not as "last write 0s ago".
func TestTraceSinkStatusNamesAReader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w := &fakeWriter{locked: true}
	s := newTraceSink(w, "trace.db", 1, func(string) {})
	s.now = func() time.Time { return now }
	if err := s.Write(batch(now, 932, 10)); err != nil {
		t.Fatal(err)
	}
	if got := s.backlogStatus(); got != "" {
		t.Errorf("status = %q, want none for records a second old", got)
	}
	now = now.Add(15 * time.Second)
	if got := s.backlogStatus(); got != "932 revisions waiting 15s: a reader holds the file" {
		t.Errorf("status = %q", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestTraceSinkOnAFullDisk records into a trace on a 2 MiB tmpfs until the
// disk is full: Write keeps returning nil and the records wait; once the
// file system grows, the next flush writes them all. Needs root (mount).
func TestTraceSinkOnAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs: needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	path := filepath.Join(dir, "trace.db")
	w, err := store.NewWriter(path, store.Options{NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := w.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Started: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	s := newTraceSink(w, path, sess.ID, func(m string) { warnings = append(warnings, m) })
	rng := rand.New(rand.NewPCG(1, 2))
	sent := 0
	for i := 0; s.backlogStatus() == "" || !strings.HasPrefix(s.backlogStatus(), "disk full"); i++ {
		if i == 1000 {
			t.Fatalf("2 MiB never filled up; status %q", s.backlogStatus())
		}
		recs := make([]store.Record, 20)
		for j := range recs {
			noise := make([]byte, 2048)
			for k := range noise {
				noise[k] = "0123456789abcdef"[rng.IntN(16)]
			}
			uid := fmt.Sprintf("uid-%d-%d", i, j)
			recs[j] = store.Record{Observed: time.Now(), Type: store.Added, APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: uid, UID: uid,
				ResourceVersion: "1", Object: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"uid":%q},"noise":%q}`, uid, uid, noise)}
		}
		sent += len(recs)
		if err := s.Write(recs); err != nil {
			t.Fatalf("Write on a full disk: %v; want the records kept", err)
		}
		s.tried = time.Time{} // retry at once, not a second later
	}
	t.Logf("disk full after %d records: %s; warnings %q", sent, s.backlogStatus(), warnings)
	if w.Pending() == 0 || len(warnings) != 1 || !strings.Contains(warnings[0], "no space left on device") {
		t.Errorf("%d pending, warnings %q; want records waiting and one warning naming ENOSPC", w.Pending(), warnings)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=64m", dir).CombinedOutput(); err != nil {
		t.Fatalf("grow the tmpfs: %v: %s", err, out)
	}
	s.tried = time.Time{}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if n := w.Pending(); n != 0 {
		t.Fatalf("%d records pending after the disk grew", n)
	}
	if err := w.EndSession(sess.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Stats()
	if err != nil || st.Records != uint64(sent) {
		t.Errorf("trace holds %d records (%v), want all %d sent", st.Records, err, sent)
	}
}
