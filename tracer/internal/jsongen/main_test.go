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
