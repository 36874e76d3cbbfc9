package explain

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/diff"
)

// Evictions through the Eviction API (pods/eviction) and the
// PodDisruptionBudgets that allow or refuse them. The API server refuses
// an eviction that would take a budget's healthy pods below what it
// requires with 429 TooManyRequests and a DisruptionBudget cause naming
// the budget and its numbers; `kubectl drain` retries until it is allowed,
// which is how a drain hangs. No object records a refused eviction: only
// the audit log does. The budgets themselves are recorded
// (policy/v1 PodDisruptionBudget): their spec and status at each moment.

// evictionRefused finds the evictions of the pod that the API server
// refused, from the audit log: who tried, how often, which budget and
// why.
func evictionRefused(lc *diff.Lifecycle, in diff.Input) []Finding {
	if lc.Audit == nil {
		return nil
	}
	var refused []diff.DeniedRequests
	for _, d := range lc.Audit.Denied {
		if d.Subresource == "eviction" {
			refused = append(refused, d)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	n := 0
	var budgets []string
	for _, d := range refused {
		n += d.Count
		if d.Budget != "" && !slices.Contains(budgets, d.Budget) {
			budgets = append(budgets, d.Budget)
		}
	}
	f := Finding{ID: "eviction-refused", Severity: Warning}
	switch {
	case len(budgets) > 0:
		f.Headline = fmt.Sprintf("%s refused by PodDisruptionBudget %s", plural(n, "eviction"), strings.Join(budgets, ", "))
		if last := refused[len(refused)-1]; last.Budget != "" {
			f.Headline += ": it " + last.BudgetStatus
		}
	default:
		f.Headline = fmt.Sprintf("%s refused (%s): %s", plural(n, "eviction"), refused[0].CodeText(), refused[0].Message)
	}
	last := refused[0]
	for _, d := range refused {
		text := "audit log: " + d.Summary()
		if d.Budget != "" {
			text += fmt.Sprintf("; the budget %s %s", d.Budget, d.BudgetStatus)
		}
		f.Evidence = append(f.Evidence, Evidence{Time: d.First, Text: text})
		if d.Last.After(last.Last) {
			last = d
		}
	}
	a := diff.Actor{Who: last.Identity(), Basis: diff.BasisAuditLog, Detail: "create eviction", User: last.User, UserAgent: last.UserAgent}
	if last.UserAgent != "" {
		a.Detail += ", " + last.UserAgent
	}
	f.Actor = &a
	f.Evidence = append(f.Evidence, budgetEvidence(lc, in, last.Last)...)
	// Did an eviction go through later?
	if r := firstRequest(lc, "create", "eviction"); r != nil && r.Time.After(refused[0].First) {
		f.Evidence = append(f.Evidence, Evidence{Time: r.Time, Text: fmt.Sprintf("audit log: an eviction by %s allowed (%d) after the refusals", r.Identity(), r.Code)})
	} else if _, ok := lc.Phase(diff.PhaseDeletionRequested); !ok && lc.Outcome != "Deleted" && lc.Outcome != diff.OutcomeGone {
		f.Evidence = append(f.Evidence, Evidence{Text: "no eviction of this pod went through: it was still there when the recording ended"})
	}
	f.Next = []string{
		"kubectl drain (and any client of the Eviction API) retries a refused eviction until the budget allows one: it waits for as many healthy pods as the budget requires elsewhere",
		"check the budget (kubectl get pdb -o wide) against its workload's ready replicas; a budget that allows no disruption (maxUnavailable 0, or minAvailable equal to the replicas) blocks every eviction",
	}
	return []Finding{f}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// budgetEvidence describes the PodDisruptionBudgets of the pod's namespace
// that selected it, as recorded by at: spec and status. Without any
// recorded, it says why that may be.
func budgetEvidence(lc *diff.Lifecycle, in diff.Input, at time.Time) []Evidence {
	if len(in.Budgets) == 0 {
		for _, s := range in.Sessions {
			if slices.Contains(s.Unrecorded, "PodDisruptionBudget") {
				return []Evidence{{Text: "the recorder could not watch PodDisruptionBudgets: which budget allowed the eviction (or refused the attempts before it) is not known"}}
			}
		}
		return []Evidence{{Text: fmt.Sprintf("no PodDisruptionBudget was recorded in namespace %s (a recorder that predates recording them would not have recorded one)", lc.Namespace)}}
	}
	pod := podBefore(lc, at)
	uids := make([]string, 0, len(in.Budgets))
	for uid := range in.Budgets {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	var out []Evidence
	for _, uid := range uids {
		revs := diff.DecodeHistory[policyv1.PodDisruptionBudget](in.Histories, in.Budgets[uid])
		r, _ := revAt(revs, at)
		if r == nil || r.Deleted() {
			continue
		}
		pdb := r.Object
		if pdb.Spec.Selector == nil {
			continue // selects no pod (policy/v1)
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, Evidence{Seq: r.Seq, Time: r.Observed, Text: "PodDisruptionBudget " + budgetText(pdb)})
	}
	if len(out) == 0 {
		out = append(out, Evidence{Text: fmt.Sprintf("no PodDisruptionBudget recorded in namespace %s selected this pod then", lc.Namespace)})
	}
	return out
}

// budgetText is a budget's spec and status in one line.
func budgetText(pdb *policyv1.PodDisruptionBudget) string {
	var spec []string
	if pdb.Spec.MinAvailable != nil {
		spec = append(spec, "minAvailable "+pdb.Spec.MinAvailable.String())
	}
	if pdb.Spec.MaxUnavailable != nil {
		spec = append(spec, "maxUnavailable "+pdb.Spec.MaxUnavailable.String())
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil {
		spec = append(spec, "unhealthyPodEvictionPolicy "+string(*p))
	}
	st := pdb.Status
	return fmt.Sprintf("%s (%s, selector %s): disruptionsAllowed %d, currentHealthy %d, desiredHealthy %d, expectedPods %d",
		pdb.Name, strings.Join(spec, ", "), metav1.FormatLabelSelector(pdb.Spec.Selector), st.DisruptionsAllowed, st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods)
}
