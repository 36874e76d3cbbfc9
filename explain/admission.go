package explain

// Admission: the webhooks and admission policies that intercept the
// request a finding is about, as suspects, and the audit log's denials
// that confirm one (audit.go).

import (
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
)

// blockedRemoval names, as suspects, the webhooks and admission policies
// that intercept pod UPDATE in the pod's namespace: whoever removes a
// finalizer does it with an UPDATE of the pod, and each of them can deny
// it.
func blockedRemoval(f *Finding, lc *diff.Lifecycle, in diff.Input) {
	last := lc.Pods()[len(lc.Pods())-1]
	var prev *corev1.Pod
	if n := len(lc.Pods()); n > 1 {
		prev = lc.Pods()[n-2]
	}
	nsRecs := in.RelatedNamed("Namespace", lc.Namespace)
	req := admission.PodRequest(admissionv1.Update, "", prev, last, nsRecs, lc.RecordingEnd)
	f.Suspects = admission.MatchWebhooks(in.Webhooks, lc.RecordingEnd, req)
	for _, w := range f.Suspects {
		f.Next = append(f.Next, fmt.Sprintf("%s %s intercepts pod UPDATE here (failurePolicy %s): an error or denial from it blocks the finalizer removal; check its logs, and the API server's audit log for denied pod UPDATEs (responseStatus code 4xx/5xx)", strings.TrimSuffix(w.Kind, "Configuration"), w.Name, w.FailurePolicy))
	}
	policySuspects(f, in, lc.RecordingEnd, req)
	if len(f.Suspects) == 0 && (len(in.Webhooks) > 0 || len(in.Policies) > 0) {
		f.Evidence = append(f.Evidence, Evidence{Text: "no recorded admission webhook or admission policy intercepts pod UPDATE in this namespace"})
	}
	if missing := admission.UnrecordedPolicies(in.Sessions); len(missing) > 0 {
		f.Evidence = append(f.Evidence, Evidence{Text: fmt.Sprintf("%s were not recorded (the recorder was not permitted to watch them, or the API server does not serve them): one may intercept pod UPDATE unseen", strings.Join(missing, ", "))})
	}
}

// policySuspects adds to f the admission policies that intercept req, a
// pod UPDATE that removes a finalizer: those that can deny it as suspects,
// those that cannot as evidence.
func policySuspects(f *Finding, in diff.Input, t time.Time, req admission.Request) {
	deny, cannot, notes := admission.MatchPolicies(in.Policies, t, req)
	f.Suspects = append(f.Suspects, deny...)
	for _, w := range deny {
		how, check := fmt.Sprintf("failurePolicy %s: if its mutation fails for this UPDATE it blocks the finalizer removal", w.FailurePolicy), "mutations"
		if w.Kind == admission.KindValidatingPolicy {
			how = fmt.Sprintf("validationActions %s, failurePolicy %s: if a validation fails for this UPDATE, or its evaluation errors, it blocks the finalizer removal",
				strings.Join(w.ValidationActions, ", "), w.FailurePolicy)
			check = "validations"
		}
		f.Next = append(f.Next, fmt.Sprintf("%s %s (binding %s) intercepts pod UPDATE here (%s); check its %s against the pod, and the API server's audit log for pod UPDATEs denied with %q",
			w.Kind, w.Name, w.Configuration, how, check, policyDenialPrefix(w)))
	}
	for _, m := range cannot {
		f.Evidence = append(f.Evidence, Evidence{Text: fmt.Sprintf("%s %s (binding %s) intercepts pod UPDATE here but cannot block it: %s", m.Kind, m.Name, m.Configuration, m.Reason)})
	}
	for _, n := range notes {
		f.Evidence = append(f.Evidence, Evidence{Text: n})
	}
}

// policyDenialPrefix is how the API server's message for a request that
// policy w denied begins.
func policyDenialPrefix(w admission.Webhook) string {
	if w.Kind == admission.KindValidatingPolicy {
		return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request", w.Name, w.Configuration)
	}
	return fmt.Sprintf("policy '%s' with binding '%s' denied request", w.Name, w.Configuration)
}
