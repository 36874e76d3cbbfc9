package explain

// Scheduling: a pod never bound to a node (unschedulable), and which of
// the scheduler's filters each recorded node fails (nodefit.go).

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// unschedulable finds a pod that was never bound to a node, and says, for
// each node recorded when the scheduler last failed, which of the
// scheduler's filters it fails (fitNode). The scheduler's own message is
// kept whole in the evidence.
func unschedulable(lc *diff.Lifecycle, in diff.Input) []Finding {
	if lc.Node != "" {
		return scheduledLate(lc)
	}
	var evidence []Evidence
	for _, e := range lc.Events {
		if e.Reason == "FailedScheduling" {
			evidence = append(evidence, Evidence{Seq: e.Seq, Time: e.Time, Text: fmt.Sprintf("%s (x%d): %s", e.Reason, max(e.Count, 1), e.Message)})
		}
	}
	last := lc.Pods()[len(lc.Pods())-1]
	gated := false
	for _, c := range last.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			evidence = append(evidence, Evidence{Time: c.LastTransitionTime.Time, Text: fmt.Sprintf("condition PodScheduled=False %s: %s", c.Reason, c.Message)})
			gated = c.Reason == corev1.PodReasonSchedulingGated
		}
	}
	if len(evidence) == 0 {
		return nil
	}
	// The scheduler's word, shortened at a sentence's end at most.
	said := shorten(evidence[len(evidence)-1].Text, 160)
	f := Finding{ID: "unschedulable", Severity: Warning, Headline: "never scheduled: " + said, Evidence: evidence,
		Next: []string{"compare the pod's requests, nodeSelector, affinity and tolerations with the nodes' allocatable resources, labels and taints"}}
	if gated || len(last.Spec.SchedulingGates) > 0 {
		// The scheduler does not try a gated pod: no node is at fault.
		f.Next = []string{"the pod waits for its scheduling gates to be removed (spec.schedulingGates), by whoever added them"}
		return []Finding{f}
	}
	// A claim that is not bound holds the pod before any node does.
	var claims []claimState
	for _, c := range claimStates(lc, in) {
		if c.blocking != "" {
			claims = append(claims, c)
		}
	}
	if len(claims) > 0 {
		f.Headline = "never scheduled: " + claims[0].blocking
		for _, c := range claims {
			f.Evidence = append(f.Evidence, c.evidence...)
		}
		f.Next = []string{fmt.Sprintf("the scheduler places the pod only once its claims can bind: fix the claim (its StorageClass, a matching PersistentVolume) or create it; kubectl describe pvc -n %s %s", lc.Namespace, claims[0].name)}
		return []Finding{f}
	}
	t := scheduleTime(lc)
	fits := fitNodes(lc, in, t)
	if fits == nil {
		f.Evidence = append(f.Evidence, Evidence{Text: fmt.Sprintf("the trace holds no node recorded as of %s: the scheduler's message is all there is", t.UTC().Format(time.RFC3339))})
		return []Finding{f}
	}
	groups := groupFits(fits)
	var passing []string
	for _, nf := range fits {
		what := "passes every check podtrace makes (cordon, nodeSelector, required node affinity, taints, resources as far as recorded)"
		if len(nf.misfits) > 0 {
			var parts []string
			for _, m := range nf.misfits {
				part := m.verb + " " + m.rest
				if m.detail != "" {
					part += " (" + m.detail + ")"
				}
				parts = append(parts, part)
			}
			what = strings.Join(parts, ", ")
		} else {
			passing = append(passing, nf.name)
		}
		if nf.notReady != "" && len(nf.misfits) == 0 {
			what += "; it is not Ready (" + nf.notReady + ") but has no taint that keeps the pod off"
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: nf.rec.Seq, Time: nf.rec.Observed, Text: fmt.Sprintf("node %s, as recorded when the scheduler last failed: %s", nf.name, what)})
	}
	f.Next = remedies(groups)
	var clauses []string
	for _, g := range groups {
		clauses = append(clauses, g.text())
	}
	if len(passing) == 0 {
		f.Headline = "never scheduled: no node fits: " + strings.Join(clauses, "; ")
		return []Finding{f}
	}
	// Some node passes what podtrace checks: what else the scheduler
	// checks (pod affinity, topology spread, volumes, ports) is the cause,
	// and only its message says which.
	f.Next = append(f.Next, fmt.Sprintf("%s %s every check podtrace makes: the scheduler's message says what else rules %s out (pod affinity or anti-affinity, topology spread, volumes, ports)",
		strings.Join(passing, ", "), map[bool]string{true: "passes", false: "pass"}[len(passing) == 1], map[bool]string{true: "it", false: "them"}[len(passing) == 1]))
	return []Finding{f}
}

// scheduledLate explains the scheduler's failures on a pod it bound in
// the end: an info when it bound it within SchedulingAllowance of its
// creation (a node came, room was made), a warning after that.
func scheduledLate(lc *diff.Lifecycle) []Finding {
	var evidence []Evidence
	for _, g := range warningGroups(lc) {
		if g.reason == "FailedScheduling" {
			evidence = append(evidence, groupEvidence(g)...)
		}
	}
	bound, ok := lc.Phase(diff.PhaseScheduled)
	if len(evidence) == 0 || !ok {
		return nil
	}
	waited := diff.ObservedFor(lc.Gaps, lc.Steps[0].Time, bound.Time)
	f := Finding{ID: "unschedulable", Severity: Info, Evidence: evidence,
		Headline: fmt.Sprintf("scheduled %s after its first revision, once the scheduler found a node: it failed first", diff.Duration(waited))}
	if waited > SchedulingAllowance {
		f.Severity = Warning
		f.Headline = fmt.Sprintf("scheduled only %s after its first revision: the scheduler failed until then", diff.Duration(waited))
		f.Next = []string{"the scheduler's messages say what was missing until then (resources, a node, a volume): the cluster had no room for it for that long"}
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: bound.Seq, Time: bound.Time, Text: "scheduled " + bound.Detail})
	return []Finding{f}
}
