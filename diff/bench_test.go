package diff

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// history makes n revisions of a two-container pod whose status changes a
// little each time, as a crash-looping pod's does, with managedFields.
func history(n int) []store.Record {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pod := basePod()
	pod.UID = "uid-1"
	pod.Spec.NodeName = "node-1"
	recs := make([]store.Record, n)
	for i := range n {
		ts := metav1.NewTime(base.Add(time.Duration(i) * time.Second))
		pod.ResourceVersion = fmt.Sprint(1000 + i)
		pod.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "runner", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: base},
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{"f:image":{}}}}}`)}},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &ts,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:containerStatuses":{},"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}}}}`)}},
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "build", RestartCount: int32(i), ContainerID: fmt.Sprintf("containerd://%064x", i),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}},
			{Name: "helper", Ready: i%2 == 0},
		}
		raw, _ := json.Marshal(pod)
		typ := store.Updated
		if i == 0 {
			typ = store.Added
		}
		recs[i] = store.Record{Seq: uint64(i + 1), Observed: ts.Time, Type: typ, APIVersion: "v1", Kind: "Pod",
			Namespace: "ci", Name: "job", UID: "uid-1", ResourceVersion: pod.ResourceVersion, Object: raw}
	}
	return recs
}

// BenchmarkReplay replays a pod with 1,000 revisions (the store's part of a
// diff, reading them, is BenchmarkHistory in store).
func BenchmarkReplay(b *testing.B) {
	recs := history(1000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Replay(Input{Pod: recs}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
