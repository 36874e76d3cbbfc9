package diff

import (
	"github.com/podtrace/podtrace/admission"

	"fmt"
	"strings"
	"time"
)

// policySuspects adds to f the admission policies that intercept req, a
// pod UPDATE that removes a finalizer: those that can deny it as suspects,
// those that cannot as evidence.
func policySuspects(f *Finding, in Input, t time.Time, req admission.Request) {
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
