package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Op says what a Change did to a field.
type Op string

const (
	OpAdd    Op = "add"    // the field or list element appeared
	OpRemove Op = "remove" // the field or list element went away
	OpChange Op = "change" // the value changed
)

// Change is one field that differs between two revisions.
type Change struct {
	// Path names the field: JSON field names joined by dots, keyed list
	// elements and map keys in brackets (spec.containers[build].image,
	// metadata.labels[app], metadata.finalizers[foregroundDeletion]).
	Path string `json:"path"`
	Op   Op     `json:"op"`
	// Old and New are the values, compact JSON for objects and lists, the
	// plain text for strings; empty when absent.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Manager is the managedFields manager that made the change, when
	// managedFields decide it: its entry owns the field after the change,
	// or, for a removal, it is the one manager that wrote at this revision
	// (see attribute). Basis says how it is known: managedFields, or
	// unknown for a removal that no single manager accounts for, with the
	// managers that wrote at this revision as Candidates; audit-log when
	// the audit log's request for the revision decides it. Empty: a field
	// managedFields does not track; the step's actors stand for it.
	Manager    string   `json:"manager,omitempty"`
	Basis      Basis    `json:"basis,omitempty"`
	Candidates []string `json:"candidates,omitempty"`

	fields fieldPath // the path as managedFields spells it, for attribution
}

// fieldPath is a field's path in managedFields (fieldsV1) notation:
// "f:spec", "k:{\"name\":\"build\"}", "v:\"foregroundDeletion\"".
type fieldPath []string

// ComparePods returns the changes from old to new, in path order. A nil old
// pod compares against an empty one.
func ComparePods(old, new *corev1.Pod) []Change {
	var w walker
	w.comparePods(old, new)
	return w.changes
}

// comparePods sets w.changes to the changes from old to new, in path
// order.
func (w *walker) comparePods(old, new *corev1.Pod) {
	if old == nil {
		old = &corev1.Pod{}
	}
	if new == nil {
		new = &corev1.Pod{}
	}
	w.changes = w.changes[:0]
	w.compare(reflect.ValueOf(old).Elem(), reflect.ValueOf(new).Elem())
	byPath := func(a, b Change) int { return strings.Compare(a.Path, b.Path) }
	if !slices.IsSortedFunc(w.changes, byPath) {
		slices.SortStableFunc(w.changes, byPath)
	}
}

// nextChanges is ComparePods for a walker that compares one revision after
// another: it keeps its buffers, and returns a copy of its changes.
func (w *walker) nextChanges(old, new *corev1.Pod) []Change {
	w.comparePods(old, new)
	n := len(w.changes)
	if n == 0 {
		return nil
	}
	// Cut from a block of a few revisions' changes, as the paths are: one
	// allocation of pointerful memory for each revision was 2% of a report.
	if len(w.changeArena)+n > cap(w.changeArena) {
		w.changeArena = make([]Change, 0, max(changeBlock, n))
	}
	k := len(w.changeArena)
	w.changeArena = append(w.changeArena, w.changes...)
	clear(w.changes)
	return w.changeArena[k : k+n : k+n]
}

// changeBlock is how many Changes a walker allocates at a time.
const changeBlock = 64

// podOptions are the go-cmp options that compare objects the way the API
// server merges them. The walker follows the same rules (walk.go), and
// compares ordered lists along an edit script of its own (ordered.go).
var podOptions = cmp.Options{
	cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields", "ResourceVersion"),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	// nil and empty slices and maps are equal (JSON omits both). This is
	// cmpopts.EquateEmpty with a path filter, which go-cmp calls directly,
	// instead of a values filter, which it calls through reflection at
	// every node.
	cmp.FilterPath(bothEmpty, cmp.Comparer(func(a, b any) bool { return true })),
	cmp.FilterPath(isKeyedList, cmp.Transformer("keyed", toKeyed)),
}

// listKind says how a list field is compared.
type listKind struct {
	key string // JSON name of the element field that keys the list; "" for a set
	set bool   // compare as a set of values
}

// setFields are lists without merge tags whose order carries no meaning.
var setFields = map[reflect.Type]map[string]bool{
	reflect.TypeOf(corev1.PodSpec{}): {"Tolerations": true},
}

var listKinds sync.Map // reflect.Type of the parent struct + field index -> listKind

// bothEmpty reports whether the path ends at two empty slices or maps, at
// least one of them nil.
func bothEmpty(p cmp.Path) bool {
	vx, vy := p.Last().Values()
	if !vx.IsValid() || !vy.IsValid() || vx.Kind() != vy.Kind() {
		return false
	}
	switch vx.Kind() {
	case reflect.Slice, reflect.Map:
		return vx.Len() == 0 && vy.Len() == 0 && (vx.IsNil() || vy.IsNil())
	}
	return false
}

// lookupList returns how the struct field at the end of p is compared, and
// whether it is a keyed list or set at all.
func lookupList(parent reflect.Type, idx int) (listKind, bool) {
	type key struct {
		t reflect.Type
		i int
	}
	if v, ok := listKinds.Load(key{parent, idx}); ok {
		lk := v.(*listKind)
		return *lk, lk != nil && (lk.key != "" || lk.set)
	}
	f := parent.Field(idx)
	lk := &listKind{}
	if f.Type.Kind() == reflect.Slice {
		mergeKey := listKey(f)
		strategy := f.Tag.Get("patchStrategy")
		elem := f.Type.Elem()
		switch {
		case mergeKey != "":
			lk.key = mergeKey
		case strings.Contains(strategy, "merge") && elem.Kind() == reflect.String:
			lk.set = true
		case setFields[parent][f.Name]:
			lk.set = true
		}
	}
	listKinds.Store(key{parent, idx}, lk)
	return *lk, lk.key != "" || lk.set
}

// isKeyedList reports whether the path ends at a list compared by key or as a
// set.
func isKeyedList(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	if !ok || len(p) < 2 {
		return false
	}
	parent := p.Index(-2).Type()
	if parent.Kind() != reflect.Struct {
		return false
	}
	if _, ok := lookupList(parent, sf.Index()); !ok {
		return false
	}
	// Two empty lists are equal already (EquateEmpty); transforming them too
	// would make two options apply.
	vx, vy := sf.Values()
	return vx.Len() > 0 || vy.Len() > 0
}

// keyedList is a list turned into a map by its merge key. The type is
// distinct so that the reporter knows map keys here are list elements.
type keyedList map[string]any

// toKeyed turns a list into a keyedList; the filter makes sure it is only
// called on lists lookupList accepts. Elements whose key is missing keep their
// index as key; duplicate keys get a #n suffix, so nothing is lost.
func toKeyed(in any) keyedList {
	v := reflect.ValueOf(in)
	keys := elementKeys(v)
	out := make(keyedList, len(keys))
	for k, i := range keys {
		out[k] = v.Index(i).Interface()
	}
	return out
}

// elementKeys returns the key of each element of a list compared by key or
// as a set, with the element's index.
func elementKeys(v reflect.Value) map[string]int {
	keys := appendElementKeys(nil, v)
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		out[k.key] = k.i
	}
	return out
}

// keyIndex is the key of a list element, with its index.
type keyIndex struct {
	key string
	i   int
}

// appendElementKeys appends to buf the key of each element of list v, in
// the order of the elements. Elements whose key is missing keep their
// index as key; duplicate keys get a #n suffix, so nothing is lost.
func appendElementKeys(buf []keyIndex, v reflect.Value) []keyIndex {
	n := v.Len()
	if n == 0 {
		return buf
	}
	start := len(buf)
	var seen map[string]bool // for long lists; short ones are searched
	if n > 16 {
		seen = make(map[string]bool, n)
	}
	dup := func(k string) bool {
		if seen != nil {
			return seen[k]
		}
		for _, e := range buf[start:] {
			if e.key == k {
				return true
			}
		}
		return false
	}
	field := keyFieldIndex(v.Type().Elem())
	for i := 0; i < n; i++ {
		e := v.Index(i)
		var k string
		switch {
		case field >= 0:
			k = scalarString(e.Field(field))
		case e.Kind() == reflect.String:
			k = e.String()
		default:
			b, _ := json.Marshal(e.Interface())
			k = string(b)
		}
		if k == "" {
			k = strconv.Itoa(i)
		}
		if dup(k) {
			k = fmt.Sprintf("%s#%d", k, i)
			if dup(k) {
				// As a map would: the later element takes the key.
				for j := start; j < len(buf); j++ {
					if buf[j].key == k {
						buf = append(buf[:j], buf[j+1:]...)
						break
					}
				}
			}
		}
		if seen != nil {
			seen[k] = true
		}
		buf = append(buf, keyIndex{k, i})
	}
	return buf
}

var keyFields sync.Map // element type -> index of its merge key field, or -1

// keyFieldIndex returns the index of the field that keys the elements of
// type elem in a keyed list, or -1.
func keyFieldIndex(elem reflect.Type) int {
	if v, ok := keyFields.Load(elem); ok {
		return v.(int)
	}
	field := -1
	if elem.Kind() == reflect.Struct {
		field = jsonFieldIndex(elem, mergeKeyOf(elem))
	}
	keyFields.Store(elem, field)
	return field
}

var mergeKeys sync.Map // element type -> merge key, filled by the filter

// mergeKeyOf finds the merge key that some struct field declares for lists of
// elem.
func mergeKeyOf(elem reflect.Type) string {
	if v, ok := mergeKeys.Load(elem); ok {
		return v.(string)
	}
	return ""
}

func init() {
	// Register the merge keys of every list in the pod type tree once, so
	// toKeyed, which sees only the list, knows its key.
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if k := listKey(f); k != "" {
				mergeKeys.LoadOrStore(f.Type.Elem(), k)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(corev1.Pod{}))
}

// listKey returns the field that keys the elements of a list field: its
// patchMergeKey, or, for lists of named elements without one (container
// statuses), "name". Lists of anything else have no key.
func listKey(f reflect.StructField) string {
	if f.Type.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
		return ""
	}
	if k := f.Tag.Get("patchMergeKey"); k != "" {
		return k
	}
	if jsonFieldIndex(f.Type.Elem(), "name") >= 0 {
		return "name"
	}
	return ""
}

// jsonFieldIndex returns the index of the field of struct t whose JSON name
// is name, or -1.
func jsonFieldIndex(t reflect.Type, name string) int {
	if name == "" {
		return -1
	}
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == name {
			return i
		}
	}
	return -1
}

// jsonName is the JSON name of a struct field, "" for an inlined one.
func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func scalarString(v reflect.Value) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}

// reporter collects the differences go-cmp finds as Changes. The compared
// values are at prefix (prefixFields in managedFields notation) in the pod.
type reporter struct {
	prefix       string
	prefixFields fieldPath
	path         cmp.Path
	changes      []Change
}

func (r *reporter) PushStep(ps cmp.PathStep) { r.path = append(r.path, ps) }
func (r *reporter) PopStep()                 { r.path = r.path[:len(r.path)-1] }

func (r *reporter) Report(rs cmp.Result) {
	if rs.Equal() {
		return
	}
	vx, vy := r.path.Last().Values()
	path, fields := formatPath(r.prefix, r.prefixFields, r.path)
	c := newChange(path, fields, vx, vy)
	if _, ok := r.path.Last().(cmp.Indirect); ok && vx.IsValid() && vy.IsValid() && scalarKind(vx.Kind()) {
		c = pointeeChange(c, vx, vy)
	}
	// A set element carries its value in the path: say it once.
	if _, ok := r.path.Last().(cmp.MapIndex); ok && isSetStep(r.path) {
		c.Old, c.New = "", ""
	}
	r.changes = append(r.changes, c)
}

// newChange is the change at path between the values vx and vy; an invalid
// value is an absent field.
func newChange(path string, fields fieldPath, vx, vy reflect.Value) Change {
	c := Change{Path: path, Op: OpChange, fields: fields}
	switch {
	case !vx.IsValid() || isEmpty(vx):
		c.Op = OpAdd
	case !vy.IsValid() || isEmpty(vy):
		c.Op = OpRemove
	}
	if c.Op != OpAdd {
		c.Old = formatValue(vx)
	}
	if c.Op != OpRemove {
		c.New = formatValue(vy)
	}
	return c
}

// isSetStep reports whether the last step indexes a list compared as a set.
func isSetStep(p cmp.Path) bool {
	if len(p) < 3 {
		return false
	}
	tf, ok := p.Index(-2).(cmp.Transform)
	if !ok || tf.Name() != "keyed" {
		return false
	}
	sf, ok := p.Index(-3).(cmp.StructField)
	if !ok || len(p) < 4 {
		return false
	}
	lk, _ := lookupList(p.Index(-4).Type(), sf.Index())
	return lk.set
}

func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
		return v.IsNil() || (v.Kind() != reflect.Interface && v.Kind() != reflect.Pointer && v.Len() == 0)
	}
	return v.IsZero()
}

// formatPath renders a go-cmp path in JSON field names, and in managedFields
// notation for attribution, after the prefix where the compared values are.
func formatPath(prefix string, prefixFields fieldPath, p cmp.Path) (string, fieldPath) {
	var b strings.Builder
	b.WriteString(prefix)
	fp := append(fieldPath(nil), prefixFields...)
	for i, step := range p {
		switch s := step.(type) {
		case cmp.StructField:
			parent := p.Index(i - 1).Type()
			name := jsonName(parent.Field(s.Index()))
			if name == "" {
				continue // inlined struct: its fields belong to the parent
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(name)
			fp = append(fp, "f:"+name)
		case cmp.MapIndex:
			key := fmt.Sprint(s.Key().Interface())
			b.WriteString("[" + key + "]")
			fp = append(fp, mapFieldKey(p, i, key))
		case cmp.SliceIndex:
			ix, iy := s.SplitKeys()
			k := iy
			if k < 0 {
				k = ix
			}
			fmt.Fprintf(&b, "[%d]", k)
			fp = append(fp, fmt.Sprintf("i:%d", k))
		}
	}
	return b.String(), fp
}

// mapFieldKey spells the map index at step i of p the way managedFields
// does: k:{...} for keyed list elements, v:"..." for set elements, f:key for
// map keys.
func mapFieldKey(p cmp.Path, i int, key string) string {
	if i >= 3 {
		if tf, ok := p.Index(i - 1).(cmp.Transform); ok && tf.Name() == "keyed" {
			if sf, ok := p.Index(i - 2).(cmp.StructField); ok {
				lk, _ := lookupList(p.Index(i-3).Type(), sf.Index())
				return elementField(lk, key)
			}
		}
	}
	return "f:" + key
}

// elementField spells the key of an element of a list compared by key or as
// a set the way managedFields does.
func elementField(lk listKind, key string) string {
	if lk.set {
		return "v:" + jsonString(key)
	}
	return "k:{" + jsonString(lk.key) + ":" + jsonString(key) + "}"
}

// jsonString is s as encoding/json writes it.
func jsonString(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return string(b)
		}
	}
	return `"` + s + `"`
}

// formatValue renders a value: strings as they are, everything else as
// compact JSON.
func formatValue(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.String {
		return v.String()
	}
	if v.Type().NumMethod() == 0 { // no MarshalJSON: the JSON of a number is its text
		switch v.Kind() {
		case reflect.Bool:
			return strconv.FormatBool(v.Bool())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.FormatInt(v.Int(), 10)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return strconv.FormatUint(v.Uint(), 10)
		}
	}
	if !v.CanInterface() {
		return fmt.Sprint(v)
	}
	// Values are data for people, not for a web page: keep < > & as they
	// are (every renderer escapes for its own medium).
	e := encoders.Get().(*valueEncoder)
	defer encoders.Put(e)
	if b, ok := appendJSON(e.scratch[:0], v); ok {
		e.scratch = b
		return string(b)
	}
	e.buf.Reset()
	if err := e.enc.Encode(v.Interface()); err != nil {
		return fmt.Sprint(v.Interface())
	}
	return string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n")))
}

// valueEncoder is a JSON encoder of values that keeps < > & as they are.
type valueEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	// scratch is where appendJSON writes what it can.
	scratch []byte
}

var encoders = sync.Pool{New: func() any {
	e := &valueEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

var metaTimeType = reflect.TypeFor[metav1.Time]()
