package store

import (
	"os"
	"path/filepath"
	"testing"
)

// diskTempDir is the temporary directory on disk. Tests put their traces in
// memory (/dev/shm) when they can, because bbolt syncs every commit and the
// disk is shared; benchmarks measure the disk.
var diskTempDir = os.TempDir()

func TestMain(m *testing.M) {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && os.Getenv("PODTRACE_TEST_ON_DISK") == "" {
		os.Setenv("TMPDIR", "/dev/shm")
	}
	code := m.Run()
	for _, ht := range historyTraces {
		os.RemoveAll(filepath.Dir(ht.path))
	}
	for _, rt := range reportTraces {
		os.RemoveAll(filepath.Dir(rt.path))
	}
	os.Exit(code)
}
