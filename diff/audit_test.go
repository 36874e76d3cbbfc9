package diff

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/store"
)

func TestPointerToPath(t *testing.T) {
	sent := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "build"}, {Name: "helper"}},
		Volumes:        []corev1.Volume{{Name: "cache"}},
	}}
	for _, tc := range []struct{ pointer, value, want string }{
		{"/spec/containers/0/image", "", "spec.containers[build].image"},
		{"/spec/containers/1/image", "", "spec.containers[helper].image"},
		{"/spec/initContainers/0/image", "", "spec.initContainers[init].image"},
		{"/spec/volumes/0", "", "spec.volumes[cache]"},
		{"/metadata/labels/app.kubernetes.io~1name", "", "metadata.labels[app.kubernetes.io/name]"},
		{"/spec/containers/7/image", "", ""},
		// A sidecar appended, or added at the end: named by its value.
		{"/spec/containers/-", `{"name":"istio-proxy","image":"proxy:1"}`, "spec.containers[istio-proxy]"},
		{"/spec/containers/2", `{"name":"istio-proxy"}`, "spec.containers[istio-proxy]"},
		{"/spec/volumes/-", `{"name":"istio-data"}`, "spec.volumes[istio-data]"},
		{"/spec/containers/-", `"not an object"`, ""},
	} {
		if got := pointerToPath(tc.pointer, json.RawMessage(tc.value), sent); got != tc.want {
			t.Errorf("pointerToPath(%q) = %q, want %q", tc.pointer, got, tc.want)
		}
	}
}

// TestApplyAuditDenied groups denied requests and leaves successful ones as
// requests linked to the revision with their resourceVersion.
func TestApplyAuditDenied(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 50, 27, 0, time.UTC)
	ev := func(id string, at time.Time, verb string, code int, msg, rv string) store.Record {
		e := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "verb": verb,
			"objectRef":      map[string]any{"resource": "pods", "namespace": "ci", "name": "p"},
			"user":           map[string]any{"username": "system:serviceaccount:kube-system:generic-garbage-collector"},
			"userAgent":      "kube-controller-manager",
			"responseStatus": map[string]any{"code": code, "message": msg},
			"stageTimestamp": at,
		}
		b, _ := json.Marshal(e)
		return store.Record{Kind: "Event", APIVersion: "audit.k8s.io/v1", UID: id, Observed: at, ResourceVersion: rv, Object: b}
	}
	msg := `admission webhook "digester.podtrace.dev" denied the request: failed to create keychain: secrets "p-pull" not found`
	lc := &Lifecycle{Steps: []Step{{Seq: 7, ResourceVersion: "301"}}}
	in := Input{Audit: []store.Record{
		ev("a", t0, "delete", 200, "", "301"),
		ev("b", t0.Add(time.Second), "patch", 500, msg, ""),
		ev("c", t0.Add(73*time.Second), "patch", 500, msg, ""),
	}}
	applyAudit(lc, in, AdmissionOptions{})
	if lc.Audit == nil || len(lc.Audit.Requests) != 1 || lc.Audit.Requests[0].Seq != 7 {
		t.Fatalf("requests: %+v", lc.Audit)
	}
	want := `2 patch attempts by system:serviceaccount:kube-system:generic-garbage-collector denied (500): ` + msg + `, first 03:50:28, last 03:51:40`
	if len(lc.Audit.Denied) != 1 || lc.Audit.Denied[0].Summary() != want {
		t.Fatalf("denied (-want +got):\n-%s\n+%+v", want, lc.Audit.Denied)
	}
	if c := lc.Audit.Denied[0]; c.Webhook != "digester.podtrace.dev" {
		t.Errorf("denied by webhook %q, want digester.podtrace.dev", c.Webhook)
	}
}

// TestAuditImpersonation: an impersonated request is named by the
// identity it was authorized as, the impersonator after it, in the
// requests and in the denied groups.
func TestAuditImpersonation(t *testing.T) {
	denied := auditRecord("d", "patch", "", "admin", "flush-controller", "kubectl/v1.37.2", "")
	var ev map[string]any
	_ = json.Unmarshal(denied.Object, &ev)
	ev["responseStatus"] = map[string]any{"code": 403, "message": "forbidden"}
	denied.Object, _ = json.Marshal(ev)
	lc := &Lifecycle{Steps: []Step{{Seq: 2, ResourceVersion: "101"}}}
	applyAudit(lc, Input{Audit: []store.Record{
		auditRecord("a", "patch", "", "admin", "flush-controller", "kubectl/v1.37.2", "101"),
		auditRecord("b", "patch", "", "admin", "", "kubectl/v1.37.2", ""),
		denied,
	}}, AdmissionOptions{})
	if lc.Audit == nil || len(lc.Audit.Requests) != 2 || len(lc.Audit.Denied) != 1 {
		t.Fatalf("audit: %+v", lc.Audit)
	}
	if got, want := lc.Audit.Requests[0].Identity(), "flush-controller (impersonated by admin)"; got != want {
		t.Errorf("impersonated request by %q, want %q", got, want)
	}
	if got, want := lc.Audit.Requests[1].Identity(), "admin"; got != want {
		t.Errorf("request by %q, want %q", got, want)
	}
	if got, want := lc.Audit.Denied[0].Identity(), "flush-controller (impersonated by admin)"; got != want {
		t.Errorf("denied requests by %q, want %q", got, want)
	}
	if a := lc.Steps[0].Actors; len(a) != 1 || a[0].Who != "flush-controller (impersonated by admin)" || a[0].User != "flush-controller" || a[0].Impersonator != "admin" || a[0].Basis != BasisAuditLog {
		t.Errorf("actors of the revision = %+v, want flush-controller impersonated by admin, per the audit log", a)
	}
}

// TestRefusedBy: which failed requests the API server refused (the
// authorizer or an admission stage) and which failed without a refusal.
func TestRefusedBy(t *testing.T) {
	for _, tc := range []struct {
		name        string
		code        int
		msg         string
		annotations map[string]string
		want        string // "" for not refused
	}{
		{"success", 200, "", nil, ""},
		{"repeated DELETE of a pod already gone", 404, `pods "p" not found`, map[string]string{authorizationDecision: "allow"}, ""},
		{"write on a stale resourceVersion", 409, `Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again`, nil, ""},
		{"expired watch", 410, "too old resource version: 1 (2)", nil, ""},
		{"throttled", 429, "Too many requests, please try again later.", nil, ""},
		{"invalid update", 422, `Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than ...`, map[string]string{authorizationDecision: "allow"}, ""},
		{"storage timeout", 504, "Timeout: request did not complete within the allotted timeout", nil, ""},
		{"RBAC", 403, `pods "p" is forbidden: User "u" cannot patch resource "pods"`, map[string]string{authorizationDecision: "forbid"}, "authorization"},
		{"webhook denial, its own code", 500, `admission webhook "digester.podtrace.dev" denied the request: no`, nil, "admission webhook"},
		{"webhook denial without a code", 400, `admission webhook "w.example.com" denied the request without explanation`, nil, "admission webhook"},
		{"webhook unreachable, failurePolicy Fail", 500, `Internal error occurred: failed calling webhook "w.example.com": failed to call webhook: Post "https://w.default.svc:443/?timeout=10s": dial tcp: connection refused`, nil, "admission webhook call"},
		{"ValidatingAdmissionPolicy", 422, `pods "p" is forbidden: ValidatingAdmissionPolicy 'no-finalizers' with binding 'b' denied request: nope`, nil, "admission policy"},
		{"ValidatingAdmissionPolicy by annotation", 403, "denied", map[string]string{validationFailureAnnotation: `[{"message":"x","policy":"p","binding":"b","expressionIndex":0,"validationActions":["Deny"]}]`}, "admission policy"},
		{"ValidatingAdmissionPolicy warning on a failure of storage", 500, "etcdserver: request timed out", map[string]string{validationFailureAnnotation: `[{"validationActions":["Warn"]}]`}, ""},
		{"built-in admission plugin", 403, `pods "p" is forbidden: unable to create new content in namespace ci because it is being terminated`, map[string]string{authorizationDecision: "allow"}, "admission"},
		{"403 without the authorizer's annotation", 403, "forbidden", nil, "authorization or admission"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := auditEvent{Annotations: tc.annotations}
			ev.ResponseStatus.Code, ev.ResponseStatus.Message = tc.code, tc.msg
			got, ok := refusedBy(&ev)
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("refusedBy = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

// TestAuditNotFoundIsNoDenial: a controller's DELETE repeated after the
// pod was gone is answered 404; it is neither a denied attempt nor a
// request that produced a revision.
func TestAuditNotFoundIsNoDenial(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 50, 27, 0, time.UTC)
	ev := func(id string, at time.Time, code int, msg string, rv string) store.Record {
		e := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "verb": "delete",
			"objectRef":      map[string]any{"resource": "pods", "namespace": "ci", "name": "p"},
			"user":           map[string]any{"username": "system:serviceaccount:kube-system:job-controller"},
			"responseStatus": map[string]any{"code": code, "message": msg},
			"annotations":    map[string]any{authorizationDecision: "allow"},
			"stageTimestamp": at,
		}
		b, _ := json.Marshal(e)
		return store.Record{Kind: "Event", APIVersion: "audit.k8s.io/v1", UID: id, Observed: at, ResourceVersion: rv, Object: b}
	}
	lc := &Lifecycle{Steps: []Step{{Seq: 7, ResourceVersion: "301"}}}
	applyAudit(lc, Input{Audit: []store.Record{
		ev("a", t0, 200, "", "301"),
		ev("b", t0.Add(time.Second), 404, `pods "p" not found`, ""),
		ev("c", t0.Add(2*time.Second), 404, `pods "p" not found`, ""),
		ev("d", t0.Add(3*time.Second), 409, `Operation cannot be fulfilled on pods "p"`, ""),
	}}, AdmissionOptions{})
	if len(lc.Audit.Denied) != 0 {
		t.Errorf("denied %+v, want none: 404 and 409 are no refusal", lc.Audit.Denied)
	}
	if len(lc.Audit.Requests) != 1 || lc.Audit.Requests[0].AuditID != "a" {
		t.Errorf("requests %+v, want the one that succeeded", lc.Audit.Requests)
	}
}

// TestDenyingPolicyNotInAWebhooksMessage: a webhook's message that quotes
// a policy's does not name the policy.
func TestDenyingPolicyNotInAWebhooksMessage(t *testing.T) {
	if p, b := denyingPolicy(`admission webhook "w" denied the request: pods "p" is forbidden: ValidatingAdmissionPolicy 'x' with binding 'y' denied request`, nil); p != "" || b != "" {
		t.Errorf("denyingPolicy of a webhook's message = %q, %q; want none", p, b)
	}
}

// TestDecodeAuditEvent: the split decode gives what json.Unmarshal gives,
// on the lines of a real audit log and on lines it leaves to encoding/json.
func TestDecodeAuditEvent(t *testing.T) {
	b, err := os.ReadFile("../cmd/podtrace/app/testdata/audit/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines = append(lines,
		`{"verb":"delete","requestObject":{"gracePeriodSeconds":0},"responseObject":{"kind":"Pod"},"user":{"username":"a"}}`,
		`{"ver\u0062":"patch","requestObject":null}`,
		`  {"verb":"create","responseObject":{"kind":"Pod","metadata":{"name":"x\"y"}}}  `,
		`{"verb":"create"`,
		`{"verb":"create"} {}`,
	)
	for i, l := range lines {
		var want, got auditEvent
		werr := json.Unmarshal([]byte(l), &want)
		gerr := decodeAuditEvent([]byte(l), &got)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("line %d: error %v, want %v", i+1, gerr, werr)
			continue
		}
		if werr != nil {
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("line %d (-json.Unmarshal +decodeAuditEvent):\n%s", i+1, diff)
		}
	}
}

// TestAgentDropsTheIdentity: kube-controller-manager's user agents end in
// the controller's ServiceAccount, which the identity names already.
func TestAgentDropsTheIdentity(t *testing.T) {
	const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
	for _, tc := range []struct {
		r    AuditRequest
		want string
	}{
		{AuditRequest{User: gc, UserAgent: "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format/" + gc}, "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format"},
		{AuditRequest{User: "admin", ImpersonatedUser: gc, UserAgent: "proxy/1.0/" + gc}, "proxy/1.0"},
		{AuditRequest{User: "admin", UserAgent: "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef0"}, "kubectl/v1.37.2 (linux/amd64) kubernetes/abcdef0"},
		{AuditRequest{User: "scheduler", UserAgent: "/scheduler"}, "/scheduler"}, // nothing left: as recorded
	} {
		if got := tc.r.Agent(); got != tc.want {
			t.Errorf("Agent of %q by %q = %q, want %q", tc.r.UserAgent, tc.r.User, got, tc.want)
		}
		if a := tc.r.Actor(); strings.Count(a.Label(), "generic-garbage-collector") > 1 {
			t.Errorf("actor %q names the ServiceAccount twice", a.Label())
		}
	}
}
