// Command jsongen writes tracer/zz_generated_json.go: for every struct type
// reachable from the API types the recorder encodes, a function that appends
// the bytes encoding/json's Marshal writes for it, without reflection.
//
// It also writes protobuf transcoders for the roots of protoRoots
// (corev1.PodSpec, corev1.PodStatus): pbX(b, p []byte) []byte writes the
// JSON appendX writes for the value gogo's Unmarshal decodes from p, straight
// from the protobuf bytes (runtime helpers and semantics in
// tracer/protojson.go). Field numbers come from the protobuf struct tags,
// checked against each type's Marshal (pbCheckTags); wire types from the Go
// types. The types it does not transcode are decoded typed and written by
// their appender; they are listed at the top of the generated file.
//
// It is run by `go generate` in tracer (`go run ./internal/jsongen`), and by
// tracer's TestGeneratedJSONUpToDate (`-o -`), which fails when the file is
// not what the generator writes for the k8s.io/api in go.mod.
//
// The generator walks the types with reflect and follows encoding/json's
// encode.go rule by rule (typeFields, newTypeEncoder): field names and
// options from tags, the promotion and dominance of embedded fields,
// omitempty and omitzero, ",string", json.Marshaler and
// encoding.TextMarshaler (pointer receivers only on addressable values),
// maps sorted by key, nil slices and maps as null, []byte as base64. What it
// does not support is written with the reflective encoder (appendReflect)
// and listed at the top of the generated file.
package main

import (
	"bytes"
	"encoding"
	stdjson "encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/hack/gogen"
)

// roots are the types tracer/kind.go watches; appendObject switches over
// them.
var roots = []any{
	&corev1.Pod{}, &corev1.Event{}, &corev1.Node{}, &corev1.Namespace{}, &corev1.Service{},
	&corev1.PersistentVolumeClaim{}, &storagev1.StorageClass{},
	&appsv1.ReplicaSet{}, &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
	&batchv1.Job{}, &batchv1.CronJob{},
	&policyv1.PodDisruptionBudget{},
	&admissionregistrationv1.MutatingWebhookConfiguration{},
	&admissionregistrationv1.ValidatingWebhookConfiguration{},
	&metav1.PartialObjectMetadata{},
}

// special are the json.Marshalers written by a hand appender of
// tracer/encode.go that writes what MarshalJSON returns (tested there).
var special = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():        "appendTime",
	reflect.TypeFor[metav1.MicroTime]():   "appendMicroTime",
	reflect.TypeFor[intstr.IntOrString](): "appendIntOrString",
	reflect.TypeFor[resource.Quantity]():  "appendQuantity",
}

// trusted are the json.Marshalers whose output is valid JSON by
// construction: when it is also verbatim it is appended without being
// parsed. FieldsV1 holds the field manager's own compact JSON (the API
// server writes it; tracer's encode has always trusted it).
var trusted = map[reflect.Type]bool{
	reflect.TypeFor[metav1.FieldsV1](): true,
}

var (
	marshalerType     = reflect.TypeFor[stdjson.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	isZeroerType      = reflect.TypeFor[interface{ IsZero() bool }]()
	numberType        = reflect.TypeFor[stdjson.Number]()
	byteType          = reflect.TypeFor[byte]()
)

func main() {
	gogen.Main("zz_generated_json.go", generate)
}

// fnKey names one generated function: a struct type, and whether its value
// is addressable (encoding/json calls pointer-receiver marshalers only on
// addressable values; a struct that is a map value is not).
type fnKey struct {
	t    reflect.Type
	addr bool
}

type gen struct {
	imports   *gogen.Imports
	fnNames   map[fnKey]string
	usedNames gogen.Idents
	queue     []fnKey
	funcs     map[string][]byte // function name -> source
	fallbacks map[string]bool   // what appendReflect writes, and why
	marshal   map[string]bool   // Marshalers called, for the header
	tmp       int

	// the protobuf transcoders (protoRoots)
	pbNames    map[reflect.Type]string
	pbQueue    []reflect.Type
	pbPlans    map[reflect.Type]*pbPlan
	pbTabs     map[reflect.Type]string
	pbTypedWhy map[string]bool // what they decode typed, and why
}

func generate() ([]byte, error) {
	g := &gen{
		imports:   gogen.NewImports("json", "stdjson", "strconv", "base64", "slices", "strings", "reflect", "math", "runtime", "bytes"),
		fnNames:   map[fnKey]string{},
		usedNames: gogen.Idents{},
		funcs:     map[string][]byte{},
		fallbacks: map[string]bool{},
		marshal:   map[string]bool{},

		pbNames:    map[reflect.Type]string{},
		pbPlans:    map[reflect.Type]*pbPlan{},
		pbTabs:     map[reflect.Type]string{},
		pbTypedWhy: map[string]bool{},
	}
	g.imports.Add("k8s.io/apimachinery/pkg/runtime", "runtime")

	var sw bytes.Buffer
	sw.WriteString("// appendObject appends obj's JSON, the bytes encoding/json writes, when\n")
	sw.WriteString("// obj is one of the generated roots; false otherwise.\n")
	sw.WriteString("func appendObject(b []byte, obj runtime.Object) ([]byte, bool) {\n\tswitch o := obj.(type) {\n")
	for _, r := range roots {
		t := reflect.TypeOf(r)
		fn := g.structFunc(t.Elem(), true)
		fmt.Fprintf(&sw, "\tcase %s:\n\t\tif o == nil {\n\t\t\treturn b, false\n\t\t}\n\t\treturn %s(b, o), true\n", g.typeExpr(t), fn)
	}
	sw.WriteString("\t}\n\treturn b, false\n}\n")

	for _, r := range protoRoots {
		g.pbFunc(reflect.TypeOf(r).Elem())
	}
	for len(g.queue) > 0 || len(g.pbQueue) > 0 {
		if len(g.pbQueue) > 0 {
			t := g.pbQueue[0]
			g.pbQueue = g.pbQueue[1:]
			g.genPB(t)
			continue
		}
		k := g.queue[0]
		g.queue = g.queue[1:]
		g.genStruct(k)
	}

	var out bytes.Buffer
	out.WriteString("// Code generated by tracer/internal/jsongen; DO NOT EDIT.\n\n")
	out.WriteString("// The functions below append the bytes encoding/json's Marshal writes for\n")
	out.WriteString("// the API types the recorder encodes (see encode in encode.go).\n//\n")
	out.WriteString("// json.Marshalers called (their output is appended when verbatim, else\n// compacted as encoding/json does):\n")
	for _, m := range gogen.SortedKeys(g.marshal) {
		fmt.Fprintf(&out, "//   - %s\n", m)
	}
	out.WriteString("//\n// Hand appenders (encode.go) write what MarshalJSON returns for:\n")
	var sp []string
	for t, fn := range special {
		sp = append(sp, gogen.TypeName(t)+" ("+fn+")")
	}
	slices.Sort(sp)
	for _, s := range sp {
		fmt.Fprintf(&out, "//   - %s\n", s)
	}
	out.WriteString("//\n")
	if len(g.fallbacks) == 0 {
		out.WriteString("// Written by the reflective encoder (appendReflect): nothing.\n//\n")
	} else {
		out.WriteString("// Written by the reflective encoder (appendReflect):\n")
		for _, f := range gogen.SortedKeys(g.fallbacks) {
			fmt.Fprintf(&out, "//   - %s\n", f)
		}
		out.WriteString("//\n")
	}
	out.WriteString("// The protobuf transcoders (pbX, see tracer/protojson.go) decode typed:\n")
	for _, f := range gogen.SortedKeys(g.pbTypedWhy) {
		fmt.Fprintf(&out, "//   - %s\n", f)
	}
	out.WriteString("\n")
	out.WriteString("package tracer\n\nimport (\n")
	paths := g.imports.Paths()
	for _, p := range paths {
		if strings.Contains(p, ".") {
			continue
		}
		fmt.Fprintf(&out, "\t%s\n", g.imports.Spec(p))
	}
	out.WriteString("\n")
	for _, p := range paths {
		if !strings.Contains(p, ".") {
			continue
		}
		fmt.Fprintf(&out, "\t%s\n", g.imports.Spec(p))
	}
	out.WriteString(")\n\n")
	out.Write(sw.Bytes())
	for _, name := range gogen.SortedKeys(g.funcs) {
		out.WriteString("\n")
		out.Write(g.funcs[name])
	}
	return gogen.Source(out.Bytes())
}

// typeExpr returns t as Go source in the generated file, or "" if the file
// cannot name it (unexported, anonymous struct, interface with methods).
func (g *gen) typeExpr(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name() // predeclared
		}
		return g.imports.Named(t) // "" for a generic instance, an unexported type
	}
	var elem string
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		if elem = g.typeExpr(t.Elem()); elem == "" {
			return ""
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + elem
	case reflect.Slice:
		return "[]" + elem
	case reflect.Array:
		return "[" + strconv.Itoa(t.Len()) + "]" + elem
	case reflect.Map:
		k := g.typeExpr(t.Key())
		if k == "" {
			return ""
		}
		return "map[" + k + "]" + elem
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "any"
		}
	}
	return ""
}

// structFunc returns the name of the function that appends a struct of
// type t, queueing it. A struct whose encoding does not depend on its
// addressability has one function.
func (g *gen) structFunc(t reflect.Type, addr bool) string {
	if !addr && !addrSensitive(t, map[reflect.Type]bool{}) {
		addr = true
	}
	k := fnKey{t, addr}
	if n, ok := g.fnNames[k]; ok {
		return n
	}
	base := g.imports.FuncBase("append", t)
	if !addr {
		base += "NoAddr"
	}
	name := g.usedNames.New(base)
	g.fnNames[k] = name
	g.queue = append(g.queue, k)
	return name
}

// addrSensitive tells whether encoding/json writes a value of type t
// differently when it is not addressable: it, or a field or array element
// reached without a pointer, has a MarshalJSON or MarshalText method on the
// pointer receiver only.
func addrSensitive(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if t.Kind() == reflect.Pointer || t.Implements(marshalerType) {
		return false
	}
	if reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return true
	}
	if t.Implements(textMarshalerType) {
		return false
	}
	switch t.Kind() {
	case reflect.Array:
		return addrSensitive(t.Elem(), seen)
	case reflect.Struct:
		for _, f := range typeFields(t) {
			ft := t
			for _, i := range f.index {
				if ft.Kind() == reflect.Pointer {
					break // reached through a pointer: addressable
				}
				ft = ft.Field(i).Type
			}
			if ft.Kind() != reflect.Pointer && addrSensitive(ft, seen) {
				return true
			}
		}
	}
	return false
}

func (g *gen) temp(prefix string) string {
	g.tmp++
	return prefix + strconv.Itoa(g.tmp)
}

func (g *gen) fallback(why string) {
	g.fallbacks[why] = true
}

// genStruct writes the function of k.
func (g *gen) genStruct(k fnKey) {
	t, name := k.t, g.fnNames[k]
	g.tmp = 0 // temporaries are numbered per function: stable diffs
	te := g.typeExpr(t)
	var w bytes.Buffer
	doc := "writes v as encoding/json does"
	if !k.addr {
		doc += ", v being a value that is not addressable (a map's)"
	}
	fmt.Fprintf(&w, "// %s %s.\nfunc %s(b []byte, v *%s) []byte {\n", name, doc, name, te)
	body, why := g.structBody(t, k.addr)
	if why != "" {
		g.fallback(fmt.Sprintf("%s: %s", gogen.TypeName(t), why))
		if k.addr {
			w.WriteString("\treturn appendReflect(b, v)\n}\n")
		} else {
			w.WriteString("\treturn appendReflect(b, *v)\n}\n")
		}
	} else {
		w.Write(body)
		w.WriteString("}\n")
	}
	g.funcs[name] = w.Bytes()
}

// structBody is encoding/json's structEncoder.encode, unrolled: each field
// writes a comma first; the first one becomes the opening brace.
func (g *gen) structBody(t reflect.Type, addr bool) ([]byte, string) {
	var w bytes.Buffer
	w.WriteString("\tstart := len(b)\n")
	for _, f := range typeFields(t) {
		// Follow f.index; embedded pointers are checked for nil.
		cur, ct, faddr := "v", t, addr
		closes := 0
		for n, i := range f.index {
			if ct.Kind() == reflect.Pointer {
				p := g.temp("p")
				fmt.Fprintf(&w, "\tif %s := %s; %s != nil {\n", p, cur, p)
				closes++
				cur, ct, faddr = p, ct.Elem(), true
			}
			sf := ct.Field(i)
			if !sf.IsExported() {
				return nil, fmt.Sprintf("field %s is reached through unexported embedded field %s", f.name, sf.Name)
			}
			cur += "." + sf.Name
			ct = sf.Type
			_ = n
		}
		cond := ""
		if f.omitEmpty {
			cond = notEmpty(ct, cur)
		}
		if f.omitZero {
			c, ok := g.notZero(ct, cur)
			if !ok {
				return nil, fmt.Sprintf("omitzero field %s of type %s", f.name, ct)
			}
			if cond != "" && c != "" {
				cond = "(" + cond + ") && (" + c + ")"
			} else if c != "" {
				cond = c
			}
		}
		if cond != "" {
			fmt.Fprintf(&w, "\tif %s {\n", cond)
			closes++
		}
		fmt.Fprintf(&w, "\tb = append(b, %s...)\n", strconv.Quote(","+f.nameEscHTML))
		// omitempty leaves no nil pointer, map or slice
		g.valueNonNil(&w, ct, cur, faddr, f.quoted, f.omitEmpty && notEmpty(ct, cur) != "")
		w.WriteString(strings.Repeat("}\n", closes))
	}
	w.WriteString("\tif len(b) == start {\n\t\treturn append(b, \"{}\"...)\n\t}\n\tb[start] = '{'\n\treturn append(b, '}')\n")
	return w.Bytes(), ""
}

// notEmpty is the condition under which isEmptyValue is false for x, of
// type t ("" if always).
func notEmpty(t reflect.Type, x string) string {
	switch t.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return "len(" + x + ") != 0"
	case reflect.Bool:
		return x
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return x + " != 0"
	case reflect.Interface, reflect.Pointer:
		return x + " != nil"
	}
	return ""
}

// notZero is the condition under which encoding/json's omitzero keeps x.
func (g *gen) notZero(t reflect.Type, x string) (string, bool) {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return "", false
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return x + " != nil && !" + x + ".IsZero()", true
	case t.Implements(isZeroerType), reflect.PointerTo(t).Implements(isZeroerType):
		// x is addressable in the generated code: a pointer receiver is
		// called on it as encoding/json calls it on a boxed copy.
		return "!" + x + ".IsZero()", true
	}
	switch t.Kind() {
	case reflect.Bool:
		return x, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return x + " != 0", true
	case reflect.String:
		return x + ` != ""`, true
	case reflect.Interface, reflect.Pointer, reflect.Map, reflect.Slice:
		return x + " != nil", true
	case reflect.Struct, reflect.Array:
		g.imports.Add("reflect", "reflect")
		return "!reflect.ValueOf(&" + x + ").Elem().IsZero()", true
	}
	return "", false
}

// value writes the code that appends x, an addressable Go expression of type
// t; addr is whether encoding/json's value is addressable. It is
// newTypeEncoder, case by case.
func (g *gen) value(w *bytes.Buffer, t reflect.Type, x string, addr, quoted bool) {
	g.valueNonNil(w, t, x, addr, quoted, false)
}

// valueNonNil is value; nonNil says that x, a pointer, map or slice, is
// known not to be nil (omitempty checked it): no null case is written.
func (g *gen) valueNonNil(w *bytes.Buffer, t reflect.Type, x string, addr, quoted, nonNil bool) {
	// ifNil writes the null case of a pointer, map or slice and opens the
	// other; the caller closes it with endNil.
	ifNil := func() {
		if !nonNil {
			fmt.Fprintf(w, "\tif %s == nil {\n\t\tb = append(b, \"null\"...)\n\t} else {\n", x)
		}
	}
	endNil := func() {
		if !nonNil {
			w.WriteString("\t}\n")
		}
	}
	if t.Kind() == reflect.Pointer {
		// ptrEncoder, or marshalerEncoder on a pointer: null for nil, else
		// the element, which is addressable.
		ifNil()
		if t.Elem().Kind() == reflect.Struct && !isMarshaler(t.Elem(), true) && g.typeExpr(t.Elem()) != "" {
			fmt.Fprintf(w, "\tb = %s(b, %s)\n", g.structFunc(t.Elem(), true), x)
		} else {
			g.value(w, t.Elem(), "(*"+x+")", true, quoted)
		}
		endNil()
		return
	}
	if fn, ok := special[t]; ok {
		fmt.Fprintf(w, "\tb = %s(b, &%s)\n", fn, x)
		return
	}
	if (addr && reflect.PointerTo(t).Implements(marshalerType)) || t.Implements(marshalerType) {
		if t.Kind() == reflect.Interface {
			g.reflectValue(w, t, x, addr, "interface "+t.String())
			return
		}
		g.marshal[gogen.TypeName(t)] = true
		out, err := g.temp("out"), g.temp("err")
		fmt.Fprintf(w, "\t%s, %s := %s.MarshalJSON()\n\tb = appendMarshaled(b, %s, %s, %v)\n", out, err, x, out, err, trusted[t])
		return
	}
	if (addr && reflect.PointerTo(t).Implements(textMarshalerType)) || t.Implements(textMarshalerType) {
		if t.Kind() == reflect.Interface {
			g.reflectValue(w, t, x, addr, "interface "+t.String())
			return
		}
		g.marshal[gogen.TypeName(t)+" (MarshalText)"] = true
		out, err := g.temp("text"), g.temp("err")
		fmt.Fprintf(w, "\t%s, %s := %s.MarshalText()\n\tb = appendMarshaledText(b, %s, %s)\n", out, err, x, out, err)
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		if quoted {
			fmt.Fprintf(w, "\tb = append(b, '\"')\n\tb = strconv.AppendBool(b, bool(%s))\n\tb = append(b, '\"')\n", x)
		} else {
			fmt.Fprintf(w, "\tb = strconv.AppendBool(b, bool(%s))\n", x)
		}
		g.imports.Add("strconv", "strconv")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		g.imports.Add("strconv", "strconv")
		if quoted {
			fmt.Fprintf(w, "\tb = append(b, '\"')\n\tb = strconv.AppendInt(b, int64(%s), 10)\n\tb = append(b, '\"')\n", x)
		} else {
			fmt.Fprintf(w, "\tb = strconv.AppendInt(b, int64(%s), 10)\n", x)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		g.imports.Add("strconv", "strconv")
		if quoted {
			fmt.Fprintf(w, "\tb = append(b, '\"')\n\tb = strconv.AppendUint(b, uint64(%s), 10)\n\tb = append(b, '\"')\n", x)
		} else {
			fmt.Fprintf(w, "\tb = strconv.AppendUint(b, uint64(%s), 10)\n", x)
		}
	case reflect.Float32, reflect.Float64:
		fmt.Fprintf(w, "\tb = appendFloat(b, float64(%s), %d, %v)\n", x, t.Bits(), quoted)
	case reflect.String:
		if t == numberType {
			g.reflectValue(w, t, x, addr, "json.Number")
			return
		}
		if quoted {
			fmt.Fprintf(w, "\tb = appendQuotedString(b, string(%s))\n", x)
		} else {
			g.imports.Add("github.com/segmentio/encoding/json", "json")
			fmt.Fprintf(w, "\tb = json.AppendEscape(b, string(%s), flags)\n", x)
		}
	case reflect.Struct:
		if g.typeExpr(t) == "" {
			g.reflectValue(w, t, x, addr, "unnamed or unexported struct "+t.String())
			return
		}
		fmt.Fprintf(w, "\tb = %s(b, &%s)\n", g.structFunc(t, addr), x)
	case reflect.Map:
		g.mapValue(w, t, x, ifNil, endNil)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			p := reflect.PointerTo(t.Elem())
			if !p.Implements(marshalerType) && !p.Implements(textMarshalerType) {
				if t.Elem() != byteType {
					g.reflectValue(w, t, x, addr, "slice of named bytes "+t.String())
					return
				}
				g.imports.Add("encoding/base64", "base64")
				ifNil()
				fmt.Fprintf(w, "\tb = append(b, '\"')\n\tb = base64.StdEncoding.AppendEncode(b, %s)\n\tb = append(b, '\"')\n", x)
				endNil()
				return
			}
		}
		i := g.temp("i")
		ifNil()
		fmt.Fprintf(w, "\tb = append(b, '[')\n\tfor %s := range %s {\n\t\tif %s > 0 {\n\t\t\tb = append(b, ',')\n\t\t}\n", i, x, i)
		g.value(w, t.Elem(), x+"["+i+"]", true, false)
		w.WriteString("\t}\n\tb = append(b, ']')\n")
		endNil()
	case reflect.Array:
		i := g.temp("i")
		fmt.Fprintf(w, "\tb = append(b, '[')\n\tfor %s := range %s {\n\t\tif %s > 0 {\n\t\t\tb = append(b, ',')\n\t\t}\n", i, x, i)
		g.value(w, t.Elem(), x+"["+i+"]", addr, false)
		w.WriteString("\t}\n\tb = append(b, ']')\n")
	case reflect.Interface:
		g.reflectValue(w, t, x, addr, "interface "+t.String())
	default:
		g.reflectValue(w, t, x, addr, "unsupported kind "+t.String())
	}
}

// isMarshaler: encoding/json calls a method of t's to write it.
func isMarshaler(t reflect.Type, addr bool) bool {
	if _, ok := special[t]; ok {
		return true
	}
	for _, m := range []reflect.Type{marshalerType, textMarshalerType} {
		if t.Implements(m) || (addr && reflect.PointerTo(t).Implements(m)) {
			return true
		}
	}
	return false
}

// reflectValue writes x with the reflective encoder: a pointer to it when
// it is addressable (so that its pointer-receiver methods are called, as
// encoding/json would), else a copy.
func (g *gen) reflectValue(w *bytes.Buffer, t reflect.Type, x string, addr bool, why string) {
	g.fallback(why)
	if addr && t.Kind() != reflect.Interface {
		fmt.Fprintf(w, "\tb = appendReflect(b, &%s)\n", x)
	} else {
		fmt.Fprintf(w, "\tb = appendReflect(b, %s)\n", x)
	}
}

// mapValue is mapEncoder: keys as strings (resolveKeyName), sorted; values
// are not addressable.
func (g *gen) mapValue(w *bytes.Buffer, t reflect.Type, x string, ifNil, endNil func()) {
	kt := g.typeExpr(t.Key())
	if kt == "" {
		g.reflectValue(w, t, x, false, "map with key type "+t.Key().String())
		return
	}
	var keyString string // Go expression of the key k's JSON name
	switch k := t.Key(); {
	case k.Kind() == reflect.String:
		keyString = "string(%s)"
	case k.Implements(textMarshalerType):
		keyString = "mapKeyText(%[1]s, false)"
		if k.Kind() == reflect.Pointer {
			keyString = "mapKeyText(%[1]s, %[1]s == nil)"
		}
	default:
		switch k.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			g.imports.Add("strconv", "strconv")
			keyString = "strconv.FormatInt(int64(%s), 10)"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			g.imports.Add("strconv", "strconv")
			keyString = "strconv.FormatUint(uint64(%s), 10)"
		default:
			g.reflectValue(w, t, x, false, "map with key type "+k.String())
			return
		}
	}
	g.imports.Add("slices", "slices")
	g.imports.Add("github.com/segmentio/encoding/json", "json")
	ifNil()
	keys, kv, mv, kb := g.temp("keys"), g.temp("kv"), g.temp("mv"), g.temp("kb")
	k := g.temp("k")
	if t.Key().Kind() == reflect.String {
		// The key's JSON name is its string: sort the strings, look the
		// values up.
		fmt.Fprintf(w, "\t\tvar %s [8]string\n\t\t%s := %s[:0]\n\t\tfor %s := range %s {\n\t\t\t%s = append(%s, string(%s))\n\t\t}\n\t\tslices.Sort(%s)\n",
			kb, keys, kb, k, x, keys, keys, k, keys)
		fmt.Fprintf(w, "\t\tb = append(b, '{')\n\t\tfor %s, %s := range %s {\n\t\t\tif %s > 0 {\n\t\t\t\tb = append(b, ',')\n\t\t\t}\n\t\t\tb = json.AppendEscape(b, %s, flags)\n\t\t\tb = append(b, ':')\n\t\t\t%s := %s[%s(%s)]\n",
			kv, k, keys, kv, k, mv, x, kt, k)
	} else {
		g.imports.Add("strings", "strings")
		et := "struct {\n\t\t\ts string\n\t\t\tk " + kt + "\n\t\t}"
		fmt.Fprintf(w, "\t\t%s := make([]%s, 0, len(%s))\n\t\tfor %s := range %s {\n\t\t\t%s = append(%s, %s{%s, %s})\n\t\t}\n",
			keys, et, x, k, x, keys, keys, et, fmt.Sprintf(keyString, k), k)
		fmt.Fprintf(w, "\t\tslices.SortFunc(%s, func(a, b %s) int { return strings.Compare(a.s, b.s) })\n", keys, et)
		fmt.Fprintf(w, "\t\tb = append(b, '{')\n\t\tfor %s, %s := range %s {\n\t\t\tif %s > 0 {\n\t\t\t\tb = append(b, ',')\n\t\t\t}\n\t\t\tb = json.AppendEscape(b, %s.s, flags)\n\t\t\tb = append(b, ':')\n\t\t\t%s := %s[%s.k]\n",
			kv, k, keys, kv, k, mv, x, k)
	}
	g.value(w, t.Elem(), mv, false, false)
	w.WriteString("\t\t}\n\t\tb = append(b, '}')\n")
	endNil()
}

// field is encoding/json's: a JSON member of a struct.
type field struct {
	name        string
	nameEscHTML string
	tag         bool
	index       []int
	typ         reflect.Type
	omitEmpty   bool
	omitZero    bool
	quoted      bool
}

// typeFields is encoding/json's typeFields (encode.go, Go 1.26), without
// the encoders: the fields it writes for a struct type, in order.
func typeFields(t reflect.Type) []field {
	current := []field{}
	next := []field{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []field
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					t := sf.Type
					if t.Kind() == reflect.Pointer {
						t = t.Elem()
					}
					if !sf.IsExported() && t.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := make([]int, len(f.index)+1)
				copy(index, f.index)
				index[len(f.index)] = i
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOpt(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool,
						reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64,
						reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					esc, _ := stdjson.Marshal(name) // quoted, escaped for HTML
					fld := field{
						name:        name,
						nameEscHTML: string(esc) + ":",
						tag:         tagged,
						index:       index,
						typ:         ft,
						omitEmpty:   hasOpt(opts, "omitempty"),
						omitZero:    hasOpt(opts, "omitzero"),
						quoted:      quoted,
					}
					fields = append(fields, fld)
					if count[f.typ] > 1 {
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, field{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	out := fields[:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		fi := fields[i]
		for advance = 1; i+advance < len(fields); advance++ {
			if fields[i+advance].name != fi.name {
				break
			}
		}
		if advance == 1 {
			out = append(out, fi)
			continue
		}
		// dominantField
		dom := fields[i : i+advance]
		if len(dom[0].index) == len(dom[1].index) && dom[0].tag == dom[1].tag {
			continue
		}
		out = append(out, dom[0])
	}
	fields = out
	slices.SortFunc(fields, func(a, b field) int { return slices.Compare(a.index, b.index) })
	return fields
}

func hasOpt(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// protoRoots are the messages the recorder writes the JSON of straight from
// their protobuf bytes (tracer/protojson.go): a transcoder pbX(b, p []byte)
// []byte is generated for each, writing what appendX writes for the value
// gogo's Unmarshal decodes from p.
var protoRoots = []any{&corev1.PodSpec{}, &corev1.PodStatus{}, &metav1.ObjectMeta{}}

// Kinds of the fields a transcoder writes.
const (
	pkScalar  = iota + 1 // string, bool, int32, int64 kinds; or a pointer to one
	pkMsg                // a struct, or a pointer to one
	pkStrings            // []string kind
	pkVarints            // []int32, []int64 kinds
	pkMsgs               // []struct
	pkMapStr             // map[string kind]string kind
	pkMapMsg             // map[string kind]struct
)

// pbKind is how a transcoder reads and writes a field.
type pbKind struct {
	kind   int
	ptr    bool         // pointer: presence
	scalar reflect.Kind // pkScalar's, pkVarints' element
	msg    reflect.Type // pkMsg's, pkMsgs' element, pkMapMsg's value
	wire   string       // its kind in the table: pbVarint, pbBytes, pbRepVarint
}

// pbTag is a field's protobuf struct tag: `protobuf:"bytes,5,rep,name=x"`,
// and for a map protobuf_key and protobuf_val.
type pbTag struct {
	wire     string
	num      int
	rep      bool
	key, val string // "bytes,1", "bytes,2" for a map
}

func parsePBTag(sf reflect.StructField) (pbTag, bool) {
	s, ok := sf.Tag.Lookup("protobuf")
	if !ok {
		return pbTag{}, false
	}
	parts := strings.Split(s, ",")
	if len(parts) < 3 {
		return pbTag{}, false
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return pbTag{}, false
	}
	t := pbTag{wire: parts[0], num: n, rep: parts[2] == "rep"}
	cut := func(s string) string {
		parts := strings.Split(s, ",")
		if len(parts) < 2 {
			return s
		}
		return parts[0] + "," + parts[1]
	}
	if k := sf.Tag.Get("protobuf_key"); k != "" {
		t.key = cut(k)
	}
	if v := sf.Tag.Get("protobuf_val"); v != "" {
		t.val = cut(v)
	}
	return t, true
}

var unmarshalType = reflect.TypeFor[interface{ Unmarshal([]byte) error }]()

// hasUnmarshal: a *t decodes itself from protobuf (gogo's Unmarshal).
func hasUnmarshal(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(unmarshalType)
}

func isPBScalar(k reflect.Kind) bool {
	return k == reflect.String || k == reflect.Bool || k == reflect.Int32 || k == reflect.Int64
}

// pbClassify returns how a transcoder handles the field sf, or why it
// cannot (its struct is then decoded typed).
func (g *gen) pbClassify(sf reflect.StructField) (pbKind, string) {
	tag, ok := parsePBTag(sf)
	if !ok {
		return pbKind{}, "field " + sf.Name + " has no protobuf tag"
	}
	ft := sf.Type
	var k pbKind
	if ft.Kind() == reflect.Pointer {
		k.ptr, ft = true, ft.Elem()
	}
	if isMarshaler(ft, true) && special[ft] == "" && pbFast[ft] == "" {
		return pbKind{}, "field " + sf.Name + " of type " + ft.String() + " is a marshaler"
	}
	bad := func() (pbKind, string) {
		return pbKind{}, fmt.Sprintf("field %s of type %s, protobuf %s", sf.Name, sf.Type, sf.Tag.Get("protobuf"))
	}
	// Wire types are the Go type's, as gogo's Unmarshal reads them: the
	// tags' are not always right (PodSpec.Priority, an int32, is "bytes";
	// PodSpec.Tolerations is "opt", PodStatus.QOSClass "rep"). pbCheckTags
	// checks the field numbers against Marshal. Other encodings of
	// integers (zigzag, fixed) are not read.
	if tag.wire != "bytes" && tag.wire != "varint" {
		return bad()
	}
	switch {
	case isPBScalar(ft.Kind()):
		k.kind, k.scalar = pkScalar, ft.Kind()
		k.wire = "pbVarint"
		if ft.Kind() == reflect.String {
			k.wire = "pbBytes"
		}
	case ft.Kind() == reflect.Struct:
		if !hasUnmarshal(ft) || g.typeExpr(ft) == "" {
			return bad()
		}
		k.kind, k.msg, k.wire = pkMsg, ft, "pbBytes"
	case k.ptr:
		return bad()
	case ft.Kind() == reflect.Slice:
		e := ft.Elem()
		if isMarshaler(e, true) && special[e] == "" {
			return bad()
		}
		switch {
		case e.Kind() == reflect.String:
			k.kind, k.wire = pkStrings, "pbBytes"
		case e.Kind() == reflect.Int32 || e.Kind() == reflect.Int64:
			k.kind, k.scalar, k.wire = pkVarints, e.Kind(), "pbRepVarint"
		case e.Kind() == reflect.Struct && hasUnmarshal(e) && g.typeExpr(e) != "":
			k.kind, k.msg, k.wire = pkMsgs, e, "pbBytes"
		default:
			return bad()
		}
	case ft.Kind() == reflect.Map:
		kt, vt := ft.Key(), ft.Elem()
		if kt.Kind() != reflect.String || g.typeExpr(kt) == "" || g.typeExpr(vt) == "" ||
			tag.key != "" && tag.key != "bytes,1" || tag.val != "" && tag.val != "bytes,2" {
			return bad()
		}
		switch {
		case vt.Kind() == reflect.String && !isMarshaler(vt, false):
			k.kind, k.wire = pkMapStr, "pbBytes"
		case vt.Kind() == reflect.Struct && hasUnmarshal(vt):
			k.kind, k.msg, k.wire = pkMapMsg, vt, "pbBytes"
		default:
			return bad()
		}
	default:
		return bad()
	}
	return k, ""
}

// pbFrame is a struct whose protobuf fields a transcoder scans: the root
// message, or a struct embedded in it (json ",inline" with its own
// protobuf field), whose fields typeFields places in the outer object.
type pbFrame struct {
	t      reflect.Type
	parent int // frame index, -1 for the root
	field  int // the embedding field's index in the parent's struct
	ptr    bool
	f, p   string // the generated code's names: scanned fields, bytes
}

// pbOut is a JSON member a transcoder writes.
type pbOut struct {
	fld   field
	frame int
	sf    reflect.StructField
	kind  pbKind
}

// pbPlan is a transcoder's: its frames and members.
type pbPlan struct {
	frames []pbFrame
	outs   []pbOut
	why    string // why t is decoded typed instead, "" if it is not
}

// pbFields are the protobuf-tagged fields of struct t, in order: their
// slot (index in the scanned array) is their position here.
func pbFields(t reflect.Type) []int {
	var idx []int
	for i := 0; i < t.NumField(); i++ {
		if _, ok := parsePBTag(t.Field(i)); ok {
			idx = append(idx, i)
		}
	}
	return idx
}

func pbSlotOf(t reflect.Type, field int) int {
	return slices.Index(pbFields(t), field)
}

// pbPlanOf returns t's plan, computed once.
func (g *gen) pbPlanOf(t reflect.Type) *pbPlan {
	if p, ok := g.pbPlans[t]; ok {
		return p
	}
	p := g.pbMakePlan(t)
	g.pbPlans[t] = p
	return p
}

func (g *gen) pbMakePlan(t reflect.Type) *pbPlan {
	p := &pbPlan{}
	if fn, ok := special[t]; ok {
		p.why = "written by " + fn
		return p
	}
	if isMarshaler(t, true) {
		p.why = "a marshaler"
		return p
	}
	if t.Kind() != reflect.Struct || g.typeExpr(t) == "" || !hasUnmarshal(t) {
		p.why = "not a named protobuf message"
		return p
	}
	p.frames = []pbFrame{{t: t, parent: -1, field: -1, f: "f", p: "p"}}
	used := map[[2]int]bool{} // {frame, field}: a member or an embedding
	frameOf := map[string]int{"": 0}
	for _, fl := range typeFields(t) {
		if fl.quoted || fl.omitZero && !g.pbTypedOmitZero(t, fl) {
			p.why = "field " + fl.name + " has omitzero or ,string"
			return p
		}
		fr, ct, key := 0, t, ""
		for n, i := range fl.index {
			sf := ct.Field(i)
			used[[2]int{fr, i}] = true
			if n == len(fl.index)-1 {
				k, why := g.pbClassify(sf)
				if why != "" {
					p.why = why
					return p
				}
				p.outs = append(p.outs, pbOut{fld: fl, frame: fr, sf: sf, kind: k})
				break
			}
			// an embedded struct: a frame
			key += "." + strconv.Itoa(i)
			et, ptr := sf.Type, false
			if et.Kind() == reflect.Pointer {
				et, ptr = et.Elem(), true
			}
			_, ok := parsePBTag(sf)
			if !sf.Anonymous || !ok || et.Kind() != reflect.Struct {
				p.why = "field " + fl.name + " is reached through embedded " + sf.Name + ", not an embedded protobuf message"
				return p
			}
			nf, ok := frameOf[key]
			if !ok {
				nf = len(p.frames)
				frameOf[key] = nf
				p.frames = append(p.frames, pbFrame{t: et, parent: fr, field: i, ptr: ptr,
					f: "f" + strconv.Itoa(nf), p: "p" + strconv.Itoa(nf)})
			}
			fr, ct = nf, et
		}
	}
	// Every protobuf field of every frame must be written (or scanned as
	// an embedding): one that is not would not be checked.
	for fi, fr := range p.frames {
		nums := map[int]bool{}
		for _, i := range pbFields(fr.t) {
			sf := fr.t.Field(i)
			tag, _ := parsePBTag(sf)
			if nums[tag.num] || tag.num > 1000 {
				p.why = fmt.Sprintf("protobuf field number %d of %s", tag.num, fr.t)
				return p
			}
			nums[tag.num] = true
			if !used[[2]int{fi, i}] {
				p.why = "protobuf field " + sf.Name + " of " + fr.t.String() + " is not written"
				return p
			}
		}
		if len(pbFields(fr.t)) > 255 {
			p.why = "too many fields"
			return p
		}
		if why := pbCheckTags(fr.t); why != "" {
			p.why = why
			return p
		}
	}
	return p
}

// pbFunc returns the name of t's transcoder, queueing it; t must have a
// plan.
func (g *gen) pbFunc(t reflect.Type) string {
	if n, ok := g.pbNames[t]; ok {
		return n
	}
	name := g.usedNames.New(g.imports.FuncBase("pb", t))
	g.pbNames[t] = name
	g.pbQueue = append(g.pbQueue, t)
	return name
}

// pbTable returns the name of the table of struct t, written once.
func (g *gen) pbTable(t reflect.Type) string {
	if n, ok := g.pbTabs[t]; ok {
		return n
	}
	name := g.usedNames.New(g.imports.FuncBase("pbTab", t))
	g.pbTabs[t] = name
	idx := pbFields(t)
	mx := 0
	for _, i := range idx {
		tag, _ := parsePBTag(t.Field(i))
		mx = max(mx, tag.num)
	}
	var w bytes.Buffer
	fmt.Fprintf(&w, "// %s is the table of %s's protobuf fields (pbScan).\nvar %s = [%d]pbSlot{\n", name, g.typeExpr(t), name, mx+1)
	for slot, i := range idx {
		sf := t.Field(i)
		tag, _ := parsePBTag(sf)
		wire := "pbBytes" // an embedded message
		if !sf.Anonymous {
			k, why := g.pbClassify(sf)
			if why != "" {
				panic("table of a struct that is not transcoded: " + why)
			}
			wire = k.wire
		}
		fmt.Fprintf(&w, "\t%d: {%d, %s}, // %s\n", tag.num, slot+1, wire, sf.Name)
	}
	w.WriteString("}\n")
	g.funcs[name] = w.Bytes()
	return name
}

// pbTyped records that t is decoded typed by the transcoders.
func (g *gen) pbTyped(t reflect.Type) {
	why := g.pbPlanOf(t).why
	if fn, ok := pbFast[t]; ok {
		why += "; by its protobuf bytes in " + fn
	}
	g.pbTypedWhy[gogen.TypeName(t)+": "+why] = true
}

// genPB writes t's transcoder.
func (g *gen) genPB(t reflect.Type) {
	name := g.pbNames[t]
	g.tmp = 0
	te := g.typeExpr(t)
	p := g.pbPlanOf(t)
	var w bytes.Buffer
	fmt.Fprintf(&w, "// %s writes the JSON of the %s encoded in p (see appendProtoJSON).\nfunc %s(b, p []byte) []byte {\n", name, te, name)
	if p.why != "" {
		// A root that is not transcoded: decoded typed.
		g.pbTyped(t)
		fmt.Fprintf(&w, "\tvar v %s\n\tif len(p) != 0 && v.Unmarshal(p) != nil {\n\t\tpbFail()\n\t}\n", te)
		g.value(&w, t, "v", true, false)
		w.WriteString("\treturn b\n}\n")
		g.funcs[name] = w.Bytes()
		return
	}
	for i, fr := range p.frames {
		if i > 0 {
			parent := p.frames[fr.parent]
			fmt.Fprintf(&w, "\t%s := pbOne(%s, &%s[%d])\n", fr.p, parent.p, parent.f, pbSlotOf(parent.t, fr.field))
		}
		fmt.Fprintf(&w, "\tvar %s [%d]pbField\n\tpbScan(%s, %s[:], %s[:])\n", fr.f, len(pbFields(fr.t)), fr.p, g.pbTable(fr.t), fr.f)
	}
	w.WriteString("\tstart := len(b)\n")
	for _, o := range p.outs {
		closes := 0
		// embedded pointers: their members are written when present
		var conds []string
		for fi := o.frame; fi > 0; fi = p.frames[fi].parent {
			fr := p.frames[fi]
			if fr.ptr {
				parent := p.frames[fr.parent]
				conds = append(conds, fmt.Sprintf("%s[%d].n != 0", parent.f, pbSlotOf(parent.t, fr.field)))
			}
		}
		slices.Reverse(conds)
		for _, c := range conds {
			fmt.Fprintf(&w, "\tif %s {\n", c)
			closes++
		}
		fr := p.frames[o.frame]
		tag, _ := parsePBTag(o.sf)
		a := fmt.Sprintf("%s[%d]", fr.f, pbSlotOf(fr.t, o.sf.Index[len(o.sf.Index)-1]))
		if o.fld.omitZero {
			// a struct decoded typed (pbTypedOmitZero): decoded first,
			// written unless zero
			g.pbTypedZero(&w, o, a, fr.p, tag.num)
			w.WriteString(strings.Repeat("\t}\n", closes))
			continue
		}
		cond := ""
		if o.fld.omitEmpty {
			cond = pbNotEmpty(o.kind, a)
		}
		if cond != "" {
			fmt.Fprintf(&w, "\tif %s {\n", cond)
			closes++
		}
		fmt.Fprintf(&w, "\tb = append(b, %s...)\n", strconv.Quote(","+o.fld.nameEscHTML))
		g.pbValue(&w, o.kind, a, fr.p, tag.num, cond != "")
		w.WriteString(strings.Repeat("\t}\n", closes))
	}
	w.WriteString("\tif len(b) == start {\n\t\treturn append(b, \"{}\"...)\n\t}\n\tb[start] = '{'\n\treturn append(b, '}')\n}\n")
	g.funcs[name] = w.Bytes()
}

// pbNotEmpty is the condition under which omitempty keeps the field a of
// kind k ("" if always).
func pbNotEmpty(k pbKind, a string) string {
	switch {
	case k.ptr:
		return a + ".n != 0"
	case k.kind == pkScalar:
		switch k.scalar {
		case reflect.String:
			return a + ".hi != " + a + ".lo"
		case reflect.Int32:
			return "int32(" + a + ".v) != 0"
		}
		return a + ".v != 0"
	case k.kind == pkVarints:
		return a + ".cnt != 0"
	case k.kind == pkMsg:
		return ""
	}
	return a + ".n != 0"
}

// pbScalar is the code that appends a scalar of kind sk whose varint is v,
// or whose bytes are s (a string expression).
func (g *gen) pbScalar(sk reflect.Kind, v, s string) string {
	g.imports.Add("strconv", "strconv")
	switch sk {
	case reflect.String:
		g.imports.Add("github.com/segmentio/encoding/json", "json")
		return "\tb = json.AppendEscape(b, " + s + ", flags)\n"
	case reflect.Bool:
		return "\tb = strconv.AppendBool(b, " + v + " != 0)\n"
	case reflect.Int32:
		return "\tb = strconv.AppendInt(b, int64(int32(" + v + ")), 10)\n"
	}
	return "\tb = strconv.AppendInt(b, int64(" + v + "), 10)\n"
}

// pbLeaf writes the code that appends the message of type t whose
// occurrences (merged as gogo merges them) are those of field num, a, of
// p: decoded typed, written by the appender.
func (g *gen) pbLeaf(w *bytes.Buffer, t reflect.Type, a, p string, num int) {
	g.pbTyped(t)
	if fn, ok := pbFast[t]; ok {
		fmt.Fprintf(w, "\tif %s.n == 1 {\n\t\tb = %s(b, %s[%s.lo:%s.hi])\n\t} else {\n", a, fn, p, a, a)
		defer w.WriteString("\t}\n")
	}
	v := g.pbDecodeTyped(w, t, a, p, num)
	g.value(w, t, v, true, false)
	w.WriteString("\t}\n")
}

// pbDecodeTyped opens a block and writes in it the code that decodes into a
// new variable of type t, which it returns, the occurrences of field num, a,
// of p (merged as gogo merges them); the caller closes the block.
func (g *gen) pbDecodeTyped(w *bytes.Buffer, t reflect.Type, a, p string, num int) string {
	v, it := g.temp("v"), g.temp("it")
	fmt.Fprintf(w, "\t{\n\tvar %s %s\n\t%s := pbIter{p: %s, i: int(%s.first), num: %d}\n\tfor range %s.n {\n\t\tif %s.Unmarshal(%s.next()) != nil {\n\t\t\tpbFail()\n\t\t}\n\t}\n",
		v, g.typeExpr(t), it, p, a, num, a, v, it)
	return v
}

// pbTypedOmitZero: field fl of t, with omitzero, is one a transcoder can
// write: a struct (not a pointer) of a single protobuf field that it decodes
// typed (metav1.Time), whose zero value encoding/json omits after the
// decode, as the field's value says (notZero).
func (g *gen) pbTypedOmitZero(t reflect.Type, fl field) bool {
	if len(fl.index) != 1 {
		return false
	}
	sf := t.Field(fl.index[0])
	k, why := g.pbClassify(sf)
	if why != "" || k.kind != pkMsg || k.ptr || g.pbPlanOf(k.msg).why == "" {
		return false
	}
	_, ok := g.notZero(k.msg, "v")
	return ok
}

// pbTypedZero writes the member o, of omitzero (pbTypedOmitZero): the value
// decoded typed from the field a (number num) of p, and written when not
// zero.
func (g *gen) pbTypedZero(w *bytes.Buffer, o pbOut, a, p string, num int) {
	t := o.kind.msg
	g.pbTyped(t)
	v := g.pbDecodeTyped(w, t, a, p, num)
	cond, _ := g.notZero(t, v)
	fmt.Fprintf(w, "\tif %s {\n\tb = append(b, %s...)\n", cond, strconv.Quote(","+o.fld.nameEscHTML))
	g.value(w, t, v, true, false)
	w.WriteString("\t}\n\t}\n")
}

// pbFast are the types decoded typed whose transcoders have a helper
// (tracer/protojson.go) fn(b, sub []byte) []byte that writes what decoding
// sub into a zero value and appending it writes (pbQuantity caches it). A
// marshaler listed here is written by its helper where it is a field.
var pbFast = map[reflect.Type]string{
	reflect.TypeFor[resource.Quantity](): "pbQuantity",
	reflect.TypeFor[metav1.FieldsV1]():   "pbFieldsV1",
}

// pbValue writes the code that appends the field a (number num) of the
// message p, of kind k; nonNil: omitempty checked it is not nil.
func (g *gen) pbValue(w *bytes.Buffer, k pbKind, a, p string, num int, nonNil bool) {
	nullable := k.ptr || k.kind == pkStrings || k.kind == pkVarints || k.kind == pkMsgs || k.kind == pkMapStr || k.kind == pkMapMsg
	if nullable && !nonNil {
		fmt.Fprintf(w, "\tif %s {\n\t\tb = append(b, \"null\"...)\n\t} else {\n", strings.Replace(pbNotEmpty(k, a), "!=", "==", 1))
		defer w.WriteString("\t}\n")
	}
	switch k.kind {
	case pkScalar:
		w.WriteString(g.pbScalar(k.scalar, a+".v", fmt.Sprintf("pbString(%s, %s.lo, %s.hi)", p, a, a)))
	case pkMsg:
		if pp := g.pbPlanOf(k.msg); pp.why == "" {
			fmt.Fprintf(w, "\tb = %s(b, pbOne(%s, &%s))\n", g.pbFunc(k.msg), p, a)
		} else {
			g.pbLeaf(w, k.msg, a, p, num)
		}
	case pkStrings, pkVarints, pkMsgs:
		it, i := g.temp("it"), g.temp("i")
		n := a + ".n"
		if k.kind == pkVarints {
			n = a + ".cnt"
		}
		fmt.Fprintf(w, "\tb = append(b, '[')\n\t%s := pbIter{p: %s, i: int(%s.first), num: %d}\n\tfor %s := range %s {\n\t\tif %s > 0 {\n\t\t\tb = append(b, ',')\n\t\t}\n",
			it, p, a, num, i, n, i)
		switch k.kind {
		case pkStrings:
			w.WriteString(g.pbScalar(reflect.String, "", "pbBytesString("+it+".next())"))
		case pkVarints:
			w.WriteString(g.pbScalar(k.scalar, it+".nextVarint()", ""))
		case pkMsgs:
			if pp := g.pbPlanOf(k.msg); pp.why == "" {
				fmt.Fprintf(w, "\tb = %s(b, %s.next())\n", g.pbFunc(k.msg), it)
			} else {
				g.pbTyped(k.msg)
				if fn, ok := pbFast[k.msg]; ok {
					fmt.Fprintf(w, "\tb = %s(b, %s.next())\n", fn, it)
					break
				}
				v := g.temp("v")
				fmt.Fprintf(w, "\tvar %s %s\n\tif %s.Unmarshal(%s.next()) != nil {\n\t\tpbFail()\n\t}\n", v, g.typeExpr(k.msg), v, it)
				g.value(w, k.msg, v, true, false)
			}
		}
		w.WriteString("\t}\n\tb = append(b, ']')\n")
	case pkMapStr, pkMapMsg:
		g.imports.Add("github.com/segmentio/encoding/json", "json")
		eb, es, m, i, e := g.temp("eb"), g.temp("es"), g.temp("m"), g.temp("k"), g.temp("e")
		fmt.Fprintf(w, "\tvar %s [8]pbEntry\n\t%s := pbMap(%s, &%s, %d, %s[:0])\n\tb = append(b, '{')\n\t%s := len(b)\n\tfor %s := range %s {\n\t\t%s := &%s[%s]\n",
			eb, es, p, a, num, eb, m, i, es, e, es, i)
		// transcoded: the value is not addressable in encoding/json
		transcoded := k.kind == pkMapMsg && g.pbPlanOf(k.msg).why == "" && !addrSensitive(k.msg, map[reflect.Type]bool{})
		// an overwritten entry's value is checked, not written
		fmt.Fprintf(w, "\t\tif pbOverwritten(%s, %s) {\n", es, i)
		if k.kind == pkMapMsg {
			if transcoded {
				n := g.temp("n")
				fmt.Fprintf(w, "\t\t\t%s := len(b)\n\t\t\tb = %s(b, %s.v)[:%s]\n", n, g.pbFunc(k.msg), e, n)
			} else if fn, ok := pbFast[k.msg]; ok && !addrSensitive(k.msg, map[reflect.Type]bool{}) {
				n := g.temp("n")
				fmt.Fprintf(w, "\t\t\tif %s.hasV {\n\t\t\t\t%s := len(b)\n\t\t\t\tb = %s(b, %s.v)[:%s]\n\t\t\t}\n", e, n, fn, e, n)
			} else {
				v := g.temp("v")
				fmt.Fprintf(w, "\t\t\tvar %s %s\n\t\t\tif %s.hasV && %s.Unmarshal(%s.v) != nil {\n\t\t\t\tpbFail()\n\t\t\t}\n", v, g.typeExpr(k.msg), e, v, e)
			}
		}
		fmt.Fprintf(w, "\t\t\tcontinue\n\t\t}\n\t\tif len(b) > %s {\n\t\t\tb = append(b, ',')\n\t\t}\n\t\tb = json.AppendEscape(b, pbBytesString(%s.k), flags)\n\t\tb = append(b, ':')\n", m, e)
		switch {
		case k.kind == pkMapStr:
			w.WriteString(g.pbScalar(reflect.String, "", "pbBytesString("+e+".v)"))
		case transcoded:
			fmt.Fprintf(w, "\tb = %s(b, %s.v)\n", g.pbFunc(k.msg), e)
		default:
			g.pbTyped(k.msg)
			v := g.temp("v")
			if fn, ok := pbFast[k.msg]; ok && !addrSensitive(k.msg, map[reflect.Type]bool{}) {
				fmt.Fprintf(w, "\tif %s.hasV {\n\t\tb = %s(b, %s.v)\n\t} else {\n\t\tvar %s %s\n", e, fn, e, v, g.typeExpr(k.msg))
				g.value(w, k.msg, v, false, false)
				w.WriteString("\t}\n")
				break
			}
			fmt.Fprintf(w, "\tvar %s %s\n\tif %s.hasV && %s.Unmarshal(%s.v) != nil {\n\t\tpbFail()\n\t}\n", v, g.typeExpr(k.msg), e, v, e)
			g.value(w, k.msg, v, false, false)
		}
		w.WriteString("\t}\n\tb = append(b, '}')\n")
	}
}

// pbWire is the wire type gogo reads and writes field sf with (see
// pbClassify): 0 for bool and integer kinds, 2 otherwise; -1 for a repeated
// varint (0, or 2 when packed).
func pbWire(sf reflect.StructField) int {
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if ft.Kind() == reflect.Slice && (ft.Elem().Kind() == reflect.Int32 || ft.Elem().Kind() == reflect.Int64) {
		return -1
	}
	switch ft.Kind() {
	case reflect.Bool, reflect.Int32, reflect.Int64:
		return 0
	}
	return 2
}

// pbTopTags returns the tags (field number, wire type) of the top-level
// fields of the protobuf message data.
func pbTopTags(data []byte) (map[[2]int]int, error) {
	tags := map[[2]int]int{}
	varint := func(i int) (uint64, int, error) {
		var v uint64
		for shift := uint(0); shift < 64; shift += 7 {
			if i >= len(data) {
				return 0, 0, fmt.Errorf("truncated")
			}
			c := data[i]
			i++
			v |= uint64(c&0x7F) << shift
			if c < 0x80 {
				return v, i, nil
			}
		}
		return 0, 0, fmt.Errorf("overflow")
	}
	for i := 0; i < len(data); {
		key, j, err := varint(i)
		if err != nil {
			return nil, err
		}
		tags[[2]int{int(key >> 3), int(key & 7)}]++
		switch key & 7 {
		case 0:
			_, i, err = varint(j)
		case 2:
			var n uint64
			n, i, err = varint(j)
			i += int(n)
		default:
			return nil, fmt.Errorf("wire type %d", key&7)
		}
		if err != nil {
			return nil, err
		}
	}
	return tags, nil
}

// pbCheckTags checks the field numbers of t's protobuf tags, and the wire
// types pbWire gives, against what t's gogo Marshal writes: a zero t writes
// its non-pointer, non-repeated fields; a t with one pointer, slice or map
// field set (one element, one entry) writes one more field, that one.
func pbCheckTags(t reflect.Type) string {
	type marshaler interface{ Marshal() ([]byte, error) }
	marshal := func(v reflect.Value) (map[[2]int]int, string) {
		m, ok := v.Interface().(marshaler)
		if !ok {
			return nil, "no Marshal method"
		}
		data, err := m.Marshal()
		if err != nil {
			return nil, "Marshal: " + err.Error()
		}
		tags, err := pbTopTags(data)
		if err != nil {
			return nil, "Marshal wrote bad protobuf: " + err.Error()
		}
		return tags, ""
	}
	base, why := marshal(reflect.New(t))
	if why != "" {
		return why
	}
	left := maps.Clone(base) // the fields of base no tag names yet
	for _, i := range pbFields(t) {
		sf := t.Field(i)
		tag, _ := parsePBTag(sf)
		wire := pbWire(sf)
		v := reflect.New(t)
		f := v.Elem().Field(i)
		switch sf.Type.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(sf.Type.Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(sf.Type, 1, 1))
		case reflect.Map:
			f.Set(reflect.MakeMap(sf.Type))
			f.SetMapIndex(reflect.Zero(sf.Type.Key()), reflect.Zero(sf.Type.Elem()))
		default:
			k := [2]int{tag.num, wire}
			if left[k] == 0 {
				return fmt.Sprintf("field %s: Marshal does not write field %d, wire type %d", sf.Name, tag.num, wire)
			}
			if left[k]--; left[k] == 0 {
				delete(left, k)
			}
			continue
		}
		tags, why := marshal(v)
		if why != "" {
			return why
		}
		for k, n := range base {
			if tags[k] -= n; tags[k] == 0 {
				delete(tags, k)
			}
		}
		ok := len(tags) == 1
		for k, n := range tags {
			ok = ok && n == 1 && k[0] == tag.num && (k[1] == wire || wire == -1 && (k[1] == 0 || k[1] == 2))
		}
		if !ok {
			return fmt.Sprintf("field %s: Marshal writes %v for it, not field %d", sf.Name, tags, tag.num)
		}
	}
	if len(left) != 0 {
		return fmt.Sprintf("Marshal writes fields %v that no protobuf tag names", left)
	}
	return ""
}
