package gogen

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type generic[T any] struct{ v T }

type unexported struct{}

// Public is an exported named type of this package, for Named and FuncBase.
type Public struct{}

// TestImportsName: packages are named after their last element, an API
// version with the element before it, letters and digits only, numbered
// when the name is taken (reserved, or another package's); a path keeps its
// name.
func TestImportsName(t *testing.T) {
	im := NewImports("strings", "json")
	for _, c := range []struct{ path, want string }{
		{"k8s.io/api/core/v1", "corev1"},
		{"k8s.io/api/apps/v1beta2", "appsv1beta2"},
		{"k8s.io/apimachinery/pkg/apis/meta/v1", "metav1"},
		{"k8s.io/api/core/v1", "corev1"}, // again: the same name
		{"example.com/other/core/v1", "corev12"},
		{"example.com/third/core/v1", "corev13"},
		{"example.com/strings", "strings2"}, // reserved
		{"github.com/segmentio/encoding/json", "json2"},
		{"example.com/go-yaml", "goyaml"},
		{"v1", "v1"}, // a version with nothing before it
		{"example.com/version/v1x", "v1x"},
	} {
		if got := im.Name(c.path); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	paths := im.Paths()
	if !slices.IsSorted(paths) || len(paths) != 10 {
		t.Errorf("Paths() = %v", paths)
	}
}

// TestImportsAdd: a package added under a reserved name takes it; Spec
// names a package only when its name is not its last element.
func TestImportsAdd(t *testing.T) {
	im := NewImports("runtime", "strconv")
	im.Add("k8s.io/apimachinery/pkg/runtime", "runtime")
	im.Add("strconv", "strconv")
	if got := im.Name("k8s.io/apimachinery/pkg/runtime"); got != "runtime" {
		t.Errorf("Name of an added package = %q", got)
	}
	if got := im.Name("example.com/runtime"); got != "runtime2" {
		t.Errorf("Name of a second runtime = %q", got)
	}
	im.Name("k8s.io/api/core/v1")
	for path, want := range map[string]string{
		"k8s.io/apimachinery/pkg/runtime": `"k8s.io/apimachinery/pkg/runtime"`,
		"strconv":                         `"strconv"`,
		"example.com/runtime":             `runtime2 "example.com/runtime"`,
		"k8s.io/api/core/v1":              `corev1 "k8s.io/api/core/v1"`,
	} {
		if got := im.Spec(path); got != want {
			t.Errorf("Spec(%q) = %s, want %s", path, got, want)
		}
	}
}

// TestNamedAndFuncBase: only exported, non-generic named types of a
// package are named (importing the package); function names carry the
// package's name.
func TestNamedAndFuncBase(t *testing.T) {
	im := NewImports()
	self := reflect.TypeFor[Public]().PkgPath()
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[Public](), "gogen.Public"},
		{reflect.TypeFor[time.Duration](), "time.Duration"},
		{reflect.TypeFor[unexported](), ""},
		{reflect.TypeFor[generic[int]](), ""},
		{reflect.TypeFor[int](), ""},
		{reflect.TypeFor[*Public](), ""},
		{reflect.TypeFor[[]Public](), ""},
	} {
		if got := im.Named(c.t); got != c.want {
			t.Errorf("Named(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	if got := im.Paths(); !slices.Equal(got, []string{self, "time"}) {
		t.Errorf("imported %v", got)
	}
	if got := im.FuncBase("walk", reflect.TypeFor[Public]()); got != "walkGogenPublic" {
		t.Errorf("FuncBase = %q", got)
	}
	if got := im.FuncBase("append", reflect.TypeFor[string]()); got != "appendstring" {
		t.Errorf("FuncBase of a predeclared type = %q", got)
	}
}

func TestIdents(t *testing.T) {
	ids := Idents{}
	var got []string
	for _, base := range []string{"a", "b", "a", "a", "a2"} {
		got = append(got, ids.New(base))
	}
	// "a2" is taken by the second "a": the last one is numbered after it.
	if want := []string{"a", "b", "a2", "a3", "a22"}; !slices.Equal(got, want) {
		t.Errorf("New: %v, want %v", got, want)
	}
}

func TestTypeName(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[time.Time](), "time.Time"},
		{reflect.TypeFor[int](), "int"},
		{reflect.TypeFor[map[string][]*time.Time](), "map[string][]*time.Time"},
		{reflect.TypeFor[[]Public](), "[]github.com/podtrace/podtrace/hack/gogen.Public"},
		{reflect.TypeFor[[2]int](), "[2]int"},
	} {
		if got := TypeName(c.t); got != c.want {
			t.Errorf("TypeName(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

func TestSource(t *testing.T) {
	got, err := Source([]byte("package p\nfunc  f( ) {\nreturn}\n"))
	if err != nil || string(got) != "package p\n\nfunc f() {\n\treturn\n}\n" {
		t.Errorf("Source: %q, %v", got, err)
	}
	bad := []byte("package p\nfunc {\n")
	got, err = Source(bad)
	if err == nil || !strings.Contains(err.Error(), "generated code does not parse") || string(got) != string(bad) {
		t.Errorf("Source of a broken file: %q, %v", got, err)
	}
}

func TestSortedKeys(t *testing.T) {
	if got := SortedKeys(map[string]int{"b": 1, "c": 2, "a": 3}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("SortedKeys = %v", got)
	}
}

func TestExported(t *testing.T) {
	for name, want := range map[string]bool{"Pod": true, "Été": true, "pod": false, "_Pod": false, "": false, "été": false} {
		if got := Exported(name); got != want {
			t.Errorf("Exported(%q) = %v, want %v", name, got, want)
		}
	}
}
