package main

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

type inner struct {
	A string `json:"a"`
	B string
	C string `json:"c,omitempty"`
}

type Exported struct {
	D string `json:"d"`
	B string // ties with inner.B at the same depth, untagged: both dropped
}

type Tagged struct {
	E string `json:"e"`
}

type deep struct {
	Tagged
	F string `json:"f"`
}

type conflicts struct {
	inner
	*Exported
	deep
	A     string `json:"-"`
	G     string `json:"a,omitempty"` // dominates inner.A: shallower
	H     string `json:"h,string"`
	I     int    `json:",omitzero"`
	Named Tagged `json:"named"`
	Tagged
	x string
}

// TestTypeFields: the generator's copy of encoding/json's typeFields gives
// the members encoding/json writes, in its order, with the embedding,
// dominance and tag rules.
func TestTypeFields(t *testing.T) {
	v := conflicts{
		inner:    inner{A: "1", B: "1", C: "1"},
		Exported: &Exported{D: "1", B: "1"},
		deep:     deep{Tagged: Tagged{E: "1"}, F: "1"},
		A:        "1", G: "1", H: "1", I: 1, Named: Tagged{E: "1"}, Tagged: Tagged{E: "1"}, x: "1",
	}
	_ = v.x
	data, err := stdjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// The object's keys, in order.
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	var want []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, k.(string))
		var value stdjson.RawMessage
		if err := dec.Decode(&value); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range typeFields(reflect.TypeOf(v)) {
		got = append(got, f.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("typeFields: %v\nencoding/json: %v (%s)", got, want, data)
	}
	for _, f := range typeFields(reflect.TypeOf(v)) {
		if f.name == "h" && !f.quoted || f.name == "I" && !f.omitZero || f.name == "a" && !f.omitEmpty {
			t.Errorf("field %s: options not read: %+v", f.name, f)
		}
	}
}

// TestGenerate: the generator runs, writes every root's appender, and
// nothing it writes falls back silently.
func TestGenerate(t *testing.T) {
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roots {
		name := reflect.TypeOf(r).Elem().Name()
		if !bytes.Contains(src, []byte(name+"(b, o), true")) {
			t.Errorf("no case for %s in appendObject", name)
		}
	}
	if n := bytes.Count(src, []byte("appendReflect(")); n > 0 && !strings.Contains(string(src), "Written by the reflective encoder (appendReflect):\n") {
		t.Errorf("%d calls of appendReflect, not listed", n)
	}
}

// TestProtoTranscoders: the protobuf roots are transcoded (not decoded
// typed as a whole), with their nested messages; what is decoded typed is
// listed.
func TestProtoTranscoders(t *testing.T) {
	src, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, fn := range []string{"pbCorev1PodSpec", "pbCorev1PodStatus", "pbCorev1Container", "pbCorev1Volume", "pbCorev1ContainerStatus", "pbMetav1ObjectMeta", "pbMetav1OwnerReference"} {
		if !strings.Contains(s, "\nfunc "+fn+"(b, p []byte) []byte {\n\tvar f [") {
			t.Errorf("no transcoder %s", fn)
		}
	}
	head, _, _ := strings.Cut(s, "\npackage tracer")
	_, typed, ok := strings.Cut(head, "decode typed:\n")
	if !ok {
		t.Fatal("no list of the types decoded typed")
	}
	for _, name := range []string{"core/v1.PodSpec:", "core/v1.PodStatus:", "core/v1.Container:", "meta/v1.ObjectMeta:"} {
		if strings.Contains(typed, name) {
			t.Errorf("%s is decoded typed:\n%s", name, typed)
		}
	}
	if !strings.Contains(typed, "resource.Quantity") || !strings.Contains(typed, "meta/v1.Time") {
		t.Errorf("the special types are not listed as decoded typed:\n%s", typed)
	}
}

type tagged struct {
	A string `protobuf:"bytes,5,opt,name=a"`
	B *bool  `protobuf:"varint,6,opt,name=b"`
}

func (m *tagged) Marshal() ([]byte, error) {
	out := append([]byte{5<<3 | 2, byte(len(m.A))}, m.A...)
	if m.B != nil {
		out = append(out, 6<<3, 1)
	}
	return out, nil
}

type mistagged struct {
	A string `protobuf:"bytes,4,opt,name=a"` // Marshal writes field 5
	B *bool  `protobuf:"bytes,6,opt,name=b"` // wire type wrong, but pbWire is the Go type's
}

func (m *mistagged) Marshal() ([]byte, error) {
	return (&tagged{A: m.A, B: m.B}).Marshal()
}

// TestCheckTags: pbCheckTags compares the field numbers of the tags with
// what Marshal writes.
func TestCheckTags(t *testing.T) {
	if why := pbCheckTags(reflect.TypeFor[tagged]()); why != "" {
		t.Errorf("tagged: %s", why)
	}
	if why := pbCheckTags(reflect.TypeFor[mistagged]()); why == "" {
		t.Errorf("mistagged: field 4 not caught")
	}
	for _, r := range protoRoots {
		if why := pbCheckTags(reflect.TypeOf(r).Elem()); why != "" {
			t.Errorf("%T: %s", r, why)
		}
	}
}
