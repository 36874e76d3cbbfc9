package otlp

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

func TestOwnerChain(t *testing.T) {
	yes, no := true, false
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{Kind: "ConfigMap", Name: "not-a-controller", UID: "cm", Controller: &no},
		{Kind: "ReplicaSet", Name: "web-7d9", UID: "rs", Controller: &yes},
	}}}
	rs := `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-7d9","uid":"rs","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"dep","controller":true}]}}`
	tests := []struct {
		name    string
		related map[string][]store.Record
		want    []Owner
	}{
		{name: "the ReplicaSet recorded: its Deployment too", related: map[string][]store.Record{
			"rs": {{Kind: "ReplicaSet", Object: []byte(`{"metadata":{"name":"web-7d9","uid":"rs"}}`)}, {Kind: "ReplicaSet", Object: []byte(rs)}},
		}, want: []Owner{{"ReplicaSet", "web-7d9", "rs"}, {"Deployment", "web", "dep"}}},
		{name: "the ReplicaSet not recorded: it alone", want: []Owner{{"ReplicaSet", "web-7d9", "rs"}}},
		{name: "an owner of itself: once", related: map[string][]store.Record{
			"rs": {{Kind: "ReplicaSet", Object: []byte(`{"metadata":{"ownerReferences":[{"kind":"ReplicaSet","name":"web-7d9","uid":"rs","controller":true}]}}`)}},
		}, want: []Owner{{"ReplicaSet", "web-7d9", "rs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ownerChain(pod, tt.related)); diff != "" {
				t.Errorf("ownerChain (-want +got):\n%s", diff)
			}
		})
	}
	if got := ownerChain(&corev1.Pod{}, nil); got != nil {
		t.Errorf("a pod without owners: %v", got)
	}
}
