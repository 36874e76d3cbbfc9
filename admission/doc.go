// Package admission matches a recorded request against the admission
// webhooks (Mutating- and ValidatingWebhookConfiguration) and admission
// policies (Mutating- and ValidatingAdmissionPolicy with their bindings)
// recorded in force at its time, as the API server's own matchers do:
// rules, namespace and object selectors, matchPolicy, failurePolicy,
// validationActions. MatchWebhooks and MatchPolicies return Webhooks, the
// suspects of a finding.
//
// It sits below both of its users, on store alone:
//
//	store <- admission <- diff    (who intercepted a pod's CREATE)
//	              ^------- explain (who could block an UPDATE, a deletion)
package admission
