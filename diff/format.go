package diff

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// appendJSON appends the JSON of v as formatValue's encoder writes it
// (encoding/json, compact, < > & kept as they are), for the values whose
// JSON it writes plainly: structs of plain fields (a container's state, a
// condition), their pointers and lists, strings of printable ASCII,
// integers, booleans, time.Time and metav1.Time. It reports false for anything else
// (a value that encodes itself, a map, a float, other text), leaving what it
// appended to be dropped: formatValue then asks encoding/json. It appends
// without allocating, where encoding/json boxes the value and builds its
// output anew.
func appendJSON(b []byte, v reflect.Value) ([]byte, bool) {
	t := v.Type()
	if t == metaTimeType {
		var tm *metav1.Time
		if v.CanAddr() {
			tm = (*metav1.Time)(v.Addr().UnsafePointer())
		} else {
			c := v.Interface().(metav1.Time)
			tm = &c
		}
		return appendMetaTimeJSON(b, tm), true
	}
	if t == timeType {
		var tm *time.Time
		if v.CanAddr() {
			tm = (*time.Time)(v.Addr().UnsafePointer())
		} else {
			c := v.Interface().(time.Time)
			tm = &c
		}
		return appendTimeJSON(b, tm)
	}
	k := t.Kind()
	if k == reflect.Pointer || k == reflect.Interface {
		if v.IsNil() {
			return append(b, "null"...), true
		}
		if k == reflect.Pointer && t.Elem() == metaTimeType {
			return appendJSON(b, v.Elem())
		}
	}
	if selfEncoding(t) {
		return b, false
	}
	switch k {
	case reflect.Pointer, reflect.Interface:
		return appendJSON(b, v.Elem())
	case reflect.String:
		return appendJSONString(b, v.String())
	case reflect.Bool:
		return strconv.AppendBool(b, v.Bool()), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, v.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, v.Uint(), 10), true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return b, false // base64
		}
		if v.IsNil() {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, v.Index(i)); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case reflect.Struct:
		fields := jsonPlanOf(t)
		if fields == nil {
			return b, false
		}
		b = append(b, '{')
		first := true
		for _, f := range fields {
			fv := v.Field(f.index)
			if f.omitEmpty && emptyJSON(fv) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.prefix...)
			var ok bool
			if b, ok = appendJSON(b, fv); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// appendMetaTimeJSON appends the JSON of a metav1.Time, as its MarshalJSON
// writes it.
func appendMetaTimeJSON(b []byte, t *metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendTimeJSON appends the JSON of a time.Time, as its MarshalJSON writes
// it: its AppendText, quoted. It reports false for a time AppendText
// refuses (a year out of its range).
func appendTimeJSON(b []byte, t *time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

// appendJSONString appends s quoted, when it is printable ASCII.
func appendJSONString(b []byte, s string) ([]byte, bool) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f:
			return b, false
		case c == '"' || c == '\\':
			b = append(b, s[start:i]...)
			b = append(b, '\\', c)
			start = i + 1
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// emptyJSON reports whether omitempty omits v, as encoding/json decides.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// jsonField is a struct field as appendJSON writes it.
type jsonField struct {
	index     int
	prefix    string // "name":
	omitEmpty bool
}

var (
	jsonPlans     sync.Map // reflect.Type -> []jsonField, nil when appendJSON declines the struct
	selfEncoders  sync.Map // reflect.Type -> bool
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// selfEncoding reports whether encoding/json may hand values of type t to
// their own MarshalJSON or MarshalText.
func selfEncoding(t reflect.Type) bool {
	if v, ok := selfEncoders.Load(t); ok {
		return v.(bool)
	}
	p := reflect.PointerTo(t)
	yes := t.Implements(marshalerType) || t.Implements(textMarshaler) || p.Implements(marshalerType) || p.Implements(textMarshaler)
	selfEncoders.Store(t, yes)
	return yes
}

// jsonPlanOf returns the fields of struct type t in the order encoding/json
// writes them, or nil for a struct whose fields it would not write plainly:
// embedded fields, options other than omitempty, names to escape, names
// that repeat.
func jsonPlanOf(t reflect.Type) []jsonField {
	if v, ok := jsonPlans.Load(t); ok {
		return v.([]jsonField)
	}
	fields := []jsonField{}
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			fields = nil
			break
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if (opts != "" && opts != "omitempty") || !plainName(name) || seen[name] {
			fields = nil
			break
		}
		seen[name] = true
		fields = append(fields, jsonField{index: i, prefix: `"` + name + `":`, omitEmpty: opts == "omitempty"})
	}
	v, _ := jsonPlans.LoadOrStore(t, fields)
	return v.([]jsonField)
}

// plainName reports whether a field name is one encoding/json takes as it
// is and writes without escapes.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}
