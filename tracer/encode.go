package tracer

import (
	"encoding"
	stdjson "encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	json "github.com/segmentio/encoding/json"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

//go:generate go run ./internal/jsongen

// flags are json.Marshal's: the bytes encoding/json writes.
const flags = json.EscapeHTML | json.SortMapKeys

// encode returns obj's JSON: the bytes encoding/json writes for it.
//
// The kinds the tracer watches are written by the appenders of
// zz_generated_json.go (tracer/internal/jsongen): code generated from the
// API types that writes what encoding/json's reflective walk would, without
// reflection. The appenders write into a pooled buffer; encode returns a
// copy of exactly its length (the store keeps it). Any other object, or one
// the appenders give up on (a MarshalJSON that fails, a float encoding/json
// rejects), takes the reflective path, encodeReflective. A rawPod writes its
// spec and status from their protobuf (see rawPod).
func encode(obj runtime.Object) ([]byte, error) {
	buf := bufs.get()
	defer bufs.put(buf)
	if b, ok := appendGenerated(buf.rest[:0], obj); ok {
		buf.rest = b
		out := make([]byte, len(b))
		copy(out, b)
		return out, nil
	}
	if r, ok := obj.(*rawPod); ok {
		// Decoded typed, or not transcoded: the typed pod's JSON.
		p, err := r.Pod()
		if err != nil {
			return nil, err
		}
		return encode(p)
	}
	return encodeReflective(obj, buf)
}

// encodeFailure aborts a generated appender where encoding/json would fail
// (a Marshaler's error or invalid output, NaN): encode then takes the
// reflective path, which returns the error.
type encodeFailure struct{ err error }

// appendGenerated appends obj's JSON with the generated appenders (a
// rawPod's with its transcoders), or returns false.
func appendGenerated(b []byte, obj runtime.Object) (out []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, is := r.(encodeFailure); !is {
				panic(r)
			}
			out, ok = b, false
		}
	}()
	if r, ok := obj.(*rawPod); ok {
		if r.typed != nil {
			return b, false
		}
		return appendRawPod(b, r)
	}
	return appendObject(b, obj)
}

// encodeReflective is encode with the reflective encoder.
//
// An object's managedFields are most of its JSON's cost: each entry's
// FieldsV1 and Time are json.Marshalers whose output every encoder parses
// again to check and compact it (TestJSONMatchesEncodingJSON's profile: 60% of
// the time). The API server's field manager writes FieldsV1 itself, as
// compact JSON, and resets managedFields it cannot decode; so
// encodeReflective writes the entries by hand (appendManagedFields), splices
// them in where the encoder would have, and falls back to the plain encoder
// for an entry whose bytes it would have to change (whitespace, characters
// encoding/json escapes for HTML). The generated appenders trust FieldsV1
// the same way.
//
// The handler owns obj (see cached): encodeReflective clears its
// managedFields while it encodes the rest and puts them back.
func encodeReflective(obj runtime.Object, buf *scratch) ([]byte, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return json.Marshal(obj)
	}
	mf := m.GetManagedFields()
	if len(mf) == 0 {
		return json.Marshal(obj)
	}
	fields, ok := appendManagedFields(buf.fields[:0], mf)
	buf.fields = fields
	if !ok {
		return json.Marshal(obj)
	}
	m.SetManagedFields(nil)
	rest, err := json.Append(buf.rest[:0], obj, flags)
	m.SetManagedFields(mf)
	buf.rest = rest
	if err != nil {
		return nil, err
	}
	end := metadataEnd(rest)
	if end < 0 {
		return json.Marshal(obj) // not the shape of an API object
	}
	out := make([]byte, 0, len(rest)+len(fields)+1)
	out = append(out, rest[:end]...)
	if rest[end-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, fields...)
	return append(out, rest[end:]...), nil
}

// The helpers of the generated appenders follow.

// appendMarshaled appends out, what a MarshalJSON method returned, as
// encoding/json does: compacted, escaped for HTML, after checking that it
// is JSON. Output that is valid and verbatim is appended as it is; trusted
// output (valid by construction: see jsongen's trusted) is not parsed.
func appendMarshaled(b, out []byte, err error, trusted bool) []byte {
	if err != nil {
		panic(encodeFailure{err})
	}
	if verbatim(out) && (trusted || stdjson.Valid(out)) {
		return append(b, out...)
	}
	if len(out) == 0 {
		panic(encodeFailure{errors.New("MarshalJSON returned nothing")})
	}
	c, err := stdjson.Marshal(stdjson.RawMessage(out))
	if err != nil {
		panic(encodeFailure{err})
	}
	return append(b, c...)
}

// appendMarshaledText appends what a MarshalText method returned as a JSON
// string.
func appendMarshaledText(b, text []byte, err error) []byte {
	if err != nil {
		panic(encodeFailure{err})
	}
	return json.AppendEscape(b, string(text), flags)
}

// mapKeyText is a map key's name when its type is an
// encoding.TextMarshaler (resolveKeyName): "" for a nil pointer.
func mapKeyText[K encoding.TextMarshaler](k K, isNil bool) string {
	if isNil {
		return ""
	}
	text, err := k.MarshalText()
	if err != nil {
		panic(encodeFailure{err})
	}
	return string(text)
}

// appendReflect appends v with the reflective encoder, for what the
// generator does not write itself.
func appendReflect(b []byte, v any) []byte {
	b, err := json.Append(b, v, flags)
	if err != nil {
		panic(encodeFailure{err})
	}
	return b
}

// appendFloat is encoding/json's floatEncoder.
func appendFloat(b []byte, f float64, bits int, quoted bool) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		panic(encodeFailure{errors.New("unsupported float value")})
	}
	if quoted {
		b = append(b, '"')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	if quoted {
		b = append(b, '"')
	}
	return b
}

// appendQuotedString writes a string field with the ",string" option:
// its JSON string, as a JSON string (escaped again without HTML escaping:
// the inner string holds no control characters, U+2028 or invalid UTF-8,
// so only quotes and backslashes change).
func appendQuotedString(b []byte, s string) []byte {
	inner := json.AppendEscape(nil, s, flags)
	b = append(b, '"')
	for _, c := range inner {
		if c == '"' || c == '\\' {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return append(b, '"')
}

// appendMicroTime appends what metav1.MicroTime's MarshalJSON returns (the
// JSON string of its RFC3339Micro form, or null).
func appendMicroTime(b []byte, t *metav1.MicroTime) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, metav1.RFC3339Micro)
	return append(b, '"')
}

// appendQuantity appends what resource.Quantity's MarshalJSON returns: its
// string, quoted (the string it was parsed from when that was canonical,
// else its canonical form; either holds only digits, signs, a point and
// suffix letters). MarshalJSON allocates the bytes it returns; String on a
// copy allocates only when the quantity has no string yet.
func appendQuantity(b []byte, q *resource.Quantity) []byte {
	c := *q // String caches its result in the quantity: not in obj
	b = append(b, '"')
	b = append(b, c.String()...)
	return append(b, '"')
}

// appendIntOrString appends what intstr.IntOrString's MarshalJSON returns
// (encoding/json's JSON of IntVal or StrVal).
func appendIntOrString(b []byte, v *intstr.IntOrString) []byte {
	switch v.Type {
	case intstr.Int:
		return strconv.AppendInt(b, int64(v.IntVal), 10)
	case intstr.String:
		return json.AppendEscape(b, v.StrVal, flags)
	}
	out, err := v.MarshalJSON()
	return appendMarshaled(b, out, err, false)
}

// appendManagedFields appends `"managedFields":[...]` as encoding/json
// writes it, or returns false if an entry's FieldsV1 is not bytes
// encoding/json would copy unchanged.
func appendManagedFields(b []byte, mf []metav1.ManagedFieldsEntry) ([]byte, bool) {
	b = append(b, `"managedFields":[`...)
	for i := range mf {
		e := &mf[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		n := len(b)
		key := func(name string) {
			if len(b) > n {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, '"', ':')
		}
		if e.Manager != "" {
			key("manager")
			b = json.AppendEscape(b, e.Manager, flags)
		}
		if e.Operation != "" {
			key("operation")
			b = json.AppendEscape(b, string(e.Operation), flags)
		}
		if e.APIVersion != "" {
			key("apiVersion")
			b = json.AppendEscape(b, e.APIVersion, flags)
		}
		if e.Time != nil {
			key("time")
			b = appendTime(b, e.Time)
		}
		if e.FieldsType != "" {
			key("fieldsType")
			b = json.AppendEscape(b, e.FieldsType, flags)
		}
		if e.FieldsV1 != nil {
			key("fieldsV1")
			raw, err := e.FieldsV1.MarshalJSON()
			if err != nil || !verbatim(raw) {
				return b, false
			}
			b = append(b, raw...)
		}
		if e.Subresource != "" {
			key("subresource")
			b = json.AppendEscape(b, e.Subresource, flags)
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

// appendTime appends what metav1.Time's MarshalJSON returns.
func appendTime(b []byte, t *metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// verbatim tells whether encoding/json copies the JSON raw unchanged: it has
// no whitespace to compact and nothing to escape for HTML (<, >, &, U+2028,
// U+2029).
func verbatim(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	for _, c := range raw {
		if rewritten[c] {
			return false
		}
	}
	return true
}

var rewritten = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, '<': true, '>': true, '&': true, 0xE2: true}

// metadataEnd returns the offset of the brace that closes the value of the
// top-level "metadata" member of the object JSON b, or -1.
func metadataEnd(b []byte) int {
	depth, inString, start := 0, false, -1
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			if depth == 1 && start < 0 && hasPrefixAt(b, i, `"metadata":{`) {
				start = i + len(`"metadata":`)
				i = start
				depth++
				continue
			}
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 1 && start >= 0 {
				return i
			}
		}
	}
	return -1
}

func hasPrefixAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// scratch holds encode's buffers between calls; the informers' handlers
// encode at the same time.
type scratch struct{ rest, fields []byte }

type scratchPool struct{ p sync.Pool }

var bufs scratchPool

func (p *scratchPool) get() *scratch {
	if s, ok := p.p.Get().(*scratch); ok {
		return s
	}
	return &scratch{}
}

// put keeps s unless one of its buffers grew past 1 MiB (a rare huge
// object should not stay in memory).
func (p *scratchPool) put(s *scratch) {
	if cap(s.rest) <= 1<<20 && cap(s.fields) <= 1<<20 {
		p.p.Put(s)
	}
}
