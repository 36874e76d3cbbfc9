package tracer

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"math/rand"
	"testing"

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
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/randfill"
)

// TestJSONMatchesEncodingJSON: the recorder's JSON encoder writes the bytes
// encoding/json writes, for every kind the tracer records, filled at random
// (every field, nested lists and maps, strings with <, > and & to escape,
// the API types' own MarshalJSON methods).
func TestJSONMatchesEncodingJSON(t *testing.T) {
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return []any{
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
			},
			func(s *string, c randfill.Continue) {
				*s = c.String(12) + []string{"", "<b>", "&amp;", "\u2028", "é", `"\`}[c.Intn(6)]
			},
		}
	})
	f := fuzzer.FuzzerFor(funcs, rand.NewSource(7), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	for i := range 200 {
		for _, obj := range []any{
			&corev1.Pod{}, &corev1.Event{}, &corev1.Node{}, &corev1.Namespace{},
			&appsv1.ReplicaSet{}, &batchv1.Job{}, &metav1.PartialObjectMetadata{},
			&admissionv1.MutatingWebhookConfiguration{},
		} {
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

// TestEncodeMatchesEncodingJSON: encode, which writes managedFields by hand,
// writes the bytes encoding/json writes, for every kind the tracer records
// filled at random, with FieldsV1 of every shape (compact, with whitespace,
// with characters to escape for HTML, empty) and zero or missing times; and
// for the pods of examples/trace.
func TestEncodeMatchesEncodingJSON(t *testing.T) {
	fieldsV1 := []string{
		`{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{}}}}}`,
		`{"f:spec": {"f:nodeName": {}}}`,
		"{\"f:metadata\":{\"f:annotations\":{\"f:a<b>&c\":{}}}}",
		"{\"f:metadata\":{\"f:annotations\":{\"f:\u2028\":{}}}}",
		`{}`,
		"",
	}
	funcs := fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, func(serializer.CodecFactory) []any {
		return []any{
			func(q *resource.Quantity, c randfill.Continue) {
				*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
			},
			func(s *string, c randfill.Continue) {
				*s = c.String(12) + []string{"", "<b>", "&amp;", "\u2028", "é", `"\`}[c.Intn(6)]
			},
			func(e *metav1.ManagedFieldsEntry, c randfill.Continue) {
				c.FillNoCustom(e)
				switch c.Intn(3) {
				case 0:
					e.Time = nil
				case 1:
					e.Time = &metav1.Time{}
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
		}
	})
	f := fuzzer.FuzzerFor(funcs, rand.NewSource(11), scheme.Codecs).NilChance(0.3).NumElements(0, 3)
	check := func(what string, obj runtime.Object) {
		t.Helper()
		want, err := stdjson.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", what, err)
		}
		got, err := encode(obj)
		if err != nil {
			t.Fatalf("%s: encode: %v", what, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: JSON differs\nencoding/json: %s\nencode:        %s", what, want, got)
		}
	}
	withFields := 0
	for i := range 300 {
		for _, obj := range []runtime.Object{
			&corev1.Pod{}, &corev1.Event{}, &corev1.Node{}, &corev1.Namespace{},
			&appsv1.ReplicaSet{}, &batchv1.Job{}, &metav1.PartialObjectMetadata{},
			&admissionv1.MutatingWebhookConfiguration{},
		} {
			f.Fill(obj)
			if m, ok := obj.(metav1.Object); ok && len(m.GetManagedFields()) > 0 {
				withFields++
			}
			check(fmt.Sprintf("%d %T", i, obj), obj)
		}
	}
	if withFields < 1000 {
		t.Errorf("only %d of 2400 objects had managedFields: the test does not reach encode's own path", withFields)
	}
	for i, p := range recordedPods(t) {
		check(fmt.Sprintf("examples/trace pod revision %d", i), p)
	}
}
