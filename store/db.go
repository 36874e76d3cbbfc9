package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the newest trace layout this build reads. A trace is
// created as schema 1 and becomes 2 with its first pod recorded as protobuf
// (Record.Proto), which builds that read 1 cannot decode. See doc.go.
const SchemaVersion = 2

// schemaJSON is the layout of a trace whose objects are all JSON.
const schemaJSON = 1

const (
	// DefaultTimeout is how long Open waits for the file lock when
	// Options.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultCacheBytes is the budget of a reader's cache of decoded
	// revisions (Scan) when Options.CacheBytes is zero.
	DefaultCacheBytes = 64 << 20
	// DefaultWriteCacheBytes is the budget of a writer's cache of each
	// object's last revision when Options.CacheBytes is zero. It saves
	// reading a revision back from the file for the next one's delta:
	// time, not bytes on disk. A recorder keeps it beside the informers'
	// caches for as long as it runs, so it is small. Writing a recorded
	// trace of the 2,000-pod kwok workload again (BenchmarkRewrite), 4 MiB
	// read 32% of the delta bases back from the file, 8 MiB 12%: the pods
	// alive at once (about 9 MB of JSON) no longer cycle through the
	// cache. The writer's live heap is about 4 MiB larger for it.
	DefaultWriteCacheBytes = 8 << 20

	writerMmapBytes = 1 << 30
)

// Bucket names and meta keys; doc.go draws them.
var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketUIDs     = []byte("uids")
	bucketRecords  = []byte("records")
	bucketObjects  = []byte("objects")
	bucketTime     = []byte("time")
	bucketRefs     = []byte("refs")
	bucketDicts    = []byte("dicts")
	// bucketGaps is newer than the others: a trace written before it has
	// none, and readers take that for no gaps.
	bucketGaps = []byte("gaps")
	// bucketGone indexes the deletions of namespaced objects by time, for
	// retention (prune.go); bucketPruned says what retention removed.
	// Both are newer still: writers create them when they need them.
	bucketGone   = []byte("gone")
	bucketPruned = []byte("pruned")

	allBuckets = [][]byte{bucketMeta, bucketSessions, bucketUIDs, bucketRecords, bucketObjects, bucketTime, bucketRefs, bucketDicts}

	metaSchema    = []byte("schema")
	metaPodtrace  = []byte("podtrace")
	metaCreated   = []byte("created")
	metaID        = []byte("id")
	metaJSONBytes = []byte("json-bytes")
	// metaGoneSeq is the Seq up to which every deletion is in bucketGone.
	metaGoneSeq = []byte("gone-seq")
)

// Options configure Open.
type Options struct {
	// ReadOnly opens an existing trace for queries. Without it Open creates
	// the file if it is missing, and takes the file's lock for writing.
	ReadOnly bool
	// Timeout is how long Open waits for another process to release the
	// file; zero means DefaultTimeout.
	Timeout time.Duration
	// Version is the podtrace version written into the meta of a new trace.
	Version string
	// CacheBytes bounds the cache of each object's last revision (for
	// writing deltas; zero means DefaultWriteCacheBytes) or of decoded
	// revisions (for Scan; zero means DefaultCacheBytes).
	CacheBytes int
	// NoCompact: Writer.Close leaves the file as written instead of
	// rewriting it with full pages (see Compact).
	NoCompact bool
	// CheckTimeout bounds how long NewWriter waits for bbolt's consistency
	// check of an existing trace before it records; zero means
	// DefaultCheckTimeout, negative skips the check. A check cut short
	// goes on while the Writer buffers (see NewWriter).
	CheckTimeout time.Duration
	// Warn, if set, is told what a Writer cannot say as an error: a check
	// cut short, and what it found later; a size budget that pruning
	// cannot meet.
	Warn func(msg string)
	// Retention, if set, makes a Writer prune the trace while it records:
	// the history of objects gone longer than Retention.Age, and the oldest
	// gone ones while the trace outgrows Retention.MaxBytes (see prune.go).
	Retention Retention
}

// DefaultCheckTimeout is how long NewWriter waits for the check of an
// existing trace when Options.CheckTimeout is zero.
const DefaultCheckTimeout = 20 * time.Second

func (o Options) checkTimeout() time.Duration {
	if o.CheckTimeout == 0 {
		return DefaultCheckTimeout
	}
	return o.CheckTimeout
}

func (o Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}

func (o Options) timeout() time.Duration {
	if o.Timeout == 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

func (o Options) cacheBytes() int {
	if o.CacheBytes <= 0 {
		return DefaultCacheBytes
	}
	return o.CacheBytes
}

func (o Options) writeCacheBytes() int {
	if o.CacheBytes <= 0 {
		return DefaultWriteCacheBytes
	}
	return o.CacheBytes
}

// DB is an open trace file. Its methods are safe for concurrent use; writes
// are serialized.
type DB struct {
	path     string
	bolt     *bolt.DB
	readOnly bool
	id       string // the meta id: tells files apart for the write caches
	opts     Options

	writeMu sync.Mutex
	enc     *encoder // write state; shared with a Writer across opens

	dictMu sync.Mutex
	dicts  *dictSet // loaded on first use

	// knock is a reader's shared flock on the readers' file, held until
	// Close: it tells a Writer that holds the file open to let go.
	knock *os.File

	// trim: Close cuts the file down to its pages (see trimFile).
	trim bool
}

// Open opens the trace file at path. See Options. Opened for writing, it
// refuses with ErrRecording a trace that a live recorder holds (see
// Recorder): a second writer would store every revision twice.
func Open(path string, opts Options) (*DB, error) {
	if !opts.ReadOnly {
		if err := refuseRecorded(path); err != nil {
			return nil, err
		}
	}
	db, err := open(path, opts, nil)
	if err == nil && !opts.ReadOnly {
		// An import or a test that writes: a Writer's DB is closed and
		// opened again between flushes, and compacted at the end.
		db.trim = true
	}
	return db, err
}

// open opens path; a non-nil enc carries a Writer's caches across opens. It
// does not look at the lock file: a Writer opens through it while holding
// the lease.
func open(path string, opts Options, enc *encoder) (db *DB, err error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly {
			return nil, notExistError(path, err)
		}
		// bbolt creates it.
	case err != nil:
		return nil, fmt.Errorf("open trace %q: %w", path, err)
	case fi.IsDir():
		return nil, corruptError(path, errors.New("it is a directory"))
	case fi.Size() == 0 && opts.ReadOnly:
		return nil, corruptError(path, errors.New("the file is empty"))
	case fi.Size() == 0:
		// Made by touch or mktemp, or a trace whose writing never began:
		// not podtrace's to take over.
		return nil, emptyError(path)
	}
	created := errors.Is(err, fs.ErrNotExist)
	var knocked *os.File
	if opts.ReadOnly {
		// A live Writer holds the file open between its flushes: ask it
		// to let go (see ReadersSuffix).
		if knocked = knock(path, opts.timeout()); knocked != nil {
			defer func() {
				// Registered before the recover below, so run after it.
				if err != nil {
					knocked.Close()
				}
			}()
		}
	}
	// bbolt may panic on a damaged file rather than return an error, or
	// fault reading past the end of a truncated one.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, corruptError(path, fmt.Errorf("%v", r))
		}
	}()
	bopts := &bolt.Options{ReadOnly: opts.ReadOnly, Timeout: opts.timeout()}
	if !opts.ReadOnly {
		// Address space, not memory: a writer that outgrows its mapping
		// remaps and copies every page it holds.
		bopts.InitialMmapSize = writerMmapBytes
	}
	bdb, err := bolt.Open(path, 0o600, bopts)
	if err != nil {
		if created {
			if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
				return nil, createError(path, err)
			}
		}
		return nil, openError(path, opts, err)
	}
	db = &DB{path: path, bolt: bdb, readOnly: opts.ReadOnly, opts: opts, enc: enc, knock: knocked}
	if err := db.init(); err != nil {
		bdb.Close()
		return nil, err
	}
	if !opts.ReadOnly && db.enc == nil {
		db.enc = newEncoder(opts.writeCacheBytes())
	}
	return db, nil
}

func openError(path string, opts Options, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		if opts.ReadOnly {
			return newError(ErrLocked, err,
				"trace %q is held open for writing by another process (a `podtrace record` still running?) and was not released within %s: wait for the recorder to flush, or stop it",
				path, opts.timeout())
		}
		return newError(ErrLocked, err,
			"trace %q is open in another process (a reader such as `podtrace report`, or another recorder) and was not released within %s: close it or record into another file",
			path, opts.timeout())
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrChecksum):
		return corruptError(path, err)
	case errors.Is(err, fs.ErrNotExist):
		return notExistError(path, err)
	}
	return fmt.Errorf("open trace %q: %w", path, err)
}

// init checks the schema of the file and, for a writer, creates the layout
// of a new trace.
func (db *DB) init() error {
	var fresh bool
	err := db.bolt.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty := true
			tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !empty || db.readOnly {
				return corruptError(db.path, errors.New("a bbolt database without podtrace's meta bucket"))
			}
			fresh = true
			return nil
		}
		return db.checkMeta(tx)
	})
	if err != nil || !fresh {
		return err
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		for _, name := range append(allBuckets, bucketGaps, bucketGone) {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create trace %q: %w", db.path, err)
			}
		}
		id := make([]byte, 16)
		rand.Read(id)
		db.id = hex.EncodeToString(id)
		version := db.opts.Version
		if version == "" {
			version = "unknown"
		}
		meta := tx.Bucket(bucketMeta)
		for k, v := range map[string]string{
			string(metaSchema):    strconv.Itoa(schemaJSON),
			string(metaPodtrace):  version,
			string(metaCreated):   time.Now().UTC().Format(time.RFC3339Nano),
			string(metaID):        db.id,
			string(metaJSONBytes): "0",
			string(metaGoneSeq):   "0",
		} {
			if err := meta.Put([]byte(k), []byte(v)); err != nil {
				return fmt.Errorf("create trace %q: %w", db.path, err)
			}
		}
		return nil
	})
}

// checkMeta refuses a trace of a newer schema or one missing its buckets.
func (db *DB) checkMeta(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	schema, err := strconv.ParseUint(string(meta.Get(metaSchema)), 10, 64)
	if err != nil {
		return corruptError(db.path, fmt.Errorf("meta schema %q", meta.Get(metaSchema)))
	}
	if schema > SchemaVersion {
		return newerSchemaError(db.path, schema)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return corruptError(db.path, fmt.Errorf("bucket %q is missing", name))
		}
	}
	db.id = string(meta.Get(metaID))
	return nil
}

// Path is the file the trace is in.
func (db *DB) Path() string { return db.path }

// Close releases the file.
func (db *DB) Close() error {
	db.dictMu.Lock()
	if db.dicts != nil {
		db.dicts.zstd.Close()
		db.dicts = nil
	}
	db.dictMu.Unlock()
	var terr error
	if db.trim {
		db.trim = false
		terr = db.trimFile()
	}
	err := errors.Join(db.bolt.Close(), terr)
	if db.knock != nil {
		db.knock.Close()
		db.knock = nil
	}
	if err != nil {
		return fmt.Errorf("close trace %q: %w", db.path, err)
	}
	return nil
}

// trimFile cuts the file down to its pages, before Close lets go of it.
// A writer maps the file at writerMmapBytes, and bbolt then grows the file
// 16 MiB (its AllocSize) ahead of the pages it writes: a trace of 160 KiB
// was a file of 16 MiB after an import. The pages beyond the last are
// never read; the lock held keeps every reader out meanwhile.
func (db *DB) trimFile() error {
	var size int64
	if err := db.bolt.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		return fmt.Errorf("trim trace %q: %w", db.path, err)
	}
	fi, err := os.Stat(db.path)
	if err != nil || size <= 0 || fi.Size() <= size {
		return nil
	}
	if err := os.Truncate(db.path, size); err != nil {
		return fmt.Errorf("trim trace %q to its %d bytes of pages: %w", db.path, size, err)
	}
	return nil
}

// view runs fn in a read transaction and turns a bbolt panic or a memory
// fault (a damaged or truncated file) into ErrCorrupt.
func (db *DB) view(fn func(tx *bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = corruptError(db.path, fmt.Errorf("%v", r))
		}
	}()
	return db.bolt.View(fn)
}

// Check runs bbolt's consistency check of the whole file and returns the
// problems it finds, joined; nil means none.
func (db *DB) Check() error {
	var errs []error
	err := db.view(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return corruptError(db.path, errors.Join(errs...))
	}
	return nil
}
