package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Revision is the state of one object at a moment: the last record of it
// observed at or before the moment (Deleted when that record is a
// deletion), and the Seq of its first record observed after the moment
// (0: none).
type Revision struct {
	Record
	NextSeq uint64
}

// At returns, for each of objs, its revision at t: the last record observed
// at or before t. Objects first observed after t are left out. It reads
// only the record headers up to t and decodes one revision per object (back
// to its snapshot), so its cost does not grow with what was recorded after
// t or with the histories of the objects not asked for.
func (db *DB) At(objs []Object, t time.Time) ([]Revision, error) {
	var out []Revision
	err := db.AtEach(objs, t, func(rev *Revision) error {
		r := *rev
		r.Object = bytes.Clone(rev.Object)
		out = append(out, r)
		return nil
	})
	return out, err
}

// AtEach is At calling fn with each revision, in the order of objs, inside
// one read transaction: the revision's Object is valid only until fn
// returns (its memory decodes the next), so that a caller that renders each
// revision and lets it go allocates none. fn must not call the DB's
// methods; its error is returned.
func (db *DB) AtEach(objs []Object, t time.Time, fn func(*Revision) error) error {
	tn := t.UnixNano()
	err := db.view(func(tx *bolt.Tx) error {
		ds, err := db.dictSet(tx)
		if err != nil {
			return err
		}
		records := tx.Bucket(bucketRecords)
		var bufs [2][]byte
		var pod []byte // a protobuf pod's JSON
		for i := range objs {
			o := &objs[i]
			if o.FirstObserved.After(t) {
				continue
			}
			var at, next uint64
			if !o.LastObserved.After(t) {
				at = o.LastSeq
			} else if at, next, err = seqAt(records, o, tn); err != nil {
				return err
			}
			if at == 0 {
				continue
			}
			c := records.Cursor()
			k, v := c.Seek(recordKey(nil, o.num, at))
			if s, ok := recordSeq(k, o.num); !ok || s != at {
				return fmt.Errorf("%w: record %s/%d is missing", errValue, o.UID, at)
			}
			rev, _, err := decodeBack(c, k, v, ds, o, &bufs)
			if err != nil {
				return err
			}
			rec, err := decodeHead(o, at, v, rev)
			if err != nil {
				return err
			}
			if rec.Proto {
				if rec.Object, err = toJSON(pod[:0], &rec); err != nil {
					return fmt.Errorf("record %s/%d: %w", o.UID, at, err)
				}
				pod = rec.Object
			}
			if err := fn(&Revision{Record: rec, NextSeq: next}); err != nil {
				return fnError{err}
			}
			bufs[0] = rev.json[:0] // fn is done with it: the next one's memory
		}
		return nil
	})
	if fe, ok := err.(fnError); ok {
		return fe.err
	}
	if err != nil {
		return db.readError("read objects at "+t.Format(time.RFC3339Nano), err)
	}
	return nil
}

// Present is what ObjectsAt finds of the objects a filter selects, at a
// moment.
type Present struct {
	// Objects were first observed at or before the moment and not gone by
	// then, ordered as Objects orders them. At tells each one's revision
	// then.
	Objects []Object
	// Gone is, of the objects gone by the moment (their last record a
	// deletion observed at or before it), the one whose deletion has the
	// highest Seq; nil if none is.
	Gone *Object
	// FirstAfter is the lowest FirstSeq of the objects first observed after
	// the moment (0: none).
	FirstAfter uint64
}

// ObjectsAt returns the summaries of the objects filter selects that are
// present at t, or may be: At says which revision each has then. The
// objects gone by t and those first observed after it are read in place,
// not decoded, and not kept: what ObjectsAt holds follows the objects
// present at t, not the length of the trace.
func (db *DB) ObjectsAt(filter ObjectFilter, t time.Time) (Present, error) {
	tn := t.UnixNano()
	var p Present
	var goneSeq uint64
	var goneKey []byte
	err := db.view(func(tx *bolt.Tx) error {
		if filter.UID != "" {
			o, err := objectByUID(tx, filter.UID)
			if err != nil || o == nil || !filter.match(o) {
				return err
			}
			switch {
			case o.FirstObserved.After(t):
				p.FirstAfter = o.FirstSeq
			case o.Deleted && !o.LastObserved.After(t):
				p.Gone = o
			default:
				p.Objects = append(p.Objects, *o)
			}
			return nil
		}
		objects := tx.Bucket(bucketObjects)
		err := objects.ForEach(func(k, v []byte) error {
			if len(k) != 4 {
				return fmt.Errorf("%w: object key %x", errValue, k)
			}
			id, ok := skimObject(v)
			if !ok {
				// parseObject says what is wrong, or reads what the
				// skim does not (a varint of ten bytes).
				o, err := parseObject(binary.BigEndian.Uint32(k), v)
				if err != nil {
					return err
				}
				id = identityOf(&o)
			}
			if !filter.matchIdentity(&id) {
				return nil
			}
			switch {
			case id.firstObserved > tn:
				if p.FirstAfter == 0 || id.firstSeq < p.FirstAfter {
					p.FirstAfter = id.firstSeq
				}
				return nil
			case id.deleted && id.lastObserved <= tn:
				if goneKey == nil || id.lastSeq > goneSeq {
					goneSeq, goneKey = id.lastSeq, append(goneKey[:0], k...)
				}
				return nil
			}
			o, err := parseObject(binary.BigEndian.Uint32(k), v)
			if err != nil {
				return err
			}
			p.Objects = append(p.Objects, o)
			return nil
		})
		if err != nil || goneKey == nil {
			return err
		}
		p.Gone, err = objectByNum(tx, goneKey)
		return err
	})
	if err != nil {
		return Present{}, db.readError("list objects at "+t.Format(time.RFC3339Nano), err)
	}
	sortObjects(p.Objects)
	return p, nil
}

// identityOf is the objectIdentity of a parsed summary.
func identityOf(o *Object) objectIdentity {
	return objectIdentity{
		uid: []byte(o.UID), apiVersion: []byte(o.APIVersion), kind: []byte(o.Kind),
		namespace: []byte(o.Namespace), name: []byte(o.Name), deleted: o.Deleted,
		firstSeq: o.FirstSeq, lastSeq: o.LastSeq,
		firstObserved: unixNano(o.FirstObserved), lastObserved: unixNano(o.LastObserved),
	}
}

// seqAt walks the record headers of o and returns the Seq of its last
// record observed at or before tn (0: none) and of the first after it.
func seqAt(records *bolt.Bucket, o *Object, tn int64) (at, next uint64, err error) {
	c := records.Cursor()
	var prev int64
	for k, v := c.Seek(numKey(o.num)); k != nil; k, v = c.Next() {
		seq, ok := recordSeq(k, o.num)
		if !ok {
			break
		}
		h, err := parseValue(v)
		if err != nil {
			return 0, 0, fmt.Errorf("record %s/%d: %w", o.UID, seq, err)
		}
		obs := h.observed
		if h.relTime {
			obs += prev
		}
		prev = obs
		if obs > tn {
			return at, seq, nil
		}
		at = seq
	}
	return at, 0, nil
}

// decodeHead fills the record of rev, the decoded revision at seq (value v).
func decodeHead(o *Object, seq uint64, v []byte, rev *revision) (Record, error) {
	h, err := parseValue(v)
	if err != nil {
		return Record{}, err
	}
	rec := Record{
		Seq: seq, Session: h.session, Observed: fromUnixNano(rev.observed), Type: h.typ,
		APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
		Refs: slices.Clone(rev.refs), Object: rev.json, Proto: rev.proto,
	}
	if h.listIdentity {
		rec.APIVersion, rec.Kind, rec.Namespace, rec.Name = h.apiVersion, h.kind, h.namespace, h.name
	}
	if rec.ResourceVersion, err = h.rv.resolve(rec.Object); err != nil {
		return rec, err
	}
	return rec, nil
}

// ErrStop, returned by ScanAfter's callback, stops the scan without error.
var ErrStop = errors.New("stop scan")

// ScanAfter is Scan from the first record whose Seq is greater than after,
// calling fn only with the records of the objects match accepts (match sees
// the summary before anything is decoded; nil accepts every object). fn
// returning ErrStop ends the scan and ScanAfter returns nil. Seqs start at
// 1: ScanAfter(0, nil, fn) is Scan.
func (db *DB) ScanAfter(after uint64, match func(*Object) bool, fn func(Record) error) error {
	cache := newLRU(db.opts.cacheBytes(), func(r *scanRev) int {
		if r.prev == nil {
			return 256
		}
		return len(r.prev.json) + 256
	})
	skip := map[string]bool{}
	err := db.view(func(tx *bolt.Tx) error {
		ds, err := db.dictSet(tx)
		if err != nil {
			return err
		}
		records := tx.Bucket(bucketRecords)
		var key []byte
		c := tx.Bucket(bucketTime).Cursor()
		for k, num := c.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil; k, num = c.Next() {
			if len(k) != 8 || len(num) != 4 {
				return fmt.Errorf("%w: time entry %x: %x", errValue, k, num)
			}
			if skip[string(num)] {
				continue
			}
			seq := binary.BigEndian.Uint64(k)
			key = append(append(key[:0], num...), k...)
			v := records.Get(key)
			if v == nil {
				return fmt.Errorf("%w: the time index names record %x, which is missing", errValue, key)
			}
			ent, ok := cache.get(string(num))
			if !ok {
				o, err := objectByNum(tx, num)
				if err != nil {
					return err
				}
				if o == nil {
					return fmt.Errorf("%w: record %x has no object summary", errValue, key)
				}
				if match != nil && !match(o) {
					skip[string(num)] = true
					continue
				}
				ent = &scanRev{obj: o}
				if !isSnapshot(v) || isRelative(v) {
					if ent.prev, err = revisionBefore(records, ds, o, seq); err != nil {
						return err
					}
				}
			}
			rec, err := decodeRecord(ds, ent.obj, seq, v, ent.prev)
			if err != nil {
				return err
			}
			ent.prev = &revision{json: rec.Object, refs: slices.Clone(rec.Refs), observed: unixNano(rec.Observed), proto: rec.Proto}
			cache.put(string(num), ent)
			if rec.Proto {
				rec.Object, err = toJSON(nil, &rec)
			} else {
				rec.Object = bytes.Clone(rec.Object)
			}
			if err != nil {
				return fmt.Errorf("record %s/%d: %w", ent.obj.UID, seq, err)
			}
			if err := fn(rec); err != nil {
				return fnError{err}
			}
		}
		return nil
	})
	var fe fnError
	if errors.As(err, &fe) {
		if errors.Is(fe.err, ErrStop) {
			return nil
		}
		return fe.err
	}
	if err != nil {
		return db.readError("scan", err)
	}
	return nil
}

// isRelative reports whether a records value's observed time is relative to
// the revision before it.
func isRelative(v []byte) bool { return len(v) > 1 && v[1]&flagRelTime != 0 }

// Kind is one apiVersion and kind the trace holds.
type Kind struct {
	APIVersion, Kind string
	// Namespaced: some object of the kind has a namespace.
	Namespaced bool
	// LastObserved is the latest LastObserved of its objects.
	LastObserved time.Time
}

// Kinds returns the kinds of the recorded objects, by apiVersion and kind.
// The summaries are read in place, not kept.
func (db *DB) Kinds() ([]Kind, error) {
	type key struct{ apiVersion, kind string }
	seen := map[key]*Kind{}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketObjects).ForEach(func(k, v []byte) error {
			id, ok := skimObject(v)
			if !ok {
				o, err := parseObject(binary.BigEndian.Uint32(k), v)
				if err != nil {
					return err
				}
				id = identityOf(&o)
			}
			kd := seen[key{string(id.apiVersion), string(id.kind)}]
			if kd == nil {
				kd = &Kind{APIVersion: string(id.apiVersion), Kind: string(id.kind)}
				seen[key{kd.APIVersion, kd.Kind}] = kd
			}
			kd.Namespaced = kd.Namespaced || len(id.namespace) > 0
			if last := fromUnixNano(id.lastObserved); last.After(kd.LastObserved) {
				kd.LastObserved = last
			}
			return nil
		})
	})
	if err != nil {
		return nil, db.readError("list kinds", err)
	}
	out := make([]Kind, 0, len(seen))
	for _, kd := range seen {
		out = append(out, *kd)
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if a.APIVersion != b.APIVersion {
			return strings.Compare(a.APIVersion, b.APIVersion)
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out, nil
}
