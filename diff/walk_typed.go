package diff

import (
	"reflect"
	"unsafe"
)

// The helpers of the generated walker (zz_generated_walk.go, written by
// internal/walkgen): what its functions share, whatever the type.

// typedSameBytes is sameBytes for the n bytes at x and y.
func typedSameBytes(x, y unsafe.Pointer, n uintptr) bool {
	return x == y || unsafe.String((*byte)(x), n) == unsafe.String((*byte)(y), n)
}

// typedMapPointer is what reflect.Value.Pointer returns for the map at m.
func typedMapPointer(m unsafe.Pointer) unsafe.Pointer { return *(*unsafe.Pointer)(m) }

// typedCompareKeyed is compareKeyed for two lists of elements compared by
// walk, whose keys key returns (the field keyFieldIndex names, as
// scalarString writes it), size the size of an element when equal bytes
// make two equal (see sameMemory), else 0; appendE, when not nil, appends
// the JSON of an element added or removed (see reportTypedElem). When a
// list has an element whose key is empty, or two elements with one key, it
// is compareKeyed's: appendElementKeys makes up their keys.
func typedCompareKeyed[E any](w *walker, lk listKind, x, y []E, key func(*E) string, walk func(*walker, *E, *E), size uintptr, appendE func([]byte, *E) ([]byte, bool)) {
	var bx, by [8]keyIndex
	kx, okx := typedSortedKeys(x, bx[:0], key)
	ky, oky := typedSortedKeys(y, by[:0], key)
	if !okx || !oky {
		w.compareKeyed(lk, reflect.ValueOf(x), reflect.ValueOf(y))
		return
	}
	kj := keyJoin{kx: kx, ky: ky}
	for e, ok := kj.next(); ok; e, ok = kj.next() {
		k, ix, iy := e.key, e.ix, e.iy
		switch {
		case ix >= 0 && iy >= 0:
			ex, ey := &x[ix], &y[iy]
			if size > 0 && typedSameBytes(unsafe.Pointer(ex), unsafe.Pointer(ey), size) {
				continue
			}
			w.pushElem(lk, k)
			walk(w, ex, ey)
		case ix >= 0:
			w.pushElem(lk, k)
			if appendE != nil {
				reportTypedElem(w, lk, &x[ix], nil, appendE)
			} else {
				w.reportElem(lk, boxed(reflect.ValueOf(&x[ix]).Elem()), reflect.Value{})
			}
		default:
			w.pushElem(lk, k)
			if appendE != nil {
				reportTypedElem(w, lk, nil, &y[iy], appendE)
			} else {
				w.reportElem(lk, reflect.Value{}, boxed(reflect.ValueOf(&y[iy]).Elem()))
			}
		}
		w.pop()
	}
}

// typedSortedKeys is sortedElementKeys for a list whose keys are not empty
// and unique (then they are appendElementKeys's); false otherwise.
func typedSortedKeys[E any](x []E, buf []keyIndex, key func(*E) string) ([]keyIndex, bool) {
	for i := range x {
		k := key(&x[i])
		if k == "" {
			return buf, false
		}
		buf = append(buf, keyIndex{k, i})
	}
	sortKeys(buf)
	for i := 1; i < len(buf); i++ {
		if buf[i].key == buf[i-1].key {
			return buf, false
		}
	}
	return buf, true
}
