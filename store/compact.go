package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// compactTxBytes bounds the bytes copied in one transaction by Compact: a
// transaction holds its new pages in memory until it commits, and the copy
// has no reason to sync between commits.
const compactTxBytes = 4 << 20

// Compact rewrites the trace at path with every page full and replaces the
// file with the copy, holding the file's lock meanwhile. Records arrive in
// the order objects change, not in key order, so bbolt's pages end up about
// three quarters full; Writer.Close compacts unless Options.NoCompact.
// Compact returns the file's size before and after.
func Compact(path string, opts Options) (before, after int64, err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0, 0, notExistError(path, err)
	}
	opts.ReadOnly = false
	db, err := Open(path, opts)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return db.compact()
}

// compact copies db into a new file and renames it over db's, while db
// holds the lock; db stays open on the old file.
func (db *DB) compact() (before, after int64, err error) {
	fi, err := os.Stat(db.path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact trace %q: %w", db.path, err)
	}
	tmp := db.path + ".compact"
	os.Remove(tmp)
	// Mapped at the source's size from the start: a mapping that grows
	// remaps, and bbolt copies every node of the open transaction to the
	// heap each time.
	dst, err := bolt.Open(tmp, fi.Mode().Perm(), &bolt.Options{NoSync: true, InitialMmapSize: int(min(fi.Size(), writerMmapBytes))})
	if err != nil {
		return 0, 0, fmt.Errorf("compact trace %q: %w", db.path, err)
	}
	var size int64
	err = db.copyInto(dst)
	if err == nil {
		err = dst.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil })
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil && size > 0 {
		// bbolt grows a file ahead of its pages; a finished trace needs
		// only its pages.
		err = truncate(tmp, size)
	}
	if err == nil {
		err = os.Rename(tmp, db.path)
	}
	if err == nil {
		// db holds the old file, no longer at db.path: Close must not
		// cut the new one down to the old one's pages.
		db.trim = false
	}
	if err != nil {
		os.Remove(tmp)
		if errors.Is(err, ErrCorrupt) {
			return 0, 0, err
		}
		return 0, 0, fmt.Errorf("compact trace %q: %w", db.path, err)
	}
	nfi, err := os.Stat(db.path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact trace %q: %w", db.path, err)
	}
	return fi.Size(), nfi.Size(), nil
}

// copyInto copies db's buckets into dst. bbolt panics on a damaged page,
// or faults reading past the end of the file: either is ErrCorrupt, and
// dst's transaction is rolled back.
func (db *DB) copyInto(dst *bolt.DB) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = newError(ErrCorrupt, fmt.Errorf("%v", r),
				"trace %q is damaged and was not compacted, it is left as it was (%v): `bbolt check %s` lists the damaged pages",
				db.path, r, db.path)
		}
	}()
	return db.bolt.View(func(src *bolt.Tx) error { return copyBuckets(dst, src) })
}

// copyBuckets copies every top-level bucket of src, with its sequence, into
// dst, filling pages.
func copyBuckets(dst *bolt.DB, src *bolt.Tx) error {
	tx, err := dst.Begin(true)
	if err != nil {
		return err
	}
	defer func() { tx.Rollback() }()
	size := 0
	err = src.ForEach(func(name []byte, sb *bolt.Bucket) error {
		db, err := tx.CreateBucket(name)
		if err != nil {
			return err
		}
		if err := db.SetSequence(sb.Sequence()); err != nil {
			return err
		}
		db.FillPercent = 1.0
		c := sb.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil && sb.Bucket(k) != nil {
				return errors.New("nested buckets are not part of a trace")
			}
			if size > compactTxBytes {
				if err := tx.Commit(); err != nil {
					return err
				}
				if tx, err = dst.Begin(true); err != nil {
					return err
				}
				db = tx.Bucket(name)
				db.FillPercent = 1.0
				size = 0
			}
			if v == nil {
				v = []byte{}
			}
			if err := db.Put(k, v); err != nil {
				return err
			}
			size += len(k) + len(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tx.Commit()
}

// truncate cuts the file at path to size bytes and syncs it.
func truncate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
