package tracer

import (
	"fmt"

	json "github.com/segmentio/encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// rawPod is how the recorder's pod informer decodes a Pod: its ObjectMeta,
// which the informer's keys, relists and watch bookmarks need, and the
// protobuf of its spec and status as the API server sent them.
//
// Decoding a pod's spec and status into Go structs, only to write them out
// again as JSON, was the largest cost the recorder added to the informers'
// own (the typed decode about a second of a 2,000-pod workload's ~12 s of CPU,
// the encode ~0.5 s). A rawPod's JSON (encode) is written straight from the
// protobuf by the generated transcoders (appendProtoJSON), and is the bytes
// encode writes for the typed Pod, which TestRawPodJSON checks.
//
// A rawPod decoded from anything but the canonical protobuf the API server
// writes (JSON, a field sent twice) holds the typed Pod instead.
type rawPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// pb is the pod's protobuf as the API server sent it (the message,
	// without the envelope), which the trace keeps (store.Record.Proto);
	// spec and status are the protobuf of the PodSpec and PodStatus, parts
	// of pb; nil when the pod had none (the zero value).
	pb, spec, status []byte
	// typed is the decoded pod when the bytes were not canonical protobuf.
	typed *corev1.Pod
}

// rawPodList is a PodList of rawPods.
type rawPodList struct {
	metav1.TypeMeta
	metav1.ListMeta `json:"metadata"`
	Items           []rawPod `json:"items"`
}

// Reset is for the protobuf serializer, which resets an object before it
// decodes into it.
func (r *rawPod) Reset() { *r = rawPod{} }

// Unmarshal decodes the protobuf of a v1 Pod (fields 1 metadata, 2 spec, 3
// status). It decodes the metadata and keeps a copy of the spec's and the
// status's bytes: their errors, if any, are found when the pod is encoded.
func (r *rawPod) Unmarshal(data []byte) error {
	// One copy of the whole message: the informer's buffer is not ours to
	// keep.
	return r.decode(data, true)
}

// decode is Unmarshal; it keeps data itself unless copy is set.
func (r *rawPod) decode(data []byte, copy bool) error {
	fields, seen, canonical := podFields(data)
	if !canonical {
		// Not what the API server writes: let gogo's decoder take it, with
		// its errors and merging rules.
		p := &corev1.Pod{}
		if err := p.Unmarshal(data); err != nil {
			return err
		}
		r.typed, r.ObjectMeta = p, p.ObjectMeta
		return nil
	}
	if err := r.ObjectMeta.Unmarshal(fields[1]); err != nil {
		return err
	}
	keep := data
	if copy {
		keep = append(make([]byte, 0, len(data)), data...)
	}
	r.pb = keep[:len(keep):len(keep)]
	// The fields are slices of data (scanMessages's data[lo:hi]): their
	// offset in it is what their capacity lacks of data's.
	part := func(f []byte) []byte {
		lo := cap(data) - cap(f)
		return keep[lo : lo+len(f) : lo+len(f)]
	}
	if seen[2] {
		r.spec = part(fields[2])
	}
	if seen[3] {
		r.status = part(fields[3])
	}
	return nil
}

// podFields returns the metadata, spec and status (fields 1 to 3) of the
// pod's protobuf data, and which of them it holds; false if data is not
// canonical: malformed, or a field sent twice (gogo merges them).
func podFields(data []byte) (fields [4][]byte, seen [4]bool, ok bool) {
	ok = scanMessages(data, func(num int32, sub []byte) bool {
		if seen[num] {
			return false
		}
		seen[num], fields[num] = true, sub
		return true
	})
	return fields, seen, ok
}

// scanMessages calls fn with each field numbered 1 to 3 of the protobuf
// message data (a Pod's or a PodList's, whose fields 1 to 3 are messages),
// skipping the others. It returns false if data is malformed (see pbScan),
// if one of those fields is not length-delimited, or if fn returns false.
func scanMessages(data []byte, fn func(num int32, sub []byte) bool) (ok bool) {
	defer func() {
		if rec := recover(); rec != nil {
			if _, is := rec.(pbFailure); !is {
				panic(rec)
			}
			ok = false
		}
	}()
	for i := 0; i < len(data); {
		num, wt, j := pbReadTag(data, i)
		if num > 3 {
			i = pbSkip(data, j, wt)
			continue
		}
		if wt != 2 {
			return false
		}
		lo, hi := pbReadLen(data, j)
		if !fn(num, data[lo:hi]) {
			return false
		}
		i = hi
	}
	return true
}

// UnmarshalJSON takes a pod served as JSON (when the API server, or a proxy
// in front of it, does not serve protobuf).
func (r *rawPod) UnmarshalJSON(data []byte) error {
	p := &corev1.Pod{}
	if err := utiljson.Unmarshal(data, p); err != nil {
		return err
	}
	*r = rawPod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta, typed: p}
	return nil
}

// Pod returns the typed pod: decoded from the protobuf kept, or the one
// decoded before.
func (r *rawPod) Pod() (*corev1.Pod, error) {
	if r.typed != nil {
		p := r.typed.DeepCopy()
		p.TypeMeta, p.ObjectMeta = r.TypeMeta, *r.ObjectMeta.DeepCopy()
		return p, nil
	}
	p := &corev1.Pod{TypeMeta: r.TypeMeta, ObjectMeta: *r.ObjectMeta.DeepCopy()}
	if err := p.Spec.Unmarshal(r.spec); err != nil {
		return nil, fmt.Errorf("decode spec of pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	if err := p.Status.Unmarshal(r.status); err != nil {
		return nil, fmt.Errorf("decode status of pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	return p, nil
}

// appendRawPod is appendCorev1Pod with the spec and status transcoded from
// their protobuf; false if a transcoder gave up (an appender that gives up
// panics, see appendGenerated).
func appendRawPod(b []byte, r *rawPod) ([]byte, bool) {
	return appendPod(b, r.Kind, r.APIVersion, func(b []byte) ([]byte, bool) {
		return appendMetav1ObjectMeta(b, &r.ObjectMeta), true
	}, r.spec, r.status)
}

// appendPod writes a pod's JSON object: its kind and apiVersion, the
// metadata meta writes, and the spec and status transcoded from their
// protobuf. false if meta or a transcoder gave up.
func appendPod(b []byte, kind, apiVersion string, meta func(b []byte) ([]byte, bool), spec, status []byte) ([]byte, bool) {
	start := len(b)
	if len(kind) != 0 {
		b = append(b, `,"kind":`...)
		b = json.AppendEscape(b, kind, flags)
	}
	if len(apiVersion) != 0 {
		b = append(b, `,"apiVersion":`...)
		b = json.AppendEscape(b, apiVersion, flags)
	}
	b = append(b, `,"metadata":`...)
	b, ok := meta(b)
	if !ok {
		return b, false
	}
	b = append(b, `,"spec":`...)
	if b, ok = appendProtoJSON(b, spec, pbCorev1PodSpec); !ok {
		return b, false
	}
	b = append(b, `,"status":`...)
	if b, ok = appendProtoJSON(b, status, pbCorev1PodStatus); !ok {
		return b, false
	}
	b[start] = '{'
	return append(b, '}'), true
}

// DeepCopyObject is for runtime.Object.
func (r *rawPod) DeepCopyObject() runtime.Object {
	c := &rawPod{TypeMeta: r.TypeMeta}
	r.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	// The protobuf is never written to: the copy may share it.
	c.pb, c.spec, c.status = r.pb, r.spec, r.status
	if r.typed != nil {
		c.typed = r.typed.DeepCopy()
	}
	return c
}

// Reset is for the protobuf serializer.
func (l *rawPodList) Reset() { *l = rawPodList{} }

// Unmarshal decodes the protobuf of a v1 PodList (1 metadata, 2 items).
func (l *rawPodList) Unmarshal(data []byte) error {
	var err error
	canonical := scanMessages(data, func(num int32, sub []byte) bool {
		switch num {
		case 1:
			err = l.ListMeta.Unmarshal(sub)
		case 2:
			l.Items = append(l.Items, rawPod{})
			err = l.Items[len(l.Items)-1].Unmarshal(sub)
		}
		return err == nil
	})
	switch {
	case err != nil:
		return err
	case !canonical:
		return l.unmarshalTyped(data)
	}
	return nil
}

// unmarshalTyped is Unmarshal by gogo's decoder, for bytes the API server
// does not write.
func (l *rawPodList) unmarshalTyped(data []byte) error {
	var pl corev1.PodList
	if err := pl.Unmarshal(data); err != nil {
		return err
	}
	l.fromTyped(&pl)
	return nil
}

func (l *rawPodList) fromTyped(pl *corev1.PodList) {
	*l = rawPodList{TypeMeta: pl.TypeMeta, ListMeta: pl.ListMeta, Items: make([]rawPod, len(pl.Items))}
	for i := range pl.Items {
		p := &pl.Items[i]
		l.Items[i] = rawPod{TypeMeta: p.TypeMeta, ObjectMeta: p.ObjectMeta, typed: p}
	}
}

// UnmarshalJSON takes a PodList served as JSON.
func (l *rawPodList) UnmarshalJSON(data []byte) error {
	var pl corev1.PodList
	if err := utiljson.Unmarshal(data, &pl); err != nil {
		return err
	}
	l.fromTyped(&pl)
	return nil
}

// DeepCopyObject is for runtime.Object.
func (l *rawPodList) DeepCopyObject() runtime.Object {
	c := &rawPodList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	if l.Items != nil {
		c.Items = make([]rawPod, len(l.Items))
		for i := range l.Items {
			c.Items[i] = *l.Items[i].DeepCopyObject().(*rawPod)
		}
	}
	return c
}

// rawPodCodecs decode v1 Pods and PodLists as rawPods, and the API
// machinery's own types (Status, WatchEvent) as usual.
var rawPodCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	gv := schema.GroupVersion{Version: "v1"}
	s.AddKnownTypeWithName(gv.WithKind("Pod"), &rawPod{})
	s.AddKnownTypeWithName(gv.WithKind("PodList"), &rawPodList{})
	metav1.AddToGroupVersion(s, gv)
	return serializer.NewCodecFactory(s)
}()

// rawPodClient returns a REST client for core/v1 that decodes pods as
// rawPods; cfg is the tracer's configuration.
func rawPodClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.APIPath = "/api"
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.NegotiatedSerializer = rawPodCodecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.RESTClientFor(c)
}

// rawPodInformer is coreinformers.NewFilteredPodInformer for rawPods.
func rawPodInformer(c rest.Interface, ns string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	lw := cache.NewFilteredListWatchFromClient(c, "pods", ns, tweak)
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c), &rawPod{},
		cache.SharedIndexInformerOptions{Indexers: noIndex})
}
