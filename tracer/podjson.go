package tracer

import (
	"fmt"
	"sync"

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
	// Written into a buffer of earlier calls and copied out once: a pod's
	// JSON grows a new slice ten times over, which was an eighth of diff's
	// CPU on a trace of protobuf pods, and as much again in the collector.
	sp := podBufs.Get().(*[]byte)
	defer podBufs.Put(sp)
	if b, ok := appendPodProto((*sp)[:0], r.Kind, r.APIVersion, r.Object); ok {
		if cap(b) <= maxScratch {
			*sp = b
		}
		return append(dst, b...), nil
	}
	// Not canonical, or a transcoder gave up: through the rawPod the
	// informer would have decoded, or the typed pod.
	p := rawPod{TypeMeta: metav1.TypeMeta{Kind: r.Kind, APIVersion: r.APIVersion}}
	if err := p.decode(r.Object, false); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	if b, ok := appendGenerated(dst, &p); ok {
		return b, nil
	}
	start := len(dst)
	data, err := encode(&p)
	if err != nil {
		return nil, err
	}
	return append(dst[:start], data...), nil
}

// appendPodProto appends what appendRawPod writes for the rawPod decoded
// from data, a pod's canonical protobuf, with the metadata transcoded too
// (the rawPod decodes it typed for the informer's store, which a read of
// the trace does not need: that was half a read's transcoding). false if
// data is not canonical or a transcoder gave up.
func appendPodProto(b []byte, kind, apiVersion string, data []byte) ([]byte, bool) {
	fields, _, ok := podFields(data)
	if !ok {
		return b, false
	}
	return appendPod(b, kind, apiVersion, func(b []byte) ([]byte, bool) {
		return appendProtoJSON(b, fields[1], pbMetav1ObjectMeta)
	}, fields[2], fields[3])
}

// podBufs holds the buffers podJSON writes pods' JSON into; one grown
// past maxScratch (a pod of many containers) is not kept.
var podBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

const maxScratch = 256 << 10
