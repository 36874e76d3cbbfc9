package explain

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

// TestApplyAuditPolicyDenied: requests that a ValidatingAdmissionPolicy
// denied are read from their validation_failure annotation (and their
// message, when the binding does not audit), and confirm the policy as the
// first suspect; failures that only audit are evidence.
func TestApplyAuditPolicyDenied(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 3, 50, 27, 0, time.UTC)
	ev := func(id string, at time.Time, verb string, code int, msg string, annotations map[string]string) store.Record {
		e := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "verb": verb,
			"objectRef":      map[string]any{"resource": "pods", "namespace": "ci", "name": "p"},
			"user":           map[string]any{"username": "system:serviceaccount:kube-system:generic-garbage-collector"},
			"responseStatus": map[string]any{"code": code, "message": msg},
			"stageTimestamp": at,
			"annotations":    annotations,
		}
		b, _ := json.Marshal(e)
		return store.Record{Kind: "Event", APIVersion: "audit.k8s.io/v1", UID: id, Observed: at, Object: b}
	}
	denied := `pods "p" is forbidden: ValidatingAdmissionPolicy 'keep-finalizers' with binding 'keep-finalizers-ci' denied request: finalizers stay`
	failure := func(binding string, actions ...string) map[string]string {
		b, _ := json.Marshal([]map[string]any{{"message": "finalizers stay", "policy": "keep-finalizers", "binding": binding, "expressionIndex": 0, "validationActions": actions}})
		// validation.policy.admission.k8s.io/validation_failure, as the
		// API server's admission plugin writes it.
		return map[string]string{"validation.policy.admission.k8s.io/validation_failure": string(b)}
	}
	tests := []struct {
		name string
		recs []store.Record
	}{
		{"annotation and message", []store.Record{
			ev("a", t0, "patch", 403, denied, failure("keep-finalizers-ci", "Deny", "Audit")),
			ev("b", t0.Add(time.Second), "patch", 403, denied, failure("keep-finalizers-ci", "Deny", "Audit")),
		}},
		{"message only (no Audit action)", []store.Record{
			ev("a", t0, "patch", 403, denied, nil),
			ev("b", t0.Add(time.Second), "patch", 403, denied, nil),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			other := admission.Webhook{Kind: "ValidatingWebhookConfiguration", Name: "other.example.com"}
			recorded := admission.Webhook{Kind: admission.KindValidatingPolicy, Name: "keep-finalizers", Configuration: "keep-finalizers-ci", FailurePolicy: "Fail", Rules: "[UPDATE] [pods]"}
			in := diff.Input{Pod: []store.Record{finRecord(t, 1, 0, store.Added, "Pod", finJobPod())},
				Audit: append(tc.recs, ev("c", t0.Add(time.Minute), "update", 200, "", failure("audit-only", "Audit")))}
			lc, err := diff.Replay(in, diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			fs := []Finding{{ID: "stuck-finalizer", Suspects: []admission.Webhook{other, recorded}}}
			auditFindings(fs, lc)
			f := fs[0]
			if len(lc.Audit.Denied) != 1 || lc.Audit.Denied[0].Policy != "keep-finalizers" || lc.Audit.Denied[0].Binding != "keep-finalizers-ci" || lc.Audit.Denied[0].Count != 2 {
				t.Fatalf("denied = %+v, want 2 patches by keep-finalizers through keep-finalizers-ci", lc.Audit.Denied)
			}
			if len(f.Suspects) != 2 || f.Suspects[0].Name != "keep-finalizers" || f.Suspects[0].Rules != "[UPDATE] [pods]" {
				t.Errorf("suspects = %+v, want the recorded policy first", f.Suspects)
			}
			want := "confirmed by the audit log: ValidatingAdmissionPolicy keep-finalizers (binding keep-finalizers-ci) denied 2 patch attempts by system:serviceaccount:kube-system:generic-garbage-collector (403)"
			if len(f.Next) == 0 || !strings.HasPrefix(f.Next[0], want) {
				t.Errorf("next = %q, want it to begin %q", f.Next, want)
			}
			if !evidenceHas(&f, "audit log: ValidatingAdmissionPolicy keep-finalizers (binding audit-only, validationActions Audit) failed on 1 update requests") {
				t.Errorf("evidence lacks the audit-only failure: %+v", f.Evidence)
			}
		})
	}
}

// TestBlockedRemovalPolicies: a finished Job pod held by job-tracking in a
// namespace where a ValidatingAdmissionPolicy binding with Deny covers pod
// UPDATE names the policy as a suspect beside the webhooks; when a session
// could not record policies, the finding says so.
func TestBlockedRemovalPolicies(t *testing.T) {
	deny := []admissionv1.ValidationAction{admissionv1.Deny}
	for _, tc := range []struct {
		name       string
		policies   []any
		unrecorded []string
		suspect    bool
		evidence   string
	}{
		{"policy with a Deny binding", []any{tracetest.VAP("keep", nil), tracetest.VAPB("keep-all", "keep", deny, nil)}, nil, true, ""},
		{"no policy, none recorded", nil, []string{admission.KindMutatingPolicy, admission.KindMutatingBinding, admission.KindValidatingPolicy, admission.KindValidatingBinding}, false,
			"MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding were not recorded"},
		{"no policy matches", []any{tracetest.VAP("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = tracetest.PodRules(admissionv1.Create)
		}), tracetest.VAPB("keep-all", "keep", deny, nil)}, nil, false, "no recorded admission webhook or admission policy intercepts pod UPDATE in this namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created := finJobPod()
			running := finRunning(created, "101")
			failed := finFinished(running, "102", corev1.PodFailed)
			pods := []store.Record{
				finRecord(t, 10, 0, store.Added, "Pod", created),
				finRecord(t, 11, 2*time.Second, store.Updated, "Pod", running),
				finRecord(t, 13, 5*time.Second, store.Updated, "Pod", failed),
			}
			in := finInput(t, pods, nil, false, 5*time.Second+FinalizerRemovalGrace+time.Second)
			in.Policies = tracetest.Policies(t, tc.policies...)
			for uid, recs := range in.Policies {
				for i := range recs {
					recs[i].Observed, recs[i].Type = finStart.Add(-time.Minute), store.Initial
				}
				in.Policies[uid] = recs
			}
			in.Sessions = []store.Session{{Started: finStart.Add(-time.Minute), Unrecorded: tc.unrecorded}}
			lc, err := Replay(in, diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := finFind(lc.Findings, "finalizer-not-removed")
			if f == nil {
				t.Fatalf("no finalizer-not-removed finding: %+v", lc.Findings)
			}
			got := false
			for _, w := range f.Suspects {
				if w.Kind == admission.KindValidatingPolicy && w.Name == "keep" && w.Configuration == "keep-all" {
					got = true
				}
			}
			if got != tc.suspect {
				t.Errorf("policy suspect = %v, want %v: %+v", got, tc.suspect, f.Suspects)
			}
			if tc.suspect && !hasText(f.Next, "ValidatingAdmissionPolicy keep (binding keep-all) intercepts pod UPDATE here") {
				t.Errorf("next does not name the policy: %q", f.Next)
			}
			if tc.evidence != "" && !evidenceHas(f, tc.evidence) {
				t.Errorf("evidence lacks %q: %+v", tc.evidence, f.Evidence)
			}
		})
	}
}
