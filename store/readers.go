package store

import (
	"fmt"
	"os"
	"time"
)

// ReadersSuffix names the readers' file beside a trace: PATH +
// ReadersSuffix. A Writer keeps the trace open between flushes, which saves
// it mapping the file again, and faulting in every page it touches, at each
// one; a reader holds a shared flock on this file while it waits for the
// trace and reads it, and a Writer that finds the flock held closes the
// trace within knockEvery and opens it again only to flush.
const ReadersSuffix = ".readers"

// knockEvery is how often a Writer that holds its trace open looks for a
// reader at the readers' file: a reader waits about this long, beside the
// 50 ms at which bbolt tries the file's lock again.
const knockEvery = 50 * time.Millisecond

// readersFile is a Writer's end of the readers' file.
type readersFile struct {
	path string
	f    *os.File
}

// makeReaders creates (or takes over) the readers' file of the trace at
// path, for a Writer that holds the lease.
func makeReaders(path string) (*readersFile, error) {
	rpath := path + ReadersSuffix
	f, err := os.OpenFile(rpath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", rpath, err)
	}
	return &readersFile{path: rpath, f: f}, nil
}

// waiting tells whether a reader holds the readers' file: its exclusive
// lock cannot be taken. The lock, when taken, is let go at once.
func (r *readersFile) waiting() bool {
	locked, err := flock(r.f, true)
	if err != nil {
		// Cannot tell: let the reader in rather than keep it out.
		return true
	}
	if locked {
		funlock(r.f)
	}
	return !locked
}

// remove removes the readers' file, if it is still the one r opened, and
// closes it.
func (r *readersFile) remove() error {
	if r == nil || r.f == nil {
		return nil
	}
	err := removeOpen(r.f, r.path)
	r.f = nil
	if err != nil {
		return fmt.Errorf("remove %s: %w", r.path, err)
	}
	return nil
}

// knock is a reader's hold on the readers' file of the trace at path: a
// shared flock, which tells the trace's Writer to let go of the file. It
// returns nil where there is no readers' file (no Writer that keeps the
// trace open made one) or it cannot be read; the reader then waits for the
// file's lock as readers always did. It waits at most timeout for the
// Writer's look at the file (an instant) to end.
func knock(path string, timeout time.Duration) *os.File {
	f, err := os.Open(path + ReadersSuffix)
	if err != nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		locked, err := flock(f, false)
		if err != nil {
			f.Close()
			return nil
		}
		if locked {
			return f
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}
