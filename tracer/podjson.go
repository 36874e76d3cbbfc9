package tracer

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// The trace keeps the pods the API server sent as protobuf as they came
// (store.Record.Proto): the recorder then writes no JSON for them, which was
// most of what it added to the informers' own work. Reads of the trace get
// the JSON it would have written, from podJSON.
func init() { store.RegisterPodJSON(podJSON) }

// podJSON appends the JSON of the pod whose protobuf r holds: the bytes
// encode writes for the rawPod the informer decoded from that protobuf
// (TestPodProtoJSON).
func podJSON(dst []byte, r *store.Record) ([]byte, error) {
	p := rawPod{TypeMeta: metav1.TypeMeta{Kind: r.Kind, APIVersion: r.APIVersion}}
	if err := p.decode(r.Object, false); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	start := len(dst)
	if b, ok := appendGenerated(dst, &p); ok {
		return b, nil
	}
	// A transcoder gave up, or the bytes were not canonical: what encode
	// writes then, from the typed pod.
	data, err := encode(&p)
	if err != nil {
		return nil, err
	}
	return append(dst[:start], data...), nil
}
