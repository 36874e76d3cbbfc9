package diff

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

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
}

// decodeLevels is how many levels of the pod decode piece by piece: the
// pod, its metadata, spec and status, their fields, and the elements of
// their lists (a container status, a managedFields entry).
const decodeLevels = 4

func (d *decoder) decode(rec store.Record) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	obj, err := decodeValue(reflect.ValueOf(pod).Elem(), rec.Object, d.prev, d.prevObj, decodeLevels)
	if err != nil {
		// Start over in one piece, for encoding/json's own verdict.
		pod, obj = &corev1.Pod{}, nil
		if err := json.Unmarshal(rec.Object, pod); err != nil {
			return nil, fmt.Errorf("decode pod %s/%s revision %s (record %d): %w", rec.Namespace, rec.Name, rec.ResourceVersion, rec.Seq, err)
		}
	}
	d.prev, d.prevObj = reflect.ValueOf(pod).Elem(), obj
	return pod, nil
}

// member is one member of a JSON object, or one element of a list.
type member struct {
	key   []byte // nil for a list element
	value []byte
	sub   object // value split, when it was decoded piece by piece
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
func decodeValue(dst reflect.Value, raw []byte, prev reflect.Value, prevObj object, levels int) (object, error) {
	if levels > 0 {
		switch dst.Kind() {
		case reflect.Struct:
			if fields := jsonFields(dst.Type()); fields != nil {
				if obj, ok := splitObject(raw); ok {
					return decodeStruct(dst, raw, fields, obj, prev, prevObj, levels)
				}
			}
		case reflect.Slice:
			if !decodesItself(dst.Type()) {
				if elems, ok := splitArray(raw); ok && len(elems) > 0 {
					return elems, decodeSlice(dst, elems, prev, prevObj, levels)
				}
			}
		}
	}
	return nil, json.Unmarshal(raw, dst.Addr().Interface())
}

// decodeStruct decodes raw, split into obj, into struct dst member by
// member.
func decodeStruct(dst reflect.Value, raw []byte, fields map[string][]int, obj object, prev reflect.Value, prevObj object, levels int) (object, error) {
	for _, m := range obj {
		if _, known := fields[string(m.key)]; !known {
			// Unknown, or matched by encoding/json case-insensitively.
			return nil, json.Unmarshal(raw, dst.Addr().Interface())
		}
	}
	for i := range obj {
		m := &obj[i]
		index := fields[string(m.key)]
		f := dst.FieldByIndex(index)
		pm := prevObj.find(m.key, i)
		if pm != nil && bytes.Equal(pm.value, m.value) {
			f.Set(prev.FieldByIndex(index))
			m.sub = pm.sub
			continue
		}
		var pv reflect.Value
		var po object
		if pm != nil {
			pv, po = prev.FieldByIndex(index), pm.sub
		}
		sub, err := decodeValue(f, m.value, pv, po, levels-1)
		if err != nil {
			return nil, err
		}
		m.sub = sub
	}
	return obj, nil
}

// decodeSlice decodes the elements elems into dst, a nil slice. An element
// that changed is decoded against the one that was at its place.
func decodeSlice(dst reflect.Value, elems object, prev reflect.Value, prevElems object, levels int) error {
	dst.Set(reflect.MakeSlice(dst.Type(), len(elems), len(elems)))
	for i := range elems {
		e := &elems[i]
		if j := prevElems.index(e.value, i); j >= 0 {
			dst.Index(i).Set(prev.Index(j))
			e.sub = prevElems[j].sub
			continue
		}
		var pv reflect.Value
		var po object
		if i < len(prevElems) {
			pv, po = prev.Index(i), prevElems[i].sub
		}
		sub, err := decodeValue(dst.Index(i), e.value, pv, po, levels-1)
		if err != nil {
			return err
		}
		e.sub = sub
	}
	return nil
}

var selfDecoding sync.Map // reflect.Type -> bool

// decodesItself reports whether encoding/json hands values of type t to
// their own UnmarshalJSON or UnmarshalText.
func decodesItself(t reflect.Type) bool {
	if v, ok := selfDecoding.Load(t); ok {
		return v.(bool)
	}
	p := reflect.PointerTo(t)
	yes := p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
	selfDecoding.Store(t, yes)
	return yes
}

var jsonFieldCache sync.Map // reflect.Type -> map[string][]int

// jsonFields maps the JSON names of struct type t's fields to their index,
// or returns nil when encoding/json should decode t whole: t decodes
// itself, or has fields whose names or options this simple mapping does not
// follow. Names are matched exactly; encoding/json would
// also match them case-insensitively, so decodeStruct leaves objects with
// other names to it.
func jsonFields(t reflect.Type) map[string][]int {
	if v, ok := jsonFieldCache.Load(t); ok {
		return v.(map[string][]int)
	}
	fields := map[string][]int{}
	if decodesItself(t) || !addJSONFields(t, nil, fields) {
		fields = nil
	}
	jsonFieldCache.Store(t, fields)
	return fields
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

// splitObject splits a JSON object into its members without decoding them
// (a changed member is validated when it is decoded; an unchanged one was,
// in an earlier revision). It reports false for what it does not handle
// simply: not an object, escaped or repeated keys, bytes after the object.
func splitObject(b []byte) (object, bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	obj := make(object, 0, 8)
	if i < len(b) && b[i] == '}' {
		return obj, skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return nil, false
		}
		end := bytes.IndexByte(b[i+1:], '"')
		if end < 0 {
			return nil, false
		}
		key := b[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 || obj.find(key, len(obj)) != nil {
			return nil, false
		}
		i = skipSpace(b, i+end+2)
		if i == len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		end, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		obj = append(obj, member{key: key, value: b[i:end]})
		i = skipSpace(b, end)
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return obj, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// splitArray splits a JSON array into its elements without decoding them.
func splitArray(b []byte) (object, bool) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	elems := object{}
	if i < len(b) && b[i] == ']' {
		return elems, skipSpace(b, i+1) == len(b)
	}
	for {
		end, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		elems = append(elems, member{value: b[i:end]})
		i = skipSpace(b, end)
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return elems, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
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
