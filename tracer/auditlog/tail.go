package auditlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// DefaultPoll is how often Run looks at the file.
const DefaultPoll = 250 * time.Millisecond

// missingGrace is how long the path may name no file before a warning:
// between a rename and the creation of the new file is normal.
const missingGrace = 2 * time.Second

// TailOptions configure a Tailer.
type TailOptions struct {
	// Path is the audit log, e.g. /var/log/kubernetes/audit/audit.log.
	Path string
	// FromStart reads the lines already in the file; by default a Tailer
	// starts at its end.
	FromStart bool
	// Warn receives warnings (the path vanished, a partial line dropped);
	// nil discards them.
	Warn func(string)
}

// TailStats count what a Tailer read.
type TailStats struct {
	Lines       int   // whole lines passed on
	Bytes       int64 // bytes read
	Rotations   int   // new files found at the path
	Truncations int   // times the file got shorter
	Dropped     int   // partial or overlong lines dropped
}

// Tailer follows an audit log through rotation, as `tail -F` does. Its
// methods are not safe for concurrent use.
type Tailer struct {
	path string
	warn func(string)

	f       *os.File
	fi      os.FileInfo // of f, to tell a new file at path
	pos     int64       // next offset to read in f
	partial []byte      // the start of a line whose newline is not read yet
	skip    bool        // discard up to the next newline
	buf     []byte

	grace        time.Duration // missingGrace; shorter in tests
	missingSince time.Time
	warnedGone   bool
	stats        TailStats
}

// NewTailer opens the file at opts.Path. A missing file is an error that
// matches fs.ErrNotExist.
func NewTailer(opts TailOptions) (*Tailer, error) {
	t := &Tailer{path: opts.Path, warn: opts.Warn, buf: make([]byte, 256<<10), grace: missingGrace}
	if t.warn == nil {
		t.warn = func(string) {}
	}
	if err := t.open(); err != nil {
		return nil, err
	}
	if !opts.FromStart {
		t.pos = t.fi.Size()
		// Started in the middle of a line: it is not a whole event.
		if t.pos > 0 {
			var last [1]byte
			if _, err := t.f.ReadAt(last[:], t.pos-1); err == nil && last[0] != '\n' {
				t.skip = true
			}
		}
	}
	return t, nil
}

func (t *Tailer) open() error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", t.path, err)
	}
	if fi.IsDir() {
		f.Close()
		return fmt.Errorf("audit log %s is a directory", t.path)
	}
	if t.f != nil {
		t.f.Close()
	}
	t.f, t.fi, t.pos, t.skip = f, fi, 0, false
	return nil
}

// Stats returns the counts so far.
func (t *Tailer) Stats() TailStats { return t.stats }

// Close closes the file.
func (t *Tailer) Close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}

// Run polls every interval (DefaultPoll if zero) until ctx is done, then
// reads what is left and returns. fn gets each whole line, without its
// newline, valid only during the call; an error from fn stops Run and is
// returned. A last line without a newline is dropped, with a warning.
func (t *Tailer) Run(ctx context.Context, every time.Duration, fn func([]byte) error) error {
	if every <= 0 {
		every = DefaultPoll
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := t.Poll(fn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			if err := t.Poll(fn); err != nil {
				return err
			}
			t.Finish()
			return nil
		case <-tick.C:
		}
	}
}

// Finish drops a last line that has no newline, with a warning: call it
// after the last Poll.
func (t *Tailer) Finish() {
	if len(t.partial) > 0 {
		t.stats.Dropped++
		t.warn(fmt.Sprintf("the last line of %s (%d bytes) had no newline when reading stopped; dropped", t.path, len(t.partial)))
		t.partial = t.partial[:0]
	}
}

// Poll reads the file to its end, then follows a rotation or truncation
// if there was one, passing each whole line to fn.
func (t *Tailer) Poll(fn func([]byte) error) error {
	if err := t.read(fn); err != nil {
		return err
	}
	st, err := os.Stat(t.path)
	if err != nil {
		// Renamed away, new file not there yet; or gone for good. The
		// open file is still read.
		if t.missingSince.IsZero() {
			t.missingSince = time.Now()
		}
		if !t.warnedGone && time.Since(t.missingSince) >= t.grace {
			t.warnedGone = true
			t.warn(fmt.Sprintf("audit log %s is gone (%v); waiting for it to come back", t.path, unwrapPathError(err)))
		}
		return nil
	}
	if t.warnedGone {
		t.warn(fmt.Sprintf("audit log %s is back", t.path))
	}
	t.missingSince, t.warnedGone = time.Time{}, false
	switch {
	case !os.SameFile(t.fi, st):
		// Rotated: finish the old file, then read the new one from its
		// start.
		if err := t.read(fn); err != nil {
			return err
		}
		if len(t.partial) > 0 {
			// The old file is done: its last line is as whole as it
			// will ever be; the parser tells.
			t.stats.Lines++
			err := fn(t.partial)
			t.partial = t.partial[:0]
			if err != nil {
				return err
			}
		}
		if err := t.open(); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone again: the next poll tells
			}
			return err
		}
		t.stats.Rotations++
		return t.read(fn)
	case st.Size() < t.pos:
		// Truncated in place (copytruncate): the lines written since the
		// last read are in the copy, not here.
		t.stats.Truncations++
		if len(t.partial) > 0 {
			t.stats.Dropped++
			t.warn(fmt.Sprintf("audit log %s was truncated in the middle of a line; %d bytes of it dropped", t.path, len(t.partial)))
			t.partial = t.partial[:0]
		}
		t.pos, t.skip = 0, false
		return t.read(fn)
	}
	return nil
}

// read reads f from pos to its end.
func (t *Tailer) read(fn func([]byte) error) error {
	if t.f == nil {
		return fmt.Errorf("read audit log %s: the tailer is closed", t.path)
	}
	for {
		n, err := t.f.ReadAt(t.buf, t.pos)
		if n > 0 {
			t.pos += int64(n)
			t.stats.Bytes += int64(n)
			if ferr := t.lines(t.buf[:n], fn); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read audit log %s: %w", t.path, err)
		}
	}
}

// lines splits b into lines, joining the partial line before it.
func (t *Tailer) lines(b []byte, fn func([]byte) error) error {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if t.skip {
			if i < 0 {
				return nil
			}
			t.skip = false
			b = b[i+1:]
			continue
		}
		if i < 0 {
			if len(t.partial)+len(b) > MaxLine {
				t.stats.Dropped++
				t.warn(fmt.Sprintf("audit log %s: a line longer than %d MiB; dropped", t.path, MaxLine>>20))
				t.partial, t.skip = t.partial[:0], true
				return nil
			}
			t.partial = append(t.partial, b...)
			return nil
		}
		line := b[:i]
		if len(t.partial) > 0 {
			t.partial = append(t.partial, line...)
			line = t.partial
		}
		b = b[i+1:]
		t.stats.Lines++
		err := fn(line)
		t.partial = t.partial[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
