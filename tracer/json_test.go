package tracer

import (
	"bytes"
	stdjson "encoding/json"
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
