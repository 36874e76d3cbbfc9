package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Values the typed reports format differently from one another, or that
// formatValue handles apart: empty, escaped, not ASCII, negative, extreme,
// times in zones other than UTC, zero times with and without a location,
// a time AppendText refuses.
var (
	cet, pst      = time.FixedZone("CET", 3600), time.FixedZone("PST", -8*3600)
	exoticStrings = []string{"", "a", "build", "é", "a\"b\\c", "<x> & y", "tab\there", "line\nbreak", "\x7f", "日本"}
	exoticTimes   = []time.Time{
		{},
		time.Time{}.In(cet), // zero to time.Time.IsZero, not to reflect
		time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 11, 0, 0, 0, cet), // the same instant
		time.Date(2026, 12, 1, 2, 0, 0, 123456789, pst),
		time.Date(2026, 12, 1, 10, 0, 0, 500, time.Local),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), // AppendText refuses it
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
	}
)

// reportBoth reports, at one path, a change with typed and the change
// reflective, on two walkers, and fails unless they are the same Change.
func reportBoth(t *testing.T, name string, typed func(w *walker), reflective func(w *walker)) {
	t.Helper()
	var a, b walker
	for _, w := range []*walker{&a, &b} {
		w.pushField("status")
		w.pushElem(listKind{key: "name"}, "app")
		w.pushField("value")
	}
	typed(&a)
	reflective(&b)
	if len(a.changes) != 1 || !sameChanges(a.changes, b.changes) {
		t.Errorf("%s: typed report %+v, reflective %+v", name, a.changes, b.changes)
	}
}

// reportScalars holds the typed report of every pair of values to report's.
func reportScalars[T comparable](t *testing.T, kind string, vals []T, typed func(w *walker, x, y T), typedPtr func(w *walker, x, y *T), typedPointee ...func(w *walker, x, y T)) {
	t.Helper()
	for i := range vals {
		for j := range vals {
			x, y := vals[i], vals[j]
			name := fmt.Sprintf("%s %#v -> %#v", kind, x, y)
			reportBoth(t, name, func(w *walker) { typed(w, x, y) }, func(w *walker) {
				w.report(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem())
			})
			if typedPtr == nil {
				continue
			}
			// Pointers both set: the generated code calls typedPointee on
			// their values, the reflective walker compares them as a
			// pointer's (pointee).
			for _, tp := range typedPointee {
				reportBoth(t, name+" (pointees)", func(w *walker) { tp(w, x, y) }, func(w *walker) {
					w.pointee = true
					w.report(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem())
				})
				if x != y {
					var c walker
					tp(&c, x, y)
					if c.changes[0].Op != OpChange {
						t.Errorf("%s (pointees): %s, want a change", name, c.changes[0].Op)
					}
				}
			}
			// Pointers: the generated code calls typedPtr when one is nil.
			for _, p := range [][2]*T{{nil, &y}, {&x, nil}} {
				px, py := p[0], p[1]
				reportBoth(t, name+" (pointers)", func(w *walker) { typedPtr(w, px, py) }, func(w *walker) {
					w.report(reflect.ValueOf(&px).Elem(), reflect.ValueOf(&py).Elem())
				})
			}
		}
	}
}

type (
	namedString string
	namedInt    int32
	namedBool   bool
)

// TestTypedReport: the typed reports make the Changes report makes (Op,
// Old, New, path and fieldPath), for every pair of a few values that
// differ in how they are written.
func TestTypedReport(t *testing.T) {
	reportScalars(t, "string", exoticStrings, reportString[string], reportStringPtr[string], reportStringPointee[string])
	reportScalars(t, "named string", []namedString{"", "Running", "é"}, reportString[namedString], reportStringPtr[namedString], reportStringPointee[namedString])
	reportScalars(t, "bool", []bool{false, true}, reportBool[bool], reportBoolPtr[bool], reportBoolPointee[bool])
	reportScalars(t, "named bool", []namedBool{false, true}, reportBool[namedBool], reportBoolPtr[namedBool], reportBoolPointee[namedBool])
	reportScalars(t, "int64", []int64{0, 1, -1, 42, 1000, math.MaxInt64, math.MinInt64}, reportInt[int64], reportIntPtr[int64], reportIntPointee[int64])
	reportScalars(t, "int32", []int32{0, -7, 137, math.MinInt32}, reportInt[int32], reportIntPtr[int32], reportIntPointee[int32])
	reportScalars(t, "named int", []namedInt{0, -1, 3}, reportInt[namedInt], reportIntPtr[namedInt], reportIntPointee[namedInt])
	reportScalars(t, "int", []int{0, -100, 100}, reportInt[int], reportIntPtr[int], reportIntPointee[int])
	reportScalars(t, "uint64", []uint64{0, 1, math.MaxUint64}, reportUint[uint64], reportUintPtr[uint64], reportUintPointee[uint64])
	reportScalars(t, "uint8", []uint8{0, 255}, reportUint[uint8], reportUintPtr[uint8], reportUintPointee[uint8])

	// time.Time, as a metav1.Time's field (walkMetav1Time).
	reportScalars(t, "time.Time", exoticTimes, func(w *walker, x, y time.Time) { w.reportTime(&x, &y) }, nil)

	// *metav1.Time: nil, zero, and every time.
	metas := []*metav1.Time{nil}
	for _, tm := range exoticTimes {
		metas = append(metas, &metav1.Time{Time: tm})
	}
	reportScalars(t, "*metav1.Time", metas, func(w *walker, x, y *metav1.Time) { w.reportMetaTime(x, y) }, nil)

	// Pointers to structs, one of them nil, and list elements added or
	// removed: values appendJSON writes and values it hands to
	// encoding/json (text not ASCII).
	waits := []*corev1.ContainerStateWaiting{
		nil, {}, {Reason: "CrashLoopBackOff"}, {Reason: "ErrImagePull", Message: `pull "x": <denied> & more`},
		{Message: "é"}, {Reason: "a\nb"},
	}
	for _, x := range waits {
		for _, y := range waits {
			if (x == nil) == (y == nil) {
				continue
			}
			name := fmt.Sprintf("*ContainerStateWaiting %+v -> %+v", x, y)
			reportBoth(t, name, func(w *walker) { reportStructPtr(w, x, y, appendJSONCorev1ContainerStateWaiting) }, func(w *walker) {
				w.report(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem())
			})
		}
	}
	terms := []*corev1.ContainerStateTerminated{
		{ExitCode: -1, Signal: 9, StartedAt: metav1.Time{Time: exoticTimes[4]}, FinishedAt: metav1.Time{Time: exoticTimes[1]}},
		{ExitCode: 137, Reason: "OOMKilled", ContainerID: "containerd://é"},
		{StartedAt: metav1.Time{Time: exoticTimes[7]}},
	}
	for _, lk := range []listKind{{key: "name"}, {set: true}} {
		for _, e := range terms {
			name := fmt.Sprintf("element of %+v %+v", lk, e)
			reportBoth(t, name+" removed", func(w *walker) { reportTypedElem(w, lk, e, nil, appendJSONCorev1ContainerStateTerminated) }, func(w *walker) {
				w.reportElem(lk, boxed(reflect.ValueOf(e).Elem()), reflect.Value{})
			})
			reportBoth(t, name+" added", func(w *walker) { reportTypedElem(w, lk, nil, e, appendJSONCorev1ContainerStateTerminated) }, func(w *walker) {
				w.reportElem(lk, reflect.Value{}, boxed(reflect.ValueOf(e).Elem()))
			})
		}
	}
}

// TestTypedAppenders: every generated JSON appender writes what appendJSON
// writes, and declines where it declines (then formatValue asks
// encoding/json), for random values of its type with strings and times of
// every sort.
func TestTypedAppenders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	written, declined := 0, 0
	for st, app := range typedAppenders {
		for round := range 20 {
			p := reflect.New(st)
			if round > 0 {
				fillValue(p.Elem(), r, 4)
				spice(p.Elem(), r)
			}
			want, wantOK := appendJSON(nil, p.Elem())
			got, ok := app(nil, p.UnsafePointer())
			if ok != wantOK || ok && string(got) != string(want) {
				t.Fatalf("%v %+v: typed appender %q %v, appendJSON %q %v", st, p.Elem(), got, ok, want, wantOK)
			}
			if !ok {
				declined++
				continue
			}
			written++
			if f := formatValue(p.Elem()); string(got) != f {
				t.Fatalf("%v %+v: typed appender %q, formatValue %q", st, p.Elem(), got, f)
			}
			var enc bytes.Buffer
			e := json.NewEncoder(&enc)
			e.SetEscapeHTML(false)
			if err := e.Encode(p.Elem().Interface()); err != nil || string(got)+"\n" != enc.String() {
				t.Fatalf("%v %+v: typed appender %q, encoding/json %q %v", st, p.Elem(), got, enc.String(), err)
			}
			// formatTyped, as the typed reports call it, with a scratch
			// buffer that held something else.
			w := walker{scratch: []byte("leftover")}
			if f := formatTyped(&w, (*byte)(p.UnsafePointer()), func(b []byte, v *byte) ([]byte, bool) { return app(b, unsafe.Pointer(v)) }); f != string(want) {
				t.Fatalf("%v: formatTyped %q, want %q", st, f, want)
			}
		}
	}
	if len(typedAppenders) < 50 || written < 5*len(typedAppenders) || declined == 0 {
		t.Errorf("%d appenders: %d values written, %d declined", len(typedAppenders), written, declined)
	}
}

// spice replaces some of the strings and times in v, settable, with
// exoticStrings and exoticTimes.
func spice(v reflect.Value, r *rand.Rand) {
	switch {
	case v.Type() == timeType:
		if r.IntN(2) == 0 {
			v.Set(reflect.ValueOf(exoticTimes[r.IntN(len(exoticTimes))]))
		}
		return
	case v.Type() == quantityType:
		return
	}
	switch v.Kind() {
	case reflect.String:
		if r.IntN(3) == 0 {
			v.SetString(exoticStrings[r.IntN(len(exoticStrings))])
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if r.IntN(4) == 0 {
			v.SetInt(-v.Int() - 1000)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			spice(v.Elem(), r)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			spice(v.Index(i), r)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				spice(v.Field(i), r)
			}
		}
	}
}

// TestPathOfShared: the paths pathOf returns again for a path it rendered
// are the path and fieldPath it renders anew; paths that differ in how
// their steps split the same text, or in their list, get their own.
func TestPathOfShared(t *testing.T) {
	type push func(w *walker)
	field := func(n string) push { return func(w *walker) { w.pushField(n) } }
	elem := func(lk listKind, k string) push { return func(w *walker) { w.pushElem(lk, k) } }
	index := func(i int) push { return func(w *walker) { w.pushIndex(i) } }
	key := func(k string) push { return func(w *walker) { w.pushKey(reflect.ValueOf(k)) } }
	named, set := listKind{key: "name"}, listKind{set: true}
	paths := [][]push{
		{field("status"), field("phase")},
		{field("status"), elem(named, "a"), field("ready")},
		{field("status"), elem(named, "a].ready[b")}, // the text of the next
		{field("status"), elem(named, "a"), field("ready"), elem(named, "b")},
		{field("status"), elem(listKind{key: "type"}, "a"), field("ready")},
		{field("status"), elem(set, "a"), field("ready")},
		{field("status"), key("a"), field("ready")},
		{field("status"), index(0), field("ready")},
		{field("metadata"), key("a.b"), key("c")},
		{field("metadata"), key("a.b][c")},
		{field("spec"), elem(set, `"x"`)},
	}
	fresh := func(p []push) (string, fieldPath) {
		var w walker
		for _, s := range p {
			s(&w)
		}
		return w.pathOf()
	}
	var w walker
	for round := range 3 {
		for i, p := range paths {
			for _, s := range p {
				s(&w)
			}
			path, fields := w.pathOf()
			wantPath, wantFields := fresh(p)
			if path != wantPath || fmt.Sprint(fields) != fmt.Sprint(wantFields) {
				t.Errorf("round %d, path %d: %q %q, want %q %q", round, i, path, fields, wantPath, wantFields)
			}
			for range p {
				w.pop()
			}
			if len(w.steps) != 0 || len(w.path) != 0 || len(w.lists) != 0 {
				t.Fatalf("path %d: popped to %q, %d steps, %d lists", i, w.path, len(w.steps), len(w.lists))
			}
		}
	}
	if len(w.paths) != len(paths) {
		t.Errorf("%d paths kept, want %d", len(w.paths), len(paths))
	}
	for i, want := range map[int]string{
		1:  `status[a].ready: f:status k:{"name":"a"} f:ready`,
		2:  `status[a].ready[b]: f:status k:{"name":"a].ready[b"}`,
		3:  `status[a].ready[b]: f:status k:{"name":"a"} f:ready k:{"name":"b"}`,
		5:  `status[a].ready: f:status v:"a" f:ready`,
		6:  `status[a].ready: f:status f:a f:ready`,
		7:  `status[0].ready: f:status i:0 f:ready`,
		10: `spec["x"]: f:spec v:"\"x\""`,
	} {
		path, fields := fresh(paths[i])
		if got := path + ": " + fieldsString(fields); got != want {
			t.Errorf("path %d: %s, want %s", i, got, want)
		}
	}
}
