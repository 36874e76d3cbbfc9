package explain

// Deletion: a pod present past its grace period with no finalizer left to
// hold it and its node still reporting (deletion-stuck; deletion-slow when
// it went in the end): the kubelet did not confirm that its containers
// stopped. A finalizer's hold is stuck-finalizer's, a lost node
// node-lost's.

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// deletionUnconfirmed finds a pod whose deletion the kubelet did not
// confirm within its grace period and TerminationSlack: still present
// when the recording ended (deletion-stuck), or removed late
// (deletion-slow).
func deletionUnconfirmed(lc *diff.Lifecycle, in diff.Input) []Finding {
	req, ok := lc.Phase(diff.PhaseDeletionRequested)
	if !ok {
		return nil
	}
	past := PastGrace(lc)
	if past <= TerminationSlack {
		return nil
	}
	pods := lc.Pods()
	last := pods[len(pods)-1]
	lastStep := lc.Steps[len(lc.Steps)-1]
	gone := lastStep.Type == store.Deleted || lastStep.Type == store.DeletedUnknown
	// The revision the deletion waited at: the last one before the
	// removal, or the last one recorded.
	at := len(pods) - 1
	if gone && at > 0 {
		at--
	}
	held := pods[at]
	if !gone && len(last.Finalizers) > 0 {
		return nil // stuck-finalizer
	}
	if !gone && nodeLost(lc, in) {
		return nil // node-lost
	}
	deadline, grace := GraceDeadline(lc)
	f := Finding{ID: "deletion-stuck", Severity: Critical}
	stopped, detail := containersStopped(held)
	switch {
	case gone:
		f.ID, f.Severity = "deletion-slow", Warning
		f.Headline = fmt.Sprintf("removed %s past its grace period (%s)", diff.Duration(past), diff.Duration(grace))
	case lc.Node == "":
		f.Headline = fmt.Sprintf("Terminating %s past its grace period (%s), never bound to a node", diff.Duration(past), diff.Duration(grace))
	case stopped:
		f.Headline = fmt.Sprintf("Terminating %s past its grace period (%s) on node %s: its containers stopped, and no DELETE confirmed it", diff.Duration(past), diff.Duration(grace), lc.Node)
	default:
		f.Headline = fmt.Sprintf("Terminating %s past its grace period (%s) on node %s: the kubelet never reported its containers stopped", diff.Duration(past), diff.Duration(grace), lc.Node)
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	f.Evidence = append(f.Evidence, Evidence{Time: deadline, Text: fmt.Sprintf("grace period over (deletionTimestamp %s)", deadline.UTC().Format(time.RFC3339))})
	step := lc.Steps[at]
	if stopped {
		f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: "containers stopped: " + detail})
	} else {
		f.Evidence = append(f.Evidence, containerEvidence(step, held)...)
		for _, s := range held.Status.ContainerStatuses {
			if s.State.Running != nil {
				f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: fmt.Sprintf("container %s running since %s, as last recorded", s.Name, s.State.Running.StartedAt.UTC().Format(time.RFC3339))})
			}
		}
	}
	if len(held.Finalizers) > 0 {
		f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: fmt.Sprintf("finalizers %v", held.Finalizers)})
	}
	// What the kubelet said while stopping the pod.
	for _, g := range warningGroups(lc) {
		if !g.occurrences[len(g.occurrences)-1].Time.Before(req.Time.Add(-overlapSlack)) {
			f.Evidence = append(f.Evidence, groupEvidence(g)...)
		}
	}
	f.Evidence = append(f.Evidence, eventsLike(lc, "Killing")...)
	f.Evidence = append(f.Evidence, nodeEvidence(lc, in, deadline)...)
	f.Evidence = append(f.Evidence, gapEvidence(lc, req.Time)...)
	if gone {
		d, _ := lc.Phase(diff.PhaseDeleted)
		f.Evidence = append(f.Evidence, Evidence{Seq: d.Seq, Time: d.Time, Text: said("removed", d.Detail)})
		f.Next = []string{"the kubelet took longer than the grace period to stop the containers and confirm: it kills what is left at the grace period and confirms within seconds; check its log on node " + orUnknown(lc.Node) + " for that time"}
		if len(held.Finalizers) > 0 {
			f.Next = []string{fmt.Sprintf("finalizers %v held the pod until their owners removed them: check those controllers", held.Finalizers)}
		}
		return []Finding{f}
	}
	f.Evidence = append(f.Evidence, silence(lc))
	if lc.Node == "" {
		f.Next = []string{"the API server removes an unbound pod at once: check the API server (or an aggregated API) that serves pods"}
		return []Finding{f}
	}
	f.Next = []string{
		"the kubelet on node " + lc.Node + " confirms a deletion with a DELETE of grace period 0 once the containers stopped: check that it runs and reaches the API server (its log, systemctl status kubelet), and the container runtime (crictl ps, crictl pods)",
		"the node still reports Ready if its kubelet stopped only lately (the node monitor grace period): watch its Ready condition and Lease",
		"as a last resort, once sure the containers are gone: kubectl delete pod -n " + lc.Namespace + " " + lc.Name + " --grace-period=0 --force",
	}
	return []Finding{f}
}

// nodeLost reports whether the pod's node was deleted or stopped
// reporting, as last recorded (node-lost's case).
func nodeLost(lc *diff.Lifecycle, in diff.Input) bool {
	if lc.Node == "" {
		return false
	}
	recs := in.RelatedNamed("Node", lc.Node)
	if len(recs) == 0 {
		return false
	}
	rec := recs[len(recs)-1]
	if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
		return true
	}
	node, ok := decodeNode(rec)
	if !ok {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return false
}
