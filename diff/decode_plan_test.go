package diff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The types below hold every kind of field decodeStruct decodes through
// its address (leafOf), at offsets inside structs inlined by value, beside
// fields it leaves to reflect and encoding/json.

type planText string

func (p *planText) UnmarshalText(b []byte) error {
	*p = planText("text:" + string(b))
	return nil
}

type planJSON string

func (p *planJSON) UnmarshalJSON(b []byte) error {
	*p = planJSON("json:" + string(b))
	return nil
}

type planInner struct {
	S string      `json:"s"`
	N int32       `json:"n"`
	P *int64      `json:"p"`
	T metav1.Time `json:"t"`
}

type planEmbedded struct {
	planInner
	E string `json:"e"`
}

// PlanPtrInner is inlined through a pointer (exported, for encoding/json
// to set it).
type PlanPtrInner struct {
	S string `json:"s"`
	N int32  `json:"n"`
}

// planPtrEmbedded inlines a struct through a pointer: encoding/json
// decodes it whole.
type planPtrEmbedded struct {
	*PlanPtrInner
	X string `json:"x"`
}

type planStruct struct {
	A string `json:"a"`
	planEmbedded
	B     bool              `json:"b"`
	I     int               `json:"i"`
	I64   int64             `json:"i64"`
	I8    int8              `json:"i8"`
	U     uint32            `json:"u"`
	F     float64           `json:"f"`
	PS    *string           `json:"ps"`
	PB    *bool             `json:"pb"`
	PI    *int32            `json:"pi"`
	PT    *metav1.Time      `json:"pt"`
	PP    **string          `json:"pp"`
	Num   json.Number       `json:"num"`
	Text  planText          `json:"text"`
	PText *planText         `json:"ptext"`
	JSON  planJSON          `json:"json"`
	Phase corev1.PodPhase   `json:"phase"`
	Q     resource.Quantity `json:"q"`
	Sub   *planInner        `json:"sub"`
	List  []planInner       `json:"list"`
	Strs  []string          `json:"strs"`
	M     map[string]string `json:"m"`
	Any   any               `json:"any"`
	PE    planPtrEmbedded   `json:"pe"`
}

func TestLeafOf(t *testing.T) {
	want := map[string]leafKind{
		"a": leafString, "s": leafString, "e": leafString, "phase": leafString,
		"n": leafInt32, "i": leafInt64, "i64": leafInt64, "b": leafBool,
		"p": leafPtrInt64, "ps": leafPtrString, "pb": leafPtrBool, "pi": leafPtrInt32,
		"t": leafTime, "pt": leafPtrTime,
	}
	typ := reflect.TypeFor[planStruct]()
	dt := decodeTypeOf(typ)
	if dt.fields == nil {
		t.Fatal("planStruct is not decoded by its fields")
	}
	for name, k := range dt.fields {
		fd := dt.field[k]
		if got := fd.leaf; got != want[name] {
			t.Errorf("field %s (%s): leaf kind %d, want %d", name, fd.t, got, want[name])
		}
		if dt.plan[k].leaf != fd.leaf || dt.plan[k].offset != fd.offset {
			t.Errorf("field %s: plan %+v, field offset %d leaf %d", name, dt.plan[k], fd.offset, fd.leaf)
		}
		// The offset is the field's address in the struct.
		var v planStruct
		base := reflect.ValueOf(&v).Elem()
		if got, want := uintptr(unsafe.Add(unsafe.Pointer(&v), fd.offset)), base.FieldByIndex(fd.index).Addr().Pointer(); got != want {
			t.Errorf("field %s: offset %d, at %#x, want %#x", name, fd.offset, got, want)
		}
	}
	if decodeTypeOf(reflect.TypeFor[planPtrEmbedded]()).fields != nil {
		t.Errorf("a struct inlined through a pointer is decoded by fields")
	}
}

// TestDecodeAtMatchesUnmarshal holds decodeAt to encoding/json, as
// TestDecodeLeafMatchesUnmarshal does decodeLeaf: where it decodes a value
// into a zero value of a leaf type, it gives what json.Unmarshal gives; it
// declines, changing nothing, whatever json.Unmarshal rejects.
func TestDecodeAtMatchesUnmarshal(t *testing.T) {
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `7`, `-12`, `01`, `-01`, `1.5`, `1e3`, `1E3`, `-`, `--1`, `+1`,
		`2147483647`, `2147483648`, `-2147483648`, `-2147483649`, `999999999999999999`, `-999999999999999999`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`, `99999999999999999999`,
		`""`, `"a"`, `"héllo"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, `"\ud800"`, "\"tab\there\"", "\"\xff\"", "\"\xc3\"", "\"é\xff\"",
		`"2026-12-01T10:00:00Z"`, `"2026-12-01T10:00:00.5+02:00"`, `"2026-02-29T10:00:00Z"`, `"2024-02-29T10:00:00Z"`,
		`"2026-12-01"`, `"80"`, `"true"`, `nul`, `tru`, `"`, `"a`, `[1]`, `{}`, `{"a":1}`,
	}
	type named string
	type namedBool bool
	type namedInt int32
	targets := []func() any{
		func() any { return new(string) }, func() any { return new(named) }, func() any { return new(corev1.PodPhase) },
		func() any { return new(bool) }, func() any { return new(namedBool) }, func() any { return new(int) },
		func() any { return new(int64) }, func() any { return new(int32) }, func() any { return new(namedInt) },
		func() any { return new(*string) }, func() any { return new(*named) }, func() any { return new(*bool) },
		func() any { return new(*int64) }, func() any { return new(*int32) }, func() any { return new(*int) },
		func() any { return new(metav1.Time) }, func() any { return new(*metav1.Time) },
	}
	var in interner
	for _, mk := range targets {
		typ := reflect.TypeOf(mk()).Elem()
		k := leafOf(typ)
		if k == leafNone {
			t.Errorf("%s: no leaf kind", typ)
			continue
		}
		for _, raw := range values {
			want, got := mk(), mk()
			wantErr := json.Unmarshal([]byte(raw), want)
			if !in.decodeAt(reflect.ValueOf(got).UnsafePointer(), k, []byte(raw)) {
				if !reflect.ValueOf(got).Elem().IsZero() {
					t.Errorf("%s into %s: declined, but changed the value to %v", raw, typ, reflect.ValueOf(got).Elem())
				}
				continue
			}
			if wantErr != nil {
				t.Errorf("%s into %s: decoded %v, json.Unmarshal fails: %v", raw, typ, reflect.ValueOf(got).Elem(), wantErr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s into %s: decoded %#v, json.Unmarshal %#v", raw, typ, reflect.ValueOf(got).Elem(), reflect.ValueOf(want).Elem())
			}
		}
	}
	// Types encoding/json does not decode as plain values are no leaves.
	for _, typ := range []reflect.Type{reflect.TypeFor[json.Number](), reflect.TypeFor[*json.Number](), reflect.TypeFor[planText](),
		reflect.TypeFor[*planText](), reflect.TypeFor[planJSON](), reflect.TypeFor[**string](), reflect.TypeFor[int8](),
		reflect.TypeFor[uint](), reflect.TypeFor[float64](), reflect.TypeFor[resource.Quantity](), reflect.TypeFor[any](),
		reflect.TypeFor[[]string](), reflect.TypeFor[planInner]()} {
		if k := leafOf(typ); k != leafNone {
			t.Errorf("%s: leaf kind %d, want none", typ, k)
		}
	}
}

// planValues are JSON values for the members of planStruct that decode
// into every field they are given to: plain ones, and ones only
// encoding/json decodes (escapes, invalid UTF-8, keys in another case,
// unknown keys).
var planValues = map[string][]string{
	"str":   {`"a"`, `"b"`, `""`, `null`, `"héllo"`, `"a\"b"`, `"\u00e9t\u00e9"`, "\"\xff\"", `"x\\"`, `"Running"`, "\"\xc3\"", `"\ud800"`},
	"int":   {`0`, `1`, `-7`, `-0`, `2147483647`, `-2147483648`, `null`},
	"int64": {`0`, `1`, `-7`, `2147483648`, `-2147483649`, `9223372036854775807`, `-9223372036854775808`, `123456789012345678`, `null`},
	"int8":  {`0`, `1`, `-7`, `127`, `null`},
	"uint":  {`0`, `7`, `4294967295`, `null`},
	"bool":  {`true`, `false`, `null`},
	"time":  {`"2026-12-01T10:00:00Z"`, `"2026-12-01T10:00:01Z"`, `"2026-12-01T10:00:00.25+02:00"`, `"2024-02-29T23:59:59Z"`, `null`},
	"num":   {`1`, `1.5`, `-2e3`, `null`},
	"q":     {`"250m"`, `"1Gi"`, `null`},
	"any":   {`1`, `"s"`, `[1,"a"]`, `{"k":null}`, `null`},
	"strs":  {`["a","b"]`, `["b","a"]`, `[]`, `null`, `["a"]`},
	"m":     {`{"a":"b"}`, `{"a":"c","d":"e"}`, `{}`, `null`},
	"inner": {`{"s":"x","n":1}`, `{"s":"y","n":1,"p":5}`, `{"n":2,"t":"2026-12-01T10:00:00Z"}`, `{}`, `null`, `{"s":"x","S":"y"}`, `{"s":"x","bogus":1}`},
	"list":  {`[{"s":"x","n":1},{"s":"y"}]`, `[{"s":"y"},{"s":"x","n":1}]`, `[{"s":"x","n":2},{"s":"y"}]`, `[]`, `null`, `[{"s":"x","n":1},{"s":"y"},{"p":null}]`},
	"pe":    {`{"s":"x","x":"y"}`, `{"x":"z"}`, `{"n":3}`, `null`},
}

// planBad are values of the members that encoding/json rejects for some
// of the fields they are given to: wrong types, overflows, bad times.
var planBad = map[string][]string{
	"str":   {`1`, `true`, `{}`},
	"int":   {`2147483648`, `-2147483649`, `1.5`, `1e2`, `"3"`},
	"int64": {`9223372036854775808`, `-9223372036854775809`, `99999999999999999999`, `1.0`, `"3"`},
	"int8":  {`128`, `-129`},
	"uint":  {`-1`, `4294967296`},
	"bool":  {`"true"`, `1`},
	"time":  {`""`, `"bad"`, `"2026-02-30T10:00:00Z"`, `1`},
	"num":   {`"4"`, `true`},
	"q":     {`"bad"`},
	"any":   {`[1,`},
	"strs":  {`["a",1]`},
	"m":     {`{"a":1}`},
	"inner": {`{"s":"x","n":"1"}`, `{"t":"bad"}`},
	"list":  {`[{"s":1}]`},
	"pe":    {`{"x":1}`},
}

// planMembers are planStruct's members and the values they take.
var planMembers = []struct{ key, values string }{
	{"a", "str"}, {"s", "str"}, {"n", "int"}, {"p", "int64"}, {"t", "time"}, {"e", "str"}, {"b", "bool"}, {"i", "int64"},
	{"i64", "int64"}, {"i8", "int8"}, {"u", "uint"}, {"f", "num"}, {"ps", "str"}, {"pb", "bool"}, {"pi", "int"}, {"pt", "time"},
	{"pp", "str"}, {"num", "num"}, {"text", "str"}, {"ptext", "str"}, {"json", "str"}, {"phase", "str"}, {"q", "q"},
	{"sub", "inner"}, {"list", "list"}, {"strs", "strs"}, {"m", "m"}, {"any", "any"}, {"pe", "pe"},
}

// planRevisions makes n JSON revisions of a planStruct, each a few members
// away from the one before: values changed, members left out or added,
// now and then in another order, with a key twice or in another case, or
// a value encoding/json rejects (for that revision only).
func planRevisions(r *rand.Rand, n int) []string {
	values := map[string]string{}
	var order []string
	for _, m := range planMembers {
		if r.IntN(3) > 0 {
			values[m.key] = planValues[m.values][0]
			order = append(order, m.key)
		}
	}
	valuesOf := map[string]string{}
	for _, m := range planMembers {
		valuesOf[m.key] = m.values
	}
	var revs []string
	for range n {
		bad := map[string]string{}
		for range 1 + r.IntN(3) {
			m := planMembers[r.IntN(len(planMembers))]
			switch {
			case r.IntN(8) == 0:
				if _, ok := values[m.key]; ok {
					delete(values, m.key)
					for i, k := range order {
						if k == m.key {
							order = append(order[:i], order[i+1:]...)
							break
						}
					}
				}
			default:
				if _, ok := values[m.key]; !ok {
					order = append(order, m.key)
				}
				vs := planValues[m.values]
				values[m.key] = vs[r.IntN(len(vs))]
				if r.IntN(15) == 0 {
					vs := planBad[m.values]
					bad[m.key] = vs[r.IntN(len(vs))]
				}
			}
		}
		if r.IntN(10) == 0 {
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		}
		var b strings.Builder
		b.WriteString("{")
		for i, k := range order {
			if i > 0 {
				b.WriteString(",")
			}
			key := k
			if r.IntN(60) == 0 {
				key = strings.ToUpper(k)
			}
			v := values[k]
			if bv, ok := bad[k]; ok {
				v = bv
			}
			fmt.Fprintf(&b, "%q:%s", key, v)
		}
		if r.IntN(60) == 0 && len(order) > 0 {
			k := order[r.IntN(len(order))]
			vs := planValues[valuesOf[k]]
			fmt.Fprintf(&b, ",%q:%s", k, vs[r.IntN(len(vs))])
		}
		b.WriteString("}")
		revs = append(revs, b.String())
	}
	return revs
}

// checkDecodedAs decodes revs in order as values of type T, as
// decoder.decode does a pod's, and fails where the decoder and
// json.Unmarshal disagree, on a value or an error. It checks every
// revision again at the end.
func checkDecodedAs[T any](t *testing.T, revs []string) {
	t.Helper()
	var d decoder
	dt := decodeTypeOf(reflect.TypeFor[T]())
	var prev reflect.Value
	var prevObj object
	type decoded struct {
		raw string
		v   *T
	}
	var kept []decoded
	for i, raw := range revs {
		v := new(T)
		obj, err := d.decodeValue(reflect.ValueOf(v).Elem(), dt, []byte(raw), nil, prev, prevObj, decodeLevels)
		if err != nil {
			v, obj = new(T), nil
			err = json.Unmarshal([]byte(raw), v)
		}
		want := new(T)
		wantErr := json.Unmarshal([]byte(raw), want)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("revision %d (%s): error %v, want %v", i, raw, err, wantErr)
		}
		if err != nil {
			continue // decode keeps the revision before
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("revision %d (%s) decoded differently (-unmarshal +decoder):\n%s", i, raw,
				cmp.Diff(want, v, cmp.AllowUnexported(planStruct{}, planEmbedded{}, planPtrEmbedded{})))
		}
		if d.split.blocks >= compactBlocks {
			obj = d.split.compact(obj)
		}
		prev, prevObj = reflect.ValueOf(v).Elem(), obj
		kept = append(kept, decoded{raw, v})
	}
	// Revisions encoding/json rejects keep the one before: most must decode.
	if len(kept) < len(revs)/3 {
		t.Errorf("%d of %d revisions decoded without an error, want most", len(kept), len(revs))
	}
	t.Logf("%d of %d revisions decoded without an error", len(kept), len(revs))
	for i, k := range kept {
		want := new(T)
		_ = json.Unmarshal([]byte(k.raw), want)
		if !reflect.DeepEqual(k.v, want) {
			t.Fatalf("revision %d (%s) changed after later revisions were decoded", i, k.raw)
		}
	}
}

func TestDecoderPlansMatchUnmarshal(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkDecodedAs[planStruct](t, planRevisions(rand.New(rand.NewPCG(seed, 8)), 600))
		})
	}
	// Lists of such structs, their elements moving and changing.
	r := rand.New(rand.NewPCG(9, 9))
	var lists []string
	elems := planRevisions(r, 40)
	for range 300 {
		n := r.IntN(4)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = elems[r.IntN(len(elems))]
		}
		lists = append(lists, "["+strings.Join(parts, ",")+"]")
	}
	checkDecodedAs[[]planStruct](t, lists)
}

// TestSplitAsBefore holds the splitter to splitting a changed member as
// the previous revision's was, whether its bytes grew or shrank (to fewer
// than the previous member's, left in the object), and to marking what it
// compared.
func TestSplitAsBefore(t *testing.T) {
	var s splitter
	prev, ok := s.objectAgainst([]byte(`{"b":"same","c":3,"a":{"x":"a long value","y":[1,2]}}`), nil)
	if !ok {
		t.Fatal("did not split")
	}
	sub, ok := s.objectAgainst(prev[2].value(), nil)
	if !ok {
		t.Fatal("did not split a")
	}
	prev[2].setSub(sub)
	for _, raw := range []string{
		`{"b":"same","c":3,"a":{"x":"short","y":[1,2]}}`,
		`{"b":"same","c":4,"a":{"x":"a much longer value than before","y":[1,2]}}`,
	} {
		obj, ok := s.objectAgainst([]byte(raw), prev)
		if !ok || len(obj) != 3 {
			t.Fatalf("%s: did not split", raw)
		}
		b, c, a := &obj[0], &obj[1], &obj[2]
		if a.getSub() == nil || len(a.getSub()) != 2 || !a.differs || a.same {
			t.Errorf("%s: a split into %d members, differs %v, same %v; want split as before, and differing", raw, len(a.getSub()), a.differs, a.same)
		} else if y := &a.getSub()[1]; string(y.key()) != "y" || !y.same {
			t.Errorf("%s: a.y is %q, same %v; want y, the same", raw, y.key(), y.same)
		}
		if !b.same || b.differs || string(b.value()) != `"same"` {
			t.Errorf("%s: b same %v, differs %v, value %s", raw, b.same, b.differs, b.value())
		}
		if c.same || c.differs {
			t.Errorf("%s: c (a number, not compared by the splitter) same %v, differs %v", raw, c.same, c.differs)
		}
	}
}
