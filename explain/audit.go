package explain

import (
	"fmt"
	"strings"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
)

// auditFindings adds the denied requests of lc.Audit to the findings about
// a finalizer that was never removed. Without audit records it says those
// findings are inferred.
func auditFindings(fs []Finding, lc *diff.Lifecycle) {
	for i := range fs {
		f := &fs[i]
		if f.ID != "stuck-finalizer" && f.ID != "finalizer-not-removed" {
			continue
		}
		if lc.Audit == nil {
			f.Evidence = append(f.Evidence, Evidence{Text: "inferred without the API server's audit log, which would show the requests that failed: podtrace import --audit-log FILE --db TRACE adds it"})
			continue
		}
		auditFinding(f, lc.Audit)
	}
}

// auditFinding adds the denied requests to a finding about a finalizer that
// was never removed, and names the webhook that denied them as the first
// suspect, confirmed.
func auditFinding(f *Finding, a *diff.Audit) {
	policyFailureEvidence(f, a)
	var writes []diff.DeniedRequests
	for _, d := range a.Denied {
		if d.Verb == "update" || d.Verb == "patch" {
			writes = append(writes, d)
		}
	}
	if len(writes) == 0 {
		f.Evidence = append(f.Evidence, Evidence{Text: "the imported audit log holds no denied update of the pod: the finalizer's owner did not try to remove it, or the log does not cover that time"})
		return
	}
	for _, d := range writes {
		f.Evidence = append(f.Evidence, Evidence{Time: d.First, Text: "audit log: " + d.Summary()})
		if d.Policy != "" {
			confirmPolicy(f, d)
			continue
		}
		if d.Webhook == "" {
			continue
		}
		promoteSuspect(f, func(w admission.Webhook) bool { return w.Name == d.Webhook },
			admission.Webhook{Kind: "MutatingWebhookConfiguration", Name: d.Webhook, Configuration: a.Configurations[d.Webhook], Rules: "(configuration not recorded)"})
		next := fmt.Sprintf("confirmed by the audit log: webhook %q denied %d %s attempts by %s (%s): fix the webhook so that it allows this request, or take it off the namespace",
			d.Webhook, d.Count, d.Verb, d.Identity(), d.CodeText())
		if d.By == "admission webhook call" {
			next = fmt.Sprintf("confirmed by the audit log: the API server could not call webhook %q for %d %s attempts by %s (%s), and its failurePolicy refuses the request then: make the webhook reachable and answer in time, or take it off the namespace",
				d.Webhook, d.Count, d.Verb, d.Identity(), d.CodeText())
		}
		f.Next = append([]string{next}, f.Next...)
	}
}

// promoteSuspect moves the last suspect of f that is accepts to the front,
// or puts missing there when none is (the audit log names one the trace did
// not record).
func promoteSuspect(f *Finding, is func(admission.Webhook) bool, missing admission.Webhook) {
	idx := -1
	for i, w := range f.Suspects {
		if is(w) {
			idx = i
		}
	}
	w := missing
	if idx >= 0 {
		w = f.Suspects[idx]
		f.Suspects = append(f.Suspects[:idx], f.Suspects[idx+1:]...)
	}
	f.Suspects = append([]admission.Webhook{w}, f.Suspects...)
}

// confirmPolicy makes the ValidatingAdmissionPolicy that denied d the
// first suspect, confirmed.
func confirmPolicy(f *Finding, d diff.DeniedRequests) {
	promoteSuspect(f, func(w admission.Webhook) bool {
		return w.Kind == admission.KindValidatingPolicy && w.Name == d.Policy && (d.Binding == "" || w.Configuration == d.Binding)
	}, admission.Webhook{Kind: admission.KindValidatingPolicy, Name: d.Policy, Configuration: d.Binding, Rules: "(policy not recorded)"})
	through := ""
	if d.Binding != "" {
		through = " (binding " + d.Binding + ")"
	}
	f.Next = append([]string{fmt.Sprintf("confirmed by the audit log: ValidatingAdmissionPolicy %s%s denied %d %s attempts by %s (%s): change the policy's validations so that they allow this request, or its binding's matchResources so that it does not cover it",
		d.Policy, through, d.Count, d.Verb, d.Identity(), d.CodeText())}, f.Next...)
}

// policyFailureEvidence says which policies' validations failed on the
// pod's updates without denying them (Audit or Warn only), from the audit
// annotations.
func policyFailureEvidence(f *Finding, a *diff.Audit) {
	for _, pf := range a.PolicyFailures {
		if pf.Denied || pf.Verb != "update" && pf.Verb != "patch" {
			continue
		}
		f.Evidence = append(f.Evidence, Evidence{Time: pf.First, Text: fmt.Sprintf("audit log: ValidatingAdmissionPolicy %s (binding %s, validationActions %s) failed on %d %s requests by %s that went through: %s",
			pf.Policy, pf.Binding, strings.Join(pf.ValidationActions, ", "), pf.Count, pf.Verb, pf.User, pf.Message)})
	}
}
