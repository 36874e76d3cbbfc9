package digester

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// maxReviewBytes bounds a request body; the API server sends at most a few
// MiB per object.
const maxReviewBytes = 8 << 20

// Handler is the digester's admission endpoint: an http.Handler that answers
// admission.k8s.io/v1 AdmissionReview requests for pods. See the package
// documentation for what it does.
type Handler struct {
	// KeychainLatency is slept before the pull Secrets are read, on every
	// pod CREATE and UPDATE. It stands in for what separated the real
	// digester's Secret lookup from the API server's call: a network hop
	// to a service, and the work the webhook did on the object first. A
	// loopback webhook without it answers so fast that the garbage
	// collector's finalizer removal sometimes reaches it before the pull
	// Secret is deleted (3 of 20 Foreground deletions on the local control
	// plane), and the pod then goes; with 5, 20 or 50 ms none did (40
	// deletions). NewHandler leaves it 0; Server sets
	// DefaultKeychainLatency.
	KeychainLatency time.Duration

	client kubernetes.Interface
	log    *slog.Logger
}

// DefaultKeychainLatency is the Server's default Handler.KeychainLatency.
const DefaultKeychainLatency = 50 * time.Millisecond

// NewHandler returns a Handler that looks pull Secrets up with client.
// A nil logger discards the log.
func NewHandler(client kubernetes.Interface, logger *slog.Logger) *Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{client: client, log: logger}
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// ServeHTTP decodes an AdmissionReview and answers it. A request that is not
// a POST gets 405; a body that is not an AdmissionReview with a request gets
// 400 (the API server then applies the webhook's failurePolicy).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "admission reviews are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil {
		http.Error(w, fmt.Sprintf("read admission review: %v", err), http.StatusBadRequest)
		return
	}
	if len(body) > maxReviewBytes {
		http.Error(w, "admission review too large", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, fmt.Sprintf("decode admission review: %v", err), http.StatusBadRequest)
		return
	}
	if review.Request == nil {
		http.Error(w, "admission review has no request", http.StatusBadRequest)
		return
	}
	if gv := review.APIVersion; gv != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" {
		http.Error(w, fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview, got apiVersion %q kind %q", gv, review.Kind), http.StatusBadRequest)
		return
	}

	resp := h.review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: resp,
	}
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode admission review: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// review decides one admission request.
func (h *Handler) review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	log := h.log.With("uid", req.UID, "operation", req.Operation, "namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username)
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" {
		log.Info("allowed: not a pod", "kind", req.Kind.String(), "subresource", req.SubResource)
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		log.Info("allowed: operation not handled")
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		log.Info("denied: object is not a pod", "err", err)
		return errored(http.StatusBadRequest, fmt.Errorf("decode pod: %w", err))
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = pod.Namespace
	}

	// Like the real digester: the keychain comes first, on every request,
	// whatever the operation, and a missing Secret is an error.
	if err := sleep(ctx, h.KeychainLatency); err != nil {
		return errored(http.StatusInternalServerError, fmt.Errorf("failed to create keychain: %w", err))
	}
	if err := h.keychain(ctx, namespace, pod.Spec.ImagePullSecrets); err != nil {
		err = fmt.Errorf("failed to create keychain: %w", err)
		log.Info("denied", "err", err)
		return errored(http.StatusInternalServerError, err)
	}
	if req.Operation != admissionv1.Create {
		log.Info("allowed: no change on update")
		return &admissionv1.AdmissionResponse{Allowed: true}
	}

	patch := pinPatch(&pod)
	if len(patch) == 0 {
		log.Info("allowed: every image pinned already")
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return errored(http.StatusInternalServerError, fmt.Errorf("encode patch: %w", err))
	}
	log.Info("allowed: pinned images", "images", len(patch))
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: data, PatchType: &pt}
}

// keychain stands in for building a registry keychain from the pod's pull
// Secrets: it reads each one and fails on the first it cannot read.
func (h *Handler) keychain(ctx context.Context, namespace string, refs []corev1.LocalObjectReference) error {
	for _, ref := range refs {
		if ref.Name == "" {
			continue
		}
		if _, err := h.client.CoreV1().Secrets(namespace).Get(ctx, ref.Name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// pinPatch returns the JSONPatch operations that replace each tagged image of
// the pod's init containers and containers with its digest form.
func pinPatch(pod *corev1.Pod) []jsonPatchOp {
	var ops []jsonPatchOp
	add := func(field string, containers []corev1.Container) {
		for i, c := range containers {
			if pinned, ok := Pin(c.Image); ok {
				ops = append(ops, jsonPatchOp{Op: "replace", Path: fmt.Sprintf("/spec/%s/%d/image", field, i), Value: pinned})
			}
		}
	}
	add("initContainers", pod.Spec.InitContainers)
	add("containers", pod.Spec.Containers)
	return ops
}

// errored is the answer controller-runtime's admission.Errored gives, which
// is what the real digester sent: not allowed, with a code and a message.
func errored(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Code: code, Message: err.Error()},
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
