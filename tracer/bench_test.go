package tracer

import (
	"encoding/json"
	"fmt"
	"testing"

	segjson "github.com/segmentio/encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/podtrace/podtrace/store"
)

// benchPod is a pod of the usual size: two containers, status, managedFields.
func benchPod() *corev1.Pod {
	p := pod("web-7d9c8b6f5-x2x9k", "123456", map[string]string{"app": "web", "pod-template-hash": "7d9c8b6f5"})
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c8b6f5", UID: "uid-rs"}}
	fields := `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}`
	for _, m := range []string{"kube-controller-manager", "kube-scheduler", "kubelet"} {
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}})
	}
	for i := range 2 {
		name := fmt.Sprintf("c%d", i)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: name, Image: "registry.example.com/team/web:1.2.3", Args: []string{"--port=8080", "--verbose"},
			Env:       []corev1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "REGION", Value: "eu-west-1"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
		})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name, Ready: true, Image: "registry.example.com/team/web:1.2.3", ImageID: "registry.example.com/team/web@sha256:0123456789abcdef", ContainerID: "containerd://abcdef"})
	}
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
	}
	p.Status.Phase = corev1.PodRunning
	return p
}

// BenchmarkRecordPod is the recorder's cost per pod revision: the record
// and its JSON.
func BenchmarkRecordPod(b *testing.B) {
	tr := &Tracer{clock: fixedClock{}}
	k := kinds()[0]
	h := held{k: k, typ: "Updated", obj: informed(k, benchPod())}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.record(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodePod is what a bare informer pays per pod revision to decode
// it from the wire, for comparison: protobuf (what the tracer asks for) and
// JSON (client-go's default).
func BenchmarkDecodePod(b *testing.B) {
	for _, mediaType := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		b.Run(mediaType, func(b *testing.B) {
			info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
			if !ok {
				b.Fatalf("no serializer for %s", mediaType)
			}
			data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), benchPod())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := info.Serializer.Decode(data, nil, &corev1.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// recordedPods returns the pod revisions of examples/trace (a recording of
// the digester case on the local control plane), decoded: real timestamps,
// managedFields of several managers, statuses of running containers.
func recordedPods(b testing.TB) []*corev1.Pod {
	db, err := store.Open("../examples/trace/digester.db", store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pods []*corev1.Pod
	err = db.Scan(func(r store.Record) error {
		if r.Kind != "Pod" {
			return nil
		}
		p := &corev1.Pod{}
		if err := json.Unmarshal(r.Object, p); err != nil {
			return err
		}
		pods = append(pods, p)
		return nil
	})
	if err != nil || len(pods) == 0 {
		b.Fatalf("%d pods: %v", len(pods), err)
	}
	return pods
}

// BenchmarkRecordRecordedPods is BenchmarkRecordPod over recorded pods.
func BenchmarkRecordRecordedPods(b *testing.B) {
	tr := &Tracer{clock: fixedClock{}}
	k := kinds()[0]
	pods := recordedPods(b)
	var bytes int
	b.ReportAllocs()
	for b.Loop() {
		bytes = 0
		for _, p := range pods {
			rec, err := tr.record(held{k: k, typ: "Updated", obj: informed(k, p)})
			if err != nil {
				b.Fatal(err)
			}
			bytes += len(rec.Object)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/revision")
	b.ReportMetric(float64(bytes)/float64(len(pods)), "B/revision")
}

// BenchmarkEncode compares, side by side, segmentio's reflective encoder,
// encodeReflective (segmentio with managedFields by hand, encode before the
// generated appenders) and encode (the generated appenders), on the pods of
// examples/trace ("recorded") and on benchPod, a kwok-like pod, as the
// informer hands it over: decoded from protobuf ("synthetic").
// ns/revision is per pod revision.
func BenchmarkEncode(b *testing.B) {
	k := kinds()[0]
	var recorded []runtime.Object
	for _, p := range recordedPods(b) {
		recorded = append(recorded, informed(k, p))
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), benchPod())
	if err != nil {
		b.Fatal(err)
	}
	decoded, _, err := info.Serializer.Decode(data, nil, &corev1.Pod{})
	if err != nil {
		b.Fatal(err)
	}
	synthetic := []runtime.Object{informed(k, decoded)}
	for _, set := range []struct {
		name string
		pods []runtime.Object
	}{{"recorded", recorded}, {"synthetic", synthetic}} {
		for _, bc := range []struct {
			name string
			enc  func(runtime.Object) ([]byte, error)
		}{
			{"segmentio", func(o runtime.Object) ([]byte, error) { return segjson.Marshal(o) }},
			{"reflective", func(o runtime.Object) ([]byte, error) {
				buf := bufs.get()
				defer bufs.put(buf)
				return encodeReflective(o, buf)
			}},
			{"generated", encode},
		} {
			b.Run(set.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, p := range set.pods {
						if _, err := bc.enc(p); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(set.pods)), "ns/revision")
			})
		}
	}
}
