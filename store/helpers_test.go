package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// tracePath returns the path of a new trace in a temporary directory. When
// the test ends (after the DBs it opened with openDB are closed) the file, if
// any, must pass bbolt's consistency check and checkIndexes.
func tracePath(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.db")
	t.Cleanup(func() { checkTrace(t, path) })
	return path
}

// openDB opens path and closes it when the test ends.
func openDB(t testing.TB, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%q, %+v): %v", path, opts, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// checkTrace runs bbolt's tx.Check on the file at path and checks that the
// indexes agree with the records.
func checkTrace(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Errorf("check %s: %v", path, err)
		return
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check of %s: %v", path, err)
		}
		return checkIndexes(tx)
	})
	if err != nil {
		t.Errorf("check %s: %v", path, err)
	}
}

// checkIndexes checks that time, objects, uids and refs agree with records.
func checkIndexes(tx *bolt.Tx) error {
	if tx.Bucket(bucketMeta) == nil {
		return nil // not a trace; the test made it so
	}
	records, times := tx.Bucket(bucketRecords), tx.Bucket(bucketTime)
	type count struct {
		n           uint64
		first, last uint64
	}
	perObject := map[uint32]*count{}
	var lastSeq uint64
	err := times.ForEach(func(k, v []byte) error {
		seq, num := binary.BigEndian.Uint64(k), binary.BigEndian.Uint32(v)
		if seq <= lastSeq {
			return fmt.Errorf("time: seq %d after %d", seq, lastSeq)
		}
		lastSeq = seq
		if records.Get(recordKey(nil, num, seq)) == nil {
			return fmt.Errorf("time: seq %d names object %d, which has no record %d", seq, num, seq)
		}
		c := perObject[num]
		if c == nil {
			c = &count{first: seq}
			perObject[num] = c
		}
		c.n++
		c.last = seq
		return nil
	})
	if err != nil {
		return err
	}
	if n, m := records.Stats().KeyN, times.Stats().KeyN; n != m {
		return fmt.Errorf("%d records, %d time entries", n, m)
	}
	uids := map[uint32]string{}
	tx.Bucket(bucketUIDs).ForEach(func(k, v []byte) error {
		uids[binary.BigEndian.Uint32(v)] = string(k)
		return nil
	})
	err = tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
		num := binary.BigEndian.Uint32(k)
		o, err := parseObject(num, v)
		if err != nil {
			return err
		}
		c := perObject[num]
		if c == nil {
			return fmt.Errorf("object %d (%s) has no records", num, o.UID)
		}
		if got, want := [3]uint64{o.Revisions, o.FirstSeq, o.LastSeq}, [3]uint64{c.n, c.first, c.last}; got != want {
			return fmt.Errorf("object %s: revisions, first, last seq %v; records say %v", o.UID, got, want)
		}
		if uids[num] != o.UID {
			return fmt.Errorf("object %d is %q, uids says %q", num, o.UID, uids[num])
		}
		delete(perObject, num)
		return nil
	})
	if err != nil {
		return err
	}
	if len(perObject) > 0 {
		return fmt.Errorf("%d objects have records and no summary", len(perObject))
	}
	err = tx.Bucket(bucketRefs).ForEach(func(k, v []byte) error {
		if len(k) != 8 || len(v) != 0 {
			return fmt.Errorf("refs entry %x: %x", k, v)
		}
		if _, ok := uids[binary.BigEndian.Uint32(k)]; !ok {
			return fmt.Errorf("refs entry %x: no UID has number %x", k, k[:4])
		}
		if tx.Bucket(bucketObjects).Get(k[4:]) == nil {
			return fmt.Errorf("refs entry %x: no object %x", k, k[4:])
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Where the gone index says it covers the file, every deletion of a
	// namespaced object is in it, until pruning removes the entries of
	// objects that go with others (prune.go).
	gs, err := strconv.ParseUint(string(tx.Bucket(bucketMeta).Get(metaGoneSeq)), 10, 64)
	if err != nil || gs != lastSeq || tx.Bucket(bucketPruned) != nil {
		return nil
	}
	gone := tx.Bucket(bucketGone)
	return tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
		o, err := parseObject(binary.BigEndian.Uint32(k), v)
		if err != nil {
			return err
		}
		if o.Deleted && indexedGone(&o) && (gone == nil || gone.Get(goneKey(&o)) == nil) {
			return fmt.Errorf("gone index: no entry for the deletion of %s %s/%s", o.Kind, o.Namespace, o.Name)
		}
		return nil
	})
}

// recordOpts compare records: JSON as text (go-cmp compares []byte byte
// by byte, slowly), times by their Equal method. Compare normalized records.
var recordOpts = cmp.Options{cmp.Transformer("json", func(m json.RawMessage) string { return string(m) })}

// normalized returns a copy of recs with empty Refs nil.
func normalized(recs []Record) []Record {
	out := slices.Clone(recs)
	for i := range out {
		if len(out[i].Refs) == 0 {
			out[i].Refs = nil
		}
	}
	return out
}

// diffRecords returns the differences of two lists of records, or "".
func diffRecords(want, got []Record) string {
	return cmp.Diff(normalized(want), normalized(got), recordOpts)
}

// writeAll writes recs in batches of size n and returns copies of them with
// the Seq they got.
func writeAll(t testing.TB, db *DB, recs []Record, n int) []Record {
	t.Helper()
	out := append([]Record(nil), recs...)
	for i := 0; i < len(out); i += n {
		batch := out[i:min(i+n, len(out))]
		if err := db.Write(batch); err != nil {
			t.Fatalf("Write(%d records): %v", len(batch), err)
		}
	}
	return out
}

// byUID groups records by object, in the order given.
func byUID(recs []Record) map[string][]Record {
	m := map[string][]Record{}
	for _, r := range recs {
		m[r.UID] = append(m[r.UID], r)
	}
	return m
}

// checkHistories checks that History returns exactly want's records of each
// object, JSON byte for byte.
func checkHistories(t testing.TB, db *DB, want []Record) {
	t.Helper()
	for uid, recs := range byUID(want) {
		got, err := db.History(uid)
		if err != nil {
			t.Fatalf("History(%s): %v", uid, err)
		}
		if diff := diffRecords(recs, got); diff != "" {
			t.Fatalf("History(%s) (-want +got):\n%s", uid, diff)
		}
	}
}

// scanAll returns every record Scan yields.
func scanAll(t testing.TB, db *DB) []Record {
	t.Helper()
	var got []Record
	if err := db.Scan(func(r Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return got
}

// payloads counts the records of the trace by payload encoding.
func payloads(t testing.TB, db *DB) map[byte]int {
	t.Helper()
	n := map[byte]int{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			n[v[1]&payloadMask]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
