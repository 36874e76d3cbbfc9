package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
// the file open would lock `podtrace diff` and `report` out until it stopped;
// one that opened it for each flush would map it and fault its pages in
// again each time. A Writer holds the file open between flushes until a
// reader asks for it at the readers' file (PATH + ReadersSuffix, which Open
// with ReadOnly locks shared), and closes it within 50 ms; from then on Flush
// opens the file, writes the records Add buffered (in transactions of up to
// BatchSize) and closes it, while readers ask. If a reader has the file
// open, Flush does not wait: it keeps the records for the next Flush;
// Pending tells how many wait, in memory, so a reader that never lets go
// shows. Readers open with Options.ReadOnly and a timeout, so they wait out
// a flush in progress: milliseconds, a few hundred for a full batch.
//
// The Writer keeps the last revision of each object it wrote (for deltas) and
// the compression dictionaries between flushes; they are checked against the
// file at every flush, so another writer in between costs compression, never
// correctness.
//
// A Writer is the only writer of its trace: it holds a lease, an exclusive
// flock on the lock file beside the trace (PATH + LockSuffix), from
// NewWriter to Close. The lock file says who holds it (see Lease and
// Recorder); readers never lock it.
//
// A Writer's methods are safe for concurrent use.
type Writer struct {
	path  string
	opts  Options
	enc   *encoder
	lease *lease // nil for the lease-free writers of tests

	mu       sync.Mutex // guards pending, gaps
	pending  []Record
	gaps     []Gap
	listings []Listing // see Reconcile

	// session is the session the Writer began (0: none yet); alive is
	// when its Alive stamp was last written. Both guarded by flushMu.
	session uint32
	alive   time.Time
	now     func() time.Time

	// checked is closed when the check of the existing file is over;
	// checkErr is what it found. A Writer writes nothing before.
	checked  chan struct{}
	checkErr error

	flushMu sync.Mutex // one open of the file at a time; guards closed, wrote, db, watching
	closed  bool
	wrote   bool // records or a session written

	// db is the file, held open between flushes while no reader waits for
	// it (see ReadersSuffix); nil while closed. readers is the readers'
	// file (nil: the Writer closes the file after each flush); watching
	// says a goroutine looks at it while db is open.
	db       *DB
	readers  *readersFile
	watching bool

	pruning pruneState // see prune.go; guarded by flushMu, its stats by mu

	inUse int64 // the file's pages in use after the last flush; guarded by mu
}

// InUse is the size of the trace's pages in use after the last flush: its
// data, about what the file is once compacted. The file itself is larger
// while recording: bbolt grows it 16 MiB ahead of its pages, and reuses the
// pages pruning frees without shrinking it. 0 before the first flush.
func (w *Writer) InUse() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.inUse
}

// NewWriter creates the trace file at path if it is missing, checks it and
// returns a Writer for it; the file is not held open, the lease is (see
// Writer). opts.Timeout is how long BeginSession, EndSession and Close wait
// for readers to let go of the file.
//
// Another live Writer of path, in this process or another, fails with
// ErrRecording. An existing file must be a trace, and a sound one: an empty
// file, another bbolt database, or a trace that bbolt's consistency check
// (DB.Check) finds damaged fails with ErrCorrupt, and the file is left as it
// was. The check reads the whole file; if it has not finished within
// opts.CheckTimeout, NewWriter returns the Writer and tells opts.Warn, and
// the Writer writes nothing until the check is over (Flush keeps the
// records, as when a reader holds the file); if the check then finds damage,
// every later write fails with ErrCorrupt.
func NewWriter(path string, opts Options) (*Writer, error) {
	return newWriter(path, opts, true)
}

// newWriter is NewWriter; without withLease the Writer does not take the
// lease, so tests can make two writers take turns on one file.
func newWriter(path string, opts Options, withLease bool) (w *Writer, err error) {
	if opts.ReadOnly {
		return nil, fmt.Errorf("record into trace %q: a Writer cannot be read-only", path)
	}
	fi, err := os.Stat(path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("record into trace %q: %w", path, err)
	case exists && fi.IsDir():
		return nil, corruptError(path, errors.New("it is a directory"))
	case exists && fi.Size() == 0:
		return nil, emptyError(path)
	}
	w = &Writer{path: path, opts: opts, checked: make(chan struct{}), now: time.Now}
	if withLease {
		if w.lease, err = takeLease(path, opts.Version); err != nil {
			if errors.Is(err, ErrRecording) {
				return nil, err
			}
			if !exists {
				return nil, createError(path, err)
			}
			return nil, fmt.Errorf("record into trace %q: %w; record into a writable directory with -o", path, err)
		}
		l := w.lease
		defer func() {
			if err != nil {
				l.release()
			}
		}()
		if canKnock {
			if w.readers, err = makeReaders(path); err != nil {
				return nil, fmt.Errorf("record into trace %q: %w; record into a writable directory with -o", path, err)
			}
			r := w.readers
			defer func() {
				if err != nil {
					r.remove()
				}
			}()
		}
	}
	if exists {
		if err := w.check(); err != nil {
			return nil, err
		}
	} else {
		close(w.checked)
	}
	select {
	case <-w.checked:
		if w.checkErr != nil {
			return nil, w.checkErr
		}
		db, err := open(path, opts, nil)
		if err != nil {
			return nil, err
		}
		w.enc = db.enc
		if err := db.Close(); err != nil {
			return nil, err
		}
	default:
		// The first write opens the file when the check is over.
		w.enc = newEncoder(opts.writeCacheBytes())
	}
	return w, nil
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

// check opens the existing trace read-only, so that nothing changes it, and
// runs bbolt's check of it for up to opts.CheckTimeout. It returns an error
// only if the file is not a trace of a schema this build writes; the check's
// findings go to w.checkErr when w.checked closes.
func (w *Writer) check() error {
	ro := w.opts
	ro.ReadOnly = true
	db, err := open(w.path, ro, nil)
	if err != nil {
		return err
	}
	if w.opts.CheckTimeout < 0 {
		close(w.checked)
		return db.Close()
	}
	go func() {
		if checkHook != nil {
			checkHook()
		}
		err := db.Check()
		var te *traceError
		if errors.As(err, &te) && te.err != nil {
			err = damagedError(w.path, te.err)
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		w.checkErr = err
		close(w.checked)
	}()
	timer := time.NewTimer(w.opts.checkTimeout())
	defer timer.Stop()
	select {
	case <-w.checked:
	case <-timer.C:
		w.opts.warn("the consistency check of trace %q did not finish within %s: recording starts when it does, and stops if it finds the file damaged", w.path, w.opts.checkTimeout())
		go func() {
			<-w.checked
			if w.checkErr != nil {
				w.opts.warn("%v", w.checkErr)
			} else {
				w.opts.warn("the consistency check of trace %q found no damage: recording", w.path)
			}
		}()
	}
	return nil
}

// waitChecked waits up to timeout for the check of the file, and returns
// what it found; with tryOnce, a check still running is errCheckRunning.
func (w *Writer) waitChecked(timeout time.Duration) error {
	select {
	case <-w.checked:
		return w.checkErr
	default:
	}
	if timeout == tryOnce {
		return errCheckRunning
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-w.checked:
		return w.checkErr
	case <-timer.C:
		return newError(ErrLocked, nil,
			"trace %q is still being checked for damage after %s: wait, or record into a new file (--db NEW)", w.path, timeout)
	}
}

var errCheckRunning = errors.New("the check of the trace is running")

// checkHook, if set (by tests), runs before each check of an existing trace.
var checkHook func()

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
	return w.update(tryOnce, false, nil)
}

// BeginSession writes the buffered records and records the start of a
// session (see DB.BeginSession), waiting up to the Writer's timeout for
// readers to release the file.
func (w *Writer) BeginSession(s Session) (Session, error) {
	_, err := w.update(w.opts.timeout(), false, func(db *DB) error {
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
	_, err := w.update(w.opts.timeout(), false, func(db *DB) error {
		return db.EndSession(id, stopped)
	})
	return err
}

// Close writes the buffered records, waiting up to the Writer's timeout for
// readers to release the file, then compacts the file (see Compact) unless
// Options.NoCompact or the Writer wrote nothing, and releases the lease, removing the lock file. If
// writing fails the records are kept, and the lease, and Close may be called
// again; if the trace is damaged, Close releases the lease and gives up.
func (w *Writer) Close() error {
	w.flushMu.Lock()
	idle := !w.wrote && !w.closed && w.Pending() == 0
	if idle {
		// Nothing written, nothing to write: the file stays as it was.
		w.closed = true
	}
	w.flushMu.Unlock()
	if idle {
		return w.release()
	}
	_, err := w.update(w.opts.timeout(), true, func(db *DB) error {
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
		if errors.Is(err, ErrCorrupt) {
			// Nothing more can be written: let the trace go.
			w.flushMu.Lock()
			w.closed = true
			w.flushMu.Unlock()
			err = errors.Join(err, w.release())
		}
		if n := w.Pending(); n > 0 {
			return fmt.Errorf("%w (%d records not written)", err, n)
		}
		return err
	}
	w.flushMu.Lock()
	w.closed = true
	w.flushMu.Unlock()
	return w.release()
}

// release removes the readers' file and releases the lease.
func (w *Writer) release() error {
	return errors.Join(w.readers.remove(), w.lease.release())
}

// update opens the file (unless the Writer holds it open), writes the
// buffered records, runs fn (if not nil) and then holds the file open for
// the next update, or closes it: when closing, after an error, or when a
// reader waits (see ReadersSuffix). With timeout tryOnce a busy file is not
// an error.
func (w *Writer) update(timeout time.Duration, closing bool, fn func(*DB) error) (written int, err error) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("record into trace %q: %w", w.path, ErrClosed)
	}
	now := w.now()
	w.mu.Lock()
	idle := len(w.pending) == 0 && len(w.gaps) == 0 && len(w.listings) == 0
	w.mu.Unlock()
	if fn == nil && idle && !w.pruning.more && (w.session == 0 || now.Sub(w.alive) < AliveEvery) {
		return 0, nil
	}
	if err := w.waitChecked(timeout); err != nil {
		if err == errCheckRunning {
			return 0, nil
		}
		return 0, err
	}
	db := w.db
	if db == nil {
		opts := w.opts
		opts.Timeout = timeout
		if db, err = open(w.path, opts, w.enc); err != nil {
			if timeout == tryOnce && errors.Is(err, ErrLocked) {
				return 0, nil
			}
			return 0, err
		}
	}
	defer func() {
		if w.readers != nil && !closing && err == nil && !w.readers.waiting() {
			w.hold(db)
			return
		}
		w.db = nil
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	w.wrote = true

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
	w.mu.Lock()
	listings := w.listings
	w.listings = nil
	w.mu.Unlock()
	if len(listings) > 0 {
		recs, err := gone(db, w.session, listings)
		if err == nil && len(recs) > 0 {
			err = db.write(recs, true, nil)
		}
		if err != nil {
			w.mu.Lock()
			w.listings = append(listings, w.listings...)
			w.mu.Unlock()
			return written, fmt.Errorf("reconcile trace %q with the new lists: %w", w.path, err)
		}
		written += len(recs)
	}
	// Retention, in transactions of its own: what this flush wrote is in
	// the file whatever becomes of them.
	if err := w.prune(db, now); errors.Is(err, ErrCorrupt) {
		return written, fmt.Errorf("prune trace %q: %w", w.path, err)
	} else if err != nil && !w.pruning.failing {
		// A full disk: deleting takes new pages too. Tried again at the
		// next flush; the records are written.
		w.opts.warn("cannot prune trace %q: %v; retrying at the next flush", w.path, err)
		w.pruning.failing = true
	} else if err == nil && w.pruning.failing {
		w.opts.warn("pruning trace %q again", w.path)
		w.pruning.failing = false
	}
	if used, _, err := db.pageBytes(); err == nil {
		w.mu.Lock()
		w.inUse = used
		w.mu.Unlock()
	}
	if fn != nil {
		return written, fn(db)
	}
	return written, nil
}

// hold keeps db open for the next update, and has a goroutine close it as
// soon as a reader waits for the file. flushMu is held.
func (w *Writer) hold(db *DB) {
	w.db = db
	if w.watching {
		return
	}
	w.watching = true
	go func() {
		t := time.NewTicker(knockEvery)
		defer t.Stop()
		for range t.C {
			w.flushMu.Lock()
			if w.db != nil && !w.readers.waiting() {
				w.flushMu.Unlock()
				continue
			}
			if w.db != nil {
				if err := w.db.Close(); err != nil {
					w.opts.warn("%v", err)
				}
				w.db = nil
			}
			w.watching = false
			w.flushMu.Unlock()
			return
		}
	}()
}
