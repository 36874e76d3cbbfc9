package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type withEqual struct{ A string }

func (w withEqual) Equal(o withEqual) bool { return true }

type withUnexported struct {
	A string
	b string
}

type withEqualOfOtherType struct{ A string }

func (w withEqualOfOtherType) Equal(o string) bool { return true }

// TestWalked: the structs compareUnlike compares field by field, by
// walk.go's rules.
func TestWalked(t *testing.T) {
	_ = withUnexported{}.b
	for _, c := range []struct {
		t    reflect.Type
		want bool
	}{
		{reflect.TypeFor[corev1.Pod](), true},
		{reflect.TypeFor[corev1.Container](), true},
		{reflect.TypeFor[metav1.Time](), true}, // its Equal is on *Time: its embedded time.Time is compared
		{reflect.TypeFor[resource.Quantity](), false},
		{reflect.TypeFor[time.Time](), false},
		{reflect.TypeFor[withEqual](), false},
		{reflect.TypeFor[withEqualOfOtherType](), true}, // not an Equal go-cmp calls
		{reflect.TypeFor[withUnexported](), false},
		{reflect.TypeFor[*corev1.Pod](), false},
	} {
		if got := walked(c.t); got != c.want {
			t.Errorf("walked(%v) = %v, want %v", c.t, got, c.want)
		}
	}
}

// TestStructFieldsOf: fields in the order of their JSON names, inlined ones
// first, ObjectMeta's managedFields and resourceVersion left out.
func TestStructFieldsOf(t *testing.T) {
	var names []string
	for _, f := range structFieldsOf(reflect.TypeFor[metav1.ObjectMeta]()) {
		names = append(names, f.name)
	}
	if !slices.IsSorted(names) || slices.Contains(names, "managedFields") || slices.Contains(names, "resourceVersion") || !slices.Contains(names, "labels") {
		t.Errorf("ObjectMeta's fields: %v", names)
	}
	pod := structFieldsOf(reflect.TypeFor[corev1.Pod]())
	if len(pod) != 4 || pod[0].name != "" || pod[0].sf.Name != "TypeMeta" || pod[1].name != "metadata" {
		t.Errorf("Pod's fields: %+v", pod)
	}
}

// TestLookupList: the lists compared by key or as sets, as compare.go's
// lookupList says.
func TestLookupList(t *testing.T) {
	field := func(parent reflect.Type, name string) (listKind, bool) {
		f, ok := parent.FieldByName(name)
		if !ok {
			t.Fatalf("%v has no field %s", parent, name)
		}
		return lookupList(parent, f.Index[0])
	}
	spec, ctr, meta := reflect.TypeFor[corev1.PodSpec](), reflect.TypeFor[corev1.Container](), reflect.TypeFor[metav1.ObjectMeta]()
	for _, c := range []struct {
		parent reflect.Type
		name   string
		want   listKind
		keyed  bool
	}{
		{spec, "Containers", listKind{key: "name"}, true},
		{spec, "Tolerations", listKind{set: true}, true},
		{spec, "Volumes", listKind{key: "name"}, true},
		{meta, "Finalizers", listKind{set: true}, true},
		{ctr, "Ports", listKind{key: "containerPort"}, true},
		{ctr, "Args", listKind{}, false},
		{ctr, "EnvFrom", listKind{}, false},
		{reflect.TypeFor[corev1.PodStatus](), "ContainerStatuses", listKind{key: "name"}, true},
	} {
		lk, keyed := field(c.parent, c.name)
		if lk != c.want || keyed != c.keyed {
			t.Errorf("%v.%s: %+v %v, want %+v %v", c.parent, c.name, lk, keyed, c.want, c.keyed)
		}
	}
}

// TestKeyedElems: typedCompareKeyed compares the lists keyed by a string or
// int field; the others (an EphemeralContainer's name is in an inlined
// struct: appendElementKeys keys those by their JSON) go to compareKeyed.
func TestKeyedElems(t *testing.T) {
	g := newGen()
	for _, c := range []struct {
		t    reflect.Type
		want string // the key function's body, "" for none
	}{
		{reflect.TypeFor[corev1.Container](), "return string(e.Name)"},
		{reflect.TypeFor[corev1.ContainerPort](), "return strconv.FormatInt(int64(e.ContainerPort), 10)"},
		{reflect.TypeFor[corev1.PodCondition](), "return string(e.Type)"},
		{reflect.TypeFor[corev1.EphemeralContainer](), ""},
	} {
		key, _, _ := g.keyedElems(c.t)
		switch {
		case c.want == "" && key != "":
			t.Errorf("%v: keyed by %s, want compareKeyed", c.t, g.funcs[key])
		case c.want != "" && !bytes.Contains(g.funcs[key], []byte(c.want)):
			t.Errorf("%v: key function %q, want %q", c.t, g.funcs[key], c.want)
		}
	}
}

// TestGenerate: the file parses, is the same each time, and has a function
// for the pod.
func TestGenerate(t *testing.T) {
	a, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two runs of the generator differ")
	}
	if _, err := parser.ParseFile(token.NewFileSet(), "zz_generated_walk.go", a, 0); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"func walkCorev1Pod(w *walker, x, y *corev1.Pod)", "reflect.TypeFor[corev1.Pod]()", "typedCompareKeyed(w, listKind{key: \"name\", set: false}, x.Containers, y.Containers"} {
		if !strings.Contains(string(a), s) {
			t.Errorf("the generated file has no %q", s)
		}
	}
}
