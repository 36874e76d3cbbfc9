package digester

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// pullSecret is the Secret the test pods name in imagePullSecrets.
func pullSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job-pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	}
}

// testPod is a job pod with tagged images in an init container and two
// containers, and one pull Secret.
func testPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: "job"},
		Spec: corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "job-pull"}},
			InitContainers:   []corev1.Container{{Name: "init-permissions", Image: "registry.example.com/runner-helper:x86_64-v17.0.0"}},
			Containers: []corev1.Container{
				{Name: "build", Image: "alpine:3.20"},
				{Name: "helper", Image: "registry.example.com/runner-helper:x86_64-v17.0.0"},
			},
		},
	}
}

// reviewBody encodes an AdmissionReview for a pod.
func reviewBody(t *testing.T, op admissionv1.Operation, pod *corev1.Pod) []byte {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("0f1e2d3c-0000-4000-8000-000000000001"),
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: pod.Namespace,
			Name:      pod.Name,
			Operation: op,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	if op == admissionv1.Update {
		review.Request.OldObject = runtime.RawExtension{Raw: raw}
	}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// post sends body to h and decodes the answer if the status is 200.
func post(t *testing.T, h http.Handler, body []byte) (int, *admissionv1.AdmissionReview) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return rec.Code, nil
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("decode answer %q: %v", rec.Body.String(), err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("answer is not an admission.k8s.io/v1 AdmissionReview with a response: %s", rec.Body.String())
	}
	return rec.Code, &out
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test ./examples/digester/ -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func TestHandlerCreatePinsImages(t *testing.T) {
	client := fake.NewClientset(pullSecret())
	code, out := post(t, NewHandler(client, nil), reviewBody(t, admissionv1.Create, testPod()))
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	resp := out.Response
	if !resp.Allowed || resp.Result != nil {
		t.Fatalf("allowed=%t result=%+v, want allowed with no result", resp.Allowed, resp.Result)
	}
	if resp.UID != "0f1e2d3c-0000-4000-8000-000000000001" {
		t.Errorf("uid %q, want the request's", resp.UID)
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Errorf("patchType %v, want JSONPatch", resp.PatchType)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, resp.Patch, "", "  "); err != nil {
		t.Fatalf("patch is not JSON: %v: %s", err, resp.Patch)
	}
	pretty.WriteByte('\n')
	golden(t, "create-patch.json", pretty.Bytes())
}

func TestHandlerLeavesPinnedImages(t *testing.T) {
	const pinned = "alpine@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	t.Run("all pinned", func(t *testing.T) {
		pod := testPod()
		pod.Spec.InitContainers[0].Image = pinned
		pod.Spec.Containers[0].Image = pinned
		pod.Spec.Containers[1].Image = pinned
		_, out := post(t, NewHandler(fake.NewClientset(pullSecret()), nil), reviewBody(t, admissionv1.Create, pod))
		if out == nil || !out.Response.Allowed || out.Response.Patch != nil || out.Response.PatchType != nil {
			t.Fatalf("got %+v, want allowed with no patch", out)
		}
	})
	t.Run("one pinned", func(t *testing.T) {
		pod := testPod()
		pod.Spec.Containers[0].Image = pinned
		_, out := post(t, NewHandler(fake.NewClientset(pullSecret()), nil), reviewBody(t, admissionv1.Create, pod))
		if out == nil || !out.Response.Allowed {
			t.Fatalf("got %+v, want allowed", out)
		}
		var ops []jsonPatchOp
		if err := json.Unmarshal(out.Response.Patch, &ops); err != nil {
			t.Fatal(err)
		}
		want := []jsonPatchOp{
			{Op: "replace", Path: "/spec/initContainers/0/image", Value: "registry.example.com/runner-helper@sha256:2b2b715167120d2846979597f82d59d672d8bd6588374144c04eb2602e2f00ae"},
			{Op: "replace", Path: "/spec/containers/1/image", Value: "registry.example.com/runner-helper@sha256:2b2b715167120d2846979597f82d59d672d8bd6588374144c04eb2602e2f00ae"},
		}
		if diff := cmp.Diff(want, ops); diff != "" {
			t.Errorf("patch mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestHandlerMissingSecretDenies(t *testing.T) {
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		t.Run(string(op), func(t *testing.T) {
			client := fake.NewClientset() // no pull Secret
			code, out := post(t, NewHandler(client, nil), reviewBody(t, op, testPod()))
			if code != http.StatusOK {
				t.Fatalf("status %d, want 200 with a denial inside", code)
			}
			resp := out.Response
			if resp.Allowed {
				t.Fatal("allowed, want denied")
			}
			if resp.Patch != nil {
				t.Errorf("patch %s, want none", resp.Patch)
			}
			want := &metav1.Status{Code: 500, Message: `failed to create keychain: secrets "job-pull" not found`}
			if diff := cmp.Diff(want, resp.Result); diff != "" {
				t.Errorf("result mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandlerUpdateAllowsWithoutPatch(t *testing.T) {
	client := fake.NewClientset(pullSecret())
	pod := testPod()
	pod.DeletionTimestamp = &metav1.Time{}
	pod.Finalizers = nil // the garbage collector's update, finalizer removed
	code, out := post(t, NewHandler(client, nil), reviewBody(t, admissionv1.Update, pod))
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	if !out.Response.Allowed || out.Response.Patch != nil || out.Response.PatchType != nil || out.Response.Result != nil {
		t.Errorf("got %+v, want allowed with no patch", out.Response)
	}
	// The keychain is built on UPDATE too: the Secret was read.
	var gets []string
	for _, a := range client.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok && a.GetResource().Resource == "secrets" {
			gets = append(gets, g.GetNamespace()+"/"+g.GetName())
		}
	}
	if diff := cmp.Diff([]string{"ci/job-pull"}, gets); diff != "" {
		t.Errorf("secret reads mismatch (-want +got):\n%s", diff)
	}
}

func TestHandlerMalformedReview(t *testing.T) {
	h := NewHandler(fake.NewClientset(pullSecret()), nil)
	tests := []struct {
		name string
		body string
	}{
		{"not json", `{"apiVersion":`},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`},
		{"v1beta1", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, _ := post(t, h, []byte(tt.body)); code != http.StatusBadRequest {
				t.Errorf("status %d, want 400", code)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MutatePath, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("status %d, want 405", rec.Code)
		}
	})
	t.Run("object not a pod", func(t *testing.T) {
		body := bytes.Replace(reviewBody(t, admissionv1.Create, testPod()), []byte(`"object":{`), []byte(`"object":{"spec":7,`), 1)
		code, out := post(t, h, body)
		if code != http.StatusOK || out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Code != 400 {
			t.Errorf("status %d, answer %+v; want 200 with a denial of code 400", code, out)
		}
	})
}

func TestHandlerKeychainLatencyEndsWithRequest(t *testing.T) {
	h := NewHandler(fake.NewClientset(pullSecret()), nil)
	h.KeychainLatency = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequest(http.MethodPost, MutatePath, bytes.NewReader(reviewBody(t, admissionv1.Create, testPod()))).WithContext(ctx)
	rec := httptest.NewRecorder()
	began := time.Now()
	h.ServeHTTP(rec, req)
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("answered after %s; the latency should end with the request", took)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("answer %q: %v", rec.Body.String(), err)
	}
	if out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Code != 500 {
		t.Errorf("got %+v, want denied with code 500", out.Response)
	}
}
