// Command walkgen writes diff/zz_generated_walk.go: for every struct type
// reachable from corev1.Pod that diff's walker compares field by field, a
// function that compares two values of it the way walker.compareStruct
// does, without reflection on the path of what did not change.
//
// It is run by `go generate` in diff (`go run ./internal/walkgen`), and by
// diff's TestGeneratedWalkUpToDate (`-o -`), which fails when the file is
// not what the generator writes for the k8s.io/api in go.mod.
//
// The generator walks the types with reflect and follows walk.go rule by
// rule: a struct is compared field by field (compareStruct) when it is not
// resource.Quantity or time.Time, has no Equal method go-cmp would call,
// and has only exported fields (fieldsOf); its fields are compared in the
// order of their JSON names, ObjectMeta's managedFields and
// resourceVersion left out, each skipped when same (or, for a struct,
// structField.same) finds the two equal at a glance, its path step pushed
// otherwise. Plain scalars are compared in place; structs the generator
// writes a function for, and pointers to them, are compared by that
// function; pointers to plain scalars in place; time.Time and
// *metav1.Time by their Equal methods, as equalTimes does. Lists compared
// by key whose elements are such structs, keyed by a string or int field,
// go to typedCompareKeyed (written into the generated file), which is
// compareKeyed with typed keys and elements, and hands a list with an
// empty or a duplicate key to compareKeyed (appendElementKeys makes up
// keys for those); other lists compared by key go to compareKeyed.
// Everything else (maps, ordered lists, other Equal methods, quantities,
// interfaces, pointers to those) is handed to the reflective
// walker.compareUnlike, after the same test compareStruct makes; the top
// of the generated file lists those fields' types.
//
// What the generated functions compare in place they report with walk.go's
// typed reports (reportString, reportTime, reportStructPtr...), which make
// the Change report makes without reflection. A struct reported whole (a
// pointer to it set or cleared, a list element added or removed) is
// written by a generated JSON appender, appendJSON's struct case for that
// type (format.go), which hands what it does not write itself (maps,
// floats, values that encode themselves) to appendJSON; where appendJSON
// declines, formatValue formats the value, as before.
package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// roots are the types the walker compares: comparePods walks pods.
var roots = []reflect.Type{reflect.TypeFor[corev1.Pod]()}

// setFields is diff's setFields (compare.go): lists without merge tags
// whose order carries no meaning.
var setFields = map[reflect.Type]map[string]bool{
	reflect.TypeFor[corev1.PodSpec](): {"Tolerations": true},
}

var (
	quantityType    = reflect.TypeFor[resource.Quantity]()
	timeType        = reflect.TypeFor[time.Time]()
	metaTimeType    = reflect.TypeFor[metav1.Time]()
	metaTimePtrType = reflect.TypeFor[*metav1.Time]()
	objectMetaType  = reflect.TypeFor[metav1.ObjectMeta]()
	boolType        = reflect.TypeFor[bool]()
)

func main() {
	out := flag.String("o", "zz_generated_walk.go", "output file, - for standard output")
	flag.Parse()
	src, err := generate()
	if err != nil {
		log.Fatal(err)
	}
	if *out == "-" {
		_, err = os.Stdout.Write(src)
	} else {
		err = os.WriteFile(*out, src, 0o644)
	}
	if err != nil {
		log.Fatal(err)
	}
}

type gen struct {
	imports   map[string]string // package path -> name
	names     map[string]string // package name -> path
	fnNames   map[reflect.Type]string
	usedNames map[string]bool
	queue     []reflect.Type
	// appNames are the names of the JSON appenders of struct types (see
	// appender), "" for a type without one; appQueue those to write.
	appNames  map[reflect.Type]string
	appQueue  []reflect.Type
	funcs     map[string][]byte // function name -> source
	fallbacks map[string]bool   // field types handed to compareUnlike, and why
	strconv   bool              // the file imports strconv
}

func newGen() *gen {
	return &gen{
		imports:   map[string]string{},
		names:     map[string]string{},
		fnNames:   map[reflect.Type]string{},
		usedNames: map[string]bool{},
		appNames:  map[reflect.Type]string{},
		funcs:     map[string][]byte{},
		fallbacks: map[string]bool{},
	}
}

func generate() ([]byte, error) {
	g := newGen()
	for _, name := range []string{"reflect", "slices", "strconv", "strings", "unsafe"} {
		g.names[name] = "(reserved)"
	}
	for _, r := range roots {
		if g.structFunc(r) == "" {
			return nil, fmt.Errorf("root %s is not compared field by field", r)
		}
	}
	for len(g.queue) > 0 || len(g.appQueue) > 0 {
		if len(g.queue) > 0 {
			t := g.queue[0]
			g.queue = g.queue[1:]
			g.genStruct(t)
			continue
		}
		t := g.appQueue[0]
		g.appQueue = g.appQueue[1:]
		g.genAppender(t)
	}

	var out bytes.Buffer
	out.WriteString("// Code generated by diff/internal/walkgen; DO NOT EDIT.\n\n")
	out.WriteString("// The functions below compare two values of the struct types reachable\n")
	out.WriteString("// from corev1.Pod that the walker compares field by field, as\n")
	out.WriteString("// walker.compareStruct does (walk.go), without reflection where nothing\n")
	out.WriteString("// changed, and report what did with the typed reports of walk.go; and\n")
	out.WriteString("// the functions that append the JSON of the structs reported whole as\n")
	out.WriteString("// appendJSON does (format.go). typedWalks registers the first for the\n")
	out.WriteString("// walker's reflective path.\n//\n")
	out.WriteString("// Fields handed to the reflective walker.compareUnlike (or compareKeyed),\n// by type:\n")
	for _, f := range sortedKeys(g.fallbacks) {
		fmt.Fprintf(&out, "//   - %s\n", f)
	}
	out.WriteString("\npackage diff\n\nimport (\n\t\"reflect\"\n\t\"slices\"\n")
	if g.strconv {
		out.WriteString("\t\"strconv\"\n")
	}
	out.WriteString("\t\"strings\"\n\t\"unsafe\"\n\n")
	for _, p := range sortedKeys(g.imports) {
		fmt.Fprintf(&out, "\t%s\n", importSpec(g.imports[p], p))
	}
	out.WriteString(")\n\n")

	out.WriteString("// typedWalks are the generated functions by the type they compare (see\n// walkFacts.typed), set by init: they call the walker, which looks here.\n")
	out.WriteString("var typedWalks map[reflect.Type]func(w *walker, x, y unsafe.Pointer)\n\n")
	out.WriteString("// typedAppenders are the generated JSON appenders by the type whose JSON\n// they append, for the tests.\n")
	out.WriteString("var typedAppenders map[reflect.Type]func(b []byte, v unsafe.Pointer) ([]byte, bool)\n\n")
	out.WriteString("func init() {\n\ttypedWalks = map[reflect.Type]func(w *walker, x, y unsafe.Pointer){\n")
	var types []reflect.Type
	for t := range g.fnNames {
		types = append(types, t)
	}
	slices.SortFunc(types, func(a, b reflect.Type) int { return strings.Compare(g.fnNames[a], g.fnNames[b]) })
	for _, t := range types {
		te := g.typeExpr(t)
		fmt.Fprintf(&out, "\treflect.TypeFor[%s](): func(w *walker, x, y unsafe.Pointer) { %s(w, (*%s)(x), (*%s)(y)) },\n", te, g.fnNames[t], te, te)
	}
	out.WriteString("}\n")
	var apps []reflect.Type
	for t, n := range g.appNames {
		if n != "" {
			apps = append(apps, t)
		}
	}
	slices.SortFunc(apps, func(a, b reflect.Type) int { return strings.Compare(g.appNames[a], g.appNames[b]) })
	out.WriteString("\ttypedAppenders = map[reflect.Type]func(b []byte, v unsafe.Pointer) ([]byte, bool){\n")
	for _, t := range apps {
		te := g.typeExpr(t)
		fmt.Fprintf(&out, "\treflect.TypeFor[%s](): func(b []byte, v unsafe.Pointer) ([]byte, bool) { return %s(b, (*%s)(v)) },\n", te, g.appNames[t], te)
	}
	out.WriteString("}\n}\n\n")
	out.WriteString(helpers)
	for _, name := range sortedKeys(g.funcs) {
		out.WriteString("\n")
		out.Write(g.funcs[name])
	}
	src, err := format.Source(out.Bytes())
	if err != nil {
		return out.Bytes(), fmt.Errorf("generated code does not parse: %v", err)
	}
	return src, nil
}

// helpers are written into the generated file as they are.
const helpers = `// typedSameBytes is sameBytes for the n bytes at x and y.
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
	i, j := 0, 0
	for i < len(kx) || j < len(ky) {
		var k string
		ix, iy := -1, -1
		switch {
		case j == len(ky) || i < len(kx) && kx[i].key < ky[j].key:
			k, ix = kx[i].key, kx[i].i
			i++
		case i == len(kx) || ky[j].key < kx[i].key:
			k, iy = ky[j].key, ky[j].i
			j++
		default:
			k, ix, iy = kx[i].key, kx[i].i, ky[j].i
			i++
			j++
		}
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
	if len(buf) > 16 {
		slices.SortFunc(buf, func(a, b keyIndex) int { return strings.Compare(a.key, b.key) })
	} else {
		for i := 1; i < len(buf); i++ {
			for j := i; j > 0 && buf[j].key < buf[j-1].key; j-- {
				buf[j], buf[j-1] = buf[j-1], buf[j]
			}
		}
	}
	for i := 1; i < len(buf); i++ {
		if buf[i].key == buf[i-1].key {
			return buf, false
		}
	}
	return buf, true
}
`

// importSpec imports path as name.
func importSpec(name, path string) string {
	if name == path[strings.LastIndex(path, "/")+1:] {
		return strconv.Quote(path)
	}
	return name + " " + strconv.Quote(path)
}

// typeName is t with the paths of the packages of the named types in it,
// for the generated file's comments.
func typeName(t reflect.Type) string {
	switch {
	case t.Name() != "" && t.PkgPath() != "":
		return t.PkgPath() + "." + t.Name()
	case t.Name() != "":
		return t.Name()
	case t.Kind() == reflect.Pointer:
		return "*" + typeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "[]" + typeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map[" + typeName(t.Key()) + "]" + typeName(t.Elem())
	}
	return t.String()
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// pkgName returns the name the generated file imports path as.
func (g *gen) pkgName(path string) string {
	if n, ok := g.imports[path]; ok {
		return n
	}
	elems := strings.Split(path, "/")
	base := elems[len(elems)-1]
	if versionRE.MatchString(base) && len(elems) > 1 {
		base = elems[len(elems)-2] + base
	}
	base = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, base)
	name := base
	for i := 2; g.names[name] != ""; i++ {
		name = base + strconv.Itoa(i)
	}
	g.names[name] = path
	g.imports[path] = name
	return name
}

// typeExpr returns named type t as Go source in the generated file, or ""
// if the file cannot name it (unexported, generic, anonymous).
func (g *gen) typeExpr(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" || strings.ContainsAny(t.Name(), "[]") || !exported(t.Name()) {
		return ""
	}
	return g.pkgName(t.PkgPath()) + "." + t.Name()
}

// exported: an exported identifier.
func exported(name string) bool {
	r := []rune(name)
	return len(r) > 0 && unicode.IsUpper(r[0])
}

// structFunc returns the name of the function that compares two values of
// struct type t, queueing it, or "" when the walker does not compare t
// field by field (see walked) or the file cannot name it.
func (g *gen) structFunc(t reflect.Type) string {
	if n, ok := g.fnNames[t]; ok {
		return n
	}
	if !walked(t) || g.typeExpr(t) == "" {
		return ""
	}
	pn := g.pkgName(t.PkgPath())
	base := "walk" + strings.ToUpper(pn[:1]) + pn[1:] + t.Name()
	name := base
	for i := 2; g.usedNames[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	g.usedNames[name] = true
	g.fnNames[t] = name
	g.queue = append(g.queue, t)
	return name
}

// walked reports whether walker.compareUnlike compares two values of type
// t with compareStruct and fields that are not nil: a struct that is not a
// quantity, has no Equal method it calls, and no unexported field.
func walked(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || t == quantityType || t == timeType {
		return false
	}
	if t.NumMethod() > 0 && equalMethod(t).IsValid() {
		return false
	}
	return structFieldsOf(t) != nil
}

// equalMethod is walk.go's: the Equal method of type t that go-cmp would
// call, or an invalid Value.
func equalMethod(t reflect.Type) reflect.Value {
	if m, ok := t.MethodByName("Equal"); ok {
		ft := m.Type
		if ft.NumIn() == 2 && ft.NumOut() == 1 && ft.In(0).AssignableTo(ft.In(1)) && ft.Out(0) == boolType {
			return m.Func
		}
	}
	return reflect.Value{}
}

// hasEqual reports whether compareUnlike compares two values of type t with
// an Equal method (equalTimes or callEqualMethod) before looking at its
// kind.
func hasEqual(t reflect.Type) bool {
	if t.NumMethod() == 0 {
		return false
	}
	return t == timeType || t == metaTimePtrType || equalMethod(t).IsValid()
}

// structField is walk.go's, with what the generator needs of the field.
type structField struct {
	sf      reflect.StructField
	name    string // JSON name; "" for an inlined struct
	list    listKind
	keyed   bool
	bitwise bool
}

// listKind is compare.go's.
type listKind struct {
	key string
	set bool
}

// structFieldsOf is walk.go's: the compared fields of struct type t, in the
// order of their JSON names, or nil when t has an unexported field.
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
		bitwise := (f.Type.Kind() == reflect.Struct || f.Type.Kind() == reflect.Array) && bitwiseComparable(f.Type)
		fields = append(fields, structField{sf: f, name: jsonName(f), list: lk, keyed: keyed, bitwise: bitwise})
	}
	slices.SortStableFunc(fields, func(a, b structField) int { return strings.Compare(a.name, b.name) })
	return fields
}

// lookupList is compare.go's: how the field at idx of struct parent is
// compared, and whether it is a list compared by key or as a set at all.
func lookupList(parent reflect.Type, idx int) (listKind, bool) {
	f := parent.Field(idx)
	var lk listKind
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
	return lk, lk.key != "" || lk.set
}

// listKey is compare.go's.
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

// jsonFieldIndex is compare.go's.
func jsonFieldIndex(t reflect.Type, name string) int {
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == name {
			return i
		}
	}
	return -1
}

// jsonName is compare.go's: the JSON name of a struct field, "" for an
// inlined one.
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

// bitwiseComparable is walk.go's: whether equal bytes make two values of
// struct or array type t equal.
func bitwiseComparable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.Interface:
		return false
	case reflect.Array:
		return bitwiseComparable(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !bitwiseComparable(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// plainScalar reports whether same and compareUnlike compare two values of
// type t as Go's == does: a bool, integer or string without methods.
func plainScalar(t reflect.Type) bool {
	if t.NumMethod() > 0 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return true
	}
	return false
}

// genStruct writes the function of struct type t.
func (g *gen) genStruct(t reflect.Type) {
	name, te := g.fnNames[t], g.typeExpr(t)
	var w bytes.Buffer
	fmt.Fprintf(&w, "// %s compares two %s as compareStruct does.\nfunc %s(w *walker, x, y *%s) {\n", name, te, name, te)
	for _, f := range structFieldsOf(t) {
		g.field(&w, f)
		g.reach(f.sf.Type)
	}
	w.WriteString("}\n")
	g.funcs[name] = w.Bytes()
}

// reach queues the struct types the walker may reach from a field of type
// t through pointers, lists and maps (compareUnlike looks their functions
// up in typedWalks).
func (g *gen) reach(t reflect.Type) {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			t = t.Elem()
			continue
		case reflect.Map:
			g.reach(t.Key())
			t = t.Elem()
			continue
		case reflect.Struct:
			// A struct the walker does not compare field by field (an
			// Equal method, unexported fields) it does not look into.
			g.structFunc(t)
		}
		return
	}
}

// field writes the comparison of field f of x and y.
func (g *gen) field(w *bytes.Buffer, f structField) {
	ft := f.sf.Type
	fx, fy := "x."+f.sf.Name, "y."+f.sf.Name
	push, pop := "", ""
	if f.name != "" {
		push = fmt.Sprintf("w.pushField(%q)\n", f.name)
		pop = "w.pop()\n"
	}
	values := fmt.Sprintf("reflect.ValueOf(&%s).Elem(), reflect.ValueOf(&%s).Elem()", fx, fy)
	switch {
	case f.keyed:
		lk := fmt.Sprintf("listKind{key: %q, set: %v}", f.list.key, f.list.set)
		call := fmt.Sprintf("w.compareKeyed(%s, %s)", lk, values)
		if key, walk, size := g.keyedElems(ft.Elem()); key != "" {
			app := g.appender(ft.Elem())
			if app == "" {
				app = "nil"
			}
			call = fmt.Sprintf("typedCompareKeyed(w, %s, %s, %s, %s, %s, %s, %s)", lk, fx, fy, key, walk, size, app)
		} else {
			g.fallbacks[typeName(ft)+" (list compared by key, with compareKeyed)"] = true
		}
		fmt.Fprintf(w, "if !(%s) {\n%s%s\n%s}\n", sameSlices(fx, fy), push, call, pop)
		return
	case plainScalar(ft):
		report := fmt.Sprintf("w.report(%s)", values)
		if r := scalarReport(ft); r != "" {
			report = fmt.Sprintf("%s(w, %s, %s)", r, fx, fy)
		}
		fmt.Fprintf(w, "if %s != %s {\n%s%s\n%s}\n", fx, fy, push, report, pop)
		return
	case ft == timeType:
		// compareUnlike: equalTimes, then report.
		fmt.Fprintf(w, "if !typedSameBytes(unsafe.Pointer(&%s), unsafe.Pointer(&%s), unsafe.Sizeof(%s)) && !%s.Equal(%s) {\n%sw.reportTime(&%s, &%s)\n%s}\n",
			fx, fy, fx, fx, fy, push, fx, fy, pop)
		return
	case ft == metaTimePtrType:
		// compareUnlike: equalTimes, then report.
		fmt.Fprintf(w, "if %s != %s && !%s.Equal(%s) {\n%sw.reportMetaTime(%s, %s)\n%s}\n", fx, fy, fx, fy, push, fx, fy, pop)
		return
	case ft.Kind() == reflect.Struct:
		if fn := g.structFunc(ft); fn != "" {
			call := fmt.Sprintf("%s(w, &%s, &%s)\n", fn, fx, fy)
			if f.bitwise {
				fmt.Fprintf(w, "if !typedSameBytes(unsafe.Pointer(&%s), unsafe.Pointer(&%s), unsafe.Sizeof(%s)) {\n%s%s%s}\n",
					fx, fy, fx, push, call, pop)
			} else {
				fmt.Fprintf(w, "%s%s%s", push, call, pop)
			}
			return
		}
	case ft.Kind() == reflect.Pointer && !hasEqual(ft):
		et := ft.Elem()
		elems := fmt.Sprintf("reflect.ValueOf(%s).Elem(), reflect.ValueOf(%s).Elem()", fx, fy)
		if plainScalar(et) {
			nilReport, report := fmt.Sprintf("w.report(%s)", values), fmt.Sprintf("w.report(%s)", elems)
			if r := scalarReport(et); r != "" {
				nilReport = fmt.Sprintf("%sPtr(w, %s, %s)", r, fx, fy)
				report = fmt.Sprintf("%s(w, *%s, *%s)", r, fx, fy)
			}
			fmt.Fprintf(w, "if %s != %s {\n%s", fx, fy, push)
			fmt.Fprintf(w, "if %s == nil || %s == nil {\n%s\n} else if *%s != *%s {\n%s\n}\n",
				fx, fy, nilReport, fx, fy, report)
			fmt.Fprintf(w, "%s}\n", pop)
			return
		}
		if fn := g.structFunc(et); fn != "" {
			nilReport := fmt.Sprintf("w.report(%s)", values)
			if app := g.appender(et); app != "" {
				nilReport = fmt.Sprintf("reportStructPtr(w, %s, %s, %s)", fx, fy, app)
			}
			fmt.Fprintf(w, "if %s != %s {\n%s", fx, fy, push)
			fmt.Fprintf(w, "if %s == nil || %s == nil {\n%s\n}", fx, fy, nilReport)
			if bitwiseComparable(et) {
				fmt.Fprintf(w, " else if !typedSameBytes(unsafe.Pointer(%s), unsafe.Pointer(%s), unsafe.Sizeof(*%s)) {\n%s(w, %s, %s)\n}\n",
					fx, fy, fx, fn, fx, fy)
			} else {
				fmt.Fprintf(w, " else {\n%s(w, %s, %s)\n}\n", fn, fx, fy)
			}
			fmt.Fprintf(w, "%s}\n", pop)
			return
		}
	}
	// compareUnlike, after compareStruct's test of the field (see same
	// and structField.same).
	g.fallback(ft)
	var same string
	switch ft.Kind() {
	case reflect.Slice:
		same = sameSlices(fx, fy)
	case reflect.Map:
		same = fmt.Sprintf("len(%s) == 0 && len(%s) == 0 || len(%s) == len(%s) && typedMapPointer(unsafe.Pointer(&%s)) == typedMapPointer(unsafe.Pointer(&%s))",
			fx, fy, fx, fy, fx, fy)
	case reflect.Pointer:
		same = fmt.Sprintf("%s == %s", fx, fy)
	case reflect.Struct:
		if f.bitwise {
			same = fmt.Sprintf("typedSameBytes(unsafe.Pointer(&%s), unsafe.Pointer(&%s), unsafe.Sizeof(%s))", fx, fy, fx)
		}
	}
	call := fmt.Sprintf("%sw.compareUnlike(%s)\n%s", push, values, pop)
	if same == "" {
		w.WriteString(call)
	} else {
		fmt.Fprintf(w, "if !(%s) {\n%s}\n", same, call)
	}
}

// keyedElems returns, for the elements of type t of a list compared by
// key, the function that returns an element's key (appendElementKeys:
// scalarString of the field keyFieldIndex names), the function that
// compares two elements, and the size of an element that equal bytes make
// equal (0 when they do not), when the generated typedCompareKeyed can
// compare the list: elements of a struct type walked field by field, keyed
// by a field of a string or int kind. The keys are written once per type.
func (g *gen) keyedElems(t reflect.Type) (key, walk, size string) {
	fn := g.structFunc(t)
	if fn == "" {
		return "", "", ""
	}
	i := jsonFieldIndex(t, mergeKeys[t])
	if mergeKeys[t] == "" || i < 0 {
		return "", "", ""
	}
	kf := t.Field(i)
	te := g.typeExpr(t)
	var expr string
	switch kf.Type.Kind() {
	case reflect.String:
		expr = "string(e." + kf.Name + ")"
	case reflect.Int, reflect.Int32, reflect.Int64:
		expr = "strconv.FormatInt(int64(e." + kf.Name + "), 10)"
		g.strconv = true
	default:
		return "", "", ""
	}
	key = "key" + strings.TrimPrefix(fn, "walk")
	g.funcs[key] = fmt.Appendf(nil, "// %s is the key of a %s in a list compared by key.\nfunc %s(e *%s) string { return %s }\n",
		key, te, key, te, expr)
	size = "0"
	if bitwiseComparable(t) {
		size = fmt.Sprintf("unsafe.Sizeof(%s{})", te)
	}
	return key, fn, size
}

// mergeKeys is compare.go's registry of the merge key of each list
// element type (filled by its init, the first list of a type found
// walking the pod's types in field order).
var mergeKeys = func() map[reflect.Type]string {
	keys := map[reflect.Type]string{}
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
				if _, ok := keys[f.Type.Elem()]; !ok {
					keys[f.Type.Elem()] = k
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[corev1.Pod]())
	return keys
}()

// sameSlices is same for two slices.
func sameSlices(x, y string) string {
	return fmt.Sprintf("len(%s) == 0 && len(%s) == 0 || len(%s) == len(%s) && unsafe.SliceData(%s) == unsafe.SliceData(%s)",
		x, y, x, y, x, y)
}

// fallback notes that fields of type t are handed to compareUnlike.
func (g *gen) fallback(t reflect.Type) {
	why := t.Kind().String()
	switch {
	case t == quantityType:
		why = "quantity"
	case hasEqual(t):
		why = "Equal method"
	case t.Kind() == reflect.Slice:
		why = "ordered list"
	case t.Kind() == reflect.Struct && structFieldsOf(t) == nil:
		why = "unexported fields"
	case t.Kind() == reflect.Pointer:
		why = "pointer to a " + t.Elem().Kind().String()
	}
	g.fallbacks[typeName(t)+" ("+why+")"] = true
}

// scalarReport returns the typed report (walk.go) of two values of plain
// scalar type t, or "" for a kind formatValue does not write with strconv.
func scalarReport(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "reportString"
	case reflect.Bool:
		return "reportBool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "reportInt"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "reportUint"
	}
	return ""
}

// appender returns the name of the function that appends the JSON of a
// value of struct type t as format.go's appendJSON does, queueing it, or
// "" when appendJSON does not write t field by field (t is a time, encodes
// itself, or has a field jsonPlanOf declines) or the file cannot name it.
func (g *gen) appender(t reflect.Type) string {
	if n, ok := g.appNames[t]; ok {
		return n
	}
	name := ""
	if _, ok := jsonPlanOf(t); ok && t != metaTimeType && t != timeType && !selfEncoding(t) && g.typeExpr(t) != "" {
		pn := g.pkgName(t.PkgPath())
		base := "appendJSON" + strings.ToUpper(pn[:1]) + pn[1:] + t.Name()
		name = base
		for i := 2; g.usedNames[name]; i++ {
			name = base + strconv.Itoa(i)
		}
		g.usedNames[name] = true
		g.appQueue = append(g.appQueue, t)
	}
	g.appNames[t] = name
	return name
}

// genAppender writes the JSON appender of struct type t: appendJSON's
// struct case, with the kinds it writes itself written in place, and the
// others handed to it.
func (g *gen) genAppender(t reflect.Type) {
	name, te := g.appNames[t], g.typeExpr(t)
	plan, _ := jsonPlanOf(t)
	var body bytes.Buffer
	// always: a field before this one is always written, so this one
	// follows a comma; start: the function tests whether one was.
	always, start := false, false
	for i, f := range plan {
		expr := "v." + t.Field(f.index).Name
		ft := t.Field(f.index).Type
		omit := f.omitEmpty && emptyJSON(ft, expr) != "" // omitempty omits no struct
		if omit {
			fmt.Fprintf(&body, "if !(%s) {\n", emptyJSON(ft, expr))
		}
		switch {
		case always:
			body.WriteString("b = append(b, ',')\n")
		case i > 0:
			body.WriteString("if len(b) > start+1 {\nb = append(b, ',')\n}\n")
			start = true
		}
		fmt.Fprintf(&body, "b = append(b, %q...)\n", f.prefix)
		g.appendValue(&body, ft, expr, 0)
		if omit {
			body.WriteString("}\n")
		} else {
			always = true
		}
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "// %s appends the JSON of a %s as appendJSON does, or reports false.\n", name, te)
	fmt.Fprintf(&w, "func %s(b []byte, v *%s) ([]byte, bool) {\n", name, te)
	if bytes.Contains(body.Bytes(), []byte("ok = ")) {
		w.WriteString("var ok bool\n")
	}
	if start {
		w.WriteString("start := len(b)\n")
	}
	w.WriteString("b = append(b, '{')\n")
	w.Write(body.Bytes())
	w.WriteString("return append(b, '}'), true\n}\n")
	g.funcs[name] = w.Bytes()
}

// addr is &expr, for an addressable expression.
func addr(expr string) string {
	if strings.HasPrefix(expr, "(*") && strings.HasSuffix(expr, ")") {
		return expr[2 : len(expr)-1]
	}
	return "&" + expr
}

// appendValue writes the code that appends the JSON of the value expr
// (addressable) of type t to b as appendJSON does, returning b, false
// where it does.
func (g *gen) appendValue(w *bytes.Buffer, t reflect.Type, expr string, depth int) {
	reflective := func() {
		fmt.Fprintf(w, "if b, ok = appendJSON(b, reflect.ValueOf(%s).Elem()); !ok {\nreturn b, false\n}\n", addr(expr))
	}
	k := t.Kind()
	switch {
	case t == metaTimeType:
		fmt.Fprintf(w, "b = appendMetaTimeJSON(b, %s)\n", addr(expr))
	case t == timeType:
		fmt.Fprintf(w, "if b, ok = appendTimeJSON(b, %s); !ok {\nreturn b, false\n}\n", addr(expr))
	case k == reflect.Pointer:
		fmt.Fprintf(w, "if %s == nil {\nb = append(b, \"null\"...)\n} else {\n", expr)
		switch {
		case t.Elem() == metaTimeType:
			fmt.Fprintf(w, "b = appendMetaTimeJSON(b, %s)\n", expr)
		case selfEncoding(t):
			reflective()
		default:
			g.appendValue(w, t.Elem(), "(*"+expr+")", depth)
		}
		w.WriteString("}\n")
	case selfEncoding(t):
		reflective()
	case k == reflect.String:
		fmt.Fprintf(w, "if b, ok = appendJSONString(b, string(%s)); !ok {\nreturn b, false\n}\n", expr)
	case k == reflect.Bool:
		fmt.Fprintf(w, "b = strconv.AppendBool(b, bool(%s))\n", expr)
		g.strconv = true
	case k == reflect.Int || k == reflect.Int8 || k == reflect.Int16 || k == reflect.Int32 || k == reflect.Int64:
		fmt.Fprintf(w, "b = strconv.AppendInt(b, int64(%s), 10)\n", expr)
		g.strconv = true
	case k == reflect.Uint || k == reflect.Uint8 || k == reflect.Uint16 || k == reflect.Uint32 || k == reflect.Uint64:
		fmt.Fprintf(w, "b = strconv.AppendUint(b, uint64(%s), 10)\n", expr)
		g.strconv = true
	case k == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		i := fmt.Sprintf("i%d", depth)
		fmt.Fprintf(w, "if %s == nil {\nb = append(b, \"null\"...)\n} else {\nb = append(b, '[')\nfor %s := range %s {\nif %s > 0 {\nb = append(b, ',')\n}\n", expr, i, expr, i)
		g.appendValue(w, t.Elem(), fmt.Sprintf("%s[%s]", expr, i), depth+1)
		w.WriteString("}\nb = append(b, ']')\n}\n")
	case k == reflect.Struct:
		if app := g.appender(t); app != "" {
			fmt.Fprintf(w, "if b, ok = %s(b, %s); !ok {\nreturn b, false\n}\n", app, addr(expr))
		} else {
			reflective()
		}
	default:
		// Maps, floats, byte slices, interfaces...: appendJSON's.
		reflective()
	}
}

// emptyJSON is format.go's: the test that omitempty omits the value expr
// of type t, "" for a type it never omits (a struct).
func emptyJSON(t reflect.Type, expr string) string {
	switch t.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return "len(" + expr + ") == 0"
	case reflect.Bool:
		return "!" + expr
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return expr + " == 0"
	case reflect.Interface, reflect.Pointer:
		return expr + " == nil"
	}
	return ""
}

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// selfEncoding is format.go's: whether encoding/json may hand values of
// type t to their own MarshalJSON or MarshalText.
func selfEncoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(marshalerType) || t.Implements(textMarshaler) || p.Implements(marshalerType) || p.Implements(textMarshaler)
}

// jsonField is format.go's.
type jsonField struct {
	index     int
	prefix    string
	omitEmpty bool
}

// jsonPlanOf is format.go's: the fields of struct type t in the order
// encoding/json writes them, and false for a struct whose fields it would
// not write plainly.
func jsonPlanOf(t reflect.Type) ([]jsonField, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	var fields []jsonField
	seen := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			return nil, false
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if (opts != "" && opts != "omitempty") || !plainName(name) || seen[name] {
			return nil, false
		}
		seen[name] = true
		fields = append(fields, jsonField{index: i, prefix: `"` + name + `":`, omitEmpty: opts == "omitempty"})
	}
	return fields, true
}

// plainName is format.go's.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}
