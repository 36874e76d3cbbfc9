package diff

import (
	"reflect"
	"strconv"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Ordered lists (slices and arrays that are not compared by key or as a
// set, see lookupList: args, command, matchExpressions, envFrom, ...) are
// compared along an edit script of our own. go-cmp's (cmp/internal/diff)
// starts its search from the front or from the back at random, once per
// process, so that nobody depends on its output: the same two revisions
// could give two different reports. This one is deterministic:
//
//  1. Elements are equal by the walker's rules (podOptions: quantities by
//     value, nil and empty lists and maps alike, Equal methods, keyed lists
//     by key, managedFields and resourceVersion ignored). Two elements that
//     differ are similar as go-cmp's Result.Similar says: the leaves that
//     are equal, plus one, are at least as many as those that differ (see
//     tally); two scalars always are.
//  2. The common prefix, then the common suffix, of equal elements is kept.
//  3. The middle gets a script of the fewest edits, where removing an old
//     element, adding a new one, and modifying an old element into a new
//     one that is similar each count one (a Levenshtein distance, which
//     go-cmp's greedy search approximates). Among those, one that keeps the
//     most equal elements; among those, walking from the front, the first
//     of these that still leads to such a script: keep two equal elements,
//     modify one into the other, remove the old one, add the new one.
//  4. A middle of more than maxScriptCells element pairs (maxStructCells
//     for elements that are not scalars) is not searched: its elements are
//     paired front to front as go-cmp's path.connect pairs them, an equal
//     pair kept, a similar pair modified, otherwise one element of the side
//     with more left removed or added (removed on a tie).
//
// The changes name elements as go-cmp's reporter did: a removed element by
// its old index, an added or modified one by its new index; a modified
// element is walked, so its nested changes have their own paths. A nil list
// against a non-empty one is added or removed whole, as go-cmp reports it.
//
// Where go-cmp gives one answer in both of its directions, this script is
// the same in the common cases (an element changed, inserted or removed,
// lists appended to or cut). It differs where go-cmp's greedy search finds
// more edits than needed (it has a search budget, and takes the first match
// it sees: [b a c] to [a b] is three edits for go-cmp, X.M here), and where
// it picks another script of as many edits: [a b] to [b c] is MM for go-cmp
// in both directions (a became b, b became c), X.Y here (a removed, b kept,
// c added); a swapped pair [a b] to [b a] is X.Y here, one removed and added
// again, not both modified.

// maxScriptCells and maxStructCells bound the table of the search (step 4).
// maxWorkCells bounds the tables of one comparison of two lists together:
// deciding whether two elements are similar compares the ordered lists
// inside them along scripts of their own, so nested lists (node selector
// terms, their expressions, their values) would multiply the bounds. Once
// it is spent, the middles left are paired as step 4 pairs them.
const (
	maxScriptCells = 1 << 16
	maxStructCells = 1 << 12
	maxWorkCells   = 1 << 20
)

var stringsType = reflect.TypeFor[[]string]()

// editOp is one step of an edit script.
type editOp uint8

const (
	opSame   editOp = iota // the elements are equal
	opRemove               // the old element went away
	opAdd                  // the new element appeared
	opModify               // the old element became the new one
)

// orderedScript returns the edit script from ordered list x to y (see
// above).
func orderedScript(x, y reflect.Value) []editOp {
	work := maxWorkCells
	return scriptWithin(x, y, &work)
}

// scriptWithin is orderedScript within what is left of a comparison's
// work (see maxWorkCells).
func scriptWithin(x, y reflect.Value, work *int) []editOp {
	nx, ny := x.Len(), y.Len()
	es := make([]editOp, 0, max(nx, ny)+2)
	eq := elemEqual(x, y)
	p := 0
	for p < nx && p < ny && eq(p, p) {
		p++
	}
	s := 0
	for s < nx-p && s < ny-p && eq(nx-1-s, ny-1-s) {
		s++
	}
	for range p {
		es = append(es, opSame)
	}
	es = middleScript(es, x, y, eq, p, nx-s, p, ny-s, work)
	for range s {
		es = append(es, opSame)
	}
	return es
}

// elemEqual returns whether element i of x equals element j of y.
func elemEqual(x, y reflect.Value) func(i, j int) bool {
	if x.Type() == stringsType && x.CanInterface() && y.CanInterface() {
		xs, ys := x.Interface().([]string), y.Interface().([]string)
		return func(i, j int) bool { return xs[i] == ys[j] }
	}
	if t := x.Type().Elem(); t.Kind() == reflect.String && t.NumMethod() == 0 {
		return func(i, j int) bool { return x.Index(i).String() == y.Index(j).String() }
	}
	return func(i, j int) bool { return valuesEqual(x.Index(i), y.Index(j)) }
}

// Relations of two elements.
const (
	relOther   uint8 = iota // they differ, and are not similar
	relSimilar              // they differ, and are similar
	relEqual
)

// middleScript appends the script from x[xa:xb] to y[ya:yb], which neither
// start nor end with equal elements, to es (steps 3 and 4).
func middleScript(es []editOp, x, y reflect.Value, eq func(i, j int) bool, xa, xb, ya, yb int, work *int) []editOp {
	n, m := xb-xa, yb-ya
	leaf := isLeaf(x.Type().Elem())
	if n == 0 || m == 0 || n*m > maxScriptCells || !leaf && n*m > maxStructCells || n*m > *work {
		return gapScript(es, x, y, eq, xa, xb, ya, yb, work)
	}
	*work -= n * m
	rel := make([]uint8, n*m)
	for i := range n {
		for j := range m {
			switch {
			case eq(xa+i, ya+j):
				rel[i*m+j] = relEqual
			case leaf || similar(x.Index(xa+i), y.Index(ya+j), work):
				rel[i*m+j] = relSimilar
			}
		}
	}
	// cost[i*(m+1)+j] is the cost of the best script from x[xa+i:xb] to
	// y[ya+j:yb]: w per edit, less one per element kept, w more than
	// elements can be kept, so that fewer edits come first.
	w := int32(min(n, m) + 1)
	cost := make([]int32, (n+1)*(m+1))
	at := func(i, j int) int { return i*(m+1) + j }
	for i := n; i >= 0; i-- {
		for j := m; j >= 0; j-- {
			switch {
			case i == n:
				cost[at(i, j)] = int32(m-j) * w
			case j == m:
				cost[at(i, j)] = int32(n-i) * w
			default:
				c := min(cost[at(i+1, j)], cost[at(i, j+1)]) + w
				switch rel[i*m+j] {
				case relEqual:
					c = min(c, cost[at(i+1, j+1)]-1)
				case relSimilar:
					c = min(c, cost[at(i+1, j+1)]+w)
				}
				cost[at(i, j)] = c
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		c := cost[at(i, j)]
		switch {
		case i < n && j < m && rel[i*m+j] == relEqual && cost[at(i+1, j+1)]-1 == c:
			es = append(es, opSame)
			i, j = i+1, j+1
		case i < n && j < m && rel[i*m+j] == relSimilar && cost[at(i+1, j+1)]+w == c:
			es = append(es, opModify)
			i, j = i+1, j+1
		case i < n && cost[at(i+1, j)]+w == c:
			es = append(es, opRemove)
			i++
		default:
			es = append(es, opAdd)
			j++
		}
	}
	return es
}

// gapScript appends the script from x[xa:xb] to y[ya:yb] to es, pairing
// elements front to front: equal pairs are kept, similar ones modified, the
// rest removed and added (step 4 above).
func gapScript(es []editOp, x, y reflect.Value, eq func(i, j int) bool, xa, xb, ya, yb int, work *int) []editOp {
	for xa < xb && ya < yb {
		switch {
		case eq(xa, ya):
			es = append(es, opSame)
			xa, ya = xa+1, ya+1
		case similar(x.Index(xa), y.Index(ya), work):
			es = append(es, opModify)
			xa, ya = xa+1, ya+1
		case xb-xa >= yb-ya:
			es = append(es, opRemove)
			xa++
		default:
			es = append(es, opAdd)
			ya++
		}
	}
	for ; xa < xb; xa++ {
		es = append(es, opRemove)
	}
	for ; ya < yb; ya++ {
		es = append(es, opAdd)
	}
	return es
}

// similar reports whether two elements that differ are similar enough to
// be one modified element, as go-cmp's Result.Similar decides it: the
// leaves that are equal, plus one, are at least as many as those that
// differ. Two scalars, one leaf, always are.
func similar(x, y reflect.Value, work *int) bool {
	if isLeaf(x.Type()) {
		return true
	}
	t := tally{work: work}
	t.compare(x, y)
	return t.same+1 >= t.diff
}

// isLeaf reports whether go-cmp compares values of type t in one step.
func isLeaf(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return t == quantityType || t == timeType
}

// valuesEqual reports whether x and y are equal by the walker's rules.
func valuesEqual(x, y reflect.Value) bool {
	t := tally{quick: true}
	t.compare(x, y)
	return t.diff == 0
}

// tally counts the leaves that are equal and those that differ between two
// values, by the rules of podOptions, the way go-cmp counts them for its
// Result (a nil against a non-nil pointer, list or map, a missing map entry
// or list element, is one leaf). Quick, it only says whether the values are
// equal: it stops at the first difference and takes what the two values
// share (see same) as one equal leaf.
type tally struct {
	same, diff int
	quick      bool
	work       *int // what is left of the comparison's work (see maxWorkCells)
}

func (t *tally) add(eq bool) {
	if eq {
		t.same++
	} else {
		t.diff++
	}
}

func (t *tally) compare(x, y reflect.Value) {
	if !x.IsValid() || !y.IsValid() {
		t.add(x.IsValid() == y.IsValid())
		return
	}
	if t.quick && same(x, y) {
		t.same++
		return
	}
	typ := x.Type()
	if typ == quantityType {
		qx, qy := x.Interface().(resource.Quantity), y.Interface().(resource.Quantity)
		t.add(qx.Cmp(qy) == 0)
		return
	}
	switch typ.Kind() {
	case reflect.Slice, reflect.Map:
		if x.Len() == 0 && y.Len() == 0 && (x.IsNil() || y.IsNil()) {
			t.add(true) // podOptions' bothEmpty
			return
		}
	}
	if typ.NumMethod() > 0 {
		if eq, ok := callEqual(typ, x, y); ok {
			t.add(eq)
			return
		}
	}
	switch typ.Kind() {
	case reflect.Bool:
		t.add(x.Bool() == y.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		t.add(x.Int() == y.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		t.add(x.Uint() == y.Uint())
	case reflect.Float32, reflect.Float64:
		t.add(x.Float() == y.Float())
	case reflect.String:
		t.add(x.String() == y.String())
	case reflect.Struct:
		fields := fieldsOf(typ)
		if fields == nil {
			t.add(cmp.Equal(x.Interface(), y.Interface(), podOptions))
			return
		}
		for _, f := range fields {
			fx, fy := x.Field(f.index), y.Field(f.index)
			if f.keyed && (fx.Len() > 0 || fy.Len() > 0) {
				t.keyed(fx, fy)
			} else {
				t.compare(fx, fy)
			}
			if t.quick && t.diff > 0 {
				return
			}
		}
	case reflect.Slice, reflect.Array:
		if typ.Kind() == reflect.Slice && (x.IsNil() || y.IsNil()) {
			t.add(x.IsNil() && y.IsNil())
			return
		}
		t.ordered(x, y)
	case reflect.Map:
		if x.IsNil() || y.IsNil() {
			t.add(x.IsNil() && y.IsNil())
			return
		}
		if t.quick && x.Len() != y.Len() {
			t.diff++
			return
		}
		// Entries of x, then those only y has: each a leaf that differs.
		iter := x.MapRange()
		for iter.Next() {
			t.compare(iter.Value(), y.MapIndex(iter.Key()))
			if t.quick && t.diff > 0 {
				return
			}
		}
		iter = y.MapRange()
		for iter.Next() {
			if !x.MapIndex(iter.Key()).IsValid() {
				t.diff++
			}
		}
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			t.add(x.IsNil() && y.IsNil())
			return
		}
		t.compare(x.Elem(), y.Elem())
	case reflect.Interface:
		switch {
		case x.IsNil() || y.IsNil():
			t.add(x.IsNil() && y.IsNil())
		case x.Elem().Type() != y.Elem().Type():
			t.add(false)
		default:
			t.compare(x.Elem(), y.Elem())
		}
	default:
		t.add(cmp.Equal(x.Interface(), y.Interface(), podOptions))
	}
}

// keyed tallies two lists compared by key or as a set, as go-cmp compares
// the maps toKeyed makes of them.
func (t *tally) keyed(x, y reflect.Value) {
	var bx, by [8]keyIndex
	kx, ky := sortedElementKeys(x, bx[:0]), sortedElementKeys(y, by[:0])
	if t.quick && len(kx) != len(ky) {
		t.diff++
		return
	}
	i, j := 0, 0
	for (i < len(kx) || j < len(ky)) && !(t.quick && t.diff > 0) {
		switch {
		case j == len(ky) || i < len(kx) && kx[i].key < ky[j].key:
			t.diff++ // removed
			i++
		case i == len(kx) || ky[j].key < kx[i].key:
			t.diff++ // added
			j++
		default:
			t.compare(x.Index(kx[i].i), y.Index(ky[j].i))
			i, j = i+1, j+1
		}
	}
}

// ordered tallies two ordered lists along their edit script, as go-cmp
// does along its own: each element removed or added is one leaf that
// differs.
func (t *tally) ordered(x, y reflect.Value) {
	if t.quick {
		if x.Len() != y.Len() {
			t.diff++
			return
		}
		for i := 0; i < x.Len() && t.diff == 0; i++ {
			t.compare(x.Index(i), y.Index(i))
		}
		return
	}
	ix, iy := 0, 0
	for _, op := range scriptWithin(x, y, t.work) {
		switch op {
		case opSame, opModify:
			t.compare(x.Index(ix), y.Index(iy))
			ix, iy = ix+1, iy+1
		case opRemove:
			t.diff++
			ix++
		case opAdd:
			t.diff++
			iy++
		}
	}
}

// compareOrdered compares two ordered lists along their edit script:
// removed elements are reported at their old index, added ones at their
// new index, and modified ones are walked at their new index.
func (w *walker) compareOrdered(x, y reflect.Value) {
	if x.Kind() == reflect.Slice && (x.IsNil() || y.IsNil()) {
		w.report(x, y) // added or removed whole
		return
	}
	ix, iy := 0, 0
	for _, op := range orderedScript(x, y) {
		switch op {
		case opSame:
			ix, iy = ix+1, iy+1
		case opRemove:
			w.pushIndex(ix)
			w.report(x.Index(ix), reflect.Value{})
			w.pop()
			ix++
		case opAdd:
			w.pushIndex(iy)
			w.report(reflect.Value{}, y.Index(iy))
			w.pop()
			iy++
		case opModify:
			w.pushIndex(iy)
			w.compare(x.Index(ix), y.Index(iy))
			w.pop()
			ix, iy = ix+1, iy+1
		}
	}
}

// pushIndex pushes the element of an ordered list at index i (i:i in
// managedFields notation).
func (w *walker) pushIndex(i int) {
	name := strconv.Itoa(i)
	w.pushBracket(walkStep{name: name, index: true}, name)
}
