package diff

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// walker compares two values of one type by the rules of podOptions, as
// go-cmp would, and collects their differences as Changes. It walks the
// typed values itself, without evaluating options at each node, and skips
// the parts two revisions share in memory (see decoder). Ordered lists that
// differ go to go-cmp, whose edit script says which elements were added or
// removed.
type walker struct {
	steps   []walkStep
	changes []Change
}

// walkStep is one step of the walker's path: a struct field, or the key of
// a map entry or of a list element.
type walkStep struct {
	name  string        // a field's JSON name, or an element's key
	field string        // f:name, the field in managedFields notation
	key   reflect.Value // a map entry's key
	elem  bool          // name is the key of a list element
	list  listKind      // the element's list
}

// structField is what the walker needs of a struct field.
type structField struct {
	index int
	name  string // JSON name; "" for an inlined struct
	field string // f:name
	list  listKind
	keyed bool // a list compared by key or as a set
}

var (
	structFields sync.Map // reflect.Type -> []structField, nil when go-cmp should compare the struct

	quantityType    = reflect.TypeFor[resource.Quantity]()
	timeType        = reflect.TypeFor[time.Time]()
	metaTimePtrType = reflect.TypeFor[*metav1.Time]()
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	anyType         = reflect.TypeFor[any]()
	boolType        = reflect.TypeFor[bool]()
)

// fieldsOf returns the compared fields of struct type t: all but
// ObjectMeta's managedFields and resourceVersion (see podOptions). It
// returns nil for a struct with unexported fields, which go-cmp handles (by
// refusing it).
func fieldsOf(t reflect.Type) []structField {
	if v, ok := structFields.Load(t); ok {
		return v.([]structField)
	}
	fields := []structField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			fields = nil
			break
		}
		if t == objectMetaType && (f.Name == "ManagedFields" || f.Name == "ResourceVersion") {
			continue
		}
		lk, keyed := lookupList(t, i)
		name := jsonName(f)
		fields = append(fields, structField{index: i, name: name, field: "f:" + name, list: lk, keyed: keyed})
	}
	structFields.Store(t, fields)
	return fields
}

func (w *walker) push(s walkStep) {
	if w.steps == nil {
		w.steps = make([]walkStep, 0, 16)
	}
	w.steps = append(w.steps, s)
}

func (w *walker) pop() { w.steps = w.steps[:len(w.steps)-1] }

// compare compares two valid values of the same type, in the order go-cmp
// applies its rules: podOptions, then an Equal method, then the kind.
func (w *walker) compare(x, y reflect.Value) {
	if same(x, y) {
		return
	}
	t := x.Type()
	if t == quantityType {
		// Copies: Cmp may convert its receiver's representation.
		qx, qy := x.Interface().(resource.Quantity), y.Interface().(resource.Quantity)
		if qx.Cmp(qy) != 0 {
			w.report(x, y)
		}
		return
	}
	if t.NumMethod() > 0 {
		if eq, ok := callEqual(t, x, y); ok {
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
		w.compareStruct(t, x, y)
	case reflect.Map:
		w.compareMap(x, y)
	case reflect.Pointer:
		if x.IsNil() || y.IsNil() {
			eq = false
		} else {
			w.compare(x.Elem(), y.Elem())
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
		// Ordered lists, and kinds pods do not have.
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
	}
	return false
}

func (w *walker) compareStruct(t reflect.Type, x, y reflect.Value) {
	fields := fieldsOf(t)
	if fields == nil {
		w.delegate(x, y)
		return
	}
	for _, f := range fields {
		fx, fy := x.Field(f.index), y.Field(f.index)
		if same(fx, fy) {
			continue
		}
		if f.name != "" {
			w.push(walkStep{name: f.name, field: f.field})
		}
		if f.keyed {
			w.compareKeyed(f.list, fx, fy)
		} else {
			w.compare(fx, fy)
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
		w.push(walkStep{key: k})
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
	kx, ky := elementKeys(x), elementKeys(y)
	keys := make([]string, 0, len(kx)+len(ky))
	for k := range kx {
		keys = append(keys, k)
	}
	for k := range ky {
		if _, ok := kx[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		ix, inX := kx[k]
		iy, inY := ky[k]
		w.push(walkStep{name: k, elem: true, list: lk})
		switch {
		case inX && inY:
			w.compare(x.Index(ix), y.Index(iy))
		case inX:
			w.reportElem(lk, boxed(x.Index(ix)), reflect.Value{})
		default:
			w.reportElem(lk, reflect.Value{}, boxed(y.Index(iy)))
		}
		w.pop()
	}
}

// boxed wraps v in an interface, as a keyedList holds it, so that an element
// with only zero fields is still a present element.
func boxed(v reflect.Value) reflect.Value {
	b := reflect.New(anyType).Elem()
	b.Set(v)
	return b
}

// delegate hands two values to go-cmp.
func (w *walker) delegate(x, y reflect.Value) {
	path, fields := w.path()
	r := reporter{prefix: path, prefixFields: fields}
	cmp.Equal(x.Interface(), y.Interface(), podOptions, cmp.Reporter(&r))
	w.changes = append(w.changes, r.changes...)
}

func (w *walker) report(x, y reflect.Value) {
	path, fields := w.path()
	w.changes = append(w.changes, newChange(path, fields, x, y))
}

// reportElem reports a list element added or removed whole.
func (w *walker) reportElem(lk listKind, x, y reflect.Value) {
	path, fields := w.path()
	c := newChange(path, fields, x, y)
	if lk.set {
		// A set element carries its value in the path: say it once.
		c.Old, c.New = "", ""
	}
	w.changes = append(w.changes, c)
}

// path renders the walker's path in JSON field names, and in managedFields
// notation for attribution.
func (w *walker) path() (string, fieldPath) {
	var b strings.Builder
	b.Grow(64)
	fp := make(fieldPath, 0, len(w.steps))
	for _, s := range w.steps {
		switch {
		case s.elem:
			b.WriteString("[" + s.name + "]")
			fp = append(fp, elementField(s.list, s.name))
		case s.key.IsValid():
			key := fmt.Sprint(s.key.Interface())
			b.WriteString("[" + key + "]")
			fp = append(fp, "f:"+key)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
			fp = append(fp, s.field)
		}
	}
	return b.String(), fp
}

var equalMethods sync.Map // reflect.Type -> reflect.Value: its Equal method, or invalid

// callEqual calls the Equal method of type t, as go-cmp does, when t has one
// of the form (T) Equal(T) bool or (T) Equal(I) bool.
func callEqual(t reflect.Type, x, y reflect.Value) (eq, ok bool) {
	switch {
	case t == timeType && x.CanAddr() && y.CanAddr():
		return x.Addr().Interface().(*time.Time).Equal(*y.Addr().Interface().(*time.Time)), true
	case t == metaTimePtrType:
		return x.Interface().(*metav1.Time).Equal(y.Interface().(*metav1.Time)), true
	}
	v, found := equalMethods.Load(t)
	if !found {
		var fn reflect.Value
		if m, ok := t.MethodByName("Equal"); ok {
			ft := m.Type
			if ft.NumIn() == 2 && ft.NumOut() == 1 && ft.In(0).AssignableTo(ft.In(1)) && ft.Out(0) == boolType {
				fn = m.Func
			}
		}
		v, _ = equalMethods.LoadOrStore(t, fn)
	}
	fn := v.(reflect.Value)
	if !fn.IsValid() {
		return false, false
	}
	return fn.Call([]reflect.Value{x, y})[0].Bool(), true
}
