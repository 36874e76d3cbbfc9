package diff

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// walker compares two values of one type by the rules of podOptions, as
// go-cmp would, and collects their differences as Changes. It walks the
// typed values itself, without evaluating options at each node, and skips
// the parts two revisions share in memory (see decoder). Ordered lists that
// differ are compared along a deterministic edit script (see ordered.go).
type walker struct {
	// pointee says the values compared are those of two pointers to a
	// scalar, both set: a value there that goes to or from its zero is
	// changed, not added or removed (deletionGracePeriodSeconds 3 -> 0 is
	// a DELETE with grace period 0, not a field taken away).
	pointee bool
	// steps are the steps of the path, without pointers: pushing and
	// popping them writes none (no write barriers).
	steps   []pathStep
	changes []Change
	// path is the path of the steps in JSON field names, built as they
	// are pushed; each step remembers where it began, and its name is
	// read from it.
	path []byte
	// lists are the lists of the element steps among steps, in order.
	lists []listKind
	// paths are the paths of the changes reported, as pathOf returns
	// them: a walker reports changes at the same few paths revision after
	// revision, and they share one string and fieldPath. pathIndex finds
	// them by path (1 + their index in paths).
	paths     []pathEntry
	pathIndex map[string]int32
	// pathArena, fieldArena and stepArena hold the paths pathOf renders:
	// what is in them is never written again.
	pathArena  []byte
	fieldArena []string
	stepArena  []pathStep
	// changeArena holds the changes nextChanges returned: what is in it
	// is never written again.
	changeArena []Change
	// elemFields caches elementField's strings over the revisions that a
	// walker compares in turn.
	elemFields map[elemField]string
	// scratch is where the typed reports (reportTime, formatTyped...)
	// format values.
	scratch []byte
}

// elemField is the key of walker.elemFields.
type elemField struct {
	lk   listKind
	name string
}

// walkStep is a step of the walker's path to push (see pushBracket): the
// key of a map entry or of a list element, or the index of an ordered
// list's.
type walkStep struct {
	name  string   // a field's JSON name, or an element's key
	elem  bool     // name is the key of a list element
	index bool     // name is the index of an ordered list element
	list  listKind // the element's list
}

// pathStep is a step of the walker's path as it keeps it: its name is in
// walker.path, and an element's list in walker.lists.
type pathStep struct {
	start int32 // where the step begins in walker.path
	kind  stepKind
}

// stepKind is what a pathStep steps into.
type stepKind uint8

const (
	fieldStep stepKind = iota // a struct field: ".name" in the path ("name" first)
	elemStep                  // an element of a list compared by key or as a set: "[key]"
	indexStep                 // an element of an ordered list: "[index]"
	keyStep                   // a map entry: "[key]"
)

// pathEntry is a path pathOf rendered: its text, its fieldPath, and the
// steps and lists it was rendered from, which make its fieldPath (a map
// key or list key may hold dots or brackets: one text may be two paths).
type pathEntry struct {
	path   string
	fields fieldPath
	steps  []pathStep
	lists  []listKind
	next   int32 // 1 + the index of the next path of the same text, or 0
}

// structField is what the walker needs of a struct field.
type structField struct {
	index int
	name  string // JSON name; "" for an inlined struct
	list  listKind
	keyed bool // a list compared by key or as a set
	// bitwise: the field is a struct or array that equal bytes make equal
	// (see bitwiseComparable).
	bitwise bool
}

var (
	quantityType    = reflect.TypeFor[resource.Quantity]()
	timeType        = reflect.TypeFor[time.Time]()
	metaTimePtrType = reflect.TypeFor[*metav1.Time]()
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	anyType         = reflect.TypeFor[any]()
	boolType        = reflect.TypeFor[bool]()
)

// walkFacts is what the walker needs to know of a type, found once: a
// struct's value is compared after looking for its Equal method, and both
// come in one lookup.
type walkFacts struct {
	equal  reflect.Value // the Equal method go-cmp would call, or invalid
	fields []structField // fieldsOf, for a struct type
	// typed is compareStruct for two values of the struct type at x and
	// y, generated from the API types (zz_generated_walk.go), or nil.
	typed func(w *walker, x, y unsafe.Pointer)
}

// walkTyped says whether compareUnlike calls the generated walkFacts.typed;
// the tests turn it off to compare with the reflective walk.
var walkTyped = true

//go:generate go run ./internal/walkgen

var walkFactsOf sync.Map // reflect.Type -> *walkFacts

// factsOf returns the walkFacts of type t.
func factsOf(t reflect.Type) *walkFacts {
	if v, ok := walkFactsOf.Load(t); ok {
		return v.(*walkFacts)
	}
	f := &walkFacts{equal: equalMethod(t)}
	if t.Kind() == reflect.Struct {
		f.fields = structFieldsOf(t)
		f.typed = typedWalks[t]
	}
	v, _ := walkFactsOf.LoadOrStore(t, f)
	return v.(*walkFacts)
}

// fieldsOf returns the compared fields of struct type t: all but
// ObjectMeta's managedFields and resourceVersion (see podOptions). It
// returns nil for a struct with unexported fields, which go-cmp handles (by
// refusing it).
func fieldsOf(t reflect.Type) []structField { return factsOf(t).fields }

// structFieldsOf is fieldsOf, found.
func structFieldsOf(t reflect.Type) []structField {
	fields := []structField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			return nil
		}
		if t == objectMetaType && (f.Name == "ManagedFields" || f.Name == "ResourceVersion") {
			continue
		}
		lk, keyed := lookupList(t, i)
		name := jsonName(f)
		bitwise := (f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Array) && bitwiseComparable(f.Type)
		fields = append(fields, structField{index: i, name: name, list: lk, keyed: keyed, bitwise: bitwise})
	}
	// In the order of their JSON names: the changes come out mostly in
	// the path order comparePods sorts them into, and sorting what is
	// sorted already costs one comparison a change.
	slices.SortStableFunc(fields, func(a, b structField) int { return strings.Compare(a.name, b.name) })
	return fields
}

// pushField pushes a struct field with JSON name name (f:name in
// managedFields notation).
func (w *walker) pushField(name string) {
	w.steps = append(w.steps, pathStep{start: int32(len(w.path)), kind: fieldStep})
	if len(w.path) > 0 {
		w.path = append(w.path, '.')
	}
	w.path = append(w.path, name...)
}

// pushElem pushes the element of list lk whose key is name.
func (w *walker) pushElem(lk listKind, name string) {
	w.lists = append(w.lists, lk)
	w.pushName(elemStep, name)
}

// pushKey pushes the map entry of key k.
func (w *walker) pushKey(k reflect.Value) {
	w.pushName(keyStep, mapKeyString(k))
}

// pushBracket pushes step, named "[name]" in the path; its managedFields
// name is made by pathOf, when a change needs it.
func (w *walker) pushBracket(step walkStep, name string) {
	switch {
	case step.elem:
		w.pushElem(step.list, name)
	case step.index:
		w.pushName(indexStep, name)
	default:
		w.pushName(keyStep, name)
	}
}

// pushName pushes a step of kind k, named "[name]" in the path.
func (w *walker) pushName(k stepKind, name string) {
	w.steps = append(w.steps, pathStep{start: int32(len(w.path)), kind: k})
	w.path = append(w.path, '[')
	w.path = append(w.path, name...)
	w.path = append(w.path, ']')
}

func (w *walker) pop() {
	n := len(w.steps) - 1
	s := w.steps[n]
	w.path = w.path[:s.start]
	if s.kind == elemStep {
		w.lists = w.lists[:len(w.lists)-1]
	}
	w.steps = w.steps[:n]
}

// mapKeyString is a map key as a path shows it.
func mapKeyString(k reflect.Value) string {
	if k.Kind() == reflect.String && k.Type().NumMethod() == 0 {
		return k.String()
	}
	return fmt.Sprint(k.Interface())
}

// compare compares two valid values of the same type, in the order go-cmp
// applies its rules: podOptions, then an Equal method, then the kind.
func (w *walker) compare(x, y reflect.Value) {
	if same(x, y) {
		return
	}
	w.compareUnlike(x, y)
}

// compareUnlike is compare for values that same did not find equal.
func (w *walker) compareUnlike(x, y reflect.Value) {
	t := x.Type()
	if t == quantityType {
		// Copies: Cmp may convert its receiver's representation.
		qx, qy := x.Interface().(resource.Quantity), y.Interface().(resource.Quantity)
		if qx.Cmp(qy) != 0 {
			w.report(x, y)
		}
		return
	}
	var facts *walkFacts
	if t.NumMethod() > 0 {
		eq, ok := equalTimes(t, x, y)
		if !ok {
			facts = factsOf(t)
			eq, ok = callEqualMethod(facts.equal, x, y)
		}
		if ok {
			if !eq {
				w.report(x, y)
			}
			return
		}
	}
	eq := true
	switch t.Kind() {
	case reflect.Bool:
		eq = x.Bool() == y.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		eq = x.Int() == y.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		eq = x.Uint() == y.Uint()
	case reflect.Float32, reflect.Float64:
		eq = x.Float() == y.Float()
	case reflect.String:
		eq = x.String() == y.String()
	case reflect.Struct:
		if facts == nil {
			facts = factsOf(t)
		}
		if facts.typed != nil && walkTyped && x.CanAddr() && y.CanAddr() {
			facts.typed(w, x.Addr().UnsafePointer(), y.Addr().UnsafePointer())
		} else {
			w.compareStruct(facts.fields, x, y)
		}
	case reflect.Map:
		w.compareMap(x, y)
	case reflect.Slice, reflect.Array:
		w.compareOrdered(x, y)
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			eq = false
		} else {
			saved := w.pointee
			w.pointee = scalarKind(t.Elem().Kind())
			w.compare(x.Elem(), y.Elem())
			w.pointee = saved
		}
	case reflect.Interface:
		switch {
		case x.IsNil() || y.IsNil():
			eq = x.IsNil() && y.IsNil()
		case x.Elem().Type() != y.Elem().Type():
			eq = false
		default:
			w.compare(x.Elem(), y.Elem())
		}
	default:
		// Kinds pods do not have.
		w.delegate(x, y)
	}
	if !eq {
		w.report(x, y)
	}
}

// same reports whether x and y are equal at a glance: both empty lists or
// maps (nil and empty are equal, as JSON omits both), the same memory, or
// the same plain scalar.
func same(x, y reflect.Value) bool {
	switch x.Kind() {
	case reflect.Slice, reflect.Map:
		return x.Len() == 0 && y.Len() == 0 || x.Pointer() == y.Pointer() && x.Len() == y.Len()
	case reflect.Pointer:
		return x.Pointer() == y.Pointer()
	case reflect.String:
		return x.String() == y.String() && x.Type().NumMethod() == 0
	case reflect.Bool:
		return x.Bool() == y.Bool() && x.Type().NumMethod() == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return x.Int() == y.Int() && x.Type().NumMethod() == 0
	case reflect.Struct:
		return sameMemory(x, y)
	}
	return false
}

// same is same (the function) for the values of struct field f, without
// looking up whether its type is bitwiseComparable.
func (f *structField) same(x, y reflect.Value) bool {
	if x.Kind() == reflect.Struct {
		return f.bitwise && sameBytes(x, y)
	}
	return same(x, y)
}

// sameMemory reports whether two structs of a type without floats are the
// same bytes: the same scalars, and pointers, strings, slices and maps to
// the same memory, which the walker takes as equal (see same). The
// decoder copies what did not change from the revision before, so
// unchanged structs (a pod's spec, a container's status) are.
func sameMemory(x, y reflect.Value) bool {
	if !x.CanAddr() || !y.CanAddr() {
		return false
	}
	return bitwiseComparable(x.Type()) && sameBytes(x, y)
}

// sameBytes is sameMemory for addressable values of a type
// bitwiseComparable said yes to.
func sameBytes(x, y reflect.Value) bool {
	if !x.CanAddr() || !y.CanAddr() {
		return false
	}
	n := int(x.Type().Size())
	if n == 0 {
		return true
	}
	px, py := unsafe.Pointer(x.UnsafeAddr()), unsafe.Pointer(y.UnsafeAddr())
	return px == py || unsafe.String((*byte)(px), n) == unsafe.String((*byte)(py), n)
}

var bitwise sync.Map // reflect.Type -> bool

// bitwiseComparable reports whether equal bytes make two values of struct
// or array type t equal for the walker and go-cmp: t holds no float (NaN
// differs from itself) and no interface directly (only through pointers,
// slices and maps, where the walker takes the same memory as equal).
func bitwiseComparable(t reflect.Type) bool {
	if v, ok := bitwise.Load(t); ok {
		return v.(bool)
	}
	var ok func(t reflect.Type) bool
	ok = func(t reflect.Type) bool {
		switch t.Kind() {
		case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
			return false
		case reflect.Array:
			return ok(t.Elem())
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				if !ok(t.Field(i).Type) {
					return false
				}
			}
		}
		return true
	}
	yes := ok(t)
	bitwise.Store(t, yes)
	return yes
}

// compareStruct compares two structs of a type whose fieldsOf are fields.
func (w *walker) compareStruct(fields []structField, x, y reflect.Value) {
	if fields == nil {
		w.delegate(x, y)
		return
	}
	for i := range fields {
		f := &fields[i]
		fx, fy := x.Field(f.index), y.Field(f.index)
		if f.same(fx, fy) {
			continue
		}
		if f.name != "" {
			w.pushField(f.name)
		}
		if f.keyed {
			w.compareKeyed(f.list, fx, fy)
		} else {
			w.compareUnlike(fx, fy)
		}
		if f.name != "" {
			w.pop()
		}
	}
}

// compareMap compares two maps entry by entry, in key order.
func (w *walker) compareMap(x, y reflect.Value) {
	if x.Type().Key().Kind() != reflect.String {
		w.delegate(x, y)
		return
	}
	if x.IsNil() || y.IsNil() {
		w.report(x, y) // added or removed whole
		return
	}
	keys := append(x.MapKeys(), y.MapKeys()...)
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for i, k := range keys {
		if i > 0 && k.String() == keys[i-1].String() {
			continue
		}
		vx, vy := x.MapIndex(k), y.MapIndex(k)
		w.pushKey(k)
		if vx.IsValid() && vy.IsValid() {
			w.compare(vx, vy)
		} else {
			w.report(vx, vy)
		}
		w.pop()
	}
}

// compareKeyed compares two lists compared by key or as a set (see toKeyed)
// element by element, in key order.
func (w *walker) compareKeyed(lk listKind, x, y reflect.Value) {
	var bx, by [8]keyIndex
	kx, ky := sortedElementKeys(x, bx[:0]), sortedElementKeys(y, by[:0])
	kj := keyJoin{kx: kx, ky: ky}
	for e, ok := kj.next(); ok; e, ok = kj.next() {
		w.pushElem(lk, e.key)
		switch {
		case e.ix >= 0 && e.iy >= 0:
			w.compare(x.Index(e.ix), y.Index(e.iy))
		case e.ix >= 0:
			w.reportElem(lk, boxed(x.Index(e.ix)), reflect.Value{})
		default:
			w.reportElem(lk, reflect.Value{}, boxed(y.Index(e.iy)))
		}
		w.pop()
	}
}

// joined is a key of two lists, with the index of its element in each, or
// -1 in the list that has none.
type joined struct {
	key    string
	ix, iy int
}

// keyJoin goes through the keys of two lists, both sorted and without
// repeats, in order, each once.
type keyJoin struct {
	kx, ky []keyIndex
	i, j   int
}

// next returns the next key, or false after the last.
func (kj *keyJoin) next() (joined, bool) {
	kx, ky, i, j := kj.kx, kj.ky, kj.i, kj.j
	switch {
	case i == len(kx) && j == len(ky):
		return joined{}, false
	case j == len(ky) || i < len(kx) && kx[i].key < ky[j].key:
		kj.i++
		return joined{key: kx[i].key, ix: kx[i].i, iy: -1}, true
	case i == len(kx) || ky[j].key < kx[i].key:
		kj.j++
		return joined{key: ky[j].key, ix: -1, iy: ky[j].i}, true
	}
	kj.i++
	kj.j++
	return joined{key: kx[i].key, ix: kx[i].i, iy: ky[j].i}, true
}

// sortedElementKeys returns elementKeys(v) as a list sorted by key, appended to
// buf.
func sortedElementKeys(v reflect.Value, buf []keyIndex) []keyIndex {
	keys := appendElementKeys(buf, v)
	sortKeys(keys)
	return keys
}

// sortKeys sorts keys by key: by insertion while they are few, as a list's
// are.
func sortKeys(keys []keyIndex) {
	if len(keys) > 16 {
		slices.SortFunc(keys, func(a, b keyIndex) int { return strings.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].key < keys[j-1].key; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// boxed wraps v in an interface, as a keyedList holds it, so that an element
// with only zero fields is still a present element.
func boxed(v reflect.Value) reflect.Value {
	b := reflect.New(anyType).Elem()
	b.Set(v)
	return b
}

// delegate hands two values to go-cmp: structs with unexported fields, maps
// whose keys are not strings, and kinds pods do not have.
func (w *walker) delegate(x, y reflect.Value) {
	path, fields := w.pathOf()
	r := reporter{prefix: path, prefixFields: fields}
	cmp.Equal(x.Interface(), y.Interface(), podOptions, cmp.Reporter(&r))
	w.changes = append(w.changes, r.changes...)
}

func (w *walker) report(x, y reflect.Value) {
	path, fields := w.pathOf()
	c := newChange(path, fields, x, y)
	if w.pointee {
		c = pointeeChange(c, x, y)
	}
	w.changes = append(w.changes, c)
}

// reportPointee is report for the values of two pointers, both set.
func (w *walker) reportPointee(x, y reflect.Value) {
	path, fields := w.pathOf()
	w.changes = append(w.changes, pointeeChange(newChange(path, fields, x, y), x, y))
}

// pointeeChange is c, the change between the values x and y of two
// pointers both set: a change, whatever their zeros.
func pointeeChange(c Change, x, y reflect.Value) Change {
	c.Op, c.Old, c.New = OpChange, formatValue(x), formatValue(y)
	return c
}

// scalarKind says values of kind k are compared as one value: a change of
// one is reported whole.
func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// reportElem reports a list element added or removed whole.
func (w *walker) reportElem(lk listKind, x, y reflect.Value) {
	path, fields := w.pathOf()
	c := newChange(path, fields, x, y)
	if lk.set {
		// A set element carries its value in the path: say it once.
		c.Old, c.New = "", ""
	}
	w.changes = append(w.changes, c)
}

// The typed reports below are report for the values the generated
// functions (zz_generated_walk.go) compare in place: they make the Change
// newChange makes of the two values (an Op from which is absent or empty,
// as isEmpty says, Old and New as formatValue writes them) without
// reflection. TestTypedReport holds them to newChange.

// opOf is newChange's Op for two values of which none, one or both are
// absent or empty.
func opOf(xEmpty, yEmpty bool) Op {
	switch {
	case xEmpty:
		return OpAdd
	case yEmpty:
		return OpRemove
	}
	return OpChange
}

// reportOp reports the change op at the walker's path, old and new
// formatted; newChange leaves out the old value of an addition and the new
// value of a removal.
func (w *walker) reportOp(op Op, old, new string) {
	path, fields := w.pathOf()
	c := Change{Path: path, Op: op, fields: fields}
	if op != OpAdd {
		c.Old = old
	}
	if op != OpRemove {
		c.New = new
	}
	w.changes = append(w.changes, c)
}

// integer and unsigned are the kinds formatValue writes with strconv.
type (
	integer interface {
		~int | ~int8 | ~int16 | ~int32 | ~int64
	}
	unsigned interface {
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
	}
)

// reportString is report for two strings of a type without methods.
func reportString[T ~string](w *walker, x, y T) {
	w.reportOp(opOf(x == "", y == ""), string(x), string(y))
}

// reportBool is report for two bools of a type without methods.
func reportBool[T ~bool](w *walker, x, y T) {
	w.reportOp(opOf(!bool(x), !bool(y)), strconv.FormatBool(bool(x)), strconv.FormatBool(bool(y)))
}

// reportInt is report for two integers of a type without methods.
func reportInt[T integer](w *walker, x, y T) {
	op := opOf(x == 0, y == 0)
	var old, new string
	if op != OpAdd {
		old = w.formatInt(int64(x))
	}
	if op != OpRemove {
		new = w.formatInt(int64(y))
	}
	w.reportOp(op, old, new)
}

// reportUint is report for two unsigned integers of a type without
// methods.
func reportUint[T unsigned](w *walker, x, y T) {
	op := opOf(x == 0, y == 0)
	var old, new string
	if op != OpAdd {
		old = w.formatUint(uint64(x))
	}
	if op != OpRemove {
		new = w.formatUint(uint64(y))
	}
	w.reportOp(op, old, new)
}

// reportStringPointee, reportBoolPointee, reportIntPointee and
// reportUintPointee are report for the values of two pointers, both set:
// always a change (see walker.pointee).
func reportStringPointee[T ~string](w *walker, x, y T) {
	w.reportOp(OpChange, string(x), string(y))
}

func reportBoolPointee[T ~bool](w *walker, x, y T) {
	w.reportOp(OpChange, strconv.FormatBool(bool(x)), strconv.FormatBool(bool(y)))
}

func reportIntPointee[T integer](w *walker, x, y T) {
	w.reportOp(OpChange, w.formatInt(int64(x)), w.formatInt(int64(y)))
}

func reportUintPointee[T unsigned](w *walker, x, y T) {
	w.reportOp(OpChange, w.formatUint(uint64(x)), w.formatUint(uint64(y)))
}

// reportStringPtr is report for two pointers to strings of a type without
// methods, one of them nil.
func reportStringPtr[T ~string](w *walker, x, y *T) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = string(*x)
	}
	if op != OpRemove {
		new = string(*y)
	}
	w.reportOp(op, old, new)
}

// reportBoolPtr is report for two pointers to bools of a type without
// methods, one of them nil.
func reportBoolPtr[T ~bool](w *walker, x, y *T) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = strconv.FormatBool(bool(*x))
	}
	if op != OpRemove {
		new = strconv.FormatBool(bool(*y))
	}
	w.reportOp(op, old, new)
}

// reportIntPtr is report for two pointers to integers of a type without
// methods, one of them nil.
func reportIntPtr[T integer](w *walker, x, y *T) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = w.formatInt(int64(*x))
	}
	if op != OpRemove {
		new = w.formatInt(int64(*y))
	}
	w.reportOp(op, old, new)
}

// reportUintPtr is report for two pointers to unsigned integers of a type
// without methods, one of them nil.
func reportUintPtr[T unsigned](w *walker, x, y *T) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = w.formatUint(uint64(*x))
	}
	if op != OpRemove {
		new = w.formatUint(uint64(*y))
	}
	w.reportOp(op, old, new)
}

// reportTime is report for two time.Times that Equal found different.
func (w *walker) reportTime(x, y *time.Time) {
	op := opOf(*x == time.Time{}, *y == time.Time{})
	var old, new string
	if op != OpAdd {
		old = w.formatTime(x)
	}
	if op != OpRemove {
		new = w.formatTime(y)
	}
	w.reportOp(op, old, new)
}

// reportMetaTime is report for two *metav1.Times that Equal found
// different.
func (w *walker) reportMetaTime(x, y *metav1.Time) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = w.formatMetaTime(x)
	}
	if op != OpRemove {
		new = w.formatMetaTime(y)
	}
	w.reportOp(op, old, new)
}

// reportStructPtr is report for two pointers to structs of type T, one of
// them nil, whose JSON appendT appends (see formatTyped).
func reportStructPtr[T any](w *walker, x, y *T, appendT func([]byte, *T) ([]byte, bool)) {
	op := opOf(x == nil, y == nil)
	var old, new string
	if op != OpAdd {
		old = formatTyped(w, x, appendT)
	}
	if op != OpRemove {
		new = formatTyped(w, y, appendT)
	}
	w.reportOp(op, old, new)
}

// reportTypedElem is reportElem for an element of type T of list lk,
// present in one list only (at x or at y, the other nil), whose JSON
// appendT appends.
func reportTypedElem[T any](w *walker, lk listKind, x, y *T, appendT func([]byte, *T) ([]byte, bool)) {
	op := OpRemove
	if x == nil {
		op = OpAdd
	}
	var old, new string
	if !lk.set { // a set element carries its value in the path
		if x != nil {
			old = formatTyped(w, x, appendT)
		} else {
			new = formatTyped(w, y, appendT)
		}
	}
	w.reportOp(op, old, new)
}

// formatTyped is formatValue for the struct at v, whose JSON appendT
// appends as appendJSON does; when appendT declines, formatValue formats
// it.
func formatTyped[T any](w *walker, v *T, appendT func([]byte, *T) ([]byte, bool)) string {
	b, ok := appendT(w.scratch[:0], v)
	if !ok {
		return formatValue(reflect.ValueOf(v).Elem())
	}
	w.scratch = b
	return w.valueString(b)
}

// formatTime is formatValue for a time.Time.
func (w *walker) formatTime(t *time.Time) string {
	b, ok := appendTimeJSON(w.scratch[:0], t)
	if !ok {
		return formatValue(reflect.ValueOf(t).Elem())
	}
	w.scratch = b
	return w.valueString(b)
}

// formatMetaTime is formatValue for a *metav1.Time.
func (w *walker) formatMetaTime(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	b := appendMetaTimeJSON(w.scratch[:0], t)
	w.scratch = b
	return w.valueString(b)
}

// formatInt is formatValue for an integer.
func (w *walker) formatInt(i int64) string { return strconv.FormatInt(i, 10) }

// formatUint is formatValue for an unsigned integer.
func (w *walker) formatUint(i uint64) string { return strconv.FormatUint(i, 10) }

// valueString is a value the typed reports formatted in b, as a string of
// its own: the changes' values outlive the walker one by one (a report
// keeps some), so they are not cut from an arena, as paths are.
func (w *walker) valueString(b []byte) string { return string(b) }

// pathOf renders the walker's path in JSON field names, and in
// managedFields notation for attribution. A path it rendered before it
// returns again, string and fieldPath: what they hold is never written.
func (w *walker) pathOf() (string, fieldPath) {
	first := w.pathIndex[string(w.path)]
	for i := first; i != 0; i = w.paths[i-1].next {
		if e := &w.paths[i-1]; slices.Equal(e.steps, w.steps) && slices.Equal(e.lists, w.lists) {
			return e.path, e.fields
		}
	}
	// Cut from arenas: one walker renders tens of paths, or, comparing
	// two pods once (ComparePods), its changes' paths.
	if len(w.fieldArena)+len(w.steps) > cap(w.fieldArena) {
		w.fieldArena = make([]string, 0, max(64, len(w.steps)))
	}
	n := len(w.fieldArena)
	w.fieldArena = w.fieldArena[:n+len(w.steps)]
	fields := fieldPath(w.fieldArena[n : n+len(w.steps) : n+len(w.steps)])
	li := 0
	for i, s := range w.steps {
		name := w.stepName(i) // a view of w.path: copied where kept
		switch s.kind {
		case fieldStep:
			f, ok := fieldNames[name]
			if !ok {
				f = w.elementField(listKind{}, name)
			}
			fields[i] = f
		case elemStep:
			fields[i] = w.elementField(w.lists[li], name)
			li++
		case indexStep:
			fields[i] = "i:" + name
		default:
			fields[i] = w.elementField(listKind{}, name)
		}
	}
	if len(w.stepArena)+len(w.steps) > cap(w.stepArena) {
		w.stepArena = make([]pathStep, 0, max(128, len(w.steps)))
	}
	n = len(w.stepArena)
	w.stepArena = append(w.stepArena, w.steps...)
	e := pathEntry{
		path:   w.arenaString(w.path),
		fields: fields,
		steps:  w.stepArena[n:len(w.stepArena):len(w.stepArena)],
		next:   first,
	}
	if len(w.lists) > 0 {
		e.lists = slices.Clone(w.lists)
	}
	if w.pathIndex == nil {
		w.pathIndex = make(map[string]int32)
	} else if len(w.paths) >= 4096 {
		clear(w.pathIndex)
		clear(w.paths)
		w.paths = w.paths[:0]
		e.next = 0
	}
	w.paths = append(w.paths, e)
	w.pathIndex[e.path] = int32(len(w.paths))
	return e.path, e.fields
}

// arenaString returns b as a string cut from w.pathArena.
func (w *walker) arenaString(b []byte) string {
	if len(w.pathArena)+len(b) > cap(w.pathArena) {
		w.pathArena = make([]byte, 0, max(1024, len(b)))
	}
	start := len(w.pathArena)
	w.pathArena = append(w.pathArena, b...)
	return unsafe.String(unsafe.SliceData(w.pathArena[start:]), len(b)) // never written again
}

// stepName is the name of step i: a field's JSON name, or what is in
// brackets. It is a view of w.path, good until the path changes.
func (w *walker) stepName(i int) string {
	start, end := int(w.steps[i].start), len(w.path)
	if i+1 < len(w.steps) {
		end = int(w.steps[i+1].start)
	}
	if w.steps[i].kind != fieldStep {
		start, end = start+1, end-1
	} else if start > 0 {
		start++ // the dot
	}
	if start == end {
		return ""
	}
	return unsafe.String(&w.path[start], end-start)
}

// fieldNames are "f:"+name for the JSON names of the fields of the types
// of a pod, made once.
var fieldNames = func() map[string]string {
	names := map[string]string{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			if name := jsonName(t.Field(i)); name != "" {
				names[name] = "f:" + name
			}
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeFor[corev1.Pod]())
	return names
}()

// elementField is elementField, cached over the walker's revisions; for
// the zero listKind (a struct field's or a map key's), it is "f:"+name.
// name may be a view of memory that changes: what is kept is copied.
func (w *walker) elementField(lk listKind, name string) string {
	if w.elemFields == nil {
		w.elemFields = make(map[elemField]string)
	}
	if f, ok := w.elemFields[elemField{lk, name}]; ok {
		return f
	}
	name = strings.Clone(name)
	var f string
	if lk == (listKind{}) {
		f = "f:" + name
	} else {
		f = elementField(lk, name)
	}
	if len(w.elemFields) >= 4096 {
		clear(w.elemFields)
	}
	w.elemFields[elemField{lk, name}] = f
	return f
}

// equalMethod returns the Equal method of type t that go-cmp would call,
// or an invalid Value.
func equalMethod(t reflect.Type) reflect.Value {
	if m, ok := t.MethodByName("Equal"); ok {
		ft := m.Type
		if ft.NumIn() == 2 && ft.NumOut() == 1 && ft.In(0).AssignableTo(ft.In(1)) && ft.Out(0) == boolType {
			return m.Func
		}
	}
	return reflect.Value{}
}

// callEqual calls the Equal method of type t, as go-cmp does, when t has one
// of the form (T) Equal(T) bool or (T) Equal(I) bool.
func callEqual(t reflect.Type, x, y reflect.Value) (eq, ok bool) {
	if eq, ok := equalTimes(t, x, y); ok {
		return eq, true
	}
	return callEqualMethod(factsOf(t).equal, x, y)
}

// equalTimes is callEqual for time.Time and *metav1.Time, without reflection.
func equalTimes(t reflect.Type, x, y reflect.Value) (eq, ok bool) {
	switch {
	case t == timeType && x.CanAddr() && y.CanAddr():
		return x.Addr().Interface().(*time.Time).Equal(*y.Addr().Interface().(*time.Time)), true
	case t == metaTimePtrType:
		return x.Interface().(*metav1.Time).Equal(y.Interface().(*metav1.Time)), true
	}
	return false, false
}

// callEqualMethod calls fn, an Equal method, or reports false.
func callEqualMethod(fn reflect.Value, x, y reflect.Value) (eq, ok bool) {
	if !fn.IsValid() {
		return false, false
	}
	return fn.Call([]reflect.Value{x, y})[0].Bool(), true
}
