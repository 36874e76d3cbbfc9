package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// readError wraps an error of a query once: a malformed value means a
// corrupt file.
func (db *DB) readError(what string, err error) error {
	var te *traceError
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, errValue), errors.Is(err, errDelta):
		return newError(ErrCorrupt, err, "%s in trace %q: the file is corrupt: %v", what, db.path, err)
	}
	return fmt.Errorf("%s in trace %q: %w", what, db.path, err)
}

// dictSet returns the file's dictionaries, loading them on first use and
// again when a write has added some.
func (db *DB) dictSet(tx *bolt.Tx) (*dictSet, error) {
	dicts := tx.Bucket(bucketDicts)
	var last uint32
	if k, _ := dicts.Cursor().Last(); len(k) == 4 {
		last = binary.BigEndian.Uint32(k)
	}
	db.dictMu.Lock()
	defer db.dictMu.Unlock()
	if db.dicts != nil && db.dicts.last == last {
		return db.dicts, nil
	}
	// A set another query may still use is left to the garbage collector:
	// DecodeAll-only decoders hold no goroutines.
	ds, err := loadDicts(dicts)
	if err != nil {
		return nil, err
	}
	db.dicts = ds
	return ds, nil
}

// revision is what decoding a delta needs of the revision before it.
type revision struct {
	json     []byte // the object as stored: JSON, or a pod's protobuf when proto
	refs     []string
	observed int64 // Unix nanoseconds; 0 for none
	proto    bool
}

func revisionOf(r *Record) *revision {
	return &revision{json: r.Object, refs: r.Refs, observed: unixNano(r.Observed), proto: r.Proto}
}

// decodeRecord decodes the records value v of object o at seq; prev is the
// object's previous revision, or nil. The record's Object is as stored:
// when Proto is set, a pod's protobuf that toJSON makes JSON of before the
// record leaves the store (the next revision's delta is against the
// protobuf).
func decodeRecord(ds *dictSet, o *Object, seq uint64, v []byte, prev *revision) (rec Record, err error) {
	return decodeRecordTo(nil, ds, o, seq, v, prev)
}

// decodeRecordTo is decodeRecord writing the JSON into buf's memory when it
// has room (nil: new memory); buf must not hold prev's JSON.
func decodeRecordTo(buf []byte, ds *dictSet, o *Object, seq uint64, v []byte, prev *revision) (rec Record, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("record %s/%d: %w", o.UID, seq, err)
		}
	}()
	h, err := parseValue(v)
	if err != nil {
		return Record{}, err
	}
	rec = Record{
		Seq:        seq,
		Session:    h.session,
		Observed:   fromUnixNano(h.observed),
		Type:       h.typ,
		APIVersion: o.APIVersion,
		Kind:       o.Kind,
		Namespace:  o.Namespace,
		Name:       o.Name,
		UID:        o.UID,
		Proto:      h.proto,
	}
	if h.relTime {
		if prev == nil || prev.observed == 0 {
			return rec, fmt.Errorf("%w: a relative time with no previous revision", errValue)
		}
		rec.Observed = fromUnixNano(prev.observed + h.observed)
	}
	if h.listIdentity {
		rec.APIVersion, rec.Kind, rec.Namespace, rec.Name = h.apiVersion, h.kind, h.namespace, h.name
	}
	switch h.payload {
	case payloadRaw:
		if buf == nil {
			rec.Object = bytes.Clone(h.body)
		} else {
			rec.Object = append(buf[:0], h.body...)
		}
	case payloadZstd:
		if rec.Object, err = ds.zstd.DecodeAll(h.body, buf[:0]); err != nil {
			return rec, fmt.Errorf("%w: zstd: %v", errValue, err)
		}
	case payloadDelta, payloadDictDelta:
		var prevJSON []byte
		if h.payload == payloadDelta {
			if prev == nil {
				return rec, fmt.Errorf("%w: a delta with no previous revision", errValue)
			}
			prevJSON = prev.json
		}
		id, n := binary.Uvarint(h.body)
		if n <= 0 || id > math.MaxUint32 {
			return rec, fmt.Errorf("%w: dictionary id", errValue)
		}
		dict, ok := ds.content[uint32(id)]
		if id != 0 && !ok {
			return rec, fmt.Errorf("%w: dictionary %d is missing", errValue, id)
		}
		if rec.Object, err = applyDelta(buf[:0], prevJSON, dict, h.body[n:]); err != nil {
			return rec, err
		}
	}
	if rec.ResourceVersion, err = h.rv.resolve(rec.Object); err != nil {
		return rec, err
	}
	switch {
	case h.listRefs:
		rec.Refs = make([]string, len(h.refs))
		for i, ref := range h.refs {
			if rec.Refs[i], err = ref.resolve(rec.Object); err != nil {
				return rec, err
			}
		}
	case h.payload == payloadDelta:
		rec.Refs = slices.Clone(prev.refs)
	}
	return rec, nil
}

// objectByNum returns the summary of object num, or nil.
func objectByNum(tx *bolt.Tx, num []byte) (*Object, error) {
	if len(num) != 4 {
		return nil, fmt.Errorf("%w: object number %x", errValue, num)
	}
	v := tx.Bucket(bucketObjects).Get(num)
	if v == nil {
		return nil, nil
	}
	o, err := parseObject(binary.BigEndian.Uint32(num), v)
	return &o, err
}

// objectByUID returns the summary of the object with uid, or nil: uids
// numbers the UIDs that records refer to (an owner, an Event's
// involvedObject) even when they were not recorded, and those have no
// summary.
func objectByUID(tx *bolt.Tx, uid string) (*Object, error) {
	num := tx.Bucket(bucketUIDs).Get([]byte(uid))
	if num == nil {
		return nil, nil
	}
	return objectByNum(tx, num)
}

// recordSeq returns the Seq of a records key of object num, or false if the
// key is another object's.
func recordSeq(k []byte, num uint32) (uint64, bool) {
	if len(k) != 12 || binary.BigEndian.Uint32(k) != num {
		return 0, false
	}
	return binary.BigEndian.Uint64(k[4:]), true
}

// History returns every recorded revision of the object with uid, in Seq
// order, each fully decoded.
func (db *DB) History(uid string) ([]Record, error) {
	var out []Record
	err := db.view(func(tx *bolt.Tx) error {
		o, err := objectByUID(tx, uid)
		if err != nil {
			return err
		}
		if o == nil {
			return newError(ErrNotFound, nil, "no object with UID %q in trace %q", uid, db.path)
		}
		ds, err := db.dictSet(tx)
		if err != nil {
			return err
		}
		out = make([]Record, 0, min(o.Revisions, 1<<16))
		var prev *revision
		c := tx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(numKey(o.num)); k != nil; k, v = c.Next() {
			seq, ok := recordSeq(k, o.num)
			if !ok {
				break
			}
			rec, err := decodeRecord(ds, o, seq, v, prev)
			if err != nil {
				return err
			}
			prev = revisionOf(&rec)
			if rec.Object, err = toJSON(nil, &rec); err != nil {
				return fmt.Errorf("record %s/%d: %w", o.UID, seq, err)
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, db.readError("read history of "+uid, err)
	}
	return out, nil
}

// Objects returns the summaries of the objects that match filter, ordered by
// kind, namespace, name and first sighting.
func (db *DB) Objects(filter ObjectFilter) ([]Object, error) {
	out, err := db.ObjectsOf(filter)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// ObjectsOf returns, for each filter, what Objects returns for it, reading
// the object summaries once for all of them: a command that needs several
// kinds of objects (the pods of a name, the webhook configurations, the
// namespaces and nodes) pays for one scan.
func (db *DB) ObjectsOf(filters ...ObjectFilter) ([][]Object, error) {
	out := make([][]Object, len(filters))
	scan := false
	for _, f := range filters {
		scan = scan || f.UID == ""
	}
	err := db.view(func(tx *bolt.Tx) error {
		for i, f := range filters {
			if f.UID == "" {
				continue
			}
			o, err := objectByUID(tx, f.UID)
			if err != nil {
				return err
			}
			if o != nil && f.match(o) {
				out[i] = append(out[i], *o)
			}
		}
		if !scan {
			return nil
		}
		return tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
			if len(k) != 4 {
				return fmt.Errorf("%w: object key %x", errValue, k)
			}
			id, ok := skimObject(v)
			var o *Object
			for i, f := range filters {
				if f.UID != "" || ok && !f.matchIdentity(&id) {
					continue
				}
				if o == nil {
					p, err := parseObject(binary.BigEndian.Uint32(k), v)
					if err != nil {
						return err
					}
					o = &p
				}
				if f.match(o) {
					out[i] = append(out[i], *o)
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, db.readError("list objects", err)
	}
	for _, objs := range out {
		sortObjects(objs)
	}
	return out, nil
}

// Referring returns the summaries of the objects whose records referred to
// uid (its Events, its dependents), in the order they were first seen.
func (db *DB) Referring(uid string) ([]Object, error) {
	var out []Object
	err := db.view(func(tx *bolt.Tx) error {
		prefix := tx.Bucket(bucketUIDs).Get([]byte(uid))
		if prefix == nil {
			return nil // nothing in the trace refers to uid
		}
		c := tx.Bucket(bucketRefs).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			o, err := objectByNum(tx, k[len(prefix):])
			if err != nil {
				return err
			}
			if o == nil {
				return fmt.Errorf("%w: a ref to %q names object %x, which is missing", errValue, uid, k[len(prefix):])
			}
			out = append(out, *o)
		}
		return nil
	})
	if err != nil {
		return nil, db.readError("find objects referring to "+uid, err)
	}
	slices.SortFunc(out, func(a, b Object) int { return cmp.Compare(a.FirstSeq, b.FirstSeq) })
	return out, nil
}

// scanRev is what Scan keeps of an object: its summary and last revision.
type scanRev struct {
	obj  *Object
	prev *revision
}

// fnError carries the error of Scan's callback back unwrapped.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }

// Scan calls fn with every record of the trace in Seq order, each fully
// decoded; fn owns the record. It stops at the first error fn returns and
// returns that error. fn must not call the DB's methods: it runs inside a
// read transaction.
func (db *DB) Scan(fn func(Record) error) error {
	return db.ScanAfter(0, nil, fn)
}

// revisionBefore decodes the revision of o that precedes seq: back to the
// last snapshot, then forward through the deltas.
func revisionBefore(records *bolt.Bucket, ds *dictSet, o *Object, seq uint64) (*revision, error) {
	c := records.Cursor()
	if k, _ := c.Seek(recordKey(nil, o.num, seq)); k == nil {
		return nil, fmt.Errorf("%w: record %s/%d is missing", errValue, o.UID, seq)
	}
	k, v := c.Prev()
	rev, _, err := decodeBack(c, k, v, ds, o, nil)
	return rev, err
}

// lastRevision decodes the last revision of o in the file, and says how
// many deltas it is from its snapshot. bufs, if not nil, lend their memory
// (see decodeBack).
func lastRevision(records *bolt.Bucket, ds *dictSet, o *Object, bufs *[2][]byte) (*revision, int, error) {
	c := records.Cursor()
	k, v := c.Seek(recordKey(nil, o.num, o.LastSeq))
	if s, ok := recordSeq(k, o.num); !ok || s != o.LastSeq {
		return nil, 0, fmt.Errorf("%w: record %s/%d is missing", errValue, o.UID, o.LastSeq)
	}
	return decodeBack(c, k, v, ds, o, bufs)
}

// decodeBack decodes the revision of o at the cursor's key k (value v):
// back to the last snapshot, then forward through the deltas. It returns
// the number of deltas after the snapshot.
//
// The revisions before the last are decoded into two buffers in turn, each
// the base of the next. bufs, if not nil, lends them and gets them back
// (grown): the returned revision's JSON is in bufs[0]'s memory, the caller's
// to keep, so it sets bufs[0] to nil.
func decodeBack(c *bolt.Cursor, k, v []byte, ds *dictSet, o *Object, bufs *[2][]byte) (*revision, int, error) {
	type kv struct {
		seq uint64
		v   []byte
	}
	var chain []kv
	for ; ; k, v = c.Prev() {
		s, ok := recordSeq(k, o.num)
		if !ok {
			return nil, 0, fmt.Errorf("%w: a delta of %s has no snapshot before it", errValue, o.UID)
		}
		chain = append(chain, kv{s, v})
		if isSnapshot(v) {
			break
		}
	}
	if bufs == nil {
		bufs = new([2][]byte)
	}
	var prev *revision
	for i := len(chain) - 1; i >= 0; i-- {
		rec, err := decodeRecordTo(bufs[i%2], ds, o, chain[i].seq, chain[i].v, prev)
		if err != nil {
			return nil, 0, err
		}
		bufs[i%2] = rec.Object
		prev = revisionOf(&rec)
	}
	bufs[0] = nil
	return prev, len(chain) - 1, nil
}

// Stats describe a trace file.
type Stats struct {
	Records  uint64
	Objects  uint64
	Sessions uint64
	// JSONBytes is the size of the objects of every record written, as
	// handed to the store (JSON, or a pod's protobuf: see Record.Proto):
	// what the trace would hold without deltas and compression.
	JSONBytes uint64
	// FileBytes is the size of the file; bbolt grows it ahead of need.
	FileBytes int64
	// DataBytes is the part of the file that holds pages (used or free).
	DataBytes int64
}

// Stats counts the trace's records, objects and sessions and sizes its file.
func (db *DB) Stats() (Stats, error) {
	var s Stats
	err := db.view(func(tx *bolt.Tx) error {
		s.Records = uint64(tx.Bucket(bucketTime).Stats().KeyN)
		s.Objects = uint64(tx.Bucket(bucketObjects).Stats().KeyN)
		s.Sessions = uint64(tx.Bucket(bucketSessions).Stats().KeyN)
		s.JSONBytes, _ = strconv.ParseUint(string(tx.Bucket(bucketMeta).Get(metaJSONBytes)), 10, 64)
		s.DataBytes = tx.Size()
		return nil
	})
	if err != nil {
		return s, db.readError("stats", err)
	}
	fi, err := os.Stat(db.path)
	if err != nil {
		return s, fmt.Errorf("stats of trace %q: %w", db.path, err)
	}
	s.FileBytes = fi.Size()
	return s, nil
}
