package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/randfill"

	"github.com/podtrace/podtrace/store"
)

// filler fills pods and events with values that reach podCells' branches:
// phases, reasons and states from small sets, times of whole seconds or
// zero, strings with characters JSON escapes.
func filler(seed int64) *randfill.Filler {
	strs := []string{"", "", "a", "web", "Completed", "PodInitializing", "CrashLoopBackOff", "NodeLost", "Always", "Ready", "Initialized", "True", "False", "<b>&amp;", "\u2028", "é\xff", `"\`, "\x00\x1f"}
	return randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 3).MaxDepth(10).Funcs(
		func(q *kresource.Quantity, c randfill.Continue) { *q = kresource.MustParse("100m") },
		func(s *string, c randfill.Continue) {
			*s = strs[c.Intn(len(strs))]
			if c.Intn(4) == 0 {
				*s += c.String(4)
			}
		},
		func(p *corev1.PodPhase, c randfill.Continue) {
			*p = []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}[c.Intn(5)]
		},
		func(n *int32, c randfill.Continue) { *n = []int32{0, 0, 1, 3, -1, 137, 1 << 30}[c.Intn(7)] },
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Intn(4) == 0 {
				*tm = metav1.Time{}
				return
			}
			*tm = metav1.Unix(1.7e9+c.Int63n(1e6), 0)
		},
		func(tm *metav1.MicroTime, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*tm = metav1.MicroTime{}
				return
			}
			*tm = metav1.NewMicroTime(time.Unix(1.7e9+c.Int63n(1e6), c.Int63n(1e9)).Truncate(time.Microsecond))
		},
		func(v *intstr.IntOrString, c randfill.Continue) { *v = intstr.FromInt32(c.Int31n(100)) },
		func(f *metav1.FieldsV1, c randfill.Continue) {
			f.Raw = []byte([]string{`{"f:a":{}}`, `{}`}[c.Intn(2)])
		},
	)
}

// partial is a row's object, decoded, for comparing readings that order
// members differently.
func partial(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("row object %s: %v", b, err)
	}
	return v
}

// scratch is the pod the checks read into, reused from check to check as a
// worker of a list reuses its own.
var scratch = &corev1.Pod{}

// checkRow compares the scanner's cells and row object of raw with
// encoding/json's.
func checkRow(t *testing.T, apiVersion, kind string, raw []byte, at time.Time) bool {
	t.Helper()
	want, wantMD, werr := cellsOfJSON(apiVersion, kind, raw, at)
	var md objectMeta
	got, gerr := cellsOf(apiVersion, kind, raw, at, &md, scratch)
	if (werr != nil) != (gerr != nil) {
		t.Errorf("%s %s: error %v, encoding/json's %v", kind, raw, gerr, werr)
		return false
	}
	if werr != nil {
		return true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s cells (-encoding/json +scanner):\n%s\nof %s", kind, diff, raw)
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(wantMD, &fields); err != nil {
		t.Fatal(err)
	}
	delete(fields, "managedFields")
	wmd, _ := json.Marshal(fields)
	wantObj, _ := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": json.RawMessage(wmd)})
	if diff := cmp.Diff(partial(t, wantObj), partial(t, appendPartial(nil, &md))); diff != "" {
		t.Errorf("%s row object (-encoding/json +scanner):\n%s", kind, diff)
		return false
	}
	return true
}

// checkMeta compares what selectors read by the scanner and by
// encoding/json.
func checkMeta(t *testing.T, kind string, raw []byte) bool {
	t.Helper()
	want, werr := parseMetaJSON(raw)
	got, gerr := parseMeta(raw)
	if (werr != nil) != (gerr != nil) {
		t.Errorf("%s %s: error %v, encoding/json's %v", kind, raw, gerr, werr)
		return false
	}
	if werr != nil {
		return true
	}
	if len(want.Metadata.Labels) == 0 && len(got.Metadata.Labels) == 0 {
		want.Metadata.Labels, got.Metadata.Labels = nil, nil
	}
	if !reflect.DeepEqual(want.fieldSet(kind), got.fieldSet(kind)) || !reflect.DeepEqual(want.Metadata.Labels, got.Metadata.Labels) {
		t.Errorf("%s selector fields:\n got %v %v\nwant %v %v\nof %s", kind, got.fieldSet(kind), got.Metadata.Labels, want.fieldSet(kind), want.Metadata.Labels, raw)
		return false
	}
	return true
}

// TestReadRandom: the scanner reads random pods and events as encoding/json
// does, for the cells, the rows' objects and the selectors.
func TestReadRandom(t *testing.T) {
	f := filler(20)
	at := time.Unix(1.7e9+5e5, 0)
	fails := 0
	for i := range 3000 {
		var raw []byte
		kind := "Pod"
		switch i % 3 {
		case 0, 1:
			var p corev1.Pod
			f.Fill(&p)
			p.APIVersion, p.Kind = "v1", "Pod"
			raw, _ = json.Marshal(&p)
		default:
			var e corev1.Event
			f.Fill(&e)
			e.APIVersion, e.Kind, kind = "v1", "Event", "Event"
			raw, _ = json.Marshal(&e)
		}
		if !checkRow(t, "v1", kind, raw, at) || !checkMeta(t, kind, raw) || !checkRow(t, "coordination.k8s.io/v1", "Lease", raw, at) {
			if fails++; fails > 5 {
				t.Fatal("too many")
			}
		}
	}
}

// TestReadMalformed: the scanner turns malformed JSON into an error, never
// a panic.
func TestReadMalformed(t *testing.T) {
	pod := `{"metadata":{"name":"a","creationTimestamp":"2026-12-01T10:00:00Z","labels":{"x":"y"}},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","containerStatuses":[{"name":"c","restartCount":2,"state":{"running":{}}}]}}`
	var md objectMeta
	if _, err := cellsOf("v1", "Pod", []byte(pod), time.Now(), &md, nil); err != nil {
		t.Fatalf("well-formed pod: %v", err)
	}
	for i := range len(pod) {
		for _, b := range [][]byte{[]byte(pod[:i]), []byte(pod[:i] + "}" + pod[i:])} {
			for _, kind := range []string{"Pod", "Event", "Node"} {
				var md objectMeta
				cellsOf("v1", kind, b, time.Now(), &md, scratch) // must not panic
			}
			parseMeta(b)
		}
	}
	for _, bad := range []string{"", "{", `{"metadata":`, `{"metadata":{"name":"a"`, `{"status":{"containerStatuses":[{"restartCount":1e99}]}}`, `{"metadata":{"creationTimestamp":"yesterday"}}`, "\"\x01\""} {
		var md objectMeta
		if _, err := cellsOf("v1", "Pod", []byte(bad), time.Now(), &md, nil); err == nil {
			t.Errorf("cellsOf(%q): no error", bad)
		}
	}
}

// TestReadTrace compares the scanner with encoding/json on every pod and
// event revision of the trace PODTRACE_SERVE_TRACE names (e.g. a
// benchmark's trace, or a recording).
func TestReadTrace(t *testing.T) {
	path := os.Getenv("PODTRACE_SERVE_TRACE")
	if path == "" {
		t.Skip("PODTRACE_SERVE_TRACE is not set")
	}
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, fails := 0, 0
	err = db.Scan(func(r store.Record) error {
		if r.Type == store.Deleted || r.Type == store.DeletedUnknown {
			return nil
		}
		n++
		if !checkRow(t, r.APIVersion, r.Kind, r.Object, r.Observed.Add(time.Minute)) || !checkMeta(t, r.Kind, r.Object) {
			if fails++; fails > 5 {
				return fmt.Errorf("too many")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d revisions compared", n)
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "a", `"\`, "\x00\x1f\n\r\t", "é", "é\xff", "\u2028\u2029", "<b>&amp;", strings.Repeat("x", 100)} {
		want, _ := json.Marshal(s)
		var w, g string
		json.Unmarshal(want, &w)
		got := appendJSONString(nil, s)
		if err := json.Unmarshal(got, &g); err != nil || g != w {
			t.Errorf("appendJSONString(%q) = %s (%q, %v), want %s", s, got, g, err, want)
		}
	}
}

// TestPartial: a row's object is the metadata without managedFields,
// wherever they are in it.
func TestPartial(t *testing.T) {
	mf := `"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]`
	for _, tc := range []struct{ md, want string }{
		{`{"name":"a",` + mf + `}`, `{"name":"a"}`},
		{`{` + mf + `,"name":"a"}`, `{"name":"a"}`},
		{`{"name":"a",` + mf + `,"uid":"u"}`, `{"name":"a","uid":"u"}`},
		{`{` + mf + `}`, `{}`},
		{`{}`, `{}`},
		{`{"name":"a"}`, `{"name":"a"}`},
		{`{ "name" : "a" , ` + mf + ` , "uid" : "u" }`, `{"name":"a","uid":"u"}`},
		{`{ ` + mf + ` , "uid" : "u" }`, `{"uid":"u"}`},
		{`null`, `{}`},
	} {
		raw := []byte(`{"kind":"ConfigMap","metadata":` + tc.md + `,"data":{"k":"v"}}`)
		var md objectMeta
		if _, err := cellsOf("v1", "ConfigMap", raw, time.Now(), &md, nil); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got := appendPartial(nil, &md)
		want := `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":` + tc.want + `}`
		if diff := cmp.Diff(partial(t, []byte(want)), partial(t, got)); diff != "" {
			t.Errorf("metadata %s: row object %s (-want +got):\n%s", tc.md, got, diff)
		}
	}
}

// TestClaimAndClassCells: a bound claim's row as the API server prints it
// (capacity and access modes once bound, the class from the spec), and a
// StorageClass's defaults.
func TestClaimAndClassCells(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	claim := `{"metadata":{"name":"data","creationTimestamp":"2026-12-01T09:59:00Z"},"spec":{"storageClassName":"fast","volumeName":"pv-1","volumeMode":"Filesystem"},` +
		`"status":{"phase":"Bound","accessModes":["ReadWriteOnce","ReadWriteOncePod"],"capacity":{"storage":"10Gi"}}}`
	var md objectMeta
	got, err := cellsOf("v1", "PersistentVolumeClaim", []byte(claim), at, &md, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[data Bound pv-1 10Gi RWO,RWOP fast <unset> 60s Filesystem]"; fmt.Sprint(got) != want {
		t.Errorf("claim cells %v, want %s", got, want)
	}
	class := `{"metadata":{"name":"standard","creationTimestamp":"2026-12-01T09:00:00Z"},"provisioner":"example.com/disk"}`
	got, err = cellsOf("storage.k8s.io/v1", "StorageClass", []byte(class), at, &md, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[standard example.com/disk Delete Immediate false 60m]"; fmt.Sprint(got) != want {
		t.Errorf("class cells %v, want %s", got, want)
	}
}
