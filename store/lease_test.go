package store

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// writtenTrace records a real trace into a new directory: pods and their
// events, through a Writer, compacted as a recording ends.
func writtenTrace(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.db")
	w, err := NewWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.BeginSession(Session{Server: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	wl := newWorkload(8, 2)
	for range 4 {
		w.Add(wl.batch(500)...)
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.EndSession(s.ID, genEpoch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// damage overwrites a page in the middle of the trace at path with garbage,
// as a bad disk or a torn copy would, and checks that bbolt's check sees it.
func damage(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	off := len(data) / 2 / page * page
	r := rand.New(rand.NewPCG(1, 2))
	for i := off; i < off+page; i++ {
		data[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bbolt's check of the damaged trace: %v, want ErrCorrupt", err)
	}
}

// snapshot is a directory's listing and the sha256 of each file in it.
func snapshot(t testing.TB, dir string) map[string][sha256.Size]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][sha256.Size]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

func names(m map[string][sha256.Size]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestSecondWriterRefused(t *testing.T) {
	path := tracePath(t)
	w, err := NewWriter(path, Options{Version: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	l, live, err := Recorder(path)
	if err != nil || !live {
		t.Fatalf("Recorder while a Writer records: %+v, %v, %v; want live", l, live, err)
	}
	if l.PID != os.Getpid() || l.Host != host || l.Version != "v9.9.9" || time.Since(l.Since) > time.Minute {
		t.Errorf("Recorder's lease %+v, want pid %d on %s, version v9.9.9, since about now", l, os.Getpid(), host)
	}
	want := fmt.Sprintf("trace %q is being recorded by pid %d on host %s since %s (lock %s): stop that recorder, or record into another file with -o",
		path, os.Getpid(), host, l.Since.Format(time.RFC3339), path+LockSuffix)

	for _, tc := range []struct {
		name string
		open func() error
	}{
		{"NewWriter", func() error {
			w2, err := NewWriter(path, Options{})
			if err == nil {
				w2.Close()
			}
			return err
		}},
		{"Open for writing", func() error {
			db, err := Open(path, Options{})
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"Compact", func() error { _, _, err := Compact(path, Options{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.open()
			if !errors.Is(err, ErrRecording) {
				t.Fatalf("%s while a Writer records: %v, want ErrRecording", tc.name, err)
			}
			if err.Error() != want {
				t.Errorf("error\n%s\nwant\n%s", err, want)
			}
		})
	}

	// Readers are not refused, and the Writer records on.
	ro := openDB(t, path, Options{ReadOnly: true})
	ro.Close()
	s, err := w.BeginSession(Session{Server: "https://127.0.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(onePod(3)...)
	if err := w.EndSession(s.ID, genEpoch); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Close left the lock file: %v", err)
	}
	if l, live, err := Recorder(path); live || err != nil {
		t.Errorf("Recorder after Close: %+v, %v, %v; want none", l, live, err)
	}
	// The trace is free again.
	w, err = NewWriter(path, Options{})
	if err != nil {
		t.Fatalf("NewWriter after the first Writer closed: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	if n := len(scanAll(t, db)); n != 3 {
		t.Errorf("%d records in the trace, want 3", n)
	}
}

func TestStaleLockTakenOver(t *testing.T) {
	// A recorder killed with -9 leaves its lock file, but not its flock:
	// the next recorder takes the trace over.
	path := tracePath(t)
	stale := Lease{PID: 999999, Host: "gone", Since: genEpoch, Version: "v0.0.1"}
	b, _ := json.Marshal(stale)
	if err := os.WriteFile(path+LockSuffix, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, live, err := Recorder(path); live || err != nil {
		t.Fatalf("Recorder with a stale lock file: %+v, %v, %v; want none (interrupted)", l, live, err)
	}
	w, err := NewWriter(path, Options{Version: "v1"})
	if err != nil {
		t.Fatalf("NewWriter with a stale lock file: %v", err)
	}
	l, live, err := Recorder(path)
	if !live || err != nil || l.PID != os.Getpid() || l.Version != "v1" {
		t.Errorf("Recorder after the takeover: %+v, %v, %v; want this process", l, live, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Close left the lock file: %v", err)
	}
}

func TestWritersRace(t *testing.T) {
	// Writers that start and stop in a loop: never two at once, whatever
	// the timing of one's Close (which removes the lock file) and
	// another's NewWriter.
	path := tracePath(t)
	var mu sync.Mutex
	holders := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				w, err := NewWriter(path, Options{NoCompact: true})
				if errors.Is(err, ErrRecording) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holders++
				if holders > 1 {
					t.Errorf("%d Writers hold the trace at once", holders)
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holders--
				mu.Unlock()
				if err := w.Close(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}

func TestDamagedTraceRefused(t *testing.T) {
	path := writtenTrace(t)
	damage(t, path)
	dir := filepath.Dir(path)
	before := snapshot(t, dir)
	for _, tc := range []struct {
		name string
		run  func() error
		msgs []string
	}{
		{"NewWriter", func() error {
			w, err := NewWriter(path, Options{})
			if err == nil {
				w.Close()
			}
			return err
		}, []string{"is damaged, podtrace will not write into it", "record into a new file (--db NEW)"}},
		{"Compact", func() error { _, _, err := Compact(path, Options{}); return err },
			[]string{"is damaged and was not compacted, it is left as it was"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s of a damaged trace: %v, want ErrCorrupt", tc.name, err)
			}
			for _, want := range append([]string{path, "bbolt check " + path}, tc.msgs...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if diff := cmp.Diff(names(before), names(snapshot(t, dir))); diff != "" {
				t.Errorf("files beside the trace (-before +after):\n%s", diff)
			}
			if after := snapshot(t, dir); !cmp.Equal(before, after) {
				t.Errorf("%s changed the damaged trace", tc.name)
			}
		})
	}
}

func TestCheckCutShort(t *testing.T) {
	// A check that outlasts Options.CheckTimeout: NewWriter returns, the
	// Writer says so and writes nothing until the check is over; then it
	// writes, or, if the trace is damaged, refuses.
	for _, tc := range []struct {
		name    string
		damaged bool
	}{
		{"sound", false},
		{"damaged", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writtenTrace(t)
			if tc.damaged {
				damage(t, path)
			}
			before := snapshot(t, filepath.Dir(path))
			release := make(chan struct{})
			checkHook = func() { <-release }
			defer func() { checkHook = nil }()
			var mu sync.Mutex
			var warnings []string
			warned := make(chan struct{}, 2)
			w, err := NewWriter(path, Options{CheckTimeout: 10 * time.Millisecond, Timeout: 5 * time.Second, Warn: func(msg string) {
				mu.Lock()
				warnings = append(warnings, msg)
				mu.Unlock()
				warned <- struct{}{}
			}})
			if err != nil {
				t.Fatalf("NewWriter with the check cut short: %v", err)
			}
			<-warned
			mu.Lock()
			if len(warnings) != 1 || !strings.Contains(warnings[0], "did not finish within 10ms") {
				t.Errorf("warnings %q, want one saying the check did not finish within 10ms", warnings)
			}
			mu.Unlock()
			w.Add(onePod(4)...)
			if n, err := w.Flush(); n != 0 || err != nil {
				t.Errorf("Flush while the check runs: %d, %v; want 0 and no error", n, err)
			}
			if w.Pending() != 4 {
				t.Errorf("Pending %d, want 4", w.Pending())
			}
			if after := snapshot(t, filepath.Dir(path)); after["trace.db"] != before["trace.db"] {
				t.Errorf("the Writer changed the trace before the check was over")
			}
			close(release)
			<-warned
			_, err = w.BeginSession(Session{Server: "https://127.0.0.1:6443"})
			if !tc.damaged {
				if err != nil {
					t.Fatalf("BeginSession after the check: %v", err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("BeginSession after the check found damage: %v, want ErrCorrupt", err)
			}
			if err := w.Close(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("Close after the check found damage: %v, want ErrCorrupt", err)
			}
			mu.Lock()
			if len(warnings) != 2 || !strings.Contains(warnings[1], "is damaged") {
				t.Errorf("warnings %q, want a second saying the trace is damaged", warnings)
			}
			mu.Unlock()
			if after := snapshot(t, filepath.Dir(path)); !cmp.Equal(before, after) {
				t.Errorf("the Writer changed the damaged trace, or left a file beside it: %v, want %v", names(after), names(before))
			}
		})
	}
}

func TestWriterCreateErrors(t *testing.T) {
	missingDir := filepath.Join(t.TempDir(), "no", "trace.db")
	for _, tc := range []struct {
		name string
		path string
		skip bool
	}{
		{"missing directory", missingDir, false},
		{"/proc", "/proc/nope.db", !dirExists("/proc/self")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip {
				t.Skip("no /proc")
			}
			for name, open := range map[string]func() error{
				"NewWriter": func() error { _, err := NewWriter(tc.path, Options{}); return err },
				"Open":      func() error { _, err := Open(tc.path, Options{}); return err },
			} {
				err := open()
				if err == nil {
					t.Fatalf("%s(%s) succeeded", name, tc.path)
				}
				prefix := fmt.Sprintf("cannot create trace %q: open %s", tc.path, tc.path)
				if !strings.HasPrefix(err.Error(), prefix) || !strings.HasSuffix(err.Error(), "; choose a writable directory with -o") {
					t.Errorf("%s error\n%s\nwant %q...%q", name, err, prefix, "; choose a writable directory with -o")
				}
				if errors.Is(err, fs.ErrNotExist) && strings.Contains(err.Error(), "no trace file") {
					t.Errorf("%s error %q reads as a missing trace", name, err)
				}
			}
		})
	}
}

func dirExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func TestIdleWriterLeavesFile(t *testing.T) {
	// A recorder that stops before it wrote anything (the cluster was not
	// reachable) leaves the trace byte for byte as it was.
	path := writtenTrace(t)
	before := snapshot(t, filepath.Dir(path))
	w, err := NewWriter(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, filepath.Dir(path)); !cmp.Equal(before, after) {
		t.Errorf("an idle Writer changed the trace or left a file: %v, want %v", names(after), names(before))
	}
}
