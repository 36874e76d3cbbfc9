package diff

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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

// member is one member of a JSON object, or one element of a list.
type member struct {
	key   []byte // nil for a list element
	value []byte
	// sub is value split, when it was decoded piece by piece. Before it
	// is decoded, a member may hold its split already: the splitter splits
	// a changed member as the previous revision's member was.
	sub object
	// same says that value is the bytes of the previous revision's
	// member of that key (element at that index) that split compared.
	same bool
	// aligned says that the previous revision's member at this index
	// had this key (the splitter found it so).
	aligned bool
	// field is the index of the member's struct field in its
	// decodeType's field, plus one, once decodeStruct found it; 0 before.
	field int32
}

// object is a JSON object split into its members, or a list into its
// elements.
type object []member

// index returns the index of the element whose JSON is value, or -1; i is
// where to look first.
func (o object) index(value []byte, i int) int {
	if i < len(o) && bytes.Equal(o[i].value, value) {
		return i
	}
	for j := range o {
		if bytes.Equal(o[j].value, value) {
			return j
		}
	}
	return -1
}

// find returns the member named key; i is where to look first.
func (o object) find(key []byte, i int) *member {
	if i < len(o) && bytes.Equal(o[i].key, key) {
		return &o[i]
	}
	for j := range o {
		if bytes.Equal(o[j].key, key) {
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
		if pm := prevObj.find(m.key, i); pm != nil && pm.field > 0 && int(pm.field) <= len(dt.field) && dt.field[pm.field-1].name == string(m.key) {
			m.field = pm.field
			continue
		}
		k, known := dt.fields[string(m.key)]
		if !known {
			// Unknown, or matched by encoding/json case-insensitively.
			return nil, json.Unmarshal(raw, dst.Addr().Interface())
		}
		m.field = k + 1
	}
	if aligned {
		// The fields the JSON sets are those the previous revision's set:
		// start from that struct whole, and decode again only the members
		// whose bytes changed (into their field made zero again).
		dst.Set(prev)
		for i := range obj {
			m, pm := &obj[i], &prevObj[i]
			if m.same || bytes.Equal(pm.value, m.value) {
				m.sub = pm.sub
				continue
			}
			fd := dt.field[m.field-1]
			f := dst.FieldByIndex(fd.index)
			f.SetZero()
			sub, err := d.decodeValue(f, fd.decodeType(), m.value, m.sub, prev.FieldByIndex(fd.index), pm.sub, levels-1)
			if err != nil {
				return nil, err
			}
			m.sub = sub
		}
		return obj, nil
	}
	for i := range obj {
		m := &obj[i]
		fd := dt.field[m.field-1]
		f := dst.FieldByIndex(fd.index)
		pm := prevObj.find(m.key, i)
		if pm != nil && (m.same || bytes.Equal(pm.value, m.value)) {
			f.Set(prev.FieldByIndex(fd.index))
			m.sub = pm.sub
			continue
		}
		var pv reflect.Value
		var po object
		if pm != nil {
			pv, po = prev.FieldByIndex(fd.index), pm.sub
		}
		sub, err := d.decodeValue(f, fd.decodeType(), m.value, m.sub, pv, po, levels-1)
		if err != nil {
			return nil, err
		}
		m.sub = sub
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
			j = prevElems.index(e.value, i)
		}
		if j >= 0 {
			dst.Index(i).Set(prev.Index(j))
			e.sub = prevElems[j].sub
			continue
		}
		var pv reflect.Value
		var po object
		if i < len(prevElems) {
			pv, po = prev.Index(i), prevElems[i].sub
		}
		sub, err := d.decodeValue(dst.Index(i), et, e.value, e.sub, pv, po, levels-1)
		if err != nil {
			return err
		}
		e.sub = sub
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

	t    reflect.Type
	elem atomic.Pointer[decodeType] // of t.Elem(), once asked for
}

// decodeField is a struct field the decoder decodes by its JSON name.
type decodeField struct {
	name  string
	index []int
	t     reflect.Type
	dt    atomic.Pointer[decodeType] // of t, once asked for
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
	dt.self = dt.unmarshaler || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
	if t.Kind() == reflect.Struct && !dt.self {
		byName := map[string][]int{}
		if addJSONFields(t, nil, byName) {
			dt.fields = make(map[string]int32, len(byName))
			for name, index := range byName {
				dt.fields[name] = int32(len(dt.field))
				dt.field = append(dt.field, &decodeField{name: name, index: index, t: t.FieldByIndex(index).Type})
			}
		}
	}
	v, _ := decodeTypes.LoadOrStore(t, dt)
	return v.(*decodeType)
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

// splitter splits JSON objects and lists. It builds each in a scratch
// stack, and cuts the finished ones from blocks of members it allocates a
// few at a time (members were one allocation per object): what it returned
// is never written by it again.
//
// A block lives as long as any object cut from it: the objects of one
// revision that the next one shares keep all of that revision's alive,
// and those the ones they share, back to the first revision. The owner
// compacts what it keeps (see compact) when blocks says it made enough to
// matter.
type splitter struct {
	scratch []member // the members of the objects being split, innermost last
	block   []member // where finished objects are cut from: len is what is taken
	blocks  int      // how many blocks it made since the last compact
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
	if len(s.block)+n > cap(s.block) {
		s.block = make([]member, 0, max(splitBlock, n))
		s.blocks++
	}
	k := len(s.block)
	s.block = s.block[:k+n]
	obj := s.block[k : k+n : k+n]
	copy(obj, s.scratch[base:])
	s.scratch = s.scratch[:base]
	return obj
}

// compact returns a copy of obj and of the objects it holds, all in one
// allocation of their own, and starts a new block: once the copy replaces
// obj (and whatever else the owner keeps is compacted likewise), the blocks
// it was cut from are free. The copy is what obj is, to read and split
// against.
func (s *splitter) compact(obj object) object {
	// Objects cut after the copy must not share a block with those before:
	// the block would keep them, and all they hold, alive.
	s.block, s.blocks = nil, 0
	if obj == nil {
		return nil
	}
	all := make([]member, 0, countMembers(obj))
	return copyObject(&all, obj)
}

// countMembers counts the members of obj and of the objects it holds.
func countMembers(obj object) int {
	n := len(obj)
	for i := range obj {
		n += countMembers(obj[i].sub)
	}
	return n
}

// copyObject copies obj, and the objects it holds, into all.
func copyObject(all *[]member, obj object) object {
	if len(obj) == 0 {
		return obj // nil, or emptyObject
	}
	k := len(*all)
	*all = append(*all, obj...)
	out := (*all)[k : k+len(obj) : k+len(obj)]
	for i := range out {
		out[i].sub = copyObject(all, out[i].sub)
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
	i := skipSpace(b, 0)
	obj, end, ok := s.objectAt(b, i, prev)
	return obj, ok && skipSpace(b, end) == len(b)
}

// arrayAgainst splits a list whose previous revision was split into prev
// into its elements: an element is compared with, or split as, the previous
// revision's element at its index, as in objectAgainst.
func (s *splitter) arrayAgainst(b []byte, prev object) (object, bool) {
	i := skipSpace(b, 0)
	elems, end, ok := s.arrayAt(b, i, prev)
	return elems, ok && skipSpace(b, end) == len(b)
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
	base := len(s.scratch)
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
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return fail()
		}
		key := b[i+1 : i+1+end]
		n := len(s.scratch) - base
		var pm *member
		if aligned && n < len(prev) && bytes.Equal(prev[n].key, key) {
			pm = &prev[n]
		} else {
			aligned = false
			if bytes.IndexByte(key, '\\') >= 0 || object(s.scratch[base:]).find(key, n) != nil {
				return fail()
			}
			pm = prev.find(key, n)
		}
		i = skipSpace(b, i+end+2)
		if i == len(b) || b[i] != ':' {
			return fail()
		}
		i = skipSpace(b, i+1)
		m, ok := s.member(b, i, pm)
		if !ok {
			return fail()
		}
		m.key, m.aligned = key, aligned
		s.scratch = append(s.scratch, m)
		i = skipSpace(b, i+len(m.value))
		if i == len(b) {
			return fail()
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return s.finish(base), i + 1, true
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
	base := len(s.scratch)
	for {
		var pm *member
		if n := len(s.scratch) - base; n < len(prev) {
			pm = &prev[n]
		}
		m, ok := s.member(b, i, pm)
		if !ok {
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
		s.scratch = append(s.scratch, m)
		i = skipSpace(b, i+len(m.value))
		if i == len(b) {
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return s.finish(base), i + 1, true
		default:
			s.scratch = s.scratch[:base]
			return nil, 0, false
		}
	}
}

// member finds the value at b[i:], a member or element whose previous
// revision is pm (or nil): the same bytes, split as pm was, or scanned.
func (s *splitter) member(b []byte, i int, pm *member) (member, bool) {
	if pm != nil && len(pm.value) >= 2 && len(b)-i >= len(pm.value) {
		switch pm.value[0] {
		case '{', '[', '"':
			if bytes.Equal(b[i:i+len(pm.value)], pm.value) {
				return member{value: b[i : i+len(pm.value)], same: true}, true
			}
		}
		if pm.sub != nil && i < len(b) && b[i] == pm.value[0] {
			var sub object
			var end int
			var ok bool
			if b[i] == '{' {
				sub, end, ok = s.objectAt(b, i, pm.sub)
			} else {
				sub, end, ok = s.arrayAt(b, i, pm.sub)
			}
			if ok {
				return member{value: b[i:end], sub: sub}, true
			}
		}
	}
	end, ok := skipValue(b, i)
	if !ok {
		return member{}, false
	}
	return member{value: b[i:end]}, true
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
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	numberType      = reflect.TypeFor[json.Number]()
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
		in.m = make(map[string]string)
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
	if !dst.CanAddr() {
		dst.Set(reflect.ValueOf(t))
		return true
	}
	// Set through a pointer: reflect.ValueOf would box the value.
	*dst.Addr().Interface().(*metav1.Time) = t
	return true
}
