package explain

// Failure: a pod that ended in phase Failed, and why (failed, evicted,
// deadline-exceeded, preempted).

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// podFailed explains a pod that ended Failed: evicted, preempted, past its
// deadline, or with containers that exited non-zero.
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
	f := Finding{ID: "failed", Severity: Warning, Evidence: []Evidence{{Seq: p.Seq, Time: p.Time, Text: "phase Failed: " + p.Detail}}}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, Evidence{Time: c.LastTransitionTime.Time, Text: fmt.Sprintf("condition DisruptionTarget %s: %s", c.Reason, c.Message)})
		}
	}
	switch pod.Status.Reason {
	case "Evicted":
		f.ID, f.Headline = "evicted", "evicted: "+pod.Status.Message
		f.Next = []string{"check the node's pressure conditions and the pod's requests"}
	case "DeadlineExceeded":
		f.ID, f.Headline = "deadline-exceeded", "failed by deadline: "+pod.Status.Message
		f.Next = []string{"the pod ran longer than spec.activeDeadlineSeconds"}
	case "Preempting", "Preempted":
		f.ID, f.Headline = "preempted", "preempted: "+pod.Status.Message
	default:
		f.Headline = "failed: " + p.Detail
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Reason == "PreemptionByScheduler" {
				f.ID, f.Headline = "preempted", "preempted by the scheduler: "+c.Message
			}
		}
		if f.ID == "failed" {
			// The containers that exited non-zero say why in their logs,
			// which the kubelet keeps while the pod exists.
			for _, list := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
				for _, s := range list {
					if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
						f.Next = append(f.Next, fmt.Sprintf("container %s exited %d (%s): read its logs while the pod exists: kubectl logs -n %s %s -c %s", s.Name, t.ExitCode, t.Reason, lc.Namespace, lc.Name, s.Name))
					}
				}
			}
		}
	}
	f.Evidence = append(f.Evidence, eventsLike(lc, "Evicted", "Preempted", "DeadlineExceeded", "Killing")...)
	return []Finding{f}
}
