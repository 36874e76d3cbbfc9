package tracer

import (
	"bytes"
	"math"
	"slices"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The protobuf transcoders of zz_generated_json.go (pbCorev1PodSpec,
// pbCorev1PodStatus and the functions they call, written by
// tracer/internal/jsongen) write the JSON of a message straight from its
// protobuf bytes: the bytes that decoding them with the message's gogo
// Unmarshal (k8s.io/api's generated.pb.go) and encoding the value with the
// generated appender (appendCorev1PodSpec, ...) would write, without the
// typed value.
//
// A transcoder scans a message once (pbScan) into an array of its known
// fields, on the stack, checking what gogo's Unmarshal checks (varints of at
// most ten bytes, lengths within the message, field number > 0, the wire
// type of each known field, the unknown fields' wire types), then writes the
// JSON members in encoding/json's order from the scanned fields, walking the
// nested messages as it writes them. Semantics are gogo's: a scalar or string
// that occurs twice takes its last value; repeated fields append; a repeated
// varint is read packed or not; an occurrence of a map field adds an entry
// (key field 1, value field 2, zero when missing; the last of equal keys
// wins). The special types (metav1.Time, resource.Quantity, ...) and the
// struct types the generator does not transcode (listed at the top of
// zz_generated_json.go) are decoded typed, with their own Unmarshal (called
// on one value for each occurrence, as gogo merges them), and written with
// their appender: exact by construction. resource.Quantity, in every
// container's resources, is decoded once per distinct protobuf bytes
// (pbQuantity caches its JSON), so that the common case allocates nothing.
//
// A transcoder fails (panics with pbFailure, which appendProtoJSON recovers)
// on what gogo rejects and on what it chooses not to replicate, all of it
// input the API server does not send:
//   - a non-repeated message field (transcoded, not decoded typed) that
//     occurs more than once (gogo merges the occurrences);
//   - groups (wire types 3 and 4), which gogo skips in unknown fields;
//   - a map entry's key or value with a wire type other than 2 (gogo reads
//     a key or value whatever its wire type);
//   - a length-delimited value inside a map entry, or a packed varint, that
//     runs past the entry's or the packed field's end (gogo checks it only
//     against the end of the whole message);
//   - a message of 2 GiB or more.

// pbFailure aborts a transcoder: the input is malformed, or not in the
// subset the transcoders replicate.
type pbFailure struct{}

func pbFail() { panic(pbFailure{}) }

// appendProtoJSON appends to b the JSON of the message of type T encoded in p, where fn is a generated transcoder
// (pbCorev1PodSpec or pbCorev1PodStatus). ok is false, with b unchanged, when the transcoder cannot vouch for its
// output; the caller then decodes p typed.
//
// b's bytes are unchanged on failure, but the transcoder may have written
// into its spare capacity. A failure of an appender (encodeFailure: what
// the typed path would fail on too) is a failure.
func appendProtoJSON(b, p []byte, fn func(b, p []byte) []byte) (out []byte, ok bool) {
	if len(p) >= math.MaxInt32 {
		return b, false
	}
	defer func() {
		if r := recover(); r != nil {
			switch r.(type) {
			case pbFailure, encodeFailure: // encodeFailure: the typed appender would fail too
				out, ok = b, false
			default:
				panic(r)
			}
		}
	}()
	return fn(b, p), true
}

// Field kinds of a scanned message's table.
const (
	pbVarint    = 1 + iota // wire type 0
	pbBytes                // wire type 2
	pbRepVarint            // repeated varint: wire type 0, or 2 (packed)
)

// pbSlot is a field number's entry in a message's table: the index+1 of its
// pbField (0 for a field the transcoder does not know) and its kind.
type pbSlot struct {
	slot, kind uint8
}

// pbField is what pbScan keeps of a known field.
type pbField struct {
	n     uint32 // occurrences
	cnt   uint32 // elements of a repeated varint (packed or not)
	first uint32 // offset of the first occurrence's tag
	lo    uint32 // last occurrence's bytes (wire type 2): p[lo:hi]
	hi    uint32
	v     uint64 // last occurrence's value (wire type 0)
}

// pbReadVarint reads the varint at p[i:] as gogo does: at most ten bytes, the
// bits past 64 dropped.
func pbReadVarint(p []byte, i int) (uint64, int) {
	if i < len(p) && p[i] < 0x80 {
		return uint64(p[i]), i + 1
	}
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if i >= len(p) {
			pbFail()
		}
		c := p[i]
		i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, i
		}
	}
	pbFail()
	return 0, 0
}

// pbReadLen reads the length at p[i:] and returns the bounds of the bytes
// that follow.
func pbReadLen(p []byte, i int) (lo, hi int) {
	n, i := pbReadVarint(p, i)
	if n > uint64(len(p)-i) {
		pbFail()
	}
	return i, i + int(n)
}

// pbReadTag reads a field's tag: its number (gogo's int32(key>>3)) and wire
// type, failing where gogo fails (number <= 0, end group) or where the
// transcoders do not follow (start group).
func pbReadTag(p []byte, i int) (num int32, wt uint64, j int) {
	key, j := pbReadVarint(p, i)
	num, wt = int32(key>>3), key&7
	if num <= 0 || wt == 3 || wt == 4 {
		pbFail()
	}
	return num, wt, j
}

// pbSkip skips the value of an unknown field of wire type wt at p[i:], as
// gogo's skipGenerated (groups excepted).
func pbSkip(p []byte, i int, wt uint64) int {
	switch wt {
	case 0:
		_, i = pbReadVarint(p, i)
	case 1:
		if len(p)-i < 8 {
			pbFail()
		}
		i += 8
	case 2:
		_, i = pbReadLen(p, i)
	case 5:
		if len(p)-i < 4 {
			pbFail()
		}
		i += 4
	default:
		pbFail()
	}
	return i
}

// pbScan reads the message p into fs, by the table tab (indexed by field
// number), checking it.
func pbScan(p []byte, tab []pbSlot, fs []pbField) {
	for i := 0; i < len(p); {
		start := i
		num, wt, j := pbReadTag(p, i)
		var s pbSlot
		if int(num) < len(tab) {
			s = tab[num]
		}
		if s.slot == 0 {
			i = pbSkip(p, j, wt)
			continue
		}
		f := &fs[s.slot-1]
		switch {
		case wt == 0 && s.kind == pbVarint:
			f.v, i = pbReadVarint(p, j)
		case wt == 2 && s.kind == pbBytes:
			lo, hi := pbReadLen(p, j)
			f.lo, f.hi, i = uint32(lo), uint32(hi), hi
		case wt == 0 && s.kind == pbRepVarint:
			_, i = pbReadVarint(p, j)
			f.cnt++
		case wt == 2 && s.kind == pbRepVarint:
			lo, hi := pbReadLen(p, j)
			for k := lo; k < hi; {
				_, k = pbReadVarint(p[:hi], k)
				f.cnt++
			}
			i = hi
		default:
			pbFail() // gogo: wrong wireType
		}
		if f.n == 0 {
			f.first = uint32(start)
		}
		f.n++
	}
}

// pbOne returns the bytes of the non-repeated message field f: nil when
// absent. It fails when the field occurs more than once (gogo merges).
func pbOne(p []byte, f *pbField) []byte {
	switch f.n {
	case 0:
		return nil
	case 1:
		return p[f.lo:f.hi]
	}
	pbFail()
	return nil
}

// pbString is p[lo:hi] as a string that shares p's bytes; nothing keeps it.
func pbString(p []byte, lo, hi uint32) string {
	if lo == hi {
		return ""
	}
	return unsafe.String(&p[lo], hi-lo)
}

// pbBytesString is b as a string that shares its bytes; nothing keeps it.
func pbBytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// pbIter walks the occurrences of field num of a scanned message, from the
// first one's tag (pbField.first).
type pbIter struct {
	p      []byte
	i      int
	num    int32
	pk, pe int // packed varints left: p[pk:pe]
}

// next returns the bytes of the next occurrence (wire type 2).
func (it *pbIter) next() []byte {
	for {
		num, wt, j := pbReadTag(it.p, it.i)
		if num == it.num && wt == 2 {
			lo, hi := pbReadLen(it.p, j)
			it.i = hi
			return it.p[lo:hi]
		}
		it.i = pbSkip(it.p, j, wt)
	}
}

// nextVarint returns the next element of a repeated varint field.
func (it *pbIter) nextVarint() uint64 {
	for {
		if it.pk < it.pe {
			var v uint64
			v, it.pk = pbReadVarint(it.p[:it.pe], it.pk)
			return v
		}
		num, wt, j := pbReadTag(it.p, it.i)
		if num == it.num {
			switch wt {
			case 0:
				var v uint64
				v, it.i = pbReadVarint(it.p, j)
				return v
			case 2:
				it.pk, it.pe = pbReadLen(it.p, j)
				it.i = it.pe
				continue
			}
		}
		it.i = pbSkip(it.p, j, wt)
	}
}

// pbEntry is a map entry: its key's and value's bytes (nil when missing).
type pbEntry struct {
	k, v []byte
	hasV bool
}

// pbMap appends to buf the entries of the map field f (number num) of the
// message p, sorted by key, equal keys in the order they occur (the last
// one wins).
func pbMap(p []byte, f *pbField, num int32, buf []pbEntry) []pbEntry {
	it := pbIter{p: p, i: int(f.first), num: num}
	for range f.n {
		e := it.next()
		var en pbEntry
		for i := 0; i < len(e); {
			key, j := pbReadVarint(e, i)
			num, wt := int32(key>>3), key&7 // gogo: any other number is skipped
			switch {
			case num == 1 && wt == 2:
				lo, hi := pbReadLen(e, j)
				en.k, i = e[lo:hi], hi
			case num == 2 && wt == 2:
				lo, hi := pbReadLen(e, j)
				en.v, en.hasV, i = e[lo:hi], true, hi
			case num == 1 || num == 2:
				pbFail() // gogo reads it as length-delimited whatever its wire type
			default:
				i = pbSkip(e, j, wt)
			}
		}
		buf = append(buf, en)
	}
	if len(buf) <= 12 {
		for i := 1; i < len(buf); i++ {
			for j := i; j > 0 && bytes.Compare(buf[j-1].k, buf[j].k) > 0; j-- {
				buf[j-1], buf[j] = buf[j], buf[j-1]
			}
		}
	} else {
		slices.SortStableFunc(buf, func(a, b pbEntry) int { return bytes.Compare(a.k, b.k) })
	}
	return buf
}

// pbOverwritten tells whether entry k of the sorted es is overwritten by a
// later one of the same key.
func pbOverwritten(es []pbEntry, k int) bool {
	return k+1 < len(es) && bytes.Equal(es[k].k, es[k+1].k)
}

// pbQuantities caches the JSON of resource.Quantity messages by their
// protobuf bytes: a cluster's quantities are few ("100m", "128Mi"), and
// decoding one allocates (ParseQuantity, then String to canonicalize it).
var pbQuantities struct {
	sync.RWMutex
	m map[string]string
}

// pbQuantitiesMax bounds pbQuantities: past it, quantities are decoded
// every time.
const pbQuantitiesMax = 4096

// pbQuantity appends the JSON of the resource.Quantity message sub: what
// Unmarshal into a zero Quantity, then appendQuantity, write (the cache
// holds what they wrote).
func pbQuantity(b, sub []byte) []byte {
	pbQuantities.RLock()
	s, ok := pbQuantities.m[string(sub)]
	pbQuantities.RUnlock()
	if ok {
		return append(b, s...)
	}
	var q resource.Quantity
	if q.Unmarshal(sub) != nil {
		pbFail()
	}
	n := len(b)
	b = appendQuantity(b, &q)
	pbQuantities.Lock()
	if len(pbQuantities.m) < pbQuantitiesMax {
		if pbQuantities.m == nil {
			pbQuantities.m = map[string]string{}
		}
		pbQuantities.m[string(sub)] = string(b[n:])
	}
	pbQuantities.Unlock()
	return b
}

// pbFieldsV1 appends the JSON of the metav1.FieldsV1 message sub (a field
// manager's set, managedFields[].fieldsV1): what Unmarshal into a zero
// FieldsV1, then its generated appender, write.
func pbFieldsV1(b, sub []byte) []byte {
	var f metav1.FieldsV1
	if f.Unmarshal(sub) != nil {
		pbFail()
	}
	out, err := f.MarshalJSON()
	return appendMarshaled(b, out, err, true)
}
