package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// tryOnce as a bbolt timeout makes Open give up after one attempt at the lock.
const tryOnce = time.Nanosecond

// BatchSize is the most records a Writer writes in one transaction. A
// recorder flushes every second or so, and sooner when Pending reaches
// BatchSize: bigger batches cost memory and gain little.
const BatchSize = 10000

// Writer records into a trace that readers may open at the same time.
//
// bbolt lets one process write a file, and only while no process reads it: a
// writer takes an exclusive flock, readers a shared one. A recorder that kept
// the file open would lock `podtrace diff` and `report` out until it stopped.
// A Writer instead holds the file only while it flushes: Flush opens the file,
// writes the records Add buffered (in transactions of up to BatchSize) and
// closes it. If a reader has the file open, Flush does not wait: it keeps the
// records for the next Flush; Pending tells how many wait, in memory, so a
// reader that never lets go shows. Readers open with Options.ReadOnly and a
// timeout, so they wait out a flush in progress: milliseconds, a few hundred
// for a full batch.
//
// The Writer keeps the last revision of each object it wrote (for deltas) and
// the compression dictionaries between flushes; they are checked against the
// file at every flush, so another writer in between costs compression, never
// correctness.
//
// A Writer's methods are safe for concurrent use.
type Writer struct {
	path string
	opts Options
	enc  *encoder

	mu      sync.Mutex // guards pending, gaps
	pending []Record
	gaps    []Gap

	// session is the session the Writer began (0: none yet); alive is
	// when its Alive stamp was last written. Both guarded by flushMu.
	session uint32
	alive   time.Time
	now     func() time.Time

	flushMu sync.Mutex // one open of the file at a time; guards closed
	closed  bool
}

// NewWriter creates the trace file at path if it is missing, checks it and
// returns a Writer for it; the file is not held open. opts.Timeout is how
// long BeginSession, EndSession and Close wait for readers to let go of the
// file.
func NewWriter(path string, opts Options) (*Writer, error) {
	if opts.ReadOnly {
		return nil, fmt.Errorf("record into trace %q: a Writer cannot be read-only", path)
	}
	db, err := Open(path, opts)
	if err != nil {
		return nil, err
	}
	enc := db.enc
	if err := db.Close(); err != nil {
		return nil, err
	}
	return &Writer{path: path, opts: opts, enc: enc, now: time.Now}, nil
}

// AliveEvery is how often an idle Writer stamps its session's Alive time
// (see Session.Alive), when Flush is called that often: a reader of a trace
// whose recorder was killed takes the recording to have ended at most this
// long before it did. A flush that writes records stamps it too.
const AliveEvery = 5 * time.Second

// AddGap buffers a gap in observation for the next flush.
func (w *Writer) AddGap(g Gap) {
	w.mu.Lock()
	w.gaps = append(w.gaps, g)
	w.mu.Unlock()
}

// Add buffers records for the next flush. The Writer keeps recs' Object and
// Refs slices: the caller must not change them afterwards. Seq is assigned
// when the records are written.
func (w *Writer) Add(recs ...Record) {
	w.mu.Lock()
	w.pending = append(w.pending, recs...)
	w.mu.Unlock()
}

// Pending is the number of records buffered and not yet written.
func (w *Writer) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

// Flush writes the buffered records and gaps, in transactions of up to
// BatchSize, and returns how many records it wrote; the last transaction
// stamps the session's Alive time. With nothing buffered it writes only
// that stamp, once AliveEvery has passed since the last one. If a reader
// holds the file, Flush writes nothing, keeps the records and returns 0 and
// no error: call it again later.
func (w *Writer) Flush() (int, error) {
	return w.update(tryOnce, nil)
}

// BeginSession writes the buffered records and records the start of a
// session (see DB.BeginSession), waiting up to the Writer's timeout for
// readers to release the file.
func (w *Writer) BeginSession(s Session) (Session, error) {
	_, err := w.update(w.opts.timeout(), func(db *DB) error {
		var err error
		s, err = db.BeginSession(s)
		return err
	})
	if err == nil {
		w.flushMu.Lock()
		w.session = s.ID
		w.flushMu.Unlock()
	}
	return s, err
}

// EndSession writes the buffered records and records when session id
// stopped, waiting up to the Writer's timeout for readers.
func (w *Writer) EndSession(id uint32, stopped time.Time) error {
	_, err := w.update(w.opts.timeout(), func(db *DB) error {
		return db.EndSession(id, stopped)
	})
	return err
}

// Close writes the buffered records, waiting up to the Writer's timeout for
// readers to release the file, then compacts the file (see Compact) unless
// Options.NoCompact. If writing fails the records are kept and Close may be
// called again.
func (w *Writer) Close() error {
	_, err := w.update(w.opts.timeout(), func(db *DB) error {
		if w.opts.NoCompact {
			return nil
		}
		// Every record is written: the write cache (the last revision of
		// up to thousands of objects) serves no later flush. Dropped and
		// collected first, its memory and the recording's garbage hold
		// the copy, which would otherwise come on top of them: the
		// recorder's peak memory was at this copy. A Close called again
		// starts with an empty cache (costing compression, not
		// correctness).
		w.enc = newEncoder(w.opts.writeCacheBytes())
		db.enc = w.enc
		runtime.GC()
		if _, _, err := db.compact(); err != nil {
			return fmt.Errorf("%w (the trace is complete, only not compacted)", err)
		}
		return nil
	})
	if err != nil {
		if n := w.Pending(); n > 0 {
			return fmt.Errorf("%w (%d records not written)", err, n)
		}
		return err
	}
	w.flushMu.Lock()
	w.closed = true
	w.flushMu.Unlock()
	return nil
}

// update opens the file, writes the buffered records, runs fn (if not nil)
// and closes the file. With timeout tryOnce a busy file is not an error.
func (w *Writer) update(timeout time.Duration, fn func(*DB) error) (written int, err error) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("record into trace %q: %w", w.path, ErrClosed)
	}
	now := w.now()
	w.mu.Lock()
	idle := len(w.pending) == 0 && len(w.gaps) == 0
	w.mu.Unlock()
	if fn == nil && idle && (w.session == 0 || now.Sub(w.alive) < AliveEvery) {
		return 0, nil
	}
	opts := w.opts
	opts.Timeout = timeout
	db, err := open(w.path, opts, w.enc)
	if err != nil {
		if timeout == tryOnce && errors.Is(err, ErrLocked) {
			return 0, nil
		}
		return 0, err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	w.mu.Lock()
	batch, gaps := w.pending, w.gaps
	w.pending, w.gaps = nil, nil
	w.mu.Unlock()
	// The last transaction also writes the gaps and the session's stamp.
	last := func(tx *bolt.Tx) error {
		for _, g := range gaps {
			if err := putGap(tx, g); err != nil {
				return err
			}
		}
		if w.session != 0 {
			return stampAlive(tx, w.session, now)
		}
		return nil
	}
	for first := len(gaps) > 0 || w.session != 0; first || len(batch) > 0; first = false {
		n := min(len(batch), BatchSize)
		var also func(*bolt.Tx) error
		if n == len(batch) {
			also = last
		}
		// The records are the Writer's (see Add): the write cache may keep
		// their JSON.
		if err := db.write(batch[:n], true, also); err != nil {
			w.mu.Lock()
			w.pending = append(batch, w.pending...)
			if also != nil {
				w.gaps = append(gaps, w.gaps...)
			}
			w.mu.Unlock()
			return written, err
		}
		written += n
		batch = batch[n:]
	}
	if w.session != 0 {
		w.alive = now
	}
	if fn != nil {
		return written, fn(db)
	}
	return written, nil
}
