package explain

// Failure: a pod that ended in phase Failed, and why (failed, evicted,
// deadline-exceeded, preempted).

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// podFailed explains a pod that failed while not being deleted: evicted,
// preempted, past its deadline, or with containers that exited non-zero.
func podFailed(lc *diff.Lifecycle, in diff.Input) []Finding {
	p, ok := lc.Phase(diff.PhaseFailed)
	if !ok {
		return nil
	}
	var pod *corev1.Pod
	for i, s := range lc.Steps {
		if s.Seq == p.Seq {
			pod = lc.Pods()[i]
		}
	}
	if pod.DeletionTimestamp != nil {
		// Failed on its way out: the kubelet ends a deleted pod Failed when
		// a container exits non-zero on SIGTERM, or is killed at the grace
		// period (137). How it ended is the ended finding's.
		return nil
	}
	f := Finding{ID: "failed", Severity: Warning, Evidence: []Evidence{{Seq: p.Seq, Time: p.Time, Text: said("phase Failed", p.Detail)}}}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, Evidence{Time: c.LastTransitionTime.Time, Text: fmt.Sprintf("condition DisruptionTarget %s: %s", c.Reason, c.Message)})
		}
	}
	// The containers that exited non-zero, init containers first: they
	// say why in their logs, which the kubelet keeps while the pod exists.
	var exits []string
	for _, l := range statusLists(pod) {
		for _, s := range l.list {
			if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
				what := fmt.Sprintf("%s exited %d (%s)", containerNoun(s.Name, l.init), t.ExitCode, t.Reason)
				exits = append(exits, what)
				f.Evidence = append(f.Evidence, Evidence{Seq: p.Seq, Time: p.Time, Text: fmt.Sprintf("%s terminated: %s, %s", containerNoun(s.Name, l.init), t.Reason, exitText(t))})
				f.Next = append(f.Next, fmt.Sprintf("%s: read its logs while the pod exists: kubectl logs -n %s %s -c %s", what, lc.Namespace, lc.Name, s.Name))
			}
		}
	}
	if len(exits) > 0 && len(pod.Status.InitContainerStatuses) > 0 {
		// Main containers never start after an init container fails.
		for _, s := range pod.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && w.Reason == "PodInitializing" {
				f.Evidence = append(f.Evidence, Evidence{Seq: p.Seq, Time: p.Time, Text: "container " + s.Name + " never started: waiting PodInitializing"})
			}
		}
	}
	switch pod.Status.Reason {
	case "Evicted":
		f.ID, f.Headline = "evicted", said("evicted", pod.Status.Message)
		f.Next = []string{"check the node's pressure conditions and the pod's requests"}
	case "DeadlineExceeded":
		f.ID, f.Headline = "deadline-exceeded", said("failed by deadline", pod.Status.Message)
		f.Next = []string{"the pod ran longer than spec.activeDeadlineSeconds"}
		if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
			f.Headline = fmt.Sprintf("failed by deadline: active on its node longer than its spec.activeDeadlineSeconds (%ds) allows", *d)
			start := "its start"
			if pod.Status.StartTime != nil {
				start = stamp(pod.Status.StartTime.Time) + " (status.startTime)"
			}
			f.Evidence = append(f.Evidence, Evidence{Seq: p.Seq, Time: p.Time, Text: fmt.Sprintf("spec.activeDeadlineSeconds %d, counted from %s", *d, start)})
			f.Next = []string{fmt.Sprintf("the pod ran longer than spec.activeDeadlineSeconds (%ds) allows: raise it, or find why the work took longer", *d)}
		}
	case "Preempting", "Preempted":
		f.ID, f.Headline = "preempted", said("preempted", pod.Status.Message)
	default:
		switch {
		case pod.Status.Reason != "":
			f.Headline = said("failed: "+pod.Status.Reason, pod.Status.Message)
		case len(exits) > 0:
			f.Headline = "failed: " + strings.Join(exits, ", ")
		default:
			f.Headline = "failed: phase Failed, with no reason in the pod's status and no container that exited non-zero"
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Reason == "PreemptionByScheduler" {
				f.ID, f.Headline = "preempted", said("preempted by the scheduler", c.Message)
				f.Next = nil
			}
		}
	}
	f.Evidence = append(f.Evidence, eventsLike(lc, "Evicted", "Preempted", "DeadlineExceeded", "Killing")...)
	return []Finding{f}
}

// said is a headline and what Kubernetes said, if it said anything:
// "evicted: The node was low on resource: memory.", or "evicted".
func said(head, message string) string {
	if message = strings.TrimSpace(message); message != "" {
		return head + ": " + message
	}
	return head
}
