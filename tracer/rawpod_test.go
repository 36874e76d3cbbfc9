package tracer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// wire returns obj as the API server sends it: protobuf, in its envelope.
func wire(t testing.TB, obj runtime.Object, mediaType string) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeRaw decodes data as the recorder's pod informer does, and sets the
// kind as its transform does.
func decodeRaw(t testing.TB, data []byte, mediaType string) runtime.Object {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(rawPodCodecs.WithoutConversion().SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %s", mediaType)
	}
	obj, _, err := info.Serializer.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// typedJSON is what the recorder wrote for pods before rawPod: encode of the
// typed pod the API machinery decodes from data.
func typedJSON(t testing.TB, data []byte, mediaType string) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	obj, _, err := info.Serializer.Decode(data, nil, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	out, err := encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rawJSON(t testing.TB, r *rawPod) []byte {
	t.Helper()
	r.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	out, err := encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRawPodJSON: a pod decoded as a rawPod is written as the typed pod is,
// and from its protobuf: the transcoders do not give up on what the API
// server sends.
func TestRawPodJSON(t *testing.T) {
	pods := append(recordedPods(t), benchPod(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "empty"}})
	for _, p := range pods {
		data := wire(t, p, runtime.ContentTypeProtobuf)
		r, ok := decodeRaw(t, data, runtime.ContentTypeProtobuf).(*rawPod)
		if !ok {
			t.Fatalf("pod %s decoded as %T, want *rawPod", p.Name, r)
		}
		if r.typed != nil {
			t.Fatalf("pod %s: canonical protobuf decoded typed", p.Name)
		}
		if r.Name != p.Name || r.ResourceVersion != p.ResourceVersion || len(r.ManagedFields) != len(p.ManagedFields) {
			t.Fatalf("pod %s: metadata %+v", p.Name, r.ObjectMeta)
		}
		if b, ok := appendRawPod(nil, r); !ok {
			t.Errorf("pod %s: transcoders gave up after %d bytes", p.Name, len(b))
		}
		if got, want := rawJSON(t, r), typedJSON(t, data, runtime.ContentTypeProtobuf); !bytes.Equal(got, want) {
			t.Errorf("pod %s:\n got %s\nwant %s", p.Name, got, want)
		}
		// The typed pod it stands for.
		typed, err := r.Pod()
		if err != nil {
			t.Fatal(err)
		}
		p = p.DeepCopy()
		p.TypeMeta = typed.TypeMeta
		if a, b := mustJSON(t, typed), mustJSON(t, p); !bytes.Equal(a, b) {
			t.Errorf("Pod() of %s:\n got %s\nwant %s", p.Name, a, b)
		}
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRawPodNotCanonical: bytes the API server does not write (a field sent
// twice, which gogo's decoder merges; JSON) are decoded typed, with the same
// result as the typed decoder's.
func TestRawPodNotCanonical(t *testing.T) {
	p := benchPod()
	pb, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The spec again, with another node name: gogo merges the two.
	more := corev1.PodSpec{NodeName: "node-b"}
	extra, err := more.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	dup := append(append([]byte(nil), pb...), protoField(2, extra)...)
	var want corev1.Pod
	if err := want.Unmarshal(dup); err != nil {
		t.Fatal(err)
	}
	if want.Spec.NodeName != "node-b" || len(want.Spec.Containers) != 2 {
		t.Fatalf("gogo did not merge: %q, %d containers", want.Spec.NodeName, len(want.Spec.Containers))
	}
	var r rawPod
	if err := r.Unmarshal(dup); err != nil {
		t.Fatal(err)
	}
	if r.typed == nil {
		t.Fatal("a spec sent twice was not decoded typed")
	}
	want.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	wantJSON, err := encode(&want)
	if err != nil {
		t.Fatal(err)
	}
	if got := rawJSON(t, &r); !bytes.Equal(got, wantJSON) {
		t.Errorf("merged spec:\n got %s\nwant %s", got, wantJSON)
	}

	// Served as JSON.
	data := wire(t, p, runtime.ContentTypeJSON)
	r2, ok := decodeRaw(t, data, runtime.ContentTypeJSON).(*rawPod)
	if !ok || r2.typed == nil || r2.Name != p.Name {
		t.Fatalf("JSON pod decoded as %T %+v", r2, r2)
	}
	if got, want := rawJSON(t, r2), typedJSON(t, data, runtime.ContentTypeJSON); !bytes.Equal(got, want) {
		t.Errorf("JSON pod:\n got %s\nwant %s", got, want)
	}

	// A spec that does not decode: the error comes when the pod is
	// encoded, as the typed decoder's would have when it was decoded.
	bad := append(append([]byte(nil), protoField(1, mustMarshal(t, &p.ObjectMeta))...), protoField(2, []byte{0x0a, 0x05, 'a'})...)
	var r3 rawPod
	if err := r3.Unmarshal(bad); err != nil {
		t.Fatalf("metadata decodes: %v", err)
	}
	if err := new(corev1.Pod).Unmarshal(bad); err == nil {
		t.Fatal("the typed decoder takes the bad spec")
	}
	if out, err := encode(&r3); err == nil {
		t.Errorf("bad spec encoded: %s", out)
	}
}

func mustMarshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoField is a length-delimited field num holding b.
func protoField(num int, b []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(num)<<3|2)
	out = binary.AppendUvarint(out, uint64(len(b)))
	return append(out, b...)
}

// TestRawPodList: a PodList decodes as rawPods, with its list metadata.
func TestRawPodList(t *testing.T) {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for _, p := range recordedPods(t)[:3] {
		list.Items = append(list.Items, *p)
	}
	for _, mediaType := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		data := wire(t, list, mediaType)
		l, ok := decodeRaw(t, data, mediaType).(*rawPodList)
		if !ok {
			t.Fatalf("%s: decoded as %T", mediaType, l)
		}
		if l.ResourceVersion != "42" || l.Continue != "next" || len(l.Items) != 3 {
			t.Fatalf("%s: list %+v, %d items", mediaType, l.ListMeta, len(l.Items))
		}
		for i := range l.Items {
			r := &l.Items[i]
			if r.UID != list.Items[i].UID {
				t.Errorf("%s: item %d is %s", mediaType, i, r.UID)
			}
			want := wire(t, &list.Items[i], runtime.ContentTypeProtobuf)
			if got, want := rawJSON(t, r), typedJSON(t, want, runtime.ContentTypeProtobuf); !bytes.Equal(got, want) {
				t.Errorf("%s: item %d:\n got %s\nwant %s", mediaType, i, got, want)
			}
		}
		c := l.DeepCopyObject().(*rawPodList)
		if len(c.Items) != 3 || !bytes.Equal(rawJSON(t, &c.Items[0]), rawJSON(t, &l.Items[0])) {
			t.Errorf("%s: DeepCopyObject differs", mediaType)
		}
	}
}

// BenchmarkDecodeEncodePod is what the recorder pays per pod revision to
// decode it from the wire (the informer) and write its JSON (the handler):
// typed, as before rawPod, and as a rawPod.
func BenchmarkDecodeEncodePod(b *testing.B) {
	var data [][]byte
	for _, p := range recordedPods(b) {
		data = append(data, wire(b, p, runtime.ContentTypeProtobuf))
	}
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, bc := range []struct {
		name   string
		codecs runtime.NegotiatedSerializer
	}{{"typed", scheme.Codecs.WithoutConversion()}, {"raw", rawPodCodecs.WithoutConversion()}} {
		info, _ := runtime.SerializerInfoForMediaType(bc.codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, d := range data {
					obj, _, err := info.Serializer.Decode(d, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					obj.GetObjectKind().SetGroupVersionKind(kind)
					if _, err := encode(obj); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(data)), "ns/revision")
		})
	}
}
