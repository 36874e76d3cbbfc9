package cloudexport

import (
	"fmt"
	"strings"
)

// The scenario the fixtures record (test/e2e TestCloudAuditExports), on the
// local control plane with the digester webhook:
//   - ci/runner-job-1: the seed case, a CI job pod deleted with Foreground
//     propagation whose finalizer the garbage collector cannot remove, the
//     digester webhook denying its PATCH again and again;
//   - ops/cache-flush: a pod deleted by a client impersonating
//     flush-controller;
//   - web/web-0: a pod a PodDisruptionBudget protects, whose eviction is
//     refused (429), then allowed once the budget is gone.
var Pods = []string{"ci/runner-job-1", "ops/cache-flush", "web/web-0"}

// Exports are the providers' files or directories, relative to the
// fixtures' directory, each imported on its own.
var Exports = []string{"gke/entries.json", "eks/filter-log-events.json", "eks/s3", "aks/aksauditadmin.json", "aks/storage"}

// Scenario names what the scenario's evidence must show.
type Scenario struct {
	Webhook          string // the webhook that denies the garbage collector
	Impersonated     string // the user the deletion was made as
	GarbageCollector string
}

// DefaultScenario is the recorded one's.
var DefaultScenario = Scenario{Webhook: "digester.podtrace.dev", Impersonated: "flush-controller", GarbageCollector: "system:serviceaccount:kube-system:generic-garbage-collector"}

// Check returns what the evidence read from the API server's own log
// fails to show: the webhook named as what denied the garbage collector's
// updates, more than one such attempt counted, the deletion made as the
// impersonated user, the eviction refused with 429.
func (s Scenario) Check(ev map[string]*PodEvidence) []string {
	var out []string
	for _, p := range Pods {
		if ev[p] == nil {
			return []string{p + ": no evidence"}
		}
	}
	job := ev["ci/runner-job-1"].Lifecycle
	var stuck bool
	for _, f := range job.Findings {
		if f.ID != "stuck-finalizer" {
			continue
		}
		stuck = true
		if len(f.Suspects) == 0 || f.Suspects[0].Name != s.Webhook {
			out = append(out, fmt.Sprintf("ci/runner-job-1: first suspect %+v, want webhook %s", f.Suspects, s.Webhook))
		}
		if len(f.Next) == 0 || !strings.HasPrefix(f.Next[0], fmt.Sprintf("confirmed by the audit log: webhook %q denied ", s.Webhook)) {
			out = append(out, fmt.Sprintf("ci/runner-job-1: next steps %q, want the webhook confirmed by the audit log first", f.Next))
		}
	}
	if !stuck {
		out = append(out, "ci/runner-job-1: no stuck-finalizer finding")
	}
	denied := 0
	if job.Audit != nil {
		for _, d := range job.Audit.Denied {
			if d.Webhook == s.Webhook && d.User == s.GarbageCollector && (d.Verb == "patch" || d.Verb == "update") {
				denied += d.Count
			}
		}
	}
	if denied < 2 {
		out = append(out, fmt.Sprintf("ci/runner-job-1: %d of the garbage collector's updates denied by %s, want at least 2", denied, s.Webhook))
	}
	var deleted bool
	for _, r := range ev["ops/cache-flush"].Requests {
		if r.Verb == "delete" && r.Subresource == "" && r.ImpersonatedUser == s.Impersonated && r.User != "" && r.Code < 300 {
			deleted = true
		}
	}
	if !deleted {
		out = append(out, fmt.Sprintf("ops/cache-flush: no DELETE made as %s by an impersonator: %+v", s.Impersonated, ev["ops/cache-flush"].Requests))
	}
	var named bool
	for _, f := range ev["ops/cache-flush"].Lifecycle.Findings {
		if f.ID == "ended" && f.Actor != nil && strings.HasPrefix(f.Actor.Who, s.Impersonated+" (impersonated by ") {
			named = true
		}
	}
	if !named {
		out = append(out, "ops/cache-flush: no ended finding naming the deleting user "+s.Impersonated+" and its impersonator")
	}
	refused := 0
	for _, d := range ev["web/web-0"].Failed {
		if d.Verb == "create" && d.Subresource == "eviction" && d.Code == 429 {
			refused += d.Count
		}
	}
	if refused == 0 {
		out = append(out, fmt.Sprintf("web/web-0: no eviction refused with 429: %+v", ev["web/web-0"].Failed))
	}
	return out
}
