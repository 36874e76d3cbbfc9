package digester

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestRunJob(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	// The fake tracker gives objects no UID; give the pod one, as the API
	// server would, so the ownerReferences can be checked.
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.CreateAction).GetObject().(*corev1.Pod).UID = types.UID("pod-uid")
		return false, nil, nil
	})
	pod, err := RunJob(ctx, client, JobOptions{Namespace: "ci", Name: "runner-abc"})
	if err != nil {
		t.Fatal(err)
	}

	// The runner's order: Secret first, then the pod, then the Secret's owner.
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	wantVerbs := []string{"create secrets", "create pods", "update secrets", "create configmaps", "create services"}
	if diff := cmp.Diff(wantVerbs, verbs); diff != "" {
		t.Errorf("API calls mismatch (-want +got):\n%s", diff)
	}

	if pod.UID != "pod-uid" {
		t.Errorf("returned pod uid %q, want the stored pod", pod.UID)
	}
	type container struct{ Name, Image string }
	var containers []container
	for _, c := range pod.Spec.Containers {
		containers = append(containers, container{c.Name, c.Image})
	}
	if diff := cmp.Diff([]container{{"build", "alpine:3.20"}, {"helper", "registry.example.com/runner-helper:x86_64-v17.0.0"}}, containers); diff != "" {
		t.Errorf("containers mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "runner-abc-pull"}}, pod.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("imagePullSecrets mismatch (-want +got):\n%s", diff)
	}
	if pod.Annotations["podtrace.dev/complete"] != "succeeded" {
		t.Errorf("annotations %v, want podtrace.dev/complete=succeeded", pod.Annotations)
	}

	owners := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "runner-abc", UID: "pod-uid"}}
	secret, err := client.CoreV1().Secrets("ci").Get(ctx, "runner-abc-pull", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret.Type != corev1.SecretTypeDockerConfigJson {
		t.Errorf("secret type %q, want %q", secret.Type, corev1.SecretTypeDockerConfigJson)
	}
	var auths struct {
		Auths map[string]struct{ Username, Auth string } `json:"auths"`
	}
	if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &auths); err != nil || auths.Auths["registry.example.com"].Auth == "" {
		t.Errorf("secret %s = %q (%v); want a credential for registry.example.com", corev1.DockerConfigJsonKey, secret.Data[corev1.DockerConfigJsonKey], err)
	}
	cm, err := client.CoreV1().ConfigMaps("ci").Get(ctx, "runner-abc-scripts", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("ci").Get(ctx, "runner-abc-svc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for kind, got := range map[string][]metav1.OwnerReference{"secret": secret.OwnerReferences, "configmap": cm.OwnerReferences, "service": svc.OwnerReferences} {
		if diff := cmp.Diff(owners, got); diff != "" {
			t.Errorf("%s ownerReferences mismatch (-want +got):\n%s", kind, diff)
		}
	}
}

func TestDeleteJob(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job", UID: "u1"}}
	client := fake.NewClientset(pod)
	if err := DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
		t.Fatal(err)
	}
	var got *metav1.DeleteOptions
	for _, a := range client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			opts := d.GetDeleteOptions()
			got = &opts
		}
	}
	if got == nil || got.PropagationPolicy == nil || *got.PropagationPolicy != metav1.DeletePropagationForeground ||
		got.Preconditions == nil || *got.Preconditions.UID != "u1" {
		t.Errorf("delete options %+v, want Foreground with a UID precondition", got)
	}
	if err := DeleteJob(ctx, client, pod, metav1.DeletePropagationBackground); err == nil {
		t.Error("deleting a pod already gone succeeded, want an error")
	}
}

func TestEnsureNamespace(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old", Labels: map[string]string{"team": "ci"}}})
	steps := []struct {
		name   string
		digest bool
		want   map[string]string
	}{
		{"new", true, map[string]string{"digest-resolution": "enabled"}},
		{"new", false, map[string]string{}},
		{"new", false, map[string]string{}},
		{"old", true, map[string]string{"team": "ci", "digest-resolution": "enabled"}},
		{"old", false, map[string]string{"team": "ci"}},
		{"fresh", false, nil},
	}
	for _, s := range steps {
		if _, err := EnsureNamespace(ctx, client, s.name, s.digest); err != nil {
			t.Fatalf("EnsureNamespace(%s, %t): %v", s.name, s.digest, err)
		}
		ns, err := client.CoreV1().Namespaces().Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(s.want, ns.Labels); diff != "" {
			t.Errorf("EnsureNamespace(%s, %t) labels mismatch (-want +got):\n%s", s.name, s.digest, diff)
		}
	}
}

// TestRunJobGenerateName: with a generateName the pull Secret and the pod
// get names made from it (the fake clientset makes none: a reactor does,
// as the API server would), the pod names its Secret, the ConfigMap and
// the Service are named after the pod.
func TestRunJobGenerateName(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	n := 0
	client.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(metav1.Object)
		if obj.GetName() == "" && obj.GetGenerateName() != "" {
			n++
			obj.SetName(obj.GetGenerateName() + []string{"", "s3c7x", "p0d9q"}[n])
		}
		return false, nil, nil
	})
	pod, err := RunJob(ctx, client, JobOptions{Namespace: "ci", GenerateName: "runner-gen-"})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "runner-gen-p0d9q" || pod.GenerateName != "runner-gen-" || pod.Labels[JobLabel] != "runner-gen" {
		t.Errorf("pod %s (generateName %q, labels %v), want runner-gen-p0d9q made from runner-gen-, labelled %s=runner-gen", pod.Name, pod.GenerateName, pod.Labels, JobLabel)
	}
	if diff := cmp.Diff([]corev1.LocalObjectReference{{Name: "runner-gen-s3c7x"}}, pod.Spec.ImagePullSecrets); diff != "" {
		t.Errorf("imagePullSecrets mismatch (-want +got):\n%s", diff)
	}
	if _, err := client.CoreV1().ConfigMaps("ci").Get(ctx, ConfigMapName(pod.Name), metav1.GetOptions{}); err != nil {
		t.Errorf("configmap: %v", err)
	}
	if _, err := client.CoreV1().Services("ci").Get(ctx, ServiceName(pod.Name), metav1.GetOptions{}); err != nil {
		t.Errorf("service: %v", err)
	}
	if _, err := RunJob(ctx, client, JobOptions{Namespace: "ci"}); err == nil {
		t.Errorf("a job with neither name nor generateName ran")
	}
}
