package tracer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
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
