// Command jsongen writes tracer/zz_generated_json.go: for every struct type
// reachable from the API types the recorder encodes, a function that appends
// the bytes encoding/json's Marshal writes for it, without reflection.
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
	"unicode"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// roots are the types tracer/kind.go watches; appendObject switches over
// them.
var roots = []any{
	&corev1.Pod{}, &corev1.Event{}, &corev1.Node{}, &corev1.Namespace{}, &corev1.Service{},
	&appsv1.ReplicaSet{}, &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
	&batchv1.Job{}, &batchv1.CronJob{},
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
	out := flag.String("o", "zz_generated_json.go", "output file, - for standard output")
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

// fnKey names one generated function: a struct type, and whether its value
// is addressable (encoding/json calls pointer-receiver marshalers only on
// addressable values; a struct that is a map value is not).
type fnKey struct {
	t    reflect.Type
	addr bool
}

type gen struct {
	imports   map[string]string // package path -> name
	names     map[string]string // package name -> path
	fnNames   map[fnKey]string
	usedNames map[string]bool
	queue     []fnKey
	funcs     map[string][]byte // function name -> source
	fallbacks map[string]bool   // what appendReflect writes, and why
	marshal   map[string]bool   // Marshalers called, for the header
	tmp       int
}

func generate() ([]byte, error) {
	g := &gen{
		imports:   map[string]string{},
		names:     map[string]string{},
		fnNames:   map[fnKey]string{},
		usedNames: map[string]bool{},
		funcs:     map[string][]byte{},
		fallbacks: map[string]bool{},
		marshal:   map[string]bool{},
	}
	for _, name := range []string{"json", "stdjson", "strconv", "base64", "slices", "strings", "reflect", "math", "runtime", "bytes"} {
		g.names[name] = "(reserved)"
	}
	g.names["runtime"] = "k8s.io/apimachinery/pkg/runtime"
	g.imports["k8s.io/apimachinery/pkg/runtime"] = "runtime"

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

	for len(g.queue) > 0 {
		k := g.queue[0]
		g.queue = g.queue[1:]
		g.genStruct(k)
	}

	var out bytes.Buffer
	out.WriteString("// Code generated by tracer/internal/jsongen; DO NOT EDIT.\n\n")
	out.WriteString("// The functions below append the bytes encoding/json's Marshal writes for\n")
	out.WriteString("// the API types the recorder encodes (see encode in encode.go).\n//\n")
	out.WriteString("// json.Marshalers called (their output is appended when verbatim, else\n// compacted as encoding/json does):\n")
	for _, m := range sortedKeys(g.marshal) {
		fmt.Fprintf(&out, "//   - %s\n", m)
	}
	out.WriteString("//\n// Hand appenders (encode.go) write what MarshalJSON returns for:\n")
	var sp []string
	for t, fn := range special {
		sp = append(sp, typeName(t)+" ("+fn+")")
	}
	slices.Sort(sp)
	for _, s := range sp {
		fmt.Fprintf(&out, "//   - %s\n", s)
	}
	out.WriteString("//\n")
	if len(g.fallbacks) == 0 {
		out.WriteString("// Written by the reflective encoder (appendReflect): nothing.\n\n")
	} else {
		out.WriteString("// Written by the reflective encoder (appendReflect):\n")
		for _, f := range sortedKeys(g.fallbacks) {
			fmt.Fprintf(&out, "//   - %s\n", f)
		}
		out.WriteString("\n")
	}
	out.WriteString("package tracer\n\nimport (\n")
	paths := sortedKeys(g.imports)
	for _, p := range paths {
		if strings.Contains(p, ".") {
			continue
		}
		fmt.Fprintf(&out, "\t%s\n", importSpec(g.imports[p], p))
	}
	out.WriteString("\n")
	for _, p := range paths {
		if !strings.Contains(p, ".") {
			continue
		}
		fmt.Fprintf(&out, "\t%s\n", importSpec(g.imports[p], p))
	}
	out.WriteString(")\n\n")
	out.Write(sw.Bytes())
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

// importSpec imports path as name.
func importSpec(name, path string) string {
	if name == path[strings.LastIndex(path, "/")+1:] {
		return strconv.Quote(path)
	}
	return name + " " + strconv.Quote(path)
}

// typeName is t's name with its package's path, for the generated file's
// comments.
func typeName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
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

// typeExpr returns t as Go source in the generated file, or "" if the file
// cannot name it (unexported, anonymous struct, interface with methods).
func (g *gen) typeExpr(t reflect.Type) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name() // predeclared
		}
		if strings.ContainsAny(t.Name(), "[]") || !token(t.Name()) {
			return "" // generic instance, unexported
		}
		return g.pkgName(t.PkgPath()) + "." + t.Name()
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

// token: an exported identifier.
func token(name string) bool {
	r := []rune(name)
	return len(r) > 0 && unicode.IsUpper(r[0])
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
	base := "append"
	if t.PkgPath() != "" {
		pn := g.pkgName(t.PkgPath())
		base += strings.ToUpper(pn[:1]) + pn[1:]
	}
	base += t.Name()
	if !addr {
		base += "NoAddr"
	}
	name := base
	for i := 2; g.usedNames[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	g.usedNames[name] = true
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
		g.fallback(fmt.Sprintf("%s: %s", typeName(t), why))
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
		g.imports["reflect"] = "reflect"
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
		g.marshal[typeName(t)] = true
		out, err := g.temp("out"), g.temp("err")
		fmt.Fprintf(w, "\t%s, %s := %s.MarshalJSON()\n\tb = appendMarshaled(b, %s, %s, %v)\n", out, err, x, out, err, trusted[t])
		return
	}
	if (addr && reflect.PointerTo(t).Implements(textMarshalerType)) || t.Implements(textMarshalerType) {
		if t.Kind() == reflect.Interface {
			g.reflectValue(w, t, x, addr, "interface "+t.String())
			return
		}
		g.marshal[typeName(t)+" (MarshalText)"] = true
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
		g.imports["strconv"] = "strconv"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		g.imports["strconv"] = "strconv"
		if quoted {
			fmt.Fprintf(w, "\tb = append(b, '\"')\n\tb = strconv.AppendInt(b, int64(%s), 10)\n\tb = append(b, '\"')\n", x)
		} else {
			fmt.Fprintf(w, "\tb = strconv.AppendInt(b, int64(%s), 10)\n", x)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		g.imports["strconv"] = "strconv"
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
			g.imports["github.com/segmentio/encoding/json"] = "json"
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
				g.imports["encoding/base64"] = "base64"
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
			g.imports["strconv"] = "strconv"
			keyString = "strconv.FormatInt(int64(%s), 10)"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			g.imports["strconv"] = "strconv"
			keyString = "strconv.FormatUint(uint64(%s), 10)"
		default:
			g.reflectValue(w, t, x, false, "map with key type "+k.String())
			return
		}
	}
	g.imports["slices"] = "slices"
	g.imports["github.com/segmentio/encoding/json"] = "json"
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
		g.imports["strings"] = "strings"
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
