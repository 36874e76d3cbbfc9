package otlp

import (
	"encoding/json"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// Pod is one pod incarnation to send as a trace: its replayed, explained
// and redacted lifecycle, and what its trace says of it that the lifecycle
// does not carry once its revisions are let go.
type Pod struct {
	// Lifecycle is the pod replayed (diff.Replay), explained and redacted.
	Lifecycle *explain.Lifecycle
	// Owners are its controller, that one's controller and so on
	// (ReplicaSet, then Deployment), as last recorded.
	Owners []Owner
	// Labels are its labels as last recorded, redacted by the caller.
	Labels map[string]string
	// Created is metadata.creationTimestamp (whole seconds): when the API
	// server stored the pod, after admission.
	Created time.Time
	// Phase and Reason are status.phase and status.reason as last recorded.
	Phase, Reason string
	// GraceEnd is metadata.deletionTimestamp as last recorded: when the
	// grace period of its deletion is over. Zero if deletion was not asked.
	GraceEnd time.Time
	// Finalizers are metadata.finalizers as last recorded.
	Finalizers []string
}

// Owner is one object in a pod's chain of controllers.
type Owner struct {
	Kind, Name, UID string
}

// PodOf reads what a Pod needs from a lifecycle whose revisions are still
// kept (before diff.Lifecycle.DropRevisions) and the input it was replayed
// from: the last revision's labels, phase, deletion and finalizers, and
// its owners, up the controller references of the owners recorded in
// in.Related. Labels are as recorded: the caller redacts them.
func PodOf(lc *explain.Lifecycle, in diff.Input) Pod {
	p := Pod{Lifecycle: lc}
	pods := lc.Pods()
	if len(pods) == 0 {
		return p
	}
	last := pods[len(pods)-1]
	p.Created = pods[0].CreationTimestamp.Time
	p.Labels = maps.Clone(last.Labels)
	p.Phase, p.Reason = string(last.Status.Phase), last.Status.Reason
	if last.DeletionTimestamp != nil {
		p.GraceEnd = last.DeletionTimestamp.Time
	}
	p.Finalizers = last.Finalizers
	p.Owners = ownerChain(last, in.Related)
	return p
}

// maxOwners bounds the walk up the controller references.
const maxOwners = 8

// ownerChain follows the controller references from the pod up, through
// the owners' last recorded revisions.
func ownerChain(pod *corev1.Pod, related map[string][]store.Record) []Owner {
	var out []Owner
	refs := pod.OwnerReferences
	seen := map[string]bool{}
	for len(out) < maxOwners {
		ref, ok := controllerRef(refs)
		if !ok || seen[string(ref.UID)] {
			return out
		}
		seen[string(ref.UID)] = true
		out = append(out, Owner{Kind: ref.Kind, Name: ref.Name, UID: string(ref.UID)})
		recs := related[string(ref.UID)]
		if len(recs) == 0 {
			return out // not recorded: its own owners are not known
		}
		var m metav1.PartialObjectMetadata
		if json.Unmarshal(recs[len(recs)-1].Object, &m) != nil {
			return out
		}
		refs = m.OwnerReferences
	}
	return out
}

// controllerRef returns the reference marked controller.
func controllerRef(refs []metav1.OwnerReference) (metav1.OwnerReference, bool) {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}
