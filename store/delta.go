package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// A delta builds a byte string (the target: an object's revision) by copying
// from a source and inserting new bytes. The source is the concatenation of
// the object's previous revision (possibly empty) and a dictionary of its
// kind (possibly empty). Its format:
//
//	uvarint len(target)
//	op*
//
// where each op starts with a uvarint h; n = h>>2 and by h&3:
//
//	0: insert: the next n bytes of the delta are copied to the target.
//	1: copy n bytes of the source from the cursor.
//	2: copy n bytes of the source from cursor+d, where d is a zigzag varint
//	   that follows.
//
// A copy lies wholly in the previous revision or wholly in the dictionary.
// The cursor starts at 0; an insert of n bytes advances it by n, a copy of n
// bytes from offset s sets it to s+n. So a copy that continues where the
// previous one stopped, or right after a same-length replacement, costs one
// or two bytes.

const (
	// deltaMinMatch is the shortest run of source bytes the encoder copies.
	deltaMinMatch = 8
	// deltaStride is the distance between indexed source positions.
	deltaStride = 16
	// deltaNear is how far from the expected position the encoder looks
	// for a match in the previous revision.
	deltaNear = 2

	opInsert = 0
	opCopy   = 1
	opCopyAt = 2
)

var errDelta = errors.New("malformed delta")

func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

func hash64(v uint64, shift uint) uint32 { return uint32((v * 0x9E3779B97F4A7C15) >> shift) }

// sourceIndex maps the hash of 8 source bytes to 1+ their offset, for every
// deltaStride-th offset.
type sourceIndex struct {
	table []int32
	shift uint
}

// build indexes src, reusing the index's table.
func (x *sourceIndex) build(src []byte) {
	tableBits := max(bits.Len(uint(len(src)/deltaStride))+1, 8)
	size := 1 << tableBits
	if cap(x.table) < size {
		x.table = make([]int32, size)
	}
	x.table = x.table[:size]
	clear(x.table)
	x.shift = uint(64 - tableBits)
	for i := 0; i+deltaMinMatch <= len(src); i += deltaStride {
		x.table[hash64(load64(src, i), x.shift)] = int32(i + 1)
	}
}

// lookup returns an offset in src where the 8 bytes v are, or -1.
func (x *sourceIndex) lookup(src []byte, v uint64) int {
	if len(x.table) == 0 {
		return -1
	}
	if c := int(x.table[hash64(v, x.shift)]) - 1; c >= 0 && load64(src, c) == v {
		return c
	}
	return -1
}

// dictIndex is a dictionary and its index, built once.
type dictIndex struct {
	content []byte
	index   sourceIndex
}

func newDictIndex(content []byte) *dictIndex {
	d := &dictIndex{content: content}
	if len(content) >= deltaMinMatch {
		d.index.build(content)
	}
	return d
}

// deltaEncoder computes deltas. It keeps the index of the previous revision
// between calls so the write path does not allocate one per revision; it is
// not safe for concurrent use.
type deltaEncoder struct {
	prev sourceIndex
}

// appendDelta appends to out the delta that makes tgt from prev and dict
// (either may be empty or nil).
func (e *deltaEncoder) appendDelta(out, prev []byte, dict *dictIndex, tgt []byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(tgt)))
	var dsrc []byte
	if dict != nil {
		dsrc = dict.content
	}
	np := len(prev)
	e.prev.table = e.prev.table[:0]
	indexed := len(prev) < deltaMinMatch // nothing to index
	if len(tgt) < deltaMinMatch || np+len(dsrc) < deltaMinMatch {
		return appendInsert(out, tgt)
	}

	cursor := 0 // the decoder's cursor after the ops emitted so far
	lit := 0    // start of the target bytes not yet emitted
	p := 0
	for p+deltaMinMatch <= len(tgt) {
		v := load64(tgt, p)
		// Most changes replace a value by one of the same length: look
		// where the source would be if they did, then ask the indexes.
		src, base, s := prev, 0, -1
		exp := cursor + (p - lit)
		switch {
		case exp+deltaMinMatch <= np && load64(prev, exp) == v:
			s = exp
		case exp >= np && exp-np+deltaMinMatch <= len(dsrc) && load64(dsrc, exp-np) == v:
			src, base, s = dsrc, np, exp-np
		default:
			if !indexed {
				// Built on first need: most deltas never ask.
				e.prev.build(prev)
				indexed = true
			}
			if s = e.prev.lookup(prev, v); s >= 0 {
				break
			}
			// A value that changed length: the rest is near.
			if exp < np && p-lit <= 2*deltaNear {
				for d := 1; d <= deltaNear; d++ {
					if i := exp + d; i+deltaMinMatch <= np && load64(prev, i) == v {
						s = i
						break
					}
					if i := exp - d; i >= 0 && i+deltaMinMatch <= np && load64(prev, i) == v {
						s = i
						break
					}
				}
				if s >= 0 {
					break
				}
			}
			if dict != nil {
				if s = dict.index.lookup(dsrc, v); s >= 0 {
					src, base = dsrc, np
				}
			}
		}
		if s < 0 {
			// The longer the run of new bytes, the bigger the steps: the
			// backward extension of the next match takes back what they
			// skip.
			p += 1 + (p-lit)>>4
			continue
		}
		// Extend the match backwards into the pending literal, then forwards.
		t := p
		for s > 0 && t > lit && src[s-1] == tgt[t-1] {
			s--
			t--
		}
		se, te := s+(p-t)+deltaMinMatch, p+deltaMinMatch
		// Long runs are the rule: compare big blocks first.
		for _, n := range [...]int{512, 64} {
			for se+n <= len(src) && te+n <= len(tgt) && bytes.Equal(src[se:se+n], tgt[te:te+n]) {
				se += n
				te += n
			}
		}
		for se+8 <= len(src) && te+8 <= len(tgt) {
			if x := load64(src, se) ^ load64(tgt, te); x != 0 {
				n := bits.TrailingZeros64(x) / 8
				se += n
				te += n
				goto extended
			}
			se += 8
			te += 8
		}
		for se < len(src) && te < len(tgt) && src[se] == tgt[te] {
			se++
			te++
		}
	extended:
		if t > lit {
			out = appendInsert(out, tgt[lit:t])
			cursor += t - lit
		}
		n := te - t
		if d := base + s - cursor; d == 0 {
			out = binary.AppendUvarint(out, uint64(n)<<2|opCopy)
		} else {
			out = binary.AppendUvarint(out, uint64(n)<<2|opCopyAt)
			out = binary.AppendVarint(out, int64(d))
		}
		cursor = base + s + n
		p, lit = te, te
	}
	if lit < len(tgt) {
		out = appendInsert(out, tgt[lit:])
	}
	return out
}

func appendInsert(out, lit []byte) []byte {
	out = binary.AppendUvarint(out, uint64(len(lit))<<2|opInsert)
	return append(out, lit...)
}

// applyDelta appends to dst the target that delta makes from prev and dict.
func applyDelta(dst, prev, dict, delta []byte) ([]byte, error) {
	n, k := binary.Uvarint(delta)
	if k <= 0 || n > 1<<31 {
		return dst, errDelta
	}
	delta = delta[k:]
	start := len(dst)
	want := start + int(n)
	// Room for what the sources and the delta can make, not for what a
	// damaged length claims.
	dst = growCap(dst, min(int(n), len(prev)+len(dict)+len(delta)))
	np := int64(len(prev))
	var cursor int64
	for len(delta) > 0 {
		h, k := binary.Uvarint(delta)
		if k <= 0 {
			return dst, errDelta
		}
		delta = delta[k:]
		size := h >> 2
		if size > uint64(want-len(dst)) {
			return dst, fmt.Errorf("%w: an op of %d bytes overruns the target", errDelta, size)
		}
		var d int64
		switch h & 3 {
		case opInsert:
			if size > uint64(len(delta)) {
				return dst, fmt.Errorf("%w: truncated insert", errDelta)
			}
			dst = append(dst, delta[:size]...)
			delta = delta[size:]
			cursor += int64(size)
			continue
		case opCopy:
		case opCopyAt:
			if d, k = binary.Varint(delta); k <= 0 {
				return dst, errDelta
			}
			delta = delta[k:]
		default:
			return dst, fmt.Errorf("%w: op %d", errDelta, h&3)
		}
		s, e := cursor+d, cursor+d+int64(size)
		switch {
		case s >= 0 && e <= np:
			dst = append(dst, prev[s:e]...)
		case s >= np && e-np <= int64(len(dict)):
			dst = append(dst, dict[s-np:e-np]...)
		default:
			return dst, fmt.Errorf("%w: copy [%d,%d) outside a source of %d+%d bytes", errDelta, s, e, np, len(dict))
		}
		cursor = e
	}
	if len(dst) != want {
		return dst, fmt.Errorf("%w: made %d bytes, want %d", errDelta, len(dst)-start, n)
	}
	return dst, nil
}

// growCap returns b with room for n more bytes.
func growCap(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}
