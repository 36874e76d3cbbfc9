package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"
)

// Object summarizes the recorded history of one object: what it is, when it
// was seen first and last, how many revisions the trace holds.
type Object struct {
	UID        string
	APIVersion string
	Kind       string
	Namespace  string
	Name       string

	FirstSeq, LastSeq           uint64
	FirstObserved, LastObserved time.Time
	// Revisions is the number of records of the object.
	Revisions uint64
	// Deleted: the object's last record is a deletion (Deleted or
	// DeletedFinalStateUnknown).
	Deleted bool
	// Refs are the UIDs the object's records referred to (owners, an
	// Event's involvedObject), in the order they were first seen.
	Refs []string

	num uint32 // the object's number: its key in the objects bucket
}

// ObjectFilter selects objects; empty fields match anything.
type ObjectFilter struct {
	Kind       string // e.g. "Pod"; compared exactly
	APIVersion string // e.g. "apps/v1"
	Namespace  string
	Name       string
	UID        string
}

func (f ObjectFilter) match(o *Object) bool {
	return (f.Kind == "" || f.Kind == o.Kind) &&
		(f.APIVersion == "" || f.APIVersion == o.APIVersion) &&
		(f.Namespace == "" || f.Namespace == o.Namespace) &&
		(f.Name == "" || f.Name == o.Name) &&
		(f.UID == "" || f.UID == o.UID)
}

// objectIdentity is what a filter reads of an objects value, in place, with
// what tells whether the object is present at a moment.
type objectIdentity struct {
	uid, apiVersion, kind, namespace, name []byte

	deleted                     bool
	firstSeq, lastSeq           uint64
	firstObserved, lastObserved int64 // Unix nanoseconds; 0: unknown
}

func (f ObjectFilter) matchIdentity(id *objectIdentity) bool {
	return (f.Kind == "" || f.Kind == string(id.kind)) &&
		(f.APIVersion == "" || f.APIVersion == string(id.apiVersion)) &&
		(f.Namespace == "" || f.Namespace == string(id.namespace)) &&
		(f.Name == "" || f.Name == string(id.name)) &&
		(f.UID == "" || f.UID == string(id.uid))
}

// skimObject reads the identity of the object whose objects value is v, in
// place. ok is false when v is malformed (parseObject says how) or has a
// varint of more than 9 bytes (parseObject decides); ok implies that
// parseObject(v) succeeds.
func skimObject(v []byte) (id objectIdentity, ok bool) {
	if len(v) < 2 || v[0] != valueFormat {
		return id, false
	}
	i := 2 // format, flags
	// next skips a varint and returns its value if it fits in 63 bits.
	next := func() (uint64, bool) {
		var x uint64
		for n := 0; n < 9 && i < len(v); n++ {
			c := v[i]
			i++
			x |= uint64(c&0x7f) << (7 * n)
			if c < 0x80 {
				return x, true
			}
		}
		return 0, false
	}
	str := func() ([]byte, bool) {
		n, ok := next()
		if !ok || n > uint64(len(v)-i) {
			return nil, false
		}
		i += int(n)
		return v[i-int(n) : i], true
	}
	uid, ok1 := str()
	apiVersion, ok2 := str()
	kind, ok3 := str()
	namespace, ok4 := str()
	name, ok5 := str()
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return id, false
	}
	var n [5]uint64 // FirstSeq, LastSeq, FirstObserved, LastObserved, Revisions
	for k := range n {
		x, ok := next()
		if !ok {
			return id, false
		}
		n[k] = x
	}
	refs, ok := next()
	if !ok || refs > uint64(len(v)-i) {
		return id, false
	}
	for range refs {
		if _, ok := str(); !ok {
			return id, false
		}
	}
	if i != len(v) {
		return id, false
	}
	zigzag := func(x uint64) int64 { return int64(x>>1) ^ -int64(x&1) }
	return objectIdentity{
		uid: uid, apiVersion: apiVersion, kind: kind, namespace: namespace, name: name,
		deleted: v[1]&objectDeleted != 0, firstSeq: n[0], lastSeq: n[1],
		firstObserved: zigzag(n[2]), lastObserved: zigzag(n[3]),
	}, true
}

const objectDeleted = 0x01

// appendObject appends the objects value of o (its number is the key).
func appendObject(dst []byte, o *Object) []byte {
	var flags byte
	if o.Deleted {
		flags |= objectDeleted
	}
	dst = append(dst, valueFormat, flags)
	dst = appendString(dst, o.UID)
	dst = appendString(dst, o.APIVersion)
	dst = appendString(dst, o.Kind)
	dst = appendString(dst, o.Namespace)
	dst = appendString(dst, o.Name)
	dst = binary.AppendUvarint(dst, o.FirstSeq)
	dst = binary.AppendUvarint(dst, o.LastSeq)
	dst = appendTime(dst, o.FirstObserved)
	dst = appendTime(dst, o.LastObserved)
	dst = binary.AppendUvarint(dst, o.Revisions)
	dst = binary.AppendUvarint(dst, uint64(len(o.Refs)))
	for _, ref := range o.Refs {
		dst = appendString(dst, ref)
	}
	return dst
}

// parseObject parses the objects value v of object number num.
func parseObject(num uint32, v []byte) (Object, error) {
	o := Object{num: num}
	r := reader{b: v}
	if f := r.byte(); r.err == nil && f != valueFormat {
		return o, fmt.Errorf("%w: object %d: format %d, this build reads %d", errValue, num, f, valueFormat)
	}
	flags := r.byte()
	o.Deleted = flags&objectDeleted != 0
	o.UID = r.string()
	o.APIVersion = r.string()
	o.Kind = r.string()
	o.Namespace = r.string()
	o.Name = r.string()
	o.FirstSeq = r.uvarint()
	o.LastSeq = r.uvarint()
	o.FirstObserved = r.time()
	o.LastObserved = r.time()
	o.Revisions = r.uvarint()
	o.Refs = r.strings()
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d trailing bytes", errValue, len(r.b))
	}
	if r.err != nil {
		return o, fmt.Errorf("object %d: %w", num, r.err)
	}
	return o, nil
}

// sortObjects orders objects by kind, namespace, name, then first sighting.
func sortObjects(objs []Object) {
	slices.SortFunc(objs, func(a, b Object) int {
		return cmp.Or(
			cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.FirstSeq, b.FirstSeq))
	})
}
