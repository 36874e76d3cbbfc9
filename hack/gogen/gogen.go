package gogen

import (
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
)

// Main runs a generator: it writes the source generate returns to the file
// the -o flag names (defaultOut when not set), or to standard output for
// -o -, and exits on an error.
func Main(defaultOut string, generate func() ([]byte, error)) {
	out := flag.String("o", defaultOut, "output file, - for standard output")
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

// Source is src formatted as gofmt does; src itself and an error when it
// does not parse.
func Source(src []byte) ([]byte, error) {
	formatted, err := format.Source(src)
	if err != nil {
		return src, fmt.Errorf("generated code does not parse: %v", err)
	}
	return formatted, nil
}

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Imports are the packages a generated file imports, by path, and the
// names it imports them as. The zero value is not usable: see NewImports.
type Imports struct {
	byPath map[string]string // package path -> name
	byName map[string]string // package name -> path, or "(reserved)"
}

// NewImports returns an empty Imports in which the names reserved are
// taken: the packages the file imports itself, under their own names.
func NewImports(reserved ...string) *Imports {
	im := &Imports{byPath: map[string]string{}, byName: map[string]string{}}
	for _, name := range reserved {
		im.byName[name] = "(reserved)"
	}
	return im
}

// Add imports path as name, whether or not name is taken (a reserved name
// the file imports under its own name, say).
func (im *Imports) Add(path, name string) {
	im.byPath[path] = name
	im.byName[name] = path
}

var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// Name returns the name the generated file imports path as, importing it:
// the last element of path, with the one before it for an API version
// (corev1, appsv1beta2), letters and digits only, numbered from 2 when the
// name is taken.
func (im *Imports) Name(path string) string {
	if n, ok := im.byPath[path]; ok {
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
	for i := 2; im.byName[name] != ""; i++ {
		name = base + strconv.Itoa(i)
	}
	im.byName[name] = path
	im.byPath[path] = name
	return name
}

// Paths are the paths of the imported packages, in order.
func (im *Imports) Paths() []string {
	return SortedKeys(im.byPath)
}

// Spec is the import spec of path, imported: "path", or name "path" when
// the name is not the path's last element.
func (im *Imports) Spec(path string) string {
	name := im.byPath[path]
	if name == path[strings.LastIndex(path, "/")+1:] {
		return strconv.Quote(path)
	}
	return name + " " + strconv.Quote(path)
}

// Named returns the named type t of a package as the generated file names
// it (pkg.Name), importing its package, or "" when the file cannot name it:
// an unnamed or predeclared type, an instance of a generic type, an
// unexported type.
func (im *Imports) Named(t reflect.Type) string {
	if t.Name() == "" || t.PkgPath() == "" || strings.ContainsAny(t.Name(), "[]") || !Exported(t.Name()) {
		return ""
	}
	return im.Name(t.PkgPath()) + "." + t.Name()
}

// FuncBase is the name of a generated function of type t before it is
// made unique: prefix, the name of t's package with its first letter upper
// case (when t is not predeclared), t's name. It imports t's package.
func (im *Imports) FuncBase(prefix string, t reflect.Type) string {
	if t.PkgPath() != "" {
		pn := im.Name(t.PkgPath())
		prefix += strings.ToUpper(pn[:1]) + pn[1:]
	}
	return prefix + t.Name()
}

// Exported reports whether name is an exported identifier.
func Exported(name string) bool {
	r := []rune(name)
	return len(r) > 0 && unicode.IsUpper(r[0])
}

// TypeName is t with the paths of the packages of the named types in it,
// for the generated file's comments: k8s.io/api/core/v1.Pod,
// []*k8s.io/api/core/v1.Container.
func TypeName(t reflect.Type) string {
	switch {
	case t.Name() != "" && t.PkgPath() != "":
		return t.PkgPath() + "." + t.Name()
	case t.Name() != "":
		return t.Name()
	case t.Kind() == reflect.Pointer:
		return "*" + TypeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "[]" + TypeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "map[" + TypeName(t.Key()) + "]" + TypeName(t.Elem())
	}
	return t.String()
}

// Idents are the names taken in a generated file.
type Idents map[string]bool

// New returns base, or base numbered from 2 when it is taken, and takes it.
func (ids Idents) New(base string) string {
	name := base
	for i := 2; ids[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	ids[name] = true
	return name
}
