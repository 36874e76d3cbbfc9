package store

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// podRevisions returns the first n revisions of each of pods pods.
func podRevisions(pods, n int) [][][]byte {
	rv := 1000
	out := make([][][]byte, pods)
	for i := range out {
		p := newFakePod(i, "ns", &rv)
		for range n {
			out[i] = append(out[i], p.next())
		}
	}
	return out
}

func TestDeltaRoundTrip(t *testing.T) {
	revs := podRevisions(3, 40)
	dict := newDictIndex(append(bytes.Clone(revs[2][0]), revs[2][5]...))
	rng := rand.New(rand.NewPCG(1, 2))
	mutate := func(b []byte) []byte {
		b = bytes.Clone(b)
		for range rng.IntN(20) {
			switch i := rng.IntN(len(b) + 1); rng.IntN(3) {
			case 0: // replace
				if i < len(b) {
					b[i] = byte(rng.IntN(256))
				}
			case 1: // insert
				b = append(b[:i], append([]byte(strings.Repeat("x", rng.IntN(40))), b[i:]...)...)
			case 2: // delete
				b = append(b[:i], b[min(len(b), i+rng.IntN(40)):]...)
			}
		}
		return b
	}
	type pair struct {
		name           string
		prev, tgt      []byte
		dict           *dictIndex
		maxDeltaLength int // 0: any
	}
	pairs := []pair{
		{name: "empty target", prev: revs[0][0], tgt: nil},
		{name: "empty source", prev: nil, tgt: revs[0][0]},
		{name: "both empty"},
		{name: "short", prev: []byte("abc"), tgt: []byte("abd")},
		{name: "identical", prev: revs[0][3], tgt: revs[0][3], maxDeltaLength: 8},
		{name: "unrelated", prev: revs[0][3], tgt: bytes.Repeat([]byte("0123456789"), 50)},
		{name: "dictionary only", tgt: revs[1][5], dict: dict},
		{name: "repeated bytes", prev: bytes.Repeat([]byte("a"), 1000), tgt: bytes.Repeat([]byte("a"), 1001)},
	}
	for i := 1; i < 40; i++ {
		maxLen := len(revs[0][i]) / 10 // a few fields changed
		if i <= 2 {
			maxLen = 0 // scheduled, then started: the status is new
		}
		pairs = append(pairs,
			pair{name: "next revision", prev: revs[0][i-1], tgt: revs[0][i], maxDeltaLength: maxLen},
			pair{name: "next revision with dictionary", prev: revs[1][i-1], tgt: revs[1][i], dict: dict},
			pair{name: "random edits", prev: revs[0][i], tgt: mutate(revs[0][i]), dict: dict},
		)
	}
	var e deltaEncoder
	for _, p := range pairs {
		d := e.appendDelta([]byte("prefix"), p.prev, p.dict, p.tgt)
		if !bytes.HasPrefix(d, []byte("prefix")) {
			t.Fatalf("%s: appendDelta lost what it appended to", p.name)
		}
		d = d[len("prefix"):]
		var dictBytes []byte
		if p.dict != nil {
			dictBytes = p.dict.content
		}
		got, err := applyDelta([]byte("x"), p.prev, dictBytes, d)
		if err != nil {
			t.Fatalf("%s: applyDelta: %v", p.name, err)
		}
		if !bytes.Equal(got[1:], p.tgt) || got[0] != 'x' {
			t.Fatalf("%s: applyDelta made\n%q\nwant\n%q", p.name, got, p.tgt)
		}
		if p.maxDeltaLength > 0 && len(d) > p.maxDeltaLength {
			t.Errorf("%s: %d-byte delta for %d bytes of JSON, want at most %d", p.name, len(d), len(p.tgt), p.maxDeltaLength)
		}
	}
}

func TestApplyDeltaRejects(t *testing.T) {
	src := []byte("0123456789abcdef")
	for _, tc := range []struct {
		name  string
		delta []byte
	}{
		{"empty", nil},
		{"copy outside the source", []byte{4, 4<<2 | opCopyAt, 40}},
		{"copy before the source", []byte{4, 4<<2 | opCopyAt, 1}},
		{"truncated insert", []byte{4, 4<<2 | opInsert, 'a'}},
		{"overrun", []byte{2, 4<<2 | opInsert, 'a', 'b', 'c', 'd'}},
		{"short", []byte{5, 4<<2 | opCopy}},
		{"unknown op", []byte{4, 4<<2 | 3}},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	} {
		if got, err := applyDelta(nil, src, nil, tc.delta); err == nil {
			t.Errorf("%s: applyDelta(%x) = %q, want an error", tc.name, tc.delta, got)
		}
	}
}

func FuzzDelta(f *testing.F) {
	revs := podRevisions(1, 3)
	f.Add(revs[0][0], []byte(nil), revs[0][1])
	f.Add(revs[0][1], revs[0][0], revs[0][2])
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaa"), []byte("bbbbbbbbbbbbbbbb"), []byte("bbbbbbbbaaaaaaaaaaaabbbbbbbb"))
	f.Fuzz(func(t *testing.T, prev, dict, tgt []byte) {
		var e deltaEncoder
		d := e.appendDelta(nil, prev, newDictIndex(dict), tgt)
		got, err := applyDelta(nil, prev, dict, d)
		if err != nil || !bytes.Equal(got, tgt) {
			t.Fatalf("round trip: %q, %v; want %q", got, err, tgt)
		}
		// Any bytes as a delta: an error or a result, never a panic.
		applyDelta(nil, prev, dict, tgt)
	})
}

// BenchmarkDelta measures the delta of a pod's revision against the one
// before it and a dictionary of its kind.
func BenchmarkDelta(b *testing.B) {
	revs := podRevisions(20, 40)
	dict := newDictIndex(append(bytes.Clone(revs[19][0]), revs[19][3]...))
	var e deltaEncoder
	var out []byte
	size, i := 0, 0
	for b.Loop() {
		pod, r := i%19, 1+i/19%39
		out = e.appendDelta(out[:0], revs[pod][r-1], dict, revs[pod][r])
		size += len(out)
		i++
	}
	b.ReportMetric(float64(size)/float64(i), "B/delta")
}

func FuzzDecodeRecord(f *testing.F) {
	recs := onePod(3)
	var values [][]byte
	var w worker
	w.e = newEncoder(1 << 20)
	w.e.comp.dict(kindKey(&recs[0]), recs[0].Object)
	w.kd = w.e.comp.newest(kindKey(&recs[0]))
	for i := range recs {
		j := &job{r: &recs[i], seq: uint64(i + 1)}
		var prev *lastRev
		if i > 0 {
			prev = &lastRev{json: recs[i-1].Object, refs: recs[i-1].Refs, observed: unixNano(recs[i-1].Observed)}
		}
		if _, err := w.value(j, prev); err != nil {
			f.Fatal(err)
		}
		values = append(values, bytes.Clone(j.value))
	}
	for _, v := range values {
		f.Add(v)
	}
	ds := &dictSet{content: map[uint32][]byte{}}
	for _, kd := range w.e.comp.pending {
		ds.content[kd.id] = kd.content
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxObjectBytes))
	if err != nil {
		f.Fatal(err)
	}
	ds.zstd = dec
	o := &Object{UID: recs[0].UID}
	prev := revisionOf(&recs[1])
	f.Fuzz(func(t *testing.T, v []byte) {
		// Any bytes as a value: an error or a record, never a panic.
		decodeRecord(ds, o, 1, v, prev)
		decodeRecord(ds, o, 1, v, nil)
	})
}
