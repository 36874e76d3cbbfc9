package explain

// Nodes: a terminating pod on a node that is gone or stopped reporting
// (node-lost).

import (
	"encoding/json"
	"fmt"
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
		f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("node %s Ready=%s: %s %s", lc.Node, ready.Status, ready.Reason, ready.Message)})
		for _, t := range node.Spec.Taints {
			f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("node taint %s:%s", t.Key, t.Effect)})
		}
	}
	req, _ := lc.Phase(diff.PhaseDeletionRequested)
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	f.Next = []string{
		"no kubelet confirms that the containers stopped, so the API server keeps the pod until the node comes back or the node object is deleted",
		"bring the node back, or delete the Node object if the machine is gone (kubectl delete node " + lc.Node + "); as a last resort force-delete the pod (kubectl delete pod --grace-period=0 --force)",
	}
	return []Finding{f}
}

// decodeNode decodes a Node's revision.
func decodeNode(rec store.Record) (*corev1.Node, bool) {
	var node corev1.Node
	if json.Unmarshal(rec.Object, &node) != nil {
		return nil, false
	}
	return &node, true
}
