package diff

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// decoder decodes the revisions of one pod in order. Consecutive revisions
// mostly repeat each other, so the decoder splits each revision's JSON into
// pieces, decodeLevels deep, and decodes only the pieces whose bytes
// changed since the previous revision; the others are copied from it. The
// result is what json.Unmarshal gives, but revisions share the memory of
// the parts they have in common: they must not be modified. The walker
// skips shared parts without looking into them.
type decoder struct {
	prev    reflect.Value // the previous revision's corev1.Pod, or invalid
	prevObj object        // the previous revision's JSON, split
	split   splitter
	strings interner
}

// decodeLevels is how many levels of the pod decode piece by piece: the
// pod, its metadata, spec and status, their fields, and the elements of
// their lists (a container status, a managedFields entry).
const decodeLevels = 6

func (d *decoder) decode(rec store.Record) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	obj, err := d.decodeValue(reflect.ValueOf(pod).Elem(), podDecodeType, rec.Object, nil, d.prev, d.prevObj, decodeLevels)
	if err != nil {
		// Start over in one piece, for encoding/json's own verdict.
		pod, obj = &corev1.Pod{}, nil
		if err := json.Unmarshal(rec.Object, pod); err != nil {
			return nil, fmt.Errorf("decode pod %s/%s revision %s (record %d): %w", rec.Namespace, rec.Name, rec.ResourceVersion, rec.Seq, err)
		}
	}
	if d.split.blocks >= compactBlocks {
		obj = d.split.compact(obj)
	}
	d.prev, d.prevObj = reflect.ValueOf(pod).Elem(), obj
	return pod, nil
}

// decodeInto decodes raw into dst, an addressable zero value of type dt,
// against the previous value this decoder decoded (of the same type), as
// decode does a pod's revisions; what fails piece by piece is decoded by
// encoding/json.
func (d *decoder) decodeInto(dst reflect.Value, dt *decodeType, raw []byte) error {
	obj, err := d.decodeValue(dst, dt, raw, nil, d.prev, d.prevObj, decodeLevels)
	if err != nil {
		dst.SetZero()
		obj = nil
		if err := json.Unmarshal(raw, dst.Addr().Interface()); err != nil {
			d.prev, d.prevObj = reflect.Value{}, nil
			return err
		}
	}
	if d.split.blocks >= compactBlocks {
		obj = d.split.compact(obj)
	}
	d.prev, d.prevObj = dst, obj
	return nil
}

// member is one member of a JSON object, or one element of a list. It
// holds its bytes as pointers and 32-bit lengths (40 bytes, two pointers,
// where slices took 80 and three): members are made by the tens for each
// revision, and copied, and their memory kept.
type member struct {
	// val is the first byte of the value; the key ends before it in the
	// same bytes: keyOff bytes before it starts the key, of keyLen bytes.
	val *byte
	// sub is the value split (its first member), when it was decoded
	// piece by piece. Before it is decoded, a member may hold its split
	// already: the splitter splits a changed member as the previous
	// revision's member was. subLen is -1 when there is no sub.
	sub    *member
	valLen uint32
	subLen int32
	keyOff uint32
	keyLen uint32
	// field is the index of the member's struct field in its
	// decodeType's field, plus one, once decodeStruct found it; 0 before.
	field int32
	// same says that value is the bytes of the previous revision's
	// member of that key (element at that index) that split compared;
	// differs, that it is not.
	same, differs bool
	// aligned says that the previous revision's member at this index
	// had this key (the splitter found it so).
	aligned bool
}

// maxSplit is the length of the longest JSON the splitter splits: a
// member's lengths are 32 bits.
const maxSplit = math.MaxInt32

// set makes m a member for the value b[i:end] (i < end), not split, with
// no key. It writes each field (m may hold an earlier member): a struct
// assigned whole would be cleared first, through write barriers.
func (m *member) set(b []byte, i, end int) {
	m.val, m.sub = &b[i], nil
	m.valLen, m.subLen = uint32(end-i), -1
	m.keyOff, m.keyLen, m.field = 0, 0, 0
	m.same, m.differs, m.aligned = false, false, false
}

// value returns the member's JSON value.
func (m *member) value() []byte { return unsafe.Slice(m.val, m.valLen) }

// key returns the member's key, nil for a list element.
func (m *member) key() []byte {
	if m.keyOff == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(m.val), -int(m.keyOff))), m.keyLen)
}

// setKey sets the member's key: n bytes that start off bytes before its
// value, in the same JSON.
func (m *member) setKey(off, n int) { m.keyOff, m.keyLen = uint32(off), uint32(n) }

// getSub returns the value split, or nil.
func (m *member) getSub() object {
	if m.subLen < 0 {
		return nil
	}
	return unsafe.Slice(m.sub, m.subLen)
}

// setSub sets the value split, nil for none.
func (m *member) setSub(o object) {
	if o == nil {
		m.sub, m.subLen = nil, -1
		return
	}
	m.sub, m.subLen = unsafe.SliceData(o), int32(len(o))
}

// copySub sets m's split to pm's.
func (m *member) copySub(pm *member) { m.sub, m.subLen = pm.sub, pm.subLen }

// object is a JSON object split into its members, or a list into its
// elements.
type object []member

// index returns the index of the element whose JSON is value, or -1; i is
// where to look first.
func (o object) index(value []byte, i int) int {
	if i < len(o) && bytes.Equal(o[i].value(), value) {
		return i
	}
	for j := range o {
		if bytes.Equal(o[j].value(), value) {
			return j
		}
	}
	return -1
}

// find returns the member named key; i is where to look first.
func (o object) find(key []byte, i int) *member {
	if i < len(o) && bytes.Equal(o[i].key(), key) {
		return &o[i]
	}
	for j := range o {
		if bytes.Equal(o[j].key(), key) {
			return &o[j]
		}
	}
	return nil
}

// decodeValue decodes raw into dst, an addressable zero value, as
// json.Unmarshal would. Levels deep, it decodes structs member by member and
// lists element by element: a member or element whose bytes are in prevObj
// is copied from prev, the value prevObj was decoded into. It returns raw
// split for the next revision, or nil when raw was decoded whole.
//
// pre, when not nil, is raw split already (against prevObj). dt is
// decodeTypeOf(dst.Type()).
func (d *decoder) decodeValue(dst reflect.Value, dt *decodeType, raw []byte, pre object, prev reflect.Value, prevObj object, levels int) (object, error) {
	if levels > 0 {
		switch dst.Kind() {
		case reflect.Struct:
			if dt.fields != nil {
				obj, ok := pre, pre != nil && len(raw) > 0 && raw[0] == '{'
				if !ok {
					obj, ok = d.split.objectAgainst(raw, prevObj)
				}
				if ok {
					return d.decodeStruct(dst, raw, dt, obj, prev, prevObj, levels)
				}
			}
		case reflect.Pointer:
			// A pointer to a struct decodes as that struct (a container's
			// state.running, say), at the same level: it is no level of
			// the JSON. null goes to decodeLeaf.
			et := dst.Type().Elem()
			if et.Kind() == reflect.Struct && dt.elemType().fields != nil && len(raw) > 0 && raw[0] == '{' {
				e := reflect.New(et)
				var pv reflect.Value
				if prev.IsValid() && !prev.IsNil() {
					pv = prev.Elem()
				}
				obj, err := d.decodeValue(e.Elem(), dt.elemType(), raw, pre, pv, prevObj, levels)
				if err != nil {
					return nil, err
				}
				dst.Set(e)
				return obj, nil
			}
		case reflect.Slice:
			if !dt.self {
				elems, ok := pre, pre != nil && len(raw) > 0 && raw[0] == '['
				if !ok {
					elems, ok = d.split.arrayAgainst(raw, prevObj)
				}
				if ok && len(elems) > 0 {
					return elems, d.decodeSlice(dst, dt.elemType(), elems, prev, prevObj, levels)
				}
			}
		}
	}
	if d.strings.decodeLeaf(dst, dt, raw) {
		return nil, nil
	}
	return nil, json.Unmarshal(raw, dst.Addr().Interface())
}

// decodeStruct decodes raw, split into obj, into struct dst (of type dt)
// member by member.
func (d *decoder) decodeStruct(dst reflect.Value, raw []byte, dt *decodeType, obj object, prev reflect.Value, prevObj object, levels int) (object, error) {
	// aligned: the members have the keys of the previous revision's, in
	// their order.
	aligned := prev.IsValid() && len(obj) == len(prevObj)
	for i := range obj {
		m := &obj[i]
		// The field of the previous revision's member of that key, if
		// it is that key's field in this type: no lookup by name. prevObj
		// was decoded as this type, so where the splitter found the
		// member aligned with the previous one, its field is this key's.
		if m.aligned && prevObj[i].field > 0 {
			m.field = prevObj[i].field
			continue
		}
		aligned = false
		key := m.key()
		if pm := prevObj.find(key, i); pm != nil && pm.field > 0 && int(pm.field) <= len(dt.field) && dt.field[pm.field-1].name == string(key) {
			m.field = pm.field
			continue
		}
		k, known := dt.fields[string(key)]
		if !known {
			// Unknown, or matched by encoding/json case-insensitively.
			return nil, json.Unmarshal(raw, dst.Addr().Interface())
		}
		m.field = k + 1
	}
	// Each member is copied from the previous revision's member of its
	// key where their bytes are the same, and decoded where not. Fields
	// the JSON does not set stay zero, as in the previous revision (when
	// aligned, it set the same ones): the struct is not copied whole, as
	// most of what a changed struct holds changed with it. Leaf fields are
	// copied and decoded through their address.
	base := dst.Addr().UnsafePointer()
	var prevBase unsafe.Pointer
	if prev.IsValid() && prev.CanAddr() {
		prevBase = prev.Addr().UnsafePointer()
	}
	for i := range obj {
		m := &obj[i]
		fp := dt.plan[m.field-1]
		var pm *member
		if aligned {
			pm = &prevObj[i]
		} else {
			pm = prevObj.find(m.key(), i)
		}
		same := pm != nil && (m.same || !m.differs && bytes.Equal(pm.value(), m.value()))
		if fp.leaf != leafNone {
			p := unsafe.Add(base, fp.offset)
			if same && prevBase != nil {
				fp.leaf.copy(p, unsafe.Add(prevBase, fp.offset))
				m.copySub(pm)
				continue
			}
			if !same && d.strings.decodeAt(p, fp.leaf, m.value()) {
				m.setSub(nil)
				continue
			}
		}
		fd := dt.field[m.field-1]
		f := dst.FieldByIndex(fd.index)
		if same {
			f.Set(prev.FieldByIndex(fd.index))
			m.copySub(pm)
			continue
		}
		var pv reflect.Value
		var po object
		if pm != nil {
			pv, po = prev.FieldByIndex(fd.index), pm.getSub()
		}
		sub, err := d.decodeValue(f, fd.decodeType(), m.value(), m.getSub(), pv, po, levels-1)
		if err != nil {
			return nil, err
		}
		m.setSub(sub)
	}
	return obj, nil
}

// decodeSlice decodes the elements elems into dst, a nil slice of
// elements of type et. An element that changed is decoded against the one
// that was at its place.
func (d *decoder) decodeSlice(dst reflect.Value, et *decodeType, elems object, prev reflect.Value, prevElems object, levels int) error {
	// Grown in place: MakeSlice would allocate a header for its Value too.
	// Capacity is cut to the length: revisions share their lists, and an
	// append to one must not write into another's.
	dst.Grow(len(elems))
	dst.SetLen(len(elems))
	dst.SetCap(len(elems))
	for i := range elems {
		e := &elems[i]
		j := -1
		if e.same {
			j = i
		} else {
			j = prevElems.index(e.value(), i)
		}
		if j >= 0 {
			dst.Index(i).Set(prev.Index(j))
			e.copySub(&prevElems[j])
			continue
		}
		var pv reflect.Value
		var po object
		if i < len(prevElems) {
			pv, po = prev.Index(i), prevElems[i].getSub()
		}
		sub, err := d.decodeValue(dst.Index(i), et, e.value(), e.getSub(), pv, po, levels-1)
		if err != nil {
			return err
		}
		e.setSub(sub)
	}
	return nil
}

// decodeType is what the decoder needs to know of a type.
type decodeType struct {
	// self: encoding/json hands its values to their own UnmarshalJSON or
	// UnmarshalText.
	self bool
	// unmarshaler: to their UnmarshalJSON.
	unmarshaler bool
	// fields maps the JSON names of a struct's fields to their index in
	// field, or is nil when encoding/json should decode the struct whole:
	// it decodes itself, or has fields whose names or options this simple
	// mapping does not follow. Names are matched exactly; encoding/json
	// would also match them case-insensitively, so decodeStruct leaves
	// objects with other names to it.
	fields map[string]int32
	field  []*decodeField
	// plan is field's offsets and leaf kinds, side by side: most members
	// decodeStruct decodes or copies need no more.
	plan []fieldPlan

	t    reflect.Type
	elem atomic.Pointer[decodeType] // of t.Elem(), once asked for
}

// fieldPlan is where a decodeField is and its leafKind.
type fieldPlan struct {
	offset uintptr
	leaf   leafKind
}

// decodeField is a struct field the decoder decodes by its JSON name.
type decodeField struct {
	name  string
	index []int
	t     reflect.Type
	dt    atomic.Pointer[decodeType] // of t, once asked for
	// offset is where the field is in the outer struct: its index goes
	// through structs inlined by value only (see addJSONFields).
	offset uintptr
	// leaf says how the decoder decodes and copies the field at offset
	// without reflect, or is leafNone.
	leaf leafKind
}

// decodeType returns decodeTypeOf(f.t), kept with f after the first time.
func (f *decodeField) decodeType() *decodeType {
	if dt := f.dt.Load(); dt != nil {
		return dt
	}
	dt := decodeTypeOf(f.t)
	f.dt.Store(dt)
	return dt
}

// elemType returns decodeTypeOf(t.Elem()) for a pointer or slice type,
// kept with dt after the first time.
func (dt *decodeType) elemType() *decodeType {
	if e := dt.elem.Load(); e != nil {
		return e
	}
	e := decodeTypeOf(dt.t.Elem())
	dt.elem.Store(e)
	return e
}

var decodeTypes sync.Map // reflect.Type -> *decodeType

var podDecodeType = decodeTypeOf(reflect.TypeFor[corev1.Pod]())

// decodeTypeOf returns what the decoder needs to know of type t.
func decodeTypeOf(t reflect.Type) *decodeType {
	if v, ok := decodeTypes.Load(t); ok {
		return v.(*decodeType)
	}
	p := reflect.PointerTo(t)
	dt := &decodeType{t: t, unmarshaler: p.Implements(unmarshalerType)}
	dt.self = dt.unmarshaler || p.Implements(textUnmarshalerType)
	if t.Kind() == reflect.Struct && !dt.self {
		byName := map[string][]int{}
		if addJSONFields(t, nil, byName) {
			dt.fields = make(map[string]int32, len(byName))
			for name, index := range byName {
				dt.fields[name] = int32(len(dt.field))
				ft := t.FieldByIndex(index).Type
				fd := &decodeField{name: name, index: index, t: ft, offset: fieldOffset(t, index), leaf: leafOf(ft)}
				dt.field = append(dt.field, fd)
				dt.plan = append(dt.plan, fieldPlan{offset: fd.offset, leaf: fd.leaf})
			}
		}
	}
	v, _ := decodeTypes.LoadOrStore(t, dt)
	return v.(*decodeType)
}

// fieldOffset returns the offset in struct t of the field at index, which
// goes through no pointer.
func fieldOffset(t reflect.Type, index []int) uintptr {
	var off uintptr
	for _, i := range index {
		f := t.Field(i)
		off += f.Offset
		t = f.Type
	}
	return off
}

// addJSONFields adds the fields of struct t, at index in the outer struct,
// to fields, and reports whether it could.
func addJSONFields(t reflect.Type, index []int, fields map[string][]int) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		at := append(append([]int(nil), index...), i)
		if f.Anonymous && name == "" {
			// Inlined: its fields are the outer struct's.
			if f.Type.Kind() != reflect.Struct || !addJSONFields(f.Type, at, fields) {
				return false
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if strings.Contains(","+opts+",", ",string,") {
			return false
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fields[name]; dup {
			return false
		}
		fields[name] = at
	}
	return true
}

// splitter splits JSON objects and lists. It builds each in room it cuts
// from blocks of members it allocates a few at a time (members were one
// allocation per object), or in a scratch stack first when it cannot tell
// how many members an object has: what it returned is never written by it
// again until the owner compacts.
//
// A block lives as long as any object cut from it: the objects of one
// revision that the next one shares keep all of that revision's alive,
// and those the ones they share, back to the first revision. The owner
// compacts what it keeps (see compact) when blocks says it took enough to
// matter; the blocks are then taken again, not allocated anew.
type splitter struct {
	scratch []member // the members of the objects being split, innermost last
	block   []member // where finished objects are cut from: len is what is taken
	blocks  int      // how many blocks it took since the last compact
	// used is the blocks taken since the last compact (the copy it made
	// among them); free is blocks that hold nothing the owner keeps, to
	// take; spare is a list for used, not to allocate one each compact.
	used, free, spare [][]member
}

// compactBlocks is how many blocks a splitter makes before its owner
// compacts what it keeps of them.
const compactBlocks = 8

// splitBlock is how many members a splitter allocates at a time.
const splitBlock = 128

// emptyObject is an empty object or list, split: not nil.
var emptyObject = object{}

// finish returns the members from scratch[base:] as an object of their own,
// and drops them from scratch.
func (s *splitter) finish(base int) object {
	n := len(s.scratch) - base
	if n == 0 {
		return emptyObject
	}
	obj := s.take(n)
	copy(obj, s.scratch[base:])
	s.scratch = s.scratch[:base]
	return obj
}

// take returns room for n members, cut from the block.
func (s *splitter) take(n int) object {
	if len(s.block)+n > cap(s.block) {
		s.newBlock(n)
	}
	k := len(s.block)
	s.block = s.block[:k+n]
	return s.block[k : k+n : k+n]
}

// newBlock makes block a block with room for n members at least: one
// that is free, or a new one.
func (s *splitter) newBlock(n int) {
	if k := len(s.free) - 1; k >= 0 && n <= cap(s.free[k]) {
		s.block, s.free[k] = s.free[k][:0], nil
		s.free = s.free[:k]
	} else {
		s.block = make([]member, 0, max(splitBlock, n))
	}
	s.used = append(s.used, s.block)
	s.blocks++
}

// compact returns a copy of obj and of the objects it holds, cut from
// blocks that hold nothing else the owner keeps. The copy is what obj is,
// to read and split against, and replaces it: the owner keeps no object
// it had from the splitter but obj, and uses none of them after, for the
// blocks they were cut from are free from then on, to be written again.
func (s *splitter) compact(obj object) object {
	// The copy goes to free blocks, or new ones: none that obj is in.
	old := s.used
	s.used, s.spare = s.spare[:0], nil
	s.block = nil
	out := s.copyObject(obj)
	for i, b := range old {
		if cap(b) >= splitBlock {
			s.free = append(s.free, b)
		}
		old[i] = nil
	}
	s.spare = old[:0]
	s.blocks = 0
	return out
}

// copyObject copies obj, and the objects it holds, to room taken from
// blocks.
func (s *splitter) copyObject(obj object) object {
	if len(obj) == 0 {
		return obj // nil, or emptyObject
	}
	out := s.take(len(obj))
	copy(out, obj)
	for i := range out {
		out[i].setSub(s.copyObject(out[i].getSub()))
	}
	return out
}

// objectAgainst splits a JSON object, whose previous revision was split
// into prev, into its members without decoding them (a changed member is
// validated when it is decoded; an unchanged one was, in an earlier
// revision). It reports false for what it does not handle simply: not an
// object, escaped or repeated keys, bytes after the object. A member whose bytes start as the previous revision's
// member of that key did, with an object, a list or a string, and are the
// same, is taken as a whole without scanning it (a scan would end where
// those bytes end) and marked same. A member that changed and was split in
// the previous revision is split the same way, into its sub, and scanned
// only there.
func (s *splitter) objectAgainst(b []byte, prev object) (object, bool) {
	if len(b) > maxSplit {
		return nil, false
	}
	i := skipSpace(b, 0)
	obj, end, ok := s.objectAt(b, i, prev)
	return obj, ok && skipSpace(b, end) == len(b)
}

// arrayAgainst splits a list whose previous revision was split into prev
// into its elements: an element is compared with, or split as, the previous
// revision's element at its index, as in objectAgainst.
func (s *splitter) arrayAgainst(b []byte, prev object) (object, bool) {
	if len(b) > maxSplit {
		return nil, false
	}
	i := skipSpace(b, 0)
	elems, end, ok := s.arrayAt(b, i, prev)
	return elems, ok && skipSpace(b, end) == len(b)
}

// reserve returns room for n members, cut from the block, for an object
// or list that is expected to have that many (its previous revision's),
// or nil: then its members go to scratch. Members split into the room are
// not copied again; room an object does not fill is left unused.
func (s *splitter) reserve(n int) object {
	if n == 0 || n > splitBlock {
		return nil
	}
	return s.take(n)
}

// objectAt splits the object at b[i:] against prev, and returns where it
// ends.
func (s *splitter) objectAt(b []byte, i int, prev object) (object, int, bool) {
	if i >= len(b) || b[i] != '{' {
		return nil, 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return emptyObject, i + 1, true
	}
	// The members go to out, n of them so far, and to scratch[base:]
	// once they are more than out holds (or there is no out).
	out := s.reserve(len(prev))
	base, n := len(s.scratch), 0
	scratch := out == nil
	fail := func() (object, int, bool) {
		s.scratch = s.scratch[:base]
		return nil, 0, false
	}
	// aligned: the keys so far are prev's first keys, in order. prev was
	// split, so they hold no escape and no key twice.
	aligned := true
	for {
		if i == len(b) || b[i] != '"' {
			return fail()
		}
		// The key is b[k:k+end]: where aligned, prev[n]'s key (then
		// the quote after it ends it), else found and checked.
		k, end := i+1, 0
		var pm *member
		if aligned && n < len(prev) {
			if pk := prev[n].key(); k+len(pk) < len(b) && b[k+len(pk)] == '"' && string(b[k:k+len(pk)]) == string(pk) {
				pm, end = &prev[n], len(pk)
			}
		}
		if pm == nil {
			aligned = false
			end = bytes.IndexByte(b[k:], '"')
			if end < 0 {
				return fail()
			}
			key := b[k : k+end]
			sofar := out[:min(n, len(out))]
			if scratch {
				sofar = s.scratch[base:]
			}
			if bytes.IndexByte(key, '\\') >= 0 || sofar.find(key, n) != nil {
				return fail()
			}
			pm = prev.find(key, n)
		}
		i = skipSpace(b, i+end+2)
		if i == len(b) || b[i] != ':' {
			return fail()
		}
		i = skipSpace(b, i+1)
		if !scratch && n == len(out) {
			s.scratch = append(s.scratch, out...)
			scratch = true
		}
		// m: the member's place in out, or tmp, to append to scratch
		// once split (splitting it may append to scratch).
		var tmp member
		m := &tmp
		if !scratch {
			m = &out[n]
		}
		if !s.member(m, b, i, pm) {
			return fail()
		}
		m.setKey(i-k, end)
		m.aligned = aligned
		if scratch {
			s.scratch = append(s.scratch, tmp)
		}
		n++
		i = skipSpace(b, i+int(m.valLen))
		if i == len(b) {
			return fail()
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			if scratch {
				return s.finish(base), i + 1, true
			}
			return out[:n:n], i + 1, true
		default:
			return fail()
		}
	}
}

// arrayAt splits the list at b[i:] against prev, and returns where it ends.
func (s *splitter) arrayAt(b []byte, i int, prev object) (object, int, bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return emptyObject, i + 1, true
	}
	// As in objectAt.
	out := s.reserve(len(prev))
	base, n := len(s.scratch), 0
	scratch := out == nil
	for {
		var pm *member
		if n < len(prev) {
			pm = &prev[n]
		}
		if !scratch && n == len(out) {
			s.scratch = append(s.scratch, out...)
			scratch = true
		}
		var tmp member
		m := &tmp
		if !scratch {
			m = &out[n]
		}
		if !s.member(m, b, i, pm) {
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
		if scratch {
			s.scratch = append(s.scratch, tmp)
		}
		n++
		i = skipSpace(b, i+int(m.valLen))
		if i == len(b) {
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			if scratch {
				return s.finish(base), i + 1, true
			}
			return out[:n:n], i + 1, true
		default:
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
	}
}

// member splits the value at b[i:] into *m, a member or element whose
// previous revision is pm (or nil): the same bytes, split as pm was, or
// scanned. It marks m differs where it compared the bytes with pm's.
func (s *splitter) member(m *member, b []byte, i int, pm *member) bool {
	differs := false
	if pm != nil && pm.valLen >= 2 {
		pv := pm.value()
		switch pv[0] {
		case '{', '[', '"':
			if uint(len(b)-i) >= uint(len(pv)) && bytes.Equal(b[i:i+len(pv)], pv) {
				m.set(b, i, i+len(pv))
				m.same = true
				return true
			}
			differs = true
		}
		// A value shorter than pm's is split as pm was too.
		if pm.subLen >= 0 && i < len(b) && b[i] == pv[0] {
			var sub object
			var end int
			var ok bool
			if b[i] == '{' {
				sub, end, ok = s.objectAt(b, i, pm.getSub())
			} else {
				sub, end, ok = s.arrayAt(b, i, pm.getSub())
			}
			if ok {
				m.set(b, i, end)
				m.setSub(sub)
				m.differs = differs
				return true
			}
		}
	}
	end, ok := skipValue(b, i)
	if !ok {
		return false
	}
	m.set(b, i, end)
	m.differs = differs
	return true
}

// skipValue returns the end of the JSON value at b[i:].
func skipValue(b []byte, i int) (int, bool) {
	start, depth := i, 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, ok := stringEnd(b, i+1)
			if !ok {
				return 0, false
			}
			if depth == 0 {
				return end, true
			}
			i = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i, i > start
			}
			depth--
			if depth == 0 {
				return i + 1, true
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, i > start
			}
		}
	}
	return i, depth == 0 && i > start
}

// stringEnd returns the end of the JSON string whose text starts at b[i:].
func stringEnd(b []byte, i int) (int, bool) {
	// Most strings (keys, names, reasons) end within a few bytes, sooner
	// found by a loop than by IndexByte; an escape is left to the loop
	// below.
	for end := min(len(b), i+16); i < end && b[i] != '\\'; i++ {
		if b[i] == '"' {
			return i + 1, true
		}
	}
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, false
		}
		i += q
		// The quote ends the string unless an odd number of backslashes
		// escape it.
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i + 1, true
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	numberType          = reflect.TypeFor[json.Number]()
)

// decodeLeaf decodes into dst, a zero value, the JSON values that need no
// encoding/json to decode as it would: null; true and false; integers;
// strings without escapes, in valid UTF-8; these behind a pointer; and
// such a string or integer given whole to a type's UnmarshalJSON, as
// encoding/json gives it. It reports false, having changed nothing, for
// anything else.
func decodeLeaf(dst reflect.Value, dt *decodeType, raw []byte) bool {
	var in *interner
	return in.decodeLeaf(dst, dt, raw)
}

// interner keeps the short strings a decoder decoded, to give the same
// string again when it comes again (a condition's "True", a waiting
// reason) instead of allocating it anew. A nil interner keeps none.
type interner struct {
	m map[string]string
	// times is the last few metav1.Times decoded, by their JSON: one
	// revision sets the same time in several fields (a condition's
	// lastTransitionTime, a container's startedAt, a managedFields entry).
	times [4]decodedTime
	next  int // the entry of times to replace next
}

type decodedTime struct {
	raw string
	t   metav1.Time
}

// internMax is the length of the longest string an interner keeps: longer
// ones (IDs, messages) rarely come again.
const internMax = 32

// str returns b as a string.
func (in *interner) str(b []byte) string {
	if in == nil || len(b) > internMax {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if in.m == nil || len(in.m) >= 1024 {
		// Sized for the short strings of a pod's revisions: about 50.
		in.m = make(map[string]string, 64)
	}
	s := string(b)
	in.m[s] = s
	return s
}

// decodeLeaf is decodeLeaf, with the strings it decodes kept in in.
func (in *interner) decodeLeaf(dst reflect.Value, dt *decodeType, raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	t := dst.Type()
	kind := t.Kind()
	if kind == reflect.Pointer {
		if string(raw) == "null" {
			return true // encoding/json sets a pointer to nil without looking further
		}
		if dt.self {
			return false
		}
		e := reflect.New(t.Elem())
		if !in.decodeLeaf(e.Elem(), dt.elemType(), raw) {
			return false
		}
		dst.Set(e)
		return true
	}
	if dt.self {
		if t == metaTimeType {
			return in.decodeMetaTime(dst, raw)
		}
		if !dt.unmarshaler || (!simpleString(raw) && !jsonInt(raw)) {
			return false
		}
		return dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(raw) == nil
	}
	if string(raw) == "null" {
		switch kind {
		case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64,
			reflect.Slice, reflect.Map, reflect.Struct, reflect.Interface:
			return true // null leaves a value as it is: zero
		}
		return false
	}
	switch kind {
	case reflect.String:
		if t == numberType || !simpleString(raw) {
			return false
		}
		dst.SetString(in.str(raw[1 : len(raw)-1]))
		return true
	case reflect.Bool:
		switch string(raw) {
		case "true":
			dst.SetBool(true)
			return true
		case "false":
			return true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !jsonInt(raw) {
			return false
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || dst.OverflowInt(n) {
			return false
		}
		dst.SetInt(n)
		return true
	}
	return false
}

// leafKind is a type of field whose values decodeLeaf decodes, that the
// decoder decodes and copies through its address without reflect:
// decodeAt decodes what decodeLeaf would, as it would.
type leafKind uint8

const (
	leafNone      leafKind = iota
	leafString             // a string kind, not json.Number, decoding itself in no way
	leafBool               // a bool kind, likewise
	leafInt64              // an int or int64 kind, likewise
	leafInt32              // an int32 kind, likewise
	leafPtrString          // a pointer to a leafString
	leafPtrBool            // a pointer to a leafBool
	leafPtrInt64           // a pointer to a leafInt64
	leafPtrInt32           // a pointer to a leafInt32
	leafTime               // metav1.Time
	leafPtrTime            // *metav1.Time
)

// leafOf returns the leafKind of type t, or leafNone.
func leafOf(t reflect.Type) leafKind {
	if t == metaTimeType {
		return leafTime
	}
	if t.Kind() == reflect.Pointer && t.Elem() == metaTimeType {
		return leafPtrTime
	}
	// self: encoding/json hands values of type t (addressable) to their
	// UnmarshalJSON or UnmarshalText (as decodeType.self).
	self := func(t reflect.Type) bool {
		p := reflect.PointerTo(t)
		return p.Implements(unmarshalerType) || p.Implements(textUnmarshalerType)
	}
	plain := func(t reflect.Type) leafKind {
		var k leafKind
		switch t.Kind() {
		case reflect.String:
			k = leafString
		case reflect.Bool:
			k = leafBool
		case reflect.Int, reflect.Int64:
			if t.Size() == 8 {
				k = leafInt64
			}
		case reflect.Int32:
			k = leafInt32
		}
		if k == leafNone || t == numberType || self(t) {
			return leafNone
		}
		return k
	}
	if t.Kind() != reflect.Pointer {
		return plain(t)
	}
	if self(t) {
		return leafNone
	}
	switch plain(t.Elem()) {
	case leafString:
		return leafPtrString
	case leafBool:
		return leafPtrBool
	case leafInt64:
		return leafPtrInt64
	case leafInt32:
		return leafPtrInt32
	}
	return leafNone
}

// copy sets the value of kind k at dst to the one at src.
func (k leafKind) copy(dst, src unsafe.Pointer) {
	switch k {
	case leafString:
		*(*string)(dst) = *(*string)(src)
	case leafBool:
		*(*bool)(dst) = *(*bool)(src)
	case leafInt64:
		*(*int64)(dst) = *(*int64)(src)
	case leafInt32:
		*(*int32)(dst) = *(*int32)(src)
	case leafPtrString, leafPtrBool, leafPtrInt64, leafPtrInt32, leafPtrTime:
		*(*unsafe.Pointer)(dst) = *(*unsafe.Pointer)(src)
	case leafTime:
		*(*metav1.Time)(dst) = *(*metav1.Time)(src)
	}
}

// decodeAt decodes raw into the zero value of kind k at p, as decodeLeaf
// would decode it into that value, and reports whether it did; it changes
// nothing where it did not.
func (in *interner) decodeAt(p unsafe.Pointer, k leafKind, raw []byte) bool {
	if string(raw) == "null" {
		// null leaves a value as it is (zero), and sets a pointer to
		// nil; metav1.Time's UnmarshalJSON is left to decodeLeaf.
		return k != leafTime
	}
	switch k {
	case leafString:
		if !simpleString(raw) {
			return false
		}
		*(*string)(p) = in.str(raw[1 : len(raw)-1])
		return true
	case leafBool:
		switch string(raw) {
		case "true":
			*(*bool)(p) = true
			return true
		case "false":
			return true
		}
		return false
	case leafInt64, leafInt32:
		n, ok := parseJSONInt(raw)
		if !ok || (k == leafInt32 && int64(int32(n)) != n) {
			return false
		}
		if k == leafInt32 {
			*(*int32)(p) = int32(n)
		} else {
			*(*int64)(p) = n
		}
		return true
	case leafTime:
		return in.decodeMetaTimeAt((*metav1.Time)(p), raw)
	case leafPtrString:
		return decodePtrAt[string](in, p, leafString, raw)
	case leafPtrBool:
		return decodePtrAt[bool](in, p, leafBool, raw)
	case leafPtrInt64:
		return decodePtrAt[int64](in, p, leafInt64, raw)
	case leafPtrInt32:
		return decodePtrAt[int32](in, p, leafInt32, raw)
	case leafPtrTime:
		return decodePtrAt[metav1.Time](in, p, leafTime, raw)
	}
	return false
}

// decodePtrAt decodes raw into a new T, of leaf kind k, and sets the *T at
// p to it; it changes nothing when decodeAt declines raw.
func decodePtrAt[T any](in *interner, p unsafe.Pointer, k leafKind, raw []byte) bool {
	v := new(T)
	if !in.decodeAt(unsafe.Pointer(v), k, raw) {
		return false
	}
	*(**T)(p) = v
	return true
}

// parseJSONInt parses raw, a JSON number written as an integer that fits
// in an int64, as strconv.ParseInt would.
func parseJSONInt(raw []byte) (int64, bool) {
	if !jsonInt(raw) {
		return 0, false
	}
	if len(raw) < 19 {
		// Up to 18 digits: no overflow.
		neg := raw[0] == '-'
		digits := raw
		if neg {
			digits = raw[1:]
		}
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
		return n, true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// simpleString reports whether raw is a JSON string without escapes, in
// valid UTF-8.
func simpleString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	ascii := true
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	return ascii || utf8.Valid(raw)
}

// jsonInt reports whether raw is a JSON number written as an integer:
// -?(0|[1-9][0-9]*).
func jsonInt(raw []byte) bool {
	i := 0
	if i < len(raw) && raw[i] == '-' {
		i++
	}
	if i == len(raw) {
		return false
	}
	if raw[i] == '0' {
		return i+1 == len(raw)
	}
	for ; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

// decodeMetaTime decodes a string into dst, a metav1.Time, as its
// UnmarshalJSON does (an RFC 3339 time, in the local zone) without
// unquoting it through encoding/json. The times it decoded last are kept
// in in (when not nil).
func (in *interner) decodeMetaTime(dst reflect.Value, raw []byte) bool {
	var t metav1.Time
	if !in.decodeMetaTimeAt(&t, raw) {
		return false
	}
	if !dst.CanAddr() {
		dst.Set(reflect.ValueOf(t))
		return true
	}
	// Set through a pointer: reflect.ValueOf would box the value.
	*dst.Addr().Interface().(*metav1.Time) = t
	return true
}

// decodeMetaTimeAt is decodeMetaTime into *dst; it changes nothing when
// it reports false.
func (in *interner) decodeMetaTimeAt(dst *metav1.Time, raw []byte) bool {
	var t metav1.Time
	cached := false
	if in != nil {
		for i := range in.times {
			if e := &in.times[i]; e.raw == string(raw) && e.raw != "" {
				t, cached = e.t, true
				break
			}
		}
	}
	if !cached {
		if !simpleString(raw) {
			return false
		}
		pt, err := time.Parse(time.RFC3339, string(raw[1:len(raw)-1]))
		if err != nil {
			return false
		}
		t = metav1.Time{Time: pt.Local()}
		if in != nil {
			in.times[in.next] = decodedTime{raw: string(raw), t: t}
			in.next = (in.next + 1) % len(in.times)
		}
	}
	*dst = t
	return true
}
