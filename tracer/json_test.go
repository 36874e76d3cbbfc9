package tracer

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// TestJSONMatchesEncodingJSON: the recorder's JSON encoder writes the bytes
// encoding/json writes, for every kind the tracer records, filled at random
// (every field, nested lists and maps, strings with <, > and & to escape,
// the API types' own MarshalJSON methods).
func TestJSONMatchesEncodingJSON(t *testing.T) {
	f := fuzzer.FuzzerFor(fuzzFuncs(nil), rand.NewSource(7), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	for i := range 200 {
		for _, obj := range roots() {
			f.Fill(obj)
			want, err := stdjson.Marshal(obj)
			if err != nil {
				t.Fatalf("%d %T: encoding/json: %v", i, obj, err)
			}
			got, err := segjson.Marshal(obj)
			if err != nil {
				t.Fatalf("%d %T: segmentio: %v", i, obj, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d %T: JSON differs\nencoding/json: %s\nsegmentio:     %s", i, obj, want, got)
			}
		}
	}
}

// roots returns an empty object of each kind the generated appenders write
// (jsongen's roots: the kinds of kind.go).
func roots() []runtime.Object {
	return []runtime.Object{
		&corev1.Pod{}, &corev1.Event{}, &corev1.Node{}, &corev1.Namespace{}, &corev1.Service{},
		&appsv1.ReplicaSet{}, &appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{},
		&batchv1.Job{}, &batchv1.CronJob{},
		&admissionv1.MutatingWebhookConfiguration{}, &admissionv1.ValidatingWebhookConfiguration{},
		&metav1.PartialObjectMetadata{},
	}
}

// fuzzFuncs are the fuzzer's functions for the JSON tests, and more: strings
// with characters encoding/json escapes (HTML, U+2028/2029, control
// characters, invalid UTF-8), quantities in every format, canonical and not,
// times zero, in other zones and with nanoseconds, IntOrStrings of both
// types.
func fuzzFuncs(more []any) fuzzer.FuzzerFuncs {
	return fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return append([]any{
			func(q *resource.Quantity, c randfill.Continue) {
				switch c.Intn(4) {
				case 0:
					*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
				case 1:
					*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
				case 2:
					*q = *resource.NewScaledQuantity(c.Int63n(1<<20)-1<<19, resource.Scale(c.Intn(30)-15))
				default:
					*q = resource.MustParse([]string{"100m", "1.5Gi", "0", "1e3", "2Ki", "-5", "0.1", "12345678901234567890123", "500M"}[c.Intn(9)])
				}
			},
			func(s *string, c randfill.Continue) {
				*s = c.String(12) + []string{"", "<b>", "&amp;", "\u2028", "\u2029", "é", `"\`, "\xff", "\x00\x1f\t", "\ufffd", "a\xe2\x80"}[c.Intn(11)]
			},
			func(t *metav1.Time, c randfill.Continue) {
				*t = metav1.Time{Time: fuzzTime(c)}
			},
			func(t *metav1.MicroTime, c randfill.Continue) {
				*t = metav1.MicroTime{Time: fuzzTime(c)}
			},
			func(v *intstr.IntOrString, c randfill.Continue) {
				if c.Bool() {
					*v = intstr.FromInt32(c.Int31() - 1<<30)
				} else {
					var s string
					c.Fill(&s)
					*v = intstr.FromString(s)
				}
			},
		}, more...)
	})
}

// fuzzTime is a zero time, or one in some zone with nanoseconds.
func fuzzTime(c randfill.Continue) time.Time {
	if c.Intn(4) == 0 {
		return time.Time{}
	}
	zone := time.FixedZone("z", (c.Intn(48)-24)*1800)
	return time.Unix(c.Int63n(1<<35), c.Int63n(1e9)).In(zone)
}

// TestEncodeMatchesEncodingJSON: encode, the generated appenders (and
// encodeReflective, the reflective path it falls back to, which writes
// managedFields by hand), write the bytes encoding/json writes, for every
// kind the tracer records filled at random, with FieldsV1 of every shape
// (compact, with whitespace, with characters to escape for HTML, empty) and
// zero or missing times; and for the pods of examples/trace.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	fieldsV1 := []string{
		`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}`,
		`{"f:spec": {"f:nodeName": {}}}`,
		"{\"f:metadata\":{\"f:annotations\":{\"f:a<b>&c\":{}}}}",
		"{\"f:metadata\":{\"f:annotations\":{\"f:\u2028\":{}}}}",
		"{\"f:metadata\":{\"f:annotations\":{\"f:\u2019\":{}}}}",
		`{}`,
		"",
	}
	funcs := fuzzFuncs([]any{
		func(e *metav1.ManagedFieldsEntry, c randfill.Continue) {
			c.FillNoCustom(e)
			switch c.Intn(3) {
			case 0:
				e.Time = nil
			case 1:
				e.Time = &metav1.Time{}
			default:
				e.Time = &metav1.Time{Time: fuzzTime(c)}
			}
			if f := fieldsV1[c.Intn(len(fieldsV1)+1)%len(fieldsV1)]; c.Intn(4) > 0 {
				e.FieldsV1 = &metav1.FieldsV1{}
				if f != "" {
					e.FieldsV1.Raw = []byte(f)
				}
			} else {
				e.FieldsV1 = nil
			}
		},
	})
	f := fuzzer.FuzzerFor(funcs, rand.NewSource(11), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	check := func(what string, obj runtime.Object) {
		t.Helper()
		want, err := stdjson.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", what, err)
		}
		gen, ok := appendGenerated(nil, obj)
		if !ok {
			t.Fatalf("%s: the generated appenders gave up", what)
		}
		if !bytes.Equal(gen, want) {
			t.Fatalf("%s: generated JSON differs\nencoding/json: %s\ngenerated:     %s", what, want, gen)
		}
		got, err := encode(obj)
		if err != nil {
			t.Fatalf("%s: encode: %v", what, err)
		}
		if !bytes.Equal(got, want) || len(got) != cap(got) {
			t.Fatalf("%s: encode's JSON differs (or its capacity %d is not its length)\nencoding/json: %s\nencode:        %s", what, cap(got), want, got)
		}
		if m, ok := obj.(metav1.Object); ok && m.GetCreationTimestamp().Time.IsZero() {
			// segmentio ignores omitzero (metadata.creationTimestamp): the
			// reflective path writes null where encoding/json writes
			// nothing. The API server sets it on every object.
			return
		}
		refl, err := encodeReflective(obj, &scratch{})
		if err != nil {
			t.Fatalf("%s: encodeReflective: %v", what, err)
		}
		if !bytes.Equal(refl, want) {
			t.Fatalf("%s: encodeReflective's JSON differs\nencoding/json: %s\nencodeReflective: %s", what, want, refl)
		}
	}
	const n = 300
	withFields, nilSlices, emptySlices := 0, 0, 0
	for i := range n {
		for _, obj := range roots() {
			f.Fill(obj)
			m, ok := obj.(metav1.Object)
			if ok && len(m.GetManagedFields()) > 0 {
				withFields++
			}
			if ok && i%5 == 0 {
				m.SetCreationTimestamp(metav1.Time{}) // omitted (omitzero)
			}
			if p, ok := obj.(*corev1.Pod); ok {
				switch {
				case p.Spec.Containers == nil:
					nilSlices++
				case len(p.Spec.Containers) == 0:
					emptySlices++
				}
			}
			check(fmt.Sprintf("%d %T", i, obj), obj)
		}
	}
	if total := n * len(roots()); withFields < total/3 {
		t.Errorf("only %d of %d objects had managedFields: the test does not reach their encoding", withFields, total)
	}
	if nilSlices == 0 || emptySlices == 0 {
		t.Errorf("pods with nil containers: %d, with empty containers: %d: the test needs both", nilSlices, emptySlices)
	}
	for i, p := range recordedPods(t) {
		check(fmt.Sprintf("examples/trace pod revision %d", i), p)
	}
}

// TestEncodeFallsBack: what the generated appenders cannot write as
// encoding/json does (here a MarshalJSON error) goes to the reflective path,
// which reports the error as encoding/json does; an object that is not a
// generated root is written by the reflective path.
func TestEncodeFallsBack(t *testing.T) {
	p := benchPod()
	p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	bad := intstr.IntOrString{Type: 7}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: bad}}}
	if _, ok := appendGenerated(nil, p); ok {
		t.Fatal("the generated appenders wrote an IntOrString whose MarshalJSON fails")
	}
	if _, err := stdjson.Marshal(p); err == nil {
		t.Fatal("encoding/json wrote it")
	}
	if _, err := encode(p); err == nil {
		t.Fatal("encode wrote it")
	}

	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c<&>", CreationTimestamp: metav1.Unix(1e9, 0)}, Data: map[string]string{"b": "2", "a": "\u2028"}}
	if _, ok := appendObject(nil, other); ok {
		t.Fatal("appendObject wrote a ConfigMap, not one of its roots")
	}
	want, _ := stdjson.Marshal(other)
	if got, err := encode(other); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("encode(ConfigMap) = %s, %v; encoding/json: %s", got, err, want)
	}
}

// TestEncodeHelpers: the helpers the generator emits for types the roots do
// not have today (floats, ",string" fields, TextMarshalers, Marshalers whose
// output must be compacted) write what encoding/json writes.
func TestEncodeHelpers(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-7, 1e-6, 123456789, 1e20, 1e21, 1.2345e-9, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 3.4e38} {
		for _, bits := range []int{32, 64} {
			if bits == 32 && math.IsInf(float64(float32(f)), 0) {
				continue
			}
			for _, quoted := range []bool{false, true} {
				var want []byte
				switch {
				case bits == 32 && quoted:
					want, _ = stdjson.Marshal(struct {
						F float32 `json:"f,string"`
					}{float32(f)})
				case bits == 32:
					want, _ = stdjson.Marshal(struct{ F float32 }{float32(f)})
				case quoted:
					want, _ = stdjson.Marshal(struct {
						F float64 `json:"f,string"`
					}{f})
				default:
					want, _ = stdjson.Marshal(struct{ F float64 }{f})
				}
				want = want[bytes.IndexByte(want, ':')+1 : len(want)-1]
				ff := f
				if bits == 32 {
					ff = float64(float32(f))
				}
				if got := appendFloat(nil, ff, bits, quoted); !bytes.Equal(got, want) {
					t.Errorf("appendFloat(%v, %d, %v) = %s, encoding/json: %s", f, bits, quoted, got, want)
				}
			}
		}
	}
	func() {
		defer func() {
			if _, ok := recover().(encodeFailure); !ok {
				t.Error("appendFloat(NaN) did not give up")
			}
		}()
		appendFloat(nil, math.NaN(), 64, false)
	}()

	for _, s := range []string{"", "plain", `"\`, "<a&b>", "\u2028\u2029", "\xff", "\x00\x1f", "é"} {
		want, _ := stdjson.Marshal(struct {
			S string `json:"s,string"`
		}{s})
		want = want[len(`{"s":`) : len(want)-1]
		if got := appendQuotedString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendQuotedString(%q) = %s, encoding/json: %s", s, got, want)
		}
		want, _ = stdjson.Marshal(textValue(s))
		if got := appendMarshaledText(nil, []byte(s), nil); !bytes.Equal(got, want) {
			t.Errorf("appendMarshaledText(%q) = %s, encoding/json: %s", s, got, want)
		}
		if got := mapKeyText(textValue(s), false); got != s {
			t.Errorf("mapKeyText(%q) = %q", s, got)
		}
	}

	for _, raw := range []string{`{"a": [1, 2]}`, `"<&>"`, "\"\u2028\"", `{"a":1}`, `  true `, `null`} {
		want, err := stdjson.Marshal(rawValue(raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, trusted := range []bool{false, true} {
			if got := appendMarshaled(nil, []byte(raw), nil, trusted); !bytes.Equal(got, want) {
				t.Errorf("appendMarshaled(%q, trusted %v) = %s, encoding/json: %s", raw, trusted, got, want)
			}
		}
	}
	for _, bad := range []struct {
		raw string
		err error
	}{{"", nil}, {"{", nil}, {"x", nil}, {"1", errors.New("no")}} {
		if _, err := stdjson.Marshal(rawValue(bad.raw)); err == nil && bad.err == nil {
			t.Fatalf("encoding/json accepts %q", bad.raw)
		}
		func() {
			defer func() {
				if _, ok := recover().(encodeFailure); !ok {
					t.Errorf("appendMarshaled(%q, %v) did not give up", bad.raw, bad.err)
				}
			}()
			appendMarshaled(nil, []byte(bad.raw), bad.err, false)
		}()
	}
}

// textValue is an encoding.TextMarshaler.
type textValue string

func (v textValue) MarshalText() ([]byte, error) { return []byte(v), nil }

// rawValue is a json.Marshaler that returns itself.
type rawValue string

func (v rawValue) MarshalJSON() ([]byte, error) { return []byte(v), nil }

// TestGeneratedJSONUpToDate: zz_generated_json.go is what jsongen writes for
// the API types in go.mod. After a k8s.io/api upgrade, run go generate in
// tracer.
func TestGeneratedJSONUpToDate(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(gobin, "run", "./internal/jsongen", "-o", "-")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	want, err := cmd.Output()
	if err != nil {
		t.Fatalf("jsongen: %v\n%s", err, stderr.Bytes())
	}
	got, err := os.ReadFile("zz_generated_json.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated_json.go is not what tracer/internal/jsongen writes: run `go generate ./tracer/`")
	}
}
