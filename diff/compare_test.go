package diff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/internal/tracetest"
)

func basePod() *corev1.Pod { return tracetest.BasePod() }

func TestComparePods(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   []Change
	}{{
		name:   "no change",
		mutate: func(p *corev1.Pod) {},
	}, {
		name: "resourceVersion and managedFields are not changes",
		mutate: func(p *corev1.Pod) {
			p.ResourceVersion = "11"
			p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x"}}
		},
	}, {
		name: "quantities compare by value",
		mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		},
	}, {
		name:   "tolerations are a set",
		mutate: func(p *corev1.Pod) { t := p.Spec.Tolerations; t[0], t[1] = t[1], t[0] },
	}, {
		name:   "containers keyed by name, whatever their order",
		mutate: func(p *corev1.Pod) { c := p.Spec.Containers; c[0], c[1] = c[1], c[0]; c[1].Image = "alpine@sha256:abc" },
		want:   []Change{{Path: "spec.containers[build].image", Op: OpChange, Old: "alpine:3.20", New: "alpine@sha256:abc"}},
	}, {
		name: "a container added whole",
		mutate: func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1"})
		},
		want: []Change{{Path: "spec.containers[proxy]", Op: OpAdd, New: `{"name":"proxy","image":"envoy:1","resources":{}}`}},
	}, {
		name:   "finalizers are a set",
		mutate: func(p *corev1.Pod) { p.Finalizers = []string{"foregroundDeletion"} },
		want:   []Change{{Path: "metadata.finalizers[foregroundDeletion]", Op: OpAdd}},
	}, {
		name:   "conditions keyed by type",
		mutate: func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionTrue },
		want:   []Change{{Path: "status.conditions[Ready].status", Op: OpChange, Old: "False", New: "True"}},
	}, {
		name:   "labels by key",
		mutate: func(p *corev1.Pod) { p.Labels["tier"] = "web"; delete(p.Labels, "app") },
		want: []Change{
			{Path: "metadata.labels[app]", Op: OpRemove, Old: "ci"},
			{Path: "metadata.labels[tier]", Op: OpAdd, New: "web"},
		},
	}, {
		name: "deletion",
		mutate: func(p *corev1.Pod) {
			g := int64(30)
			p.DeletionGracePeriodSeconds = &g
		},
		want: []Change{{Path: "metadata.deletionGracePeriodSeconds", Op: OpAdd, New: "30"}},
	}, {
		name:   "args are ordered",
		mutate: func(p *corev1.Pod) { p.Spec.Containers[1].Args = []string{"a", "b"} },
		want:   []Change{{Path: "spec.containers[helper].args", Op: OpAdd, New: `["a","b"]`}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := basePod()
			cur := basePod()
			tc.mutate(cur)
			got := ComparePods(old, cur)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(Change{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ComparePods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldPathsMatchManagedFields(t *testing.T) {
	old := basePod()
	cur := basePod()
	cur.Spec.Containers[0].Image = "alpine@sha256:abc"
	cur.Finalizers = []string{"foregroundDeletion"}
	cur.Labels["tier"] = "web"
	got := map[string]string{}
	for _, c := range ComparePods(old, cur) {
		got[c.Path] = fieldsString(c.fields)
	}
	want := map[string]string{
		"spec.containers[build].image":            `f:spec f:containers k:{"name":"build"} f:image`,
		"metadata.finalizers[foregroundDeletion]": `f:metadata f:finalizers v:"foregroundDeletion"`,
		"metadata.labels[tier]":                   `f:metadata f:labels f:tier`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("field paths (-want +got):\n%s", diff)
	}
}

func fieldsString(fp fieldPath) string {
	s := ""
	for i, f := range fp {
		if i > 0 {
			s += " "
		}
		s += f
	}
	return s
}

func TestAttribute(t *testing.T) {
	fields := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	t0 := metav1.Unix(100, 0)
	t1 := metav1.Unix(200, 0)
	prev := []metav1.ManagedFieldsEntry{
		{Manager: "runner", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t0, FieldsV1: fields(`{"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{"f:image":{}}}}}`)},
	}
	cur := append(append([]metav1.ManagedFieldsEntry{}, prev...),
		metav1.ManagedFieldsEntry{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t1,
			FieldsV1: fields(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}},"f:phase":{}}}`)})
	old := basePod()
	pod := basePod()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions[1].Status = corev1.ConditionTrue
	changes := ComparePods(old, pod)
	actors := attribute(changes, prev, cur)
	if len(actors) != 1 || actors[0].Manager != "kwok" || actors[0].Who != "the kubelet (kwok), status update" {
		t.Fatalf("actors = %+v, want kwok status update", actors)
	}
	for _, c := range changes {
		if c.Manager != "kwok" {
			t.Errorf("change %s attributed to %q, want kwok", c.Path, c.Manager)
		}
	}

	if actors[0].Basis != BasisManagedFields {
		t.Errorf("actor basis = %q, want managedFields", actors[0].Basis)
	}

	// No manager wrote: managedFields name no one (Replay asks the
	// fields' semantics, else says unknown).
	if got := attribute(changes, cur, cur); len(got) != 0 {
		t.Errorf("attribute with unchanged managedFields = %+v, want no actor", got)
	}
}

func TestContainerStatusesKeyedByName(t *testing.T) {
	old := basePod()
	old.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "build"}, {Name: "helper"}}
	cur := basePod()
	cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "helper", Ready: true}, {Name: "build"}}
	got := ComparePods(old, cur)
	want := []Change{{Path: "status.containerStatuses[helper].ready", Op: OpAdd, New: "true"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Change{})); diff != "" {
		t.Errorf("ComparePods (-want +got):\n%s", diff)
	}
}
