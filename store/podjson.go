package store

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
)

// A PodJSON appends to dst the JSON of the pod whose protobuf is r.Object
// (r.Proto is set), with r's apiVersion and kind: the bytes the recorder
// would have written for the pod (see Record.Proto), which are the bytes
// encoding/json writes for the typed pod.
type PodJSON func(dst []byte, r *Record) ([]byte, error)

var podJSON atomic.Pointer[PodJSON]

// RegisterPodJSON sets a faster transcoder of the pods recorded as
// protobuf than the store's own (typedPodJSON): package tracer, which
// records them, registers its generated one when it is linked in. fn must
// write the bytes typedPodJSON writes; nil restores the store's own.
func RegisterPodJSON(fn PodJSON) {
	if fn == nil {
		podJSON.Store(nil)
		return
	}
	podJSON.Store(&fn)
}

// typedPodJSON is the store's own transcoder: the typed decode of
// k8s.io/api and encoding/json.
func typedPodJSON(dst []byte, r *Record) ([]byte, error) {
	var p corev1.Pod
	if err := p.Unmarshal(r.Object); err != nil {
		return nil, err
	}
	p.APIVersion, p.Kind = r.APIVersion, r.Kind
	b, err := json.Marshal(&p)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// toJSON returns r's object as JSON, appended to dst when r.Proto (else
// r.Object itself), and clears r.Proto.
func toJSON(dst []byte, r *Record) ([]byte, error) {
	if !r.Proto {
		return r.Object, nil
	}
	if r.APIVersion != "v1" || r.Kind != "Pod" {
		return nil, fmt.Errorf("%w: a %s %s recorded as a pod's protobuf", errValue, r.APIVersion, r.Kind)
	}
	fn := typedPodJSON
	if p := podJSON.Load(); p != nil {
		fn = *p
	}
	out, err := fn(dst, r)
	if err != nil {
		return nil, fmt.Errorf("%w: the pod's protobuf: %v", errValue, err)
	}
	r.Proto = false
	return out, nil
}

// JSON returns r's object as JSON: Object itself, or, when r.Proto, the
// pod's JSON transcoded from it (new memory), as a read of the trace would
// return it.
func (r *Record) JSON() (json.RawMessage, error) {
	c := *r
	return toJSON(nil, &c)
}
