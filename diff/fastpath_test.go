package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

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
	var in interner
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
			// A decoder's interner gives the same, the first time and the
			// next.
			for range 2 {
				again := mk()
				av := reflect.ValueOf(again).Elem()
				if !in.decodeLeaf(av, decodeTypeOf(av.Type()), []byte(raw)) || !reflect.DeepEqual(again, want) {
					t.Errorf("%s into %T: with an interner, decoded %#v, json.Unmarshal %#v", raw, again, av, reflect.ValueOf(want).Elem())
				}
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

// encodeJSON is what formatValue's encoder writes for v.
func encodeJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// TestAppendJSONMatchesEncoder holds appendJSON to encoding/json: where it
// writes a value, it writes what the encoder does, and it writes the
// container states and conditions a crash loop reports without the encoder.
func TestAppendJSONMatchesEncoder(t *testing.T) {
	loc := time.FixedZone("X", -7*3600)
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 999, loc))
	yes, secs := true, int64(30)
	type inner struct {
		A string `json:"a,omitempty"`
		B *int64 `json:"b"`
	}
	type embedded struct{ inner }
	type options struct {
		N int `json:"n,string"`
	}
	type zero struct {
		T metav1.Time `json:"t,omitzero"`
	}
	type plain struct {
		Name    string
		Skip    string `json:"-"`
		Dash    string `json:"-,"`
		hidden  string
		U8      uint8    `json:"u8"`
		U       uint     `json:"u,omitempty"`
		I       any      `json:"i,omitempty"`
		L       []inner  `json:"l"`
		S       []string `json:"s,omitempty"`
		Bytes   []byte   `json:"bytes,omitempty"`
		Float   float64  `json:"float,omitempty"`
		TimePtr *metav1.Time
		Inner   inner `json:"inner,omitempty"`
	}
	// fast: appendJSON must write these itself.
	fast := []any{
		corev1.ContainerState{},
		corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t1}},
		corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: `back-off 10s restarting failed container=app pod=a_b(c) "q" \ <>&`},
		corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: t0, FinishedAt: t1, ContainerID: "containerd://1"},
		corev1.ContainerStateTerminated{Signal: -9},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		[]corev1.PodIP{{IP: "10.0.0.1"}, {IP: "::1"}},
		[]corev1.PodIP{},
		[]string{"a", `b"`},
		metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicaSet", Name: "rs", UID: "u", Controller: &yes, BlockOwnerDeletion: &yes},
		corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, TolerationSeconds: &secs},
		plain{Name: "n", Skip: "s", Dash: "d", hidden: "h", U8: 7, I: "x", L: []inner{{A: "a"}, {B: &secs}}, TimePtr: &t1},
		plain{I: corev1.PodIP{IP: "1"}, S: []string{"x"}},
		t0, &t1, metav1.Time{},
		time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 0, 120, loc), time.Time{},
		time.Date(2026, 12, 1, 10, 0, 0, 5e8, time.FixedZone("S", 3600+30)),
		struct{ T time.Time }{t1.Time},
	}
	// other: appendJSON may decline these; where it does not, it must agree.
	other := []any{
		corev1.ContainerStateWaiting{Message: "tab\there"},
		corev1.ContainerStateWaiting{Message: "héllo"},
		corev1.ContainerStateWaiting{Message: "\u2028"},
		corev1.ContainerStateWaiting{Message: "\xff"},
		corev1.ContainerStatus{Name: "app", Ready: true, Started: &yes, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}}},
		corev1.ContainerStatus{Name: "app", AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		richPod().Spec.Containers[0],
		corev1.ContainerPort{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
		intstr.FromString("50%"),
		map[string]string{"a": "b"},
		embedded{inner{A: "a"}},
		options{N: 1},
		zero{},
		plain{Bytes: []byte("x")},
		plain{Float: 1.5},
		plain{I: resource.MustParse("1")},
		time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		resource.MustParse("250m"),
		&metav1.FieldsV1{Raw: []byte(`{"f:a":{}}`)},
	}
	for i, v := range append(fast, other...) {
		want := encodeJSON(t, v)
		got, ok := appendJSON(nil, reflect.ValueOf(v))
		if !ok {
			if i < len(fast) {
				t.Errorf("%T %+v: appendJSON declined, want %s", v, v, want)
			}
			continue
		}
		if string(got) != want {
			t.Errorf("%T %+v: appendJSON wrote\n%s\nencoding/json\n%s", v, v, got, want)
		}
		// formatValue takes the same path from an addressable value.
		p := reflect.New(reflect.TypeOf(v))
		p.Elem().Set(reflect.ValueOf(v))
		if f := formatValue(p.Elem()); p.Elem().Kind() != reflect.String && f != want {
			t.Errorf("%T %+v: formatValue %s, encoding/json %s", v, v, f, want)
		}
	}
	for _, tm := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("Z", 24*3600))} {
		_, wantErr := tm.MarshalJSON()
		if b, ok := appendJSON(nil, reflect.ValueOf(tm)); ok != (wantErr == nil) {
			t.Errorf("%v: appendJSON wrote %s (%v), MarshalJSON fails: %v", tm, b, ok, wantErr)
		}
	}
	// Random states, strings drawn from characters that need escaping.
	r := rand.New(rand.NewPCG(6, 6))
	chars := []string{"a", "Z", " ", `"`, `\`, "<", "&", "é", "\n", "\t", "\x00", "\u2028", "\xff", "/", "}"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(chars[r.IntN(len(chars))])
		}
		return b.String()
	}
	for range 2000 {
		tm := metav1.NewTime(time.Unix(r.Int64N(4e9), r.Int64N(2e9)).In(loc))
		if r.IntN(4) == 0 {
			tm = metav1.Time{}
		}
		if want, got := encodeJSON(t, tm.Time), formatValue(reflect.ValueOf(&tm.Time).Elem()); got != want {
			t.Fatalf("%v: formatValue %s, encoding/json %s", tm.Time, got, want)
		}
		var s corev1.ContainerState
		switch r.IntN(4) {
		case 0:
			s.Waiting = &corev1.ContainerStateWaiting{Reason: str(), Message: str()}
		case 1:
			s.Running = &corev1.ContainerStateRunning{StartedAt: tm}
		case 2:
			s.Terminated = &corev1.ContainerStateTerminated{ExitCode: r.Int32N(3) - 1, Signal: r.Int32N(2), Reason: str(), StartedAt: tm, ContainerID: str()}
		}
		want := encodeJSON(t, s)
		if got, ok := appendJSON(nil, reflect.ValueOf(s)); ok && string(got) != want {
			t.Fatalf("%+v: appendJSON wrote\n%s\nencoding/json\n%s", s, got, want)
		}
		if got := formatValue(reflect.ValueOf(&s).Elem()); got != want {
			t.Fatalf("%+v: formatValue %s, encoding/json %s", s, got, want)
		}
	}
}

// TestDecoderPointerStructs feeds the decoder container states that
// change inside their pointers (decoded member by member) and around them:
// null, empty, wrong types, unknown keys, and back.
func TestDecoderPointerStructs(t *testing.T) {
	rec := func(s string) store.Record {
		return store.Record{Seq: 1, Namespace: "ci", Name: "job", ResourceVersion: "1", Object: []byte(s)}
	}
	state := func(s string) string {
		return `{"metadata":{"name":"a"},"status":{"containerStatuses":[{"name":"app","state":` + s + `,"lastState":{}},{"name":"b","state":{"running":{}}}]}}`
	}
	revs := []string{
		state(`{"running":{"startedAt":"2026-12-01T10:00:00Z"}}`),
		state(`{"running":{"startedAt":"2026-12-01T10:00:01Z"}}`),
		state(`{"running":{"startedAt":"2026-12-01T10:00:01+02:00"}}`),
		state(`{"waiting":{"reason":"CrashLoopBackOff","message":"back-off \"10s\""}}`),
		state(`{"waiting":{"reason":"CrashLoopBackOff","message":"back-off 20s"}}`),
		state(`{"waiting":null}`),
		state(`{"waiting":{}}`),
		state(`{"waiting":{"reason":"X"},"running":{"startedAt":null}}`),
		state(`{"terminated":{"exitCode":1,"reason":"Error","startedAt":"2026-12-01T10:00:00Z","finishedAt":"2026-12-01T10:00:05Z","containerID":"c://1"}}`),
		state(`{"terminated":{"exitCode":137,"signal":9,"reason":"OOMKilled","startedAt":"2026-12-01T10:00:00Z","finishedAt":"2026-12-01T10:00:06Z","containerID":"c://1"}}`),
		state(`{"terminated":{"exitCode":1,"Reason":"case"}}`),
		state(`{"terminated":{"exitCode":1,"bogus":true}}`),
		state(`{"terminated":{"exitCode":"1"}}`),
		state(`{"terminated":{"exitCode":1.5}}`),
		state(`{"terminated":[1]}`),
		state(`{"terminated":{"exitCode":1,"startedAt":"bad"}}`),
		state(`{"running":{"startedAt":"2026-12-01T10:00:00Z"}}`),
		state(`null`),
		state(`{"running":{"startedAt":"2026-12-01T10:00:00Z"}}`),
	}
	var recs []store.Record
	for _, s := range revs {
		recs = append(recs, rec(s))
	}
	checkDecoded(t, recs)
	// Every pair in both orders: each revision decoded against each other.
	for i := range revs {
		for j := range revs {
			checkDecoded(t, []store.Record{rec(revs[i]), rec(revs[j]), rec(revs[i])})
		}
	}
}

func TestInterner(t *testing.T) {
	var in interner
	for i := range 3000 {
		for _, b := range [][]byte{fmt.Appendf(nil, "s%d", i%1500), bytes.Repeat([]byte("x"), i%50)} {
			if got := in.str(b); got != string(b) {
				t.Fatalf("str(%q) = %q", b, got)
			}
		}
	}
	if len(in.m) > 1024 {
		t.Errorf("interner keeps %d strings, want at most 1024", len(in.m))
	}
	b := []byte("True")
	s := in.str(b)
	b[0] = 'X'
	if s != "True" || in.str([]byte("True")) != "True" {
		t.Errorf("interned string changed with the bytes it came from: %q", s)
	}
}

// TestSplitterCompact holds compact to a copy: the same tree of members,
// in memory of its own, that the next revision splits against as it would
// against the original.
func TestSplitterCompact(t *testing.T) {
	recs := podRevisions(t, rand.New(rand.NewPCG(7, 7)), 3)
	var s splitter
	obj, ok := s.objectAgainst(recs[0].Object, nil)
	if !ok {
		t.Fatal("pod did not split")
	}
	// Split deeper against itself, as decoding does for changed members.
	obj, ok = s.objectAgainst(recs[1].Object, obj)
	if !ok {
		t.Fatal("pod did not split")
	}
	var members func(o object, f func(m *member))
	members = func(o object, f func(m *member)) {
		for i := range o {
			f(&o[i])
			members(o[i].getSub(), f)
		}
	}
	old := map[*member]bool{}
	members(obj, func(m *member) { old[m] = true })
	// What splitting against the original gives, split by another
	// splitter: once compacted, the original's blocks are s's to reuse.
	var s2 splitter
	a, okA := s2.objectAgainst(recs[2].Object, obj)
	c := s.compact(obj)
	if !sameSplit(c, obj) {
		t.Fatalf("compact changed the tree")
	}
	n := 0
	members(c, func(m *member) {
		n++
		if old[m] {
			t.Fatalf("compacted member %q shares memory with the original", m.key())
		}
	})
	if n != countMembers(obj) || n != len(old) {
		t.Errorf("compacted %d members, counted %d, original %d", n, countMembers(obj), len(old))
	}
	if s.blocks != 0 {
		t.Errorf("compact left blocks %d", s.blocks)
	}
	// The blocks the original was cut from are free, to be written again;
	// the copy is in none of them.
	if len(s.free) == 0 || len(s.used) == 0 {
		t.Errorf("compact freed %d blocks and uses %d, want the original's freed and the copy's used", len(s.free), len(s.used))
	}
	in := func(m *member, blocks [][]member) bool {
		for _, b := range blocks {
			b = b[:cap(b)]
			if uintptr(unsafe.Pointer(m)) >= uintptr(unsafe.Pointer(&b[0])) && uintptr(unsafe.Pointer(m)) <= uintptr(unsafe.Pointer(&b[len(b)-1])) {
				return true
			}
		}
		return false
	}
	members(obj, func(m *member) {
		if !in(m, s.free) {
			t.Fatalf("member %q of the original is not in a free block", m.key())
		}
	})
	members(c, func(m *member) {
		if in(m, s.free) || !in(m, s.used) {
			t.Fatalf("member %q of the copy is in a free block, or in no block used", m.key())
		}
	})
	b, okB := s.objectAgainst(recs[2].Object, c)
	if okA != okB || !sameSplit(a, b) {
		t.Errorf("splitting against the copy differs from splitting against the original")
	}
}

// countMembers counts the members of obj and of the objects it holds.
func countMembers(obj object) int {
	n := len(obj)
	for i := range obj {
		n += countMembers(obj[i].getSub())
	}
	return n
}

// sameSplit reports whether a and b are the same tree of members: the
// same keys and values (by their bytes), marks and fields, split alike.
func sameSplit(a, b object) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if (x.key() == nil) != (y.key() == nil) || !bytes.Equal(x.key(), y.key()) || !bytes.Equal(x.value(), y.value()) ||
			x.same != y.same || x.aligned != y.aligned || x.field != y.field || !sameSplit(x.getSub(), y.getSub()) {
			return false
		}
	}
	return true
}

// TestDecoderCompacts decodes enough revisions for the decoders to compact
// what they keep several times, and checks every revision still decodes as
// json.Unmarshal would.
func TestDecoderCompacts(t *testing.T) {
	recs := history(400)
	var dec decoder
	compacted := 0
	for i, rec := range recs {
		if dec.split.blocks == compactBlocks-1 {
			compacted++
		}
		got, err := dec.decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := unmarshalPod(rec)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("revision %d decoded differently (-unmarshal +decoder):\n%s", i, cmp.Diff(want, got))
		}
	}
	if compacted < 2 {
		t.Errorf("decoder compacted about %d times over %d revisions, want several", compacted, len(recs))
	}
	_, events := crashLoop(400)
	var ed eventDecoder
	for i, rec := range events {
		got, err := ed.decode(rec.UID, rec.Object)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeEventWhole(rec.Object)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("event %d decoded differently (-whole +decoder):\n%s", i, cmp.Diff(want, got))
		}
	}
}

// decodeEventWhole is what eventDecoder gives for an Event, decoded by
// encoding/json alone.
func decodeEventWhole(b []byte) (*corev1.Event, error) {
	var f eventFields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return &corev1.Event{Type: f.Type, Reason: f.Reason, Message: f.Message, Count: f.Count, Series: f.Series,
		Source: f.Source, ReportingController: f.ReportingController,
		FirstTimestamp: f.FirstTimestamp, LastTimestamp: f.LastTimestamp, EventTime: f.EventTime}, nil
}
