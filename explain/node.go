package explain

// Nodes: a terminating pod on a node that is gone or stopped reporting
// (node-lost); a pod whose node went not ready under it (node-not-ready).

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// lostNode finds a terminating pod on a node that stopped reporting: no
// kubelet confirms the containers stopped, so the pod is never removed.
func lostNode(lc *diff.Lifecycle, in diff.Input) []Finding {
	if lc.Outcome != "Terminating" || lc.Node == "" {
		return nil
	}
	recs := in.RelatedNamed("Node", lc.Node)
	if len(recs) == 0 {
		return nil
	}
	last := recs[len(recs)-1]
	f := Finding{ID: "node-lost", Severity: Critical}
	if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
		f.Headline = fmt.Sprintf("terminating for %s on node %s, which was deleted", lc.Terminating, lc.Node)
		f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: "node " + lc.Node + " deleted"})
	} else {
		node, ok := decodeNode(last)
		if !ok {
			return nil
		}
		var ready *corev1.NodeCondition
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				ready = &node.Status.Conditions[i]
			}
		}
		if ready == nil || ready.Status == corev1.ConditionTrue {
			return nil
		}
		f.Headline = fmt.Sprintf("terminating for %s on node %s, which stopped reporting (Ready %s since %s)", lc.Terminating, lc.Node, ready.Status, ready.LastTransitionTime.UTC().Format(time.RFC3339))
		f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: strings.TrimSpace(fmt.Sprintf("node %s Ready=%s: %s %s", lc.Node, ready.Status, ready.Reason, ready.Message))})
		for _, t := range node.Spec.Taints {
			f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("node taint %s:%s", t.Key, t.Effect)})
		}
	}
	req, _ := lc.Phase(diff.PhaseDeletionRequested)
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	for _, g := range nodeNotReadyEvents(lc) {
		f.Evidence = append(f.Evidence, groupEvidence(g)...)
	}
	f.Next = []string{
		"no kubelet confirms that the containers stopped, so the API server keeps the pod until the node comes back or the node object is deleted",
		"bring the node back, or delete the Node object if the machine is gone (kubectl delete node " + lc.Node + "); as a last resort force-delete the pod (kubectl delete pod --grace-period=0 --force)",
	}
	return []Finding{f}
}

// nodeNotReadyEvents are the node lifecycle controller's NodeNotReady
// events on the pod: it records one on each pod of a node whose Ready
// condition left True, as it marks them not ready
// (controller/util/node.MarkPodsNotReady).
func nodeNotReadyEvents(lc *diff.Lifecycle) []warningGroup {
	var out []warningGroup
	for _, g := range warningGroups(lc) {
		if g.reason == "NodeNotReady" {
			out = append(out, g)
		}
	}
	return out
}

// nodeNotReady finds a pod whose node stopped being Ready under it, as
// the node lifecycle controller's NodeNotReady events on the pod say, and
// reads the node's recorded Ready condition then: from when, why, and
// whether it came back. A terminating pod on a node still not ready is
// node-lost's.
func nodeNotReady(lc *diff.Lifecycle, in diff.Input) []Finding {
	groups := nodeNotReadyEvents(lc)
	if len(groups) == 0 || lc.Node == "" || len(lostNode(lc, in)) > 0 {
		return nil
	}
	f := Finding{ID: "node-not-ready", Severity: Warning}
	for _, g := range groups {
		f.Evidence = append(f.Evidence, groupEvidence(g)...)
	}
	first := groups[0].occurrences[0].Time
	// The node's revisions: the first not Ready at or before the first
	// event (the transition), and the first Ready again after it.
	var down, up *corev1.NodeCondition
	var downRec, upRec store.Record
	var readyLater *store.Record // the first revision, Ready, recorded after the event
	for _, rec := range in.RelatedNamed("Node", lc.Node) {
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			f.Evidence = append(f.Evidence, Evidence{Seq: rec.Seq, Time: rec.Observed, Text: "node " + lc.Node + " deleted"})
			break
		}
		node, ok := decodeNode(rec)
		if !ok {
			continue
		}
		ready := readyCondition(node)
		if ready != nil && ready.Status == corev1.ConditionTrue && rec.Observed.After(first) && readyLater == nil && down == nil {
			readyLater = &rec
		}
		switch {
		case ready == nil:
		case ready.Status != corev1.ConditionTrue && (down == nil || up != nil) && !rec.Observed.After(first.Add(time.Minute)):
			down, downRec, up = ready, rec, nil
		case ready.Status == corev1.ConditionTrue && down != nil && up == nil:
			up, upRec = ready, rec
		}
	}
	switch {
	case down == nil && readyLater != nil:
		f.Headline = fmt.Sprintf("node %s went not ready while the pod was on it (NodeNotReady at %s), before the node's first recorded revision, which shows it Ready", lc.Node, first.UTC().Format(time.RFC3339))
		f.Evidence = append(f.Evidence, Evidence{Seq: readyLater.Seq, Time: readyLater.Observed, Text: "node " + lc.Node + " Ready=True, its first revision recorded after the event"})
	case down == nil:
		f.Headline = fmt.Sprintf("node %s went not ready while the pod was on it (NodeNotReady at %s); the node's recorded revisions do not say why", lc.Node, first.UTC().Format(time.RFC3339))
	default:
		since := down.LastTransitionTime.Time
		if since.IsZero() {
			since = downRec.Observed
		}
		f.Headline = fmt.Sprintf("node %s was not ready while the pod was on it: Ready %s (%s) from %s", lc.Node, down.Status, down.Reason, since.UTC().Format(time.RFC3339))
		f.Evidence = append(f.Evidence, Evidence{Seq: downRec.Seq, Time: downRec.Observed, Text: strings.TrimSpace(fmt.Sprintf("node %s Ready=%s: %s %s", lc.Node, down.Status, down.Reason, down.Message))})
		if node, ok := decodeNode(downRec); ok {
			for _, t := range node.Spec.Taints {
				f.Evidence = append(f.Evidence, Evidence{Seq: downRec.Seq, Time: downRec.Observed, Text: fmt.Sprintf("node taint %s:%s", t.Key, t.Effect)})
			}
		}
		if up != nil {
			f.Headline += fmt.Sprintf(" until %s, when it was Ready again", up.LastTransitionTime.UTC().Format(time.RFC3339))
			f.Evidence = append(f.Evidence, Evidence{Seq: upRec.Seq, Time: upRec.Observed, Text: fmt.Sprintf("node %s Ready=True again: %s", lc.Node, up.Reason)})
		} else {
			f.Headline += ", and still at the end of the recording"
		}
	}
	f.Next = []string{
		"the node controller marked the pod not ready: while the node does not report, what its containers do is not known to the API server; check the node (kubectl describe node " + lc.Node + ") and its kubelet",
		"a pod that does not tolerate node.kubernetes.io/unreachable or not-ready (NoExecute) is evicted after its tolerationSeconds (300 s unless the pod says otherwise)",
	}
	return []Finding{f}
}

// readyCondition is a node's Ready condition, or nil.
func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// decodeNode decodes a Node's revision.
func decodeNode(rec store.Record) (*corev1.Node, bool) {
	var node corev1.Node
	if json.Unmarshal(rec.Object, &node) != nil {
		return nil, false
	}
	return &node, true
}
