package diff

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/store"
)

// TestAuditFromExport reads events an export built: a code the export did
// not carry is not a success code, a failure it says by its own status is
// a failure, and the sources say what was missing.
func TestAuditFromExport(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 50, 27, 0, time.UTC)
	rec := func(id string, at time.Time, verb, sub string, status map[string]any, export map[string]any, rv string) store.Record {
		e := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "verb": verb, "stage": "ResponseComplete",
			"objectRef":      map[string]any{"resource": "pods", "namespace": "ci", "name": "p", "subresource": sub},
			"user":           map[string]any{"username": "admin@example.com"},
			"userAgent":      "kubectl/v1.37.2",
			"stageTimestamp": at,
		}
		if status != nil {
			e["responseStatus"] = status
		}
		if export != nil {
			e["podtraceExport"] = export
		}
		b, _ := json.Marshal(e)
		return store.Record{Kind: "Event", APIVersion: "audit.k8s.io/v1", UID: id, Observed: at, ResourceVersion: rv, Object: b}
	}
	gke := func(failed bool, status string, lacks ...string) map[string]any {
		return map[string]any{"format": "GKE Cloud Logging entry", "lacks": lacks, "failed": failed, "status": status}
	}
	budget := "Cannot evict pod as it would violate the pod's disruption budget."
	webhook := `admission webhook "w.example" denied the request: no`
	in := Input{Audit: []store.Record{
		// Succeeded: GKE keeps a gRPC OK, no HTTP code.
		rec("a", t0, "delete", "", nil, gke(false, "OK (0)", "requestReceivedTimestamp", "responseStatus.code"), "301"),
		// Failed, its HTTP code not carried: a failure all the same, and
		// an eviction refused by a PodDisruptionBudget, by the eviction
		// subresource's own message (the budget unnamed: the export
		// carries no causes).
		rec("b", t0.Add(time.Second), "create", "eviction", map[string]any{"status": "Failure", "message": budget}, gke(true, "RESOURCE_EXHAUSTED (8)", "requestReceivedTimestamp", "responseStatus.code"), ""),
		// Failed, its message naming the webhook that refused it.
		rec("c", t0.Add(2*time.Second), "patch", "", map[string]any{"status": "Failure", "message": webhook}, gke(true, "INTERNAL (13)", "requestReceivedTimestamp", "responseStatus.code"), ""),
		// From the API server's own log: no export.
		rec("d", t0.Add(3*time.Second), "patch", "", map[string]any{"code": 500, "message": webhook}, nil, ""),
	}}
	lc := &Lifecycle{Steps: []Step{{Seq: 7, ResourceVersion: "301"}}}
	applyAudit(lc, in, AdmissionOptions{})
	a := lc.Audit
	if a == nil || len(a.Requests) != 1 {
		t.Fatalf("requests: %+v", a)
	}
	if r := a.Requests[0]; r.Code != 0 || r.Seq != 7 || r.CodeText() != "HTTP code not in the export, its status OK (0)" {
		t.Errorf("request %+v (%s), want code unknown, linked to #7", r, r.CodeText())
	}
	var denied []string
	for _, d := range a.Denied {
		denied = append(denied, d.Summary())
	}
	want := []string{
		`1 create eviction attempt by admin@example.com denied (HTTP code not in the export, its status RESOURCE_EXHAUSTED (8)): ` + budget + `, first 03:50:28, last 03:50:28`,
		`1 patch attempt by admin@example.com denied (HTTP code not in the export, its status INTERNAL (13)): ` + webhook + `, first 03:50:29, last 03:50:29`,
		`1 patch attempt by admin@example.com denied (500): ` + webhook + `, first 03:50:30, last 03:50:30`,
	}
	if diff := cmp.Diff(want, denied); diff != "" {
		t.Errorf("denied (-want +got):\n%s", diff)
	}
	if len(a.Denied) > 0 && a.Denied[0].By != refusedByBudget {
		t.Errorf("the eviction refused by %q, want %q", a.Denied[0].By, refusedByBudget)
	}
	wantSources := []AuditSource{{Format: "GKE Cloud Logging entry", Events: 3, Lacks: map[string]int{"requestReceivedTimestamp": 3, "responseStatus.code": 3}}}
	if diff := cmp.Diff(wantSources, a.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if s := a.Sources[0].Summary(); !strings.Contains(s, "GKE Cloud Logging entry (3 events) does not carry: ") || !strings.Contains(s, "the HTTP status code (shown as 0) for 3") {
		t.Errorf("source summary %q", s)
	}

	// ReadAudit, for the ended finding: the refused eviction is a failed
	// request, not a success with code 0.
	reqs, failed := ReadAudit(in.Audit)
	if len(reqs) != 1 || reqs[0].AuditID != "a" {
		t.Errorf("ReadAudit requests %+v, want only a", reqs)
	}
	if len(failed) != 3 || failed[0].Subresource != "eviction" || failed[0].CodeText() != "HTTP code not in the export, its status RESOURCE_EXHAUSTED (8)" {
		t.Errorf("ReadAudit failed %+v", failed)
	}
}

// TestAuditActorWithoutImpersonation: an export without the impersonated
// user names the impersonator and says it cannot tell.
func TestAuditActorWithoutImpersonation(t *testing.T) {
	r := AuditRequest{Verb: "delete", User: "admin", UserAgent: "kubectl", Lacks: []string{"impersonatedUser"}}
	a := r.Actor()
	if a.Who != "admin" || !strings.Contains(a.Detail, "does not say whether the request impersonated another user") {
		t.Errorf("actor %+v", a)
	}
}
