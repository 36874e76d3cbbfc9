package digester

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRegister(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	if _, err := Register(ctx, client, Options{URL: "https://127.0.0.1:1234/mutate", CABundle: ca}); err != nil {
		t.Fatal(err)
	}
	api := client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	got, err := api.Get(ctx, "digester.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(got.Webhooks))
	}
	w := got.Webhooks[0]
	type summary struct {
		Name, URL, FailurePolicy, SideEffects, Reinvocation string
		CABundle                                            string
		Operations, Resources, Versions                     []admissionregistrationv1.OperationType
		Selector                                            map[string]string
		Timeout                                             int32
	}
	s := summary{
		Name: w.Name, URL: *w.ClientConfig.URL, CABundle: string(w.ClientConfig.CABundle),
		FailurePolicy: string(*w.FailurePolicy), SideEffects: string(*w.SideEffects), Reinvocation: string(*w.ReinvocationPolicy),
		Operations: w.Rules[0].Operations, Selector: w.NamespaceSelector.MatchLabels, Timeout: *w.TimeoutSeconds,
	}
	for _, r := range w.Rules[0].Resources {
		s.Resources = append(s.Resources, admissionregistrationv1.OperationType(r))
	}
	for _, v := range w.AdmissionReviewVersions {
		s.Versions = append(s.Versions, admissionregistrationv1.OperationType(v))
	}
	want := summary{
		Name: "digester.podtrace.dev", URL: "https://127.0.0.1:1234/mutate", CABundle: string(ca),
		FailurePolicy: "Ignore", SideEffects: "None", Reinvocation: "Never",
		Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
		Resources:  []admissionregistrationv1.OperationType{"pods"},
		Versions:   []admissionregistrationv1.OperationType{"v1"},
		Selector:   map[string]string{"digest-resolution": "enabled"},
		Timeout:    10,
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("webhook mismatch (-want +got):\n%s", diff)
	}

	// Registering again points the same configuration at the new server.
	if _, err := Register(ctx, client, Options{URL: "https://127.0.0.1:5678/mutate", CABundle: ca}); err != nil {
		t.Fatal(err)
	}
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || *list.Items[0].Webhooks[0].ClientConfig.URL != "https://127.0.0.1:5678/mutate" {
		t.Errorf("after a second Register: %d configurations, want 1 with the new URL", len(list.Items))
	}

	if err := Unregister(ctx, client, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Get(ctx, "digester.example.com", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Unregister, Get: %v; want not found", err)
	}
	if err := Unregister(ctx, client, ""); err != nil {
		t.Errorf("second Unregister: %v; want nil", err)
	}
	if _, err := Register(ctx, client, Options{URL: "https://127.0.0.1:1/mutate"}); err == nil {
		t.Error("Register without a CA bundle succeeded")
	}
}
