package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// LockSuffix names the lock file beside a trace: PATH + LockSuffix.
const LockSuffix = ".lock"

// Lease says who records into a trace: the content of its lock file, written
// by the Writer that holds the lock.
type Lease struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Since   time.Time `json:"since"`
	Version string    `json:"version"` // podtrace's
}

// String describes the recorder, e.g. "pid 1234 on host h since
// 2026-12-02T06:00:00Z".
func (l Lease) String() string {
	if l.PID == 0 {
		return "a recorder that has not said who it is yet"
	}
	return fmt.Sprintf("pid %d on host %s since %s", l.PID, l.Host, l.Since.UTC().Format(time.RFC3339))
}

// lease is a Writer's hold on the lock file of its trace: an exclusive flock
// on the open file, kept for the Writer's life. The kernel drops it when the
// process dies, so a lock file left by a killed recorder is taken over.
type lease struct {
	path string // the lock file
	f    *os.File
}

// leaseRetries and leaseRetryWait let a Recorder (which takes the lock
// shared, for an instant) finish before a new Writer gives up.
const (
	leaseRetries   = 10
	leaseRetryWait = 5 * time.Millisecond
)

// takeLease locks the lock file of the trace at path for a Writer and writes
// who holds it. A live holder fails with ErrRecording.
func takeLease(path, version string) (*lease, error) {
	lpath := path + LockSuffix
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(lpath, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		locked, err := flock(f, true)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lpath, err)
		}
		if !locked {
			f.Close()
			if attempt < leaseRetries {
				time.Sleep(leaseRetryWait)
				continue
			}
			l, _ := readLease(lpath)
			return nil, recordingError(path, lpath, l)
		}
		// The holder before us may have removed the file between our open
		// and our lock: then the lock is on a file nobody else sees.
		if !samePath(f, lpath) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		b, _ := json.Marshal(Lease{PID: os.Getpid(), Host: host, Since: time.Now().UTC().Truncate(time.Second), Version: version})
		if err := writeLease(f, append(b, '\n')); err != nil {
			f.Close()
			return nil, fmt.Errorf("write lock file %s: %w", lpath, err)
		}
		return &lease{path: lpath, f: f}, nil
	}
}

func writeLease(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Sync()
}

// release removes the lock file, if it is still the one locked, and drops
// the lock.
func (l *lease) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := removeOpen(l.f, l.path)
	l.f = nil
	if err != nil {
		return fmt.Errorf("release lock file %s: %w", l.path, err)
	}
	return nil
}

// removeOpen removes path if it still names the open file f (a successor
// may have made a new one), and closes f.
func removeOpen(f *os.File, path string) error {
	var err error
	if samePath(f, path) {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = rerr
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// samePath tells whether path still names the open file f.
func samePath(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// readLease reads a lock file.
func readLease(lpath string) (Lease, error) {
	var l Lease
	b, err := os.ReadFile(lpath)
	if err != nil {
		return l, err
	}
	if len(b) == 0 {
		return l, nil // locked, not yet written
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return Lease{}, fmt.Errorf("lock file %s: %w", lpath, err)
	}
	return l, nil
}

// Recorder tells whether a live recorder (a Writer, in this process or
// another) holds the trace at path now, and who it is. A trace whose lock
// file is missing, or left behind by a recorder that died, has none: a
// session of it with no stop time was interrupted, not recording. Recorder
// never creates or changes the lock file. Where file locks are not
// supported, Recorder always says there is none.
func Recorder(path string) (Lease, bool, error) {
	lpath := path + LockSuffix
	f, err := os.Open(lpath)
	if errors.Is(err, fs.ErrNotExist) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("read lock file of trace %q: %w", path, err)
	}
	defer f.Close()
	locked, err := flock(f, false)
	if err != nil {
		return Lease{}, false, fmt.Errorf("read lock file of trace %q: %w", path, err)
	}
	if locked {
		return Lease{}, false, nil // nobody holds it exclusively; Close drops ours
	}
	l, err := readLease(lpath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Lease{}, true, err
	}
	return l, true, nil
}

// refuseRecorded fails with ErrRecording while a live recorder holds the
// trace at path: a second writer would store its records twice.
func refuseRecorded(path string) error {
	l, live, err := Recorder(path)
	if err != nil && !live {
		return err
	}
	if live {
		return recordingError(path, path+LockSuffix, l)
	}
	return nil
}

// WaitForRecorder waits until no live recorder holds the trace at path (see
// Recorder), looking every poll, or until ctx is done. waiting, if not nil,
// is told once who holds it, when one does. It returns nil once none does,
// and ctx's error if ctx is done first. A Writer started afterwards may
// still find the trace taken (by another that waited too): NewWriter says
// so with ErrRecording.
func WaitForRecorder(ctx context.Context, path string, poll time.Duration, waiting func(Lease)) error {
	told := false
	for {
		l, live, err := Recorder(path)
		if err != nil && !live {
			return err
		}
		if !live {
			return nil
		}
		if !told && waiting != nil {
			waiting(l)
			told = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
