package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer"
)

// unreachableKubeconfig writes a kubeconfig whose API server never answers:
// a record that gets as far as the cluster fails saying it cannot reach it.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kc = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// copySample copies the sample trace into dir.
func copySample(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(sampleTrace)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "trace.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// damageTrace overwrites a page in the middle of the trace's pages with
// garbage, and checks that bbolt's check sees it.
func damageTrace(t *testing.T, path string) {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Stats()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x13, 0x37, 0x42}, 4096/7+1)[:4096]
	if _, err := f.WriteAt(garbage, st.DataBytes/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err = store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Check(); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("bbolt's check of the damaged trace: %v, want ErrCorrupt", err)
	}
}

// listing is a directory's files and the sha256 of each.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x\n", e.Name(), sha256.Sum256(data))
	}
	return b.String()
}

// TestRecordRefusesBeforeTheCluster: record opens the trace before it asks
// the API server anything, so a trace it must not write into is refused at
// once, without a cluster, and left as it was.
func TestRecordRefusesBeforeTheCluster(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the -o path
		is    error
		msgs  []string
	}{
		{"second recorder", func(t *testing.T, dir string) string {
			path := copySample(t, dir)
			w, err := store.NewWriter(path, store.Options{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close() })
			return path
		}, store.ErrRecording, []string{
			fmt.Sprintf("is being recorded by pid %d on host ", os.Getpid()),
			"(lock " + "TRACE.lock): stop that recorder, or record into another file with -o",
		}},
		{"damaged trace", func(t *testing.T, dir string) string {
			path := copySample(t, dir)
			damageTrace(t, path)
			return path
		}, store.ErrCorrupt, []string{"is damaged, podtrace will not write into it", "record into a new file (--db NEW)"}},
		{"empty file", func(t *testing.T, dir string) string {
			path := filepath.Join(dir, "trace.db")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}, store.ErrCorrupt, []string{"is empty, not a podtrace trace: remove it", "or name a new file"}},
		{"unwritable directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "no-such-dir", "trace.db")
		}, nil, []string{"cannot create trace", "no such file or directory; choose a writable directory with -o"}},
		{"/proc", func(t *testing.T, dir string) string {
			if _, err := os.Stat("/proc/self"); err != nil {
				t.Skip("no /proc")
			}
			return "/proc/nope.db"
		}, nil, []string{`cannot create trace "/proc/nope.db": open /proc/nope.db`, "; choose a writable directory with -o"}},
		{"no cluster", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "trace.db")
		}, nil, []string{"cannot reach the API server at https://127.0.0.1:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setup(t, dir)
			before := listing(t, dir)
			var out, errOut bytes.Buffer
			err := Run(context.Background(), []string{"podtrace", "record", "--db", path, "--kubeconfig", kubeconfig},
				Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if err == nil {
				t.Fatal("record succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v, want %v", err, tc.is)
			}
			for _, want := range tc.msgs {
				want = strings.ReplaceAll(want, "TRACE", path)
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if tc.name != "no cluster" && strings.Contains(err.Error(), "API server") {
				t.Errorf("record asked the cluster before refusing the trace: %v", err)
			}
			if strings.Contains(err.Error(), "no trace file") {
				t.Errorf("error %q reads as a missing trace", err)
			}
			if after := listing(t, dir); after != before {
				t.Errorf("record changed the directory of the trace:\nbefore\n%safter\n%s", before, after)
			}
			if _, err := os.Stat(path + store.LockSuffix); tc.is != store.ErrRecording && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("record left its lock file: %v", err)
			}
		})
	}
}

// TestRecordStatus: the status line gives the size of the trace's data,
// from the writer (store.Writer.InUse), not the file's size.
func TestRecordStatus(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	st := tracer.Stats{Objects: 91, Revisions: 400, Events: 60, LastWrite: now.Add(-2 * time.Second)}
	for _, tc := range []struct {
		inUse   int64
		backlog string
		want    string
	}{
		{164 << 10, "", "recording: 91 objects, 400 revisions, 60 events, 164.0 KiB of data, last write 2s ago (Ctrl-C to stop)"},
		{0, "", "recording: 91 objects, 400 revisions, 60 events, no data written yet, last write 2s ago (Ctrl-C to stop)"},
		{164 << 10, "12 records waiting", "164.0 KiB of data, 12 records waiting"},
	} {
		if got := recordStatus(st, tc.inUse, tc.backlog, now); !strings.Contains(got, tc.want) {
			t.Errorf("recordStatus(%d, %q) = %q, want %q", tc.inUse, tc.backlog, got, tc.want)
		}
	}
}
