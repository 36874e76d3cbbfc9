package tracer

import (
	"sync"
	"time"

	json "github.com/segmentio/encoding/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// flags are json.Marshal's: the bytes encoding/json writes.
const flags = json.EscapeHTML | json.SortMapKeys

// encode returns obj's JSON: the bytes encoding/json writes for it.
//
// An object's managedFields are most of its JSON's cost: each entry's
// FieldsV1 and Time are json.Marshalers whose output every encoder parses
// again to check and compact it (TestJSONMatchesEncodingJSON's profile: 60% of
// the time). The API server's field manager writes FieldsV1 itself, as
// compact JSON, and resets managedFields it cannot decode; so encode writes
// the entries by hand (appendManagedFields), splices them in where the
// encoder would have, and falls back to the plain encoder for an entry whose
// bytes it would have to change (whitespace, characters encoding/json
// escapes for HTML).
//
// The handler owns obj (see cached): encode clears its managedFields while
// it encodes the rest and puts them back.
func encode(obj runtime.Object) ([]byte, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return json.Marshal(obj)
	}
	mf := m.GetManagedFields()
	if len(mf) == 0 {
		return json.Marshal(obj)
	}
	buf := bufs.get()
	defer bufs.put(buf)
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
