package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// The encodings of keys and values; doc.go describes them for readers of the
// file.

const (
	// valueFormat is the first byte of every records and objects value.
	valueFormat = 1
	// valueFormatProto is the first byte of a records value whose payload
	// makes a v1 Pod's protobuf rather than JSON (Record.Proto); the rest
	// of the value is as valueFormat's.
	valueFormatProto = 2

	payloadRaw       = 0 // the object's JSON as is
	payloadZstd      = 1 // a zstd frame of the JSON, compressed with a dictionary
	payloadDelta     = 2 // a delta against the object's previous revision and a dictionary
	payloadDictDelta = 3 // a delta against a dictionary alone

	payloadMask  = 0x03
	flagRefs     = 0x04 // refs are listed (else: as the previous revision; none for a snapshot)
	flagIdentity = 0x08 // apiVersion, kind, namespace, name are listed (else: the object's summary)
	typeShift    = 4    // the event type's code is in bits 4-6
	typeMask     = 0x07
	flagRelTime  = 0x80 // observed is relative to the previous revision's

	// maxUIDLen bounds object UIDs (Kubernetes UIDs are 36-byte UUIDs).
	maxUIDLen = 1024
)

var errValue = errors.New("malformed value")

var typeCodes = [...]EventType{1: Initial, 2: Added, 3: Updated, 4: Deleted, 5: DeletedUnknown}

func typeCode(t EventType) byte {
	for i, c := range typeCodes {
		if i > 0 && c == t {
			return byte(i)
		}
	}
	return 0
}

// recordKey appends the records key of (object number, seq).
func recordKey(dst []byte, num uint32, seq uint64) []byte {
	dst = binary.BigEndian.AppendUint32(dst, num)
	return binary.BigEndian.AppendUint64(dst, seq)
}

func numKey(num uint32) []byte { return binary.BigEndian.AppendUint32(make([]byte, 0, 4), num) }

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendJSONString appends s, which is often a part of json (a UID, the
// resourceVersion): uvarint n<<1 and n bytes, or, when json holds s,
// uvarint offset<<1|1 and uvarint n: the bytes json[offset:offset+n].
func appendJSONString(dst, json []byte, s string) []byte {
	if len(s) >= 4 {
		if i := bytes.Index(json, []byte(s)); i >= 0 {
			dst = binary.AppendUvarint(dst, uint64(i)<<1|1)
			return binary.AppendUvarint(dst, uint64(len(s)))
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))<<1)
	return append(dst, s...)
}

// appendTime appends t as Unix nanoseconds (zero: 0).
func appendTime(dst []byte, t time.Time) []byte {
	return binary.AppendVarint(dst, unixNano(t))
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// valueHead is a records value up to its payload.
type valueHead struct {
	payload      byte
	listRefs     bool
	listIdentity bool
	typ          EventType
	session      uint32
	observed     int64 // as stored: Unix nanoseconds, or relative to the previous revision's
	relTime      bool
	rv           jsonString
	refs         []jsonString
	apiVersion   string
	kind         string
	namespace    string
	name         string
	body         []byte // the payload's bytes; they belong to the transaction
	proto        bool   // the payload makes a pod's protobuf (valueFormatProto)
}

// jsonString is a string of a value that may point into the JSON.
type jsonString struct {
	lit    string
	off, n int // when ref
	ref    bool
}

func (s jsonString) resolve(json []byte) (string, error) {
	if !s.ref {
		return s.lit, nil
	}
	if s.off+s.n > len(json) {
		return "", fmt.Errorf("%w: string [%d,+%d) outside %d bytes of JSON", errValue, s.off, s.n, len(json))
	}
	return string(json[s.off : s.off+s.n]), nil
}

// appendValue appends the records value of r with the given payload.
// prevObserved is the Unix time of the previous revision for a delta, else 0.
func appendValue(dst []byte, r *Record, payload byte, listRefs, listIdentity bool, prevObserved int64) []byte {
	code := typeCode(r.Type)
	flags := payload | code<<typeShift
	if listRefs {
		flags |= flagRefs
	}
	if listIdentity {
		flags |= flagIdentity
	}
	relTime := payload == payloadDelta && prevObserved != 0 && !r.Observed.IsZero()
	if relTime {
		flags |= flagRelTime
	}
	format := byte(valueFormat)
	if r.Proto {
		format = valueFormatProto
	}
	dst = append(dst, format, flags)
	dst = binary.AppendUvarint(dst, uint64(r.Session))
	if relTime {
		dst = binary.AppendVarint(dst, r.Observed.UnixNano()-prevObserved)
	} else {
		dst = appendTime(dst, r.Observed)
	}
	dst = appendJSONString(dst, r.Object, r.ResourceVersion)
	if code == 0 {
		dst = appendString(dst, string(r.Type))
	}
	if listRefs {
		dst = binary.AppendUvarint(dst, uint64(len(r.Refs)))
		for _, ref := range r.Refs {
			dst = appendJSONString(dst, r.Object, ref)
		}
	}
	if listIdentity {
		dst = appendString(dst, r.APIVersion)
		dst = appendString(dst, r.Kind)
		dst = appendString(dst, r.Namespace)
		dst = appendString(dst, r.Name)
	}
	return dst
}

// reader reads the fields of a value; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errValue
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errValue
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errValue
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errValue
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) string() string { return string(r.bytes(r.uvarint())) }

func (r *reader) jsonString() jsonString {
	x := r.uvarint()
	if x&1 == 0 {
		return jsonString{lit: string(r.bytes(x >> 1))}
	}
	n := r.uvarint()
	if x>>1 > 1<<31 || n > 1<<31 {
		r.err = errValue
	}
	return jsonString{ref: true, off: int(x >> 1), n: int(n)}
}

// time reads a time stored by appendTime.
func (r *reader) time() time.Time { return fromUnixNano(r.varint()) }

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func (r *reader) strings() []string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errValue
		return nil
	}
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// parseValue parses a records value up to its payload.
func parseValue(v []byte) (valueHead, error) {
	var h valueHead
	r := reader{b: v}
	switch f := r.byte(); {
	case r.err != nil:
	case f == valueFormatProto:
		h.proto = true
	case f != valueFormat:
		return h, fmt.Errorf("%w: value format %d, this build reads %d and %d", errValue, f, valueFormat, valueFormatProto)
	}
	flags := r.byte()
	h.payload = flags & payloadMask
	h.listRefs = flags&flagRefs != 0
	h.listIdentity = flags&flagIdentity != 0
	h.relTime = flags&flagRelTime != 0
	code := flags >> typeShift & typeMask
	h.session = uint32(r.uvarint())
	h.observed = r.varint()
	h.rv = r.jsonString()
	switch {
	case code == 0:
		h.typ = EventType(r.string())
	case int(code) < len(typeCodes):
		h.typ = typeCodes[code]
	default:
		return h, fmt.Errorf("%w: event type code %d", errValue, code)
	}
	if h.listRefs {
		n := r.uvarint()
		if n > uint64(len(r.b)) {
			r.err = errValue
		}
		for i := uint64(0); i < n && r.err == nil; i++ {
			h.refs = append(h.refs, r.jsonString())
		}
	}
	if h.listIdentity {
		h.apiVersion = r.string()
		h.kind = r.string()
		h.namespace = r.string()
		h.name = r.string()
	}
	if r.err != nil {
		return h, r.err
	}
	h.body = r.b
	return h, nil
}

// isSnapshot reports whether a records value holds its JSON without
// reference to the object's previous revision.
func isSnapshot(v []byte) bool { return len(v) > 1 && v[1]&payloadMask != payloadDelta }
