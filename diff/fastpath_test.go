package diff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/store"
)

// TestDecodeLeafMatchesUnmarshal holds decodeLeaf to encoding/json: where
// it decodes a value, into a zero value of each type, it gives what
// json.Unmarshal gives, and it declines (for encoding/json to decide)
// whatever json.Unmarshal rejects.
func TestDecodeLeafMatchesUnmarshal(t *testing.T) {
	type named string
	type withText struct{ metav1.Time }
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `7`, `-12`, `01`, `1.5`, `1e3`, `2147483648`, `-2147483649`, `9223372036854775808`,
		`""`, `"a"`, `"héllo"`, `"a\"b"`, `"a\\b"`, `"\u00e9"`, "\"tab\there\"", "\"\xff\"", `"2026-12-01T10:00:00Z"`,
		`"2026-12-01T10:00:00.5+02:00"`, `"2026-12-01"`, `"80"`, `"50%"`, `nul`, `tru`, `"`, `"a`, `-`, `[1]`, `{}`,
	}
	targets := []func() any{
		func() any { return new(string) }, func() any { return new(named) }, func() any { return new(bool) },
		func() any { return new(int32) }, func() any { return new(int64) }, func() any { return new(int8) },
		func() any { return new(*string) }, func() any { return new(*bool) }, func() any { return new(*int64) },
		func() any { return new(**int32) }, func() any { return new(json.Number) }, func() any { return new(metav1.Time) },
		func() any { return new(*metav1.Time) }, func() any { return new(intstr.IntOrString) }, func() any { return new(*intstr.IntOrString) },
		func() any { return new(resource.Quantity) }, func() any { return new(corev1.Protocol) }, func() any { return new([]string) },
		func() any { return new(map[string]string) }, func() any { return new(corev1.ContainerStateRunning) }, func() any { return new(any) },
		func() any { return new(withText) }, func() any { return new(uint16) }, func() any { return new(float64) },
	}
	for _, raw := range values {
		for _, mk := range targets {
			want, got := mk(), mk()
			wantErr := json.Unmarshal([]byte(raw), want)
			v := reflect.ValueOf(got).Elem()
			ok := decodeLeaf(v, decodeTypeOf(v.Type()), []byte(raw))
			if !ok {
				if !reflect.ValueOf(got).Elem().IsZero() {
					t.Errorf("%s into %T: declined, but changed the value to %v", raw, got, v)
				}
				continue
			}
			if wantErr != nil {
				t.Errorf("%s into %T: decoded %v, json.Unmarshal fails: %v", raw, got, v, wantErr)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s into %T: decoded %#v, json.Unmarshal %#v", raw, got, v, reflect.ValueOf(want).Elem())
			}
		}
	}
}

func TestMetaTimeFastPaths(t *testing.T) {
	for _, raw := range []string{`"2026-12-01T10:00:00Z"`, `"2026-12-01T10:00:00.123456789Z"`, `"2026-12-01T10:00:00+05:30"`,
		`"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59-01:00"`, `"2026-13-01T10:00:00Z"`, `"2026-12-01 10:00:00Z"`, `null`, `""`} {
		var want metav1.Time
		wantErr := want.UnmarshalJSON([]byte(raw))
		var got metav1.Time
		ok := decodeLeaf(reflect.ValueOf(&got).Elem(), decodeTypeOf(metaTimeType), []byte(raw))
		switch {
		case ok && wantErr != nil:
			t.Errorf("%s: decoded %v, UnmarshalJSON fails: %v", raw, got, wantErr)
		case ok && !reflect.DeepEqual(got, want):
			t.Errorf("%s: decoded %#v, UnmarshalJSON %#v", raw, got, want)
		}
	}
	loc := time.FixedZone("X", -7*3600)
	for _, tm := range []metav1.Time{{}, metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)),
		metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 999, loc)), metav1.NewTime(time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC))} {
		want, _ := json.Marshal(tm)
		if got := formatMetaTime(&tm); got != string(want) {
			t.Errorf("formatMetaTime(%v) = %s, encoding/json %s", tm, got, want)
		}
		if got := formatValue(reflect.ValueOf(&tm).Elem()); got != string(want) {
			t.Errorf("formatValue(%v) = %s, encoding/json %s", tm, got, want)
		}
	}
}

// TestDecoderSplitAgainstPrevious feeds the decoder revisions built to
// trip the split that compares a member with the previous revision's bytes:
// a member whose old bytes are a prefix of the new ones, values that grow
// and shrink around the same bytes, strings that hold brackets and quotes,
// lists whose elements move, and whitespace.
func TestDecoderSplitAgainstPrevious(t *testing.T) {
	rec := func(s string) store.Record {
		return store.Record{Seq: 1, Namespace: "ci", Name: "job", ResourceVersion: "1", Object: []byte(s)}
	}
	tests := [][]string{
		{`{"metadata":{"name":"a","labels":{"x":"1"}},"status":{"phase":"Running"}}`,
			`{"metadata":{"name":"a","labels":{"x":"1"}},"status":{"phase":"Running","message":"m"}}`,
			`{"metadata":{"name":"a","labels":{"x":"1","y":"2"}},"status":{"phase":"Running"}}`},
		{`{"metadata":{"name":"a"},"status":{"message":"ab"}}`, `{"metadata":{"name":"a"},"status":{"message":"ab\"c"}}`,
			`{"metadata":{"name":"a"},"status":{"message":"ab\\"}}`, `{"metadata":{"name":"a"},"status":{"message":"ab"}}`},
		{`{"status":{"conditions":[{"type":"A","message":"}]"},{"type":"B"}]}}`,
			`{"status":{"conditions":[{"type":"A","message":"}]"},{"type":"B","message":"[{"}]}}`,
			`{"status":{"conditions":[{"type":"B","message":"[{"},{"type":"A","message":"}]"}]}}`,
			`{"status":{"conditions":[{"type":"B","message":"[{"},{"type":"A","message":"}]"},{"type":"C"}]}}`,
			`{"status":{"conditions":[{"type":"B","message":"[{"}]}}`},
		{`{"status":{"containerStatuses":[{"name":"a","state":{"running":{}}}]}}`,
			`{"status":{"containerStatuses":[{"name":"a","state":{"running":{}}}, {"name":"b"}]}}`,
			`{"status":{"containerStatuses":[ {"name":"a","state":{"running":{}}} ,{"name":"b"}]} }`,
			`{"status":{"containerStatuses":[{"name":"a","state":{"running":{}}}],"phase":"x"}}`,
			`{"status":{"containerStatuses":{"name":"a"}}}`,
			`{"status":{"containerStatuses":[{"name":"a","state":{"running":{}}}]}}`},
		{`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]}}`,
			`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}},"time":"2026-12-01T10:00:00Z"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{},"f:b":{}},"time":"2026-12-01T10:00:00Z"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}},"time":"bad"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"m","Manager":"n"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]}}`},
		{`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80}]}]}}`,
			`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80},{"containerPort":81}]}]}}`,
			`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80}]}]}}x`,
			`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":8O}]}]}}`,
			`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80}]}]}}`},
	}
	for i, revs := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			var recs []store.Record
			for _, s := range revs {
				recs = append(recs, rec(s))
			}
			checkDecoded(t, recs)
		})
	}
}

// TestWalkerReused compares revisions with one walker, as Replay does, and
// checks every step against a fresh ComparePods: the walker's buffers and
// arenas must not leak from one revision into the next.
func TestWalkerReused(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var dec decoder
	var w walker
	var prev *corev1.Pod
	var kept [][]Change
	var pairs [][2]*corev1.Pod
	for i, rec := range append(podRevisions(t, r, 200), history(50)...) {
		pod, err := dec.decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		got := w.nextChanges(prev, pod)
		if d := cmp.Diff(ComparePods(prev, pod), got, cmp.AllowUnexported(Change{})); d != "" {
			t.Fatalf("revision %d: reused walker differs (-fresh +reused):\n%s", i, d)
		}
		kept = append(kept, got)
		pairs = append(pairs, [2]*corev1.Pod{prev, pod})
		prev = pod
	}
	for i, p := range pairs {
		if d := cmp.Diff(ComparePods(p[0], p[1]), kept[i], cmp.AllowUnexported(Change{})); d != "" {
			t.Fatalf("revision %d: changes kept from the reused walker changed later (-want +got):\n%s", i, d)
		}
	}
}

// TestElementKeys holds the sorted keys the walker merges to the map
// toKeyed builds, duplicate and missing keys included.
func TestElementKeys(t *testing.T) {
	lists := [][]corev1.Container{
		nil,
		{{Name: "a"}},
		{{Name: "b"}, {Name: "a"}, {Name: ""}, {Name: "a"}},
		{{Name: "a#2"}, {Name: "a"}, {Name: "a"}, {Name: "1"}, {Name: ""}},
	}
	var many []corev1.Container
	for i := range 40 {
		many = append(many, corev1.Container{Name: fmt.Sprint("c", i%7)})
	}
	lists = append(lists, many)
	for _, l := range lists {
		v := reflect.ValueOf(l)
		want := elementKeys(v)
		got := sortedElementKeys(v, nil)
		if len(got) != len(want) {
			t.Fatalf("%v: %d keys, want %d (%v)", l, len(got), len(want), want)
		}
		for i, k := range got {
			if i > 0 && got[i-1].key >= k.key {
				t.Errorf("%v: keys not sorted: %v", l, got)
			}
			if j, ok := want[k.key]; !ok || j != k.i {
				t.Errorf("%v: key %q at %d, want %v", l, k.key, k.i, want)
			}
		}
	}
}

func TestSameMemory(t *testing.T) {
	a := richPod()
	b := *a
	if !sameMemory(reflect.ValueOf(a).Elem(), reflect.ValueOf(&b).Elem()) {
		t.Errorf("a copy of a pod is not the same memory")
	}
	b.Spec.Containers = append([]corev1.Container(nil), a.Spec.Containers...)
	if sameMemory(reflect.ValueOf(a).Elem(), reflect.ValueOf(&b).Elem()) {
		t.Errorf("pods with lists in other memory are the same memory")
	}
	type withFloat struct{ F float64 }
	x := withFloat{F: 1}
	y := x
	if sameMemory(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem()) {
		t.Errorf("structs with a float compared as memory")
	}
}
