package explain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// How every pod ended: the ended finding names the mechanism that ended a
// pod (or asked it to end), the actor, and the evidence, each with how it
// is known. A mechanism is read from what Kubernetes writes when it uses
// it: the DisruptionTarget condition and its reason, a Job's Failed
// condition, a controller's own Event, the owner chain, the audit log.
// What the evidence does not decide is said to be unknown.

// mechanism is one way a pod ends, as the finding names it.
type mechanism struct {
	// name is Finding.Mechanism.
	name     string
	severity Severity
	// what is the headline: how the pod ended.
	what string
	// by says who uses this mechanism, from Kubernetes semantics: the
	// component that writes the condition or reason that names it.
	by string
}

// Mechanism names (Finding.Mechanism).
const (
	MechanismDelete            = "delete"
	MechanismScaleDown         = "scale-down"
	MechanismRollout           = "rollout"
	MechanismControllerDelete  = "controller-delete"
	MechanismGarbageCollection = "garbage-collection"
	MechanismPreemption        = "preemption"
	MechanismEvictionAPI       = "eviction-api"
	MechanismTaintEviction     = "taint-eviction"
	MechanismNodePressure      = "node-pressure-eviction"
	MechanismKubeletPreemption = "kubelet-preemption"
	MechanismNodeShutdown      = "node-shutdown"
	MechanismKubelet           = "kubelet-termination"
	MechanismPodGC             = "pod-gc"
	MechanismJobBackoffLimit   = "job-backoff-limit"
	MechanismJobDeadline       = "job-deadline"
	MechanismJobFailurePolicy  = "job-pod-failure-policy"
	MechanismJobFailed         = "job-failed"
	MechanismOrphaned          = "orphaned"
	MechanismNotObserved       = "not-observed"
)

// The reasons of the DisruptionTarget condition that k8s.io/api has no
// constant for, as the components that set them spell them.
const (
	// pkg/registry/core/pod/storage/eviction.go
	reasonEvictionByEvictionAPI = "EvictionByEvictionAPI"
	// pkg/controller/tainteviction/taint_eviction.go
	reasonDeletionByTaintManager = "DeletionByTaintManager"
	// pkg/controller/podgc/gc_controller.go
	reasonDeletionByPodGC = "DeletionByPodGC"
)

// disruptions are the mechanisms that announce themselves with the pod's
// DisruptionTarget condition, by its reason.
var disruptions = map[string]mechanism{
	corev1.PodReasonPreemptionByScheduler: {MechanismPreemption, Info, "preempted by the scheduler to make room for a higher-priority pod", "the scheduler"},
	reasonEvictionByEvictionAPI:           {MechanismEvictionAPI, Info, "evicted through the Eviction API (pods/eviction)", "the API server's eviction subresource, on a client's request"},
	reasonDeletionByTaintManager:          {MechanismTaintEviction, Info, "evicted for a NoExecute taint of its node that it does not tolerate (or tolerates for a while only)", "the taint eviction controller (kube-controller-manager)"},
	reasonDeletionByPodGC:                 {MechanismPodGC, Warning, "deleted by PodGC: its node no longer exists", "the pod garbage collector (kube-controller-manager)"},
	corev1.PodReasonTerminationByKubelet:  {MechanismKubelet, Warning, "terminated by the kubelet", "the kubelet"},
}

// kubeletReasons refine TerminationByKubelet by the status.reason the
// kubelet sets beside it (pkg/kubelet/eviction, preemption, nodeshutdown).
var kubeletReasons = map[string]mechanism{
	"Evicted":    {MechanismNodePressure, Warning, "evicted by the kubelet: its node ran short of a resource (node-pressure eviction)", "the kubelet's eviction manager"},
	"Preempting": {MechanismKubeletPreemption, Warning, "preempted by the kubelet to admit a critical pod", "the kubelet"},
	"Terminated": {MechanismNodeShutdown, Warning, "terminated by the kubelet for a graceful node shutdown", "the kubelet's node shutdown manager"},
}

// jobFailures are the reasons of a Job's Failed condition: the pods of a
// failed Job ended with it.
var jobFailures = map[string]mechanism{
	batchv1.JobReasonBackoffLimitExceeded:     {MechanismJobBackoffLimit, Warning, "its Job failed: more pods failed than spec.backoffLimit allows", "the job controller (kube-controller-manager)"},
	batchv1.JobReasonDeadlineExceeded:         {MechanismJobDeadline, Warning, "its Job failed: it ran longer than spec.activeDeadlineSeconds", "the job controller (kube-controller-manager)"},
	batchv1.JobReasonPodFailurePolicy:         {MechanismJobFailurePolicy, Warning, "its Job failed: a rule of spec.podFailurePolicy with action FailJob matched a failed pod", "the job controller (kube-controller-manager)"},
	batchv1.JobReasonMaxFailedIndexesExceeded: {MechanismJobFailed, Warning, "its Job failed: more indexes failed than spec.maxFailedIndexes allows", "the job controller (kube-controller-manager)"},
}

// deletions are the mechanisms of a DELETE of the pod that no condition
// announces.
var deletions = map[string]mechanism{
	MechanismDelete:            {MechanismDelete, Info, "deleted by a DELETE request", ""},
	MechanismScaleDown:         {MechanismScaleDown, Info, "deleted by its ReplicaSet's controller when the ReplicaSet was scaled down", "the ReplicaSet controller (kube-controller-manager)"},
	MechanismRollout:           {MechanismRollout, Info, "deleted by a rollout: its ReplicaSet is an older revision of its Deployment, scaled down", "the ReplicaSet controller (kube-controller-manager)"},
	MechanismControllerDelete:  {MechanismControllerDelete, Info, "deleted by its controller", ""},
	MechanismGarbageCollection: {MechanismGarbageCollection, Info, "deleted after its owner was: the garbage collector deletes an owner's dependents", "the garbage collector (kube-controller-manager)"},
	MechanismNotObserved:       {MechanismNotObserved, Info, "gone while the recorder was not watching: the deletion was not observed", ""},
	MechanismOrphaned:          {MechanismOrphaned, Info, "released by its controller: its controller ownerReference was removed", ""},
}

// controllerDeletes are the Events a controller records on its object when
// it deletes one of its pods: the reason and the message naming the pod
// (RealPodControl.DeletePod in pkg/controller/controller_utils.go for
// ReplicaSets, DaemonSets and Jobs; StatefulPodControl.recordPodEvent for
// StatefulSets).
var controllerDeletes = map[string]struct{ reason, message string }{
	"ReplicaSet":  {"SuccessfulDelete", "Deleted pod: %s"},
	"DaemonSet":   {"SuccessfulDelete", "Deleted pod: %s"},
	"Job":         {"SuccessfulDelete", "Deleted pod: %s"},
	"StatefulSet": {"SuccessfulDelete", "Delete Pod %s in StatefulSet %s successful"},
}

// ended finds how the pod ended, or was asked to: a pod deleted, gone,
// terminating, disrupted (DisruptionTarget), failed with its Job, or
// released by its controller.
func ended(lc *diff.Lifecycle, in diff.Input) []Finding {
	var out []Finding
	if f, ok := orphaned(lc, in); ok {
		out = append(out, f)
	}
	_, requested := lc.Phase(diff.PhaseDeletionRequested)
	gone := lc.Outcome == "Deleted" || lc.Outcome == diff.OutcomeGone
	var f Finding
	var ok bool
	if f, ok = disrupted(lc, in); !ok {
		if f, ok = jobFailed(lc, in); !ok {
			if !requested && !gone {
				return out
			}
			f = deleted(lc, in)
		}
	}
	return append(out, f)
}

// endedFinding starts a finding for mechanism m.
func endedFinding(m mechanism) Finding {
	return Finding{ID: "ended", Severity: m.severity, Mechanism: m.name, Headline: m.what}
}

// disruptionCondition returns the index of the first revision whose
// DisruptionTarget condition is True, and the condition.
func disruptionCondition(lc *diff.Lifecycle) (int, *corev1.PodCondition) {
	for i, p := range lc.Pods() {
		for j := range p.Status.Conditions {
			if c := &p.Status.Conditions[j]; c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
				return i, c
			}
		}
	}
	return -1, nil
}

// disrupted explains a pod with a DisruptionTarget condition: preempted,
// evicted, deleted by the taint eviction controller or PodGC, terminated
// by the kubelet.
func disrupted(lc *diff.Lifecycle, in diff.Input) (Finding, bool) {
	i, c := disruptionCondition(lc)
	if c == nil {
		return Finding{}, false
	}
	pod, step := lc.Pods()[i], lc.Steps[i]
	m, known := disruptions[c.Reason]
	if !known {
		m = mechanism{name: "disruption", severity: Info, what: "a disruption target: condition DisruptionTarget, reason " + c.Reason}
	}
	if c.Reason == corev1.PodReasonTerminationByKubelet {
		last := lc.Pods()[len(lc.Pods())-1]
		if k, ok := kubeletReasons[last.Status.Reason]; ok {
			m = k
		}
	}
	f := endedFinding(m)
	f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time,
		Text: fmt.Sprintf("condition DisruptionTarget=True, reason %s: %s", c.Reason, c.Message)})
	if pod.Status.Reason != "" {
		f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: fmt.Sprintf("status.reason %s: %s", pod.Status.Reason, pod.Status.Message)})
	}
	audit := auditOf(in)
	// The condition's writer, from managedFields: the component that
	// decided (the scheduler, a controller, the kubelet).
	writer := conditionWriter(lc, i)
	switch m.name {
	case MechanismEvictionAPI:
		// The API server adds the condition inside the eviction request: no
		// manager's entry records it, only the audit log names the client.
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "named only in the audit log, by its create of pods/eviction: podtrace import --audit-log FILE --db TRACE"}
		if r := audit.first("create", "eviction"); r != nil {
			a := r.Actor()
			f.Actor = &a
			f.Evidence = append(f.Evidence, Evidence{Time: r.Time, Text: fmt.Sprintf("audit log: eviction created by %s (%d)", r.Identity(), r.Code)})
		}
		for _, d := range audit.denied {
			if d.Subresource == "eviction" {
				f.Evidence = append(f.Evidence, Evidence{Time: d.First, Text: "audit log: " + d.Summary()})
			}
		}
		f.Evidence = append(f.Evidence, Evidence{Text: "PodDisruptionBudgets are not recorded: which budget allowed the eviction (or refused the attempts before it) is not known"})
	case MechanismPreemption:
		f.Actor = writer
		f.Evidence = append(f.Evidence, preemptor(lc, in, pod)...)
	case MechanismTaintEviction:
		f.Actor = writer
		f.Evidence = append(f.Evidence, taintEvidence(lc, in, pod, step.Time)...)
	default:
		f.Actor = writer
	}
	if f.Actor != nil && f.Actor.Basis == diff.BasisManagedFields && m.by != "" {
		// The manager says which binary wrote; the reason, which part of it.
		f.Actor.Detail = fmt.Sprintf("wrote the DisruptionTarget condition (%s): %s", c.Reason, m.by)
	}
	if f.Actor == nil {
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "no managedFields entry accounts for the DisruptionTarget condition; the audit log names the client"}
	}
	if m.name != MechanismEvictionAPI {
		// The DELETE that followed the condition.
		if r := audit.first("delete", ""); r != nil {
			f.Evidence = append(f.Evidence, Evidence{Time: r.Time, Text: fmt.Sprintf("audit log: DELETE by %s, %s (%d)", r.Identity(), r.Agent(), r.Code)})
		}
	}
	if lc.Node != "" {
		f.Evidence = append(f.Evidence, Evidence{Text: "on node " + lc.Node})
	}
	f.Evidence = append(f.Evidence, eventsLike(lc, "Preempted", "Evicted", "TaintManagerEviction", "Killing")...)
	f.Evidence = append(f.Evidence, deletionEvidence(lc)...)
	return f, true
}

// conditionWriter is the actor of revision i's DisruptionTarget
// condition: the managedFields manager whose entry owns it.
func conditionWriter(lc *diff.Lifecycle, i int) *diff.Actor {
	var prev []metav1.ManagedFieldsEntry
	if i > 0 {
		prev = lc.Pods()[i-1].ManagedFields
	}
	return diff.FieldWriter(prev, lc.Pods()[i].ManagedFields, "f:status", "f:conditions", `k:{"type":"DisruptionTarget"}`)
}

// RelatedPods returns the UIDs of the pods that the pod's events (recs)
// name as another party: an event's related object, or the preemptor
// that the scheduler's Preempted event names. The scheduler records that
// event through events.k8s.io with the preemptor as its related object,
// which the API server does not always keep; its note is
// "Preempted by pod UID on node NODE" (pkg/scheduler/framework/preemption,
// executor.go).
func RelatedPods(recs []store.Record) []string {
	var out []string
	for _, rec := range recs {
		if uid, _ := preemptorOf(rec); uid != "" && !slices.Contains(out, uid) {
			out = append(out, uid)
		}
	}
	return out
}

// preemptorOf returns the preemptor's UID that a Preempted event names,
// and how: "related object" or "event message".
func preemptorOf(rec store.Record) (string, string) {
	if !strings.Contains(string(rec.Object), `"Preempted"`) {
		return "", ""
	}
	var ev corev1.Event
	if json.Unmarshal(rec.Object, &ev) != nil || ev.Reason != "Preempted" {
		return "", ""
	}
	if ev.Related != nil && ev.Related.Kind == "Pod" && ev.Related.UID != "" {
		return string(ev.Related.UID), "the event's related object"
	}
	var uid, node string
	if n, _ := fmt.Sscanf(ev.Message, "Preempted by pod %s on node %s", &uid, &node); n == 2 {
		return uid, "the event's message"
	}
	return "", ""
}

// preemptor describes the pod the scheduler preempted this one for, as
// its Preempted event names it, and its priority, when it was recorded,
// against this pod's.
func preemptor(lc *diff.Lifecycle, in diff.Input, pod *corev1.Pod) []Evidence {
	mine := fmt.Sprintf("this pod's priority %s", priorityOf(pod))
	for _, rec := range in.Events {
		uid, how := preemptorOf(rec)
		if uid == "" {
			continue
		}
		recs := in.Related[uid]
		if len(recs) == 0 {
			return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("preemptor pod uid %s (named by %s) was not recorded; %s", uid, how, mine)}}
		}
		var p corev1.Pod
		if json.Unmarshal(recs[0].Object, &p) != nil {
			break
		}
		return []Evidence{{Seq: recs[0].Seq, Time: recs[0].Observed, Text: fmt.Sprintf("preemptor pod %s/%s (named by %s): priority %s; %s", p.Namespace, p.Name, how, priorityOf(&p), mine)}}
	}
	return []Evidence{{Text: "no Preempted event naming the preemptor was recorded; " + mine}}
}

func priorityOf(p *corev1.Pod) string {
	s := "unset"
	if p.Spec.Priority != nil {
		s = strconv.Itoa(int(*p.Spec.Priority))
	}
	if p.Spec.PriorityClassName != "" {
		s += " (PriorityClass " + p.Spec.PriorityClassName + ")"
	}
	return s
}

// taintEvidence names the NoExecute taints of the pod's node as recorded
// when the condition appeared, who set each, and how long the pod
// tolerated them.
func taintEvidence(lc *diff.Lifecycle, in diff.Input, pod *corev1.Pod, at time.Time) []Evidence {
	recs := in.RelatedNamed("Node", pod.Spec.NodeName)
	if len(recs) == 0 {
		return []Evidence{{Text: "node " + pod.Spec.NodeName + " was not recorded: its taints are not known"}}
	}
	var out []Evidence
	var prevMF []metav1.ManagedFieldsEntry
	seen := map[string]bool{}
	for _, rec := range recs {
		if rec.Observed.After(at.Add(time.Second)) {
			break
		}
		var node corev1.Node
		if json.Unmarshal(rec.Object, &node) != nil {
			continue
		}
		for _, t := range node.Spec.Taints {
			key := t.Key + "=" + t.Value + ":" + string(t.Effect)
			if t.Effect != corev1.TaintEffectNoExecute || seen[key] {
				continue
			}
			seen[key] = true
			who := "its writer unknown"
			if a := diff.FieldWriter(prevMF, node.ManagedFields, "f:spec", "f:taints"); a != nil {
				who = "set by " + a.Label()
			}
			tol := "not tolerated"
			for _, tl := range pod.Spec.Tolerations {
				if tl.ToleratesTaint(klog.Background(), &t, false) {
					tol = "tolerated without limit"
					if tl.TolerationSeconds != nil {
						tol = fmt.Sprintf("tolerated for tolerationSeconds %d", *tl.TolerationSeconds)
					}
				}
			}
			out = append(out, Evidence{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("node %s taint %s, %s; by the pod: %s", node.Name, key, who, tol)})
		}
		prevMF = node.ManagedFields
	}
	if len(out) == 0 {
		out = append(out, Evidence{Text: "no NoExecute taint of node " + pod.Spec.NodeName + " was recorded before the condition"})
	}
	return out
}

// jobFailed explains a pod of a failed Job: it failed, or was deleted once
// the Job failed.
func jobFailed(lc *diff.Lifecycle, in diff.Input) (Finding, bool) {
	owner := controllerRef(lc.Pods())
	if owner == nil || owner.Kind != "Job" {
		return Finding{}, false
	}
	recs := in.Related[string(owner.UID)]
	var prev []metav1.ManagedFieldsEntry
	for _, rec := range recs {
		var job batchv1.Job
		if json.Unmarshal(rec.Object, &job) != nil {
			continue
		}
		for _, c := range job.Status.Conditions {
			if c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue {
				continue
			}
			failed, fok := lc.Phase(diff.PhaseFailed)
			req, rok := lc.Phase(diff.PhaseDeletionRequested)
			// The pod ended with its Job: it failed (counted toward the
			// Job's failure), or its deletion came after the Job failed.
			if !fok && !(rok && !req.Time.Before(c.LastTransitionTime.Time)) {
				return Finding{}, false
			}
			m, ok := jobFailures[c.Reason]
			if !ok {
				m = mechanism{name: MechanismJobFailed, severity: Warning, what: "its Job failed: reason " + c.Reason}
			}
			f := endedFinding(m)
			f.Headline = fmt.Sprintf("%s (Job %s)", m.what, job.Name)
			f.Actor = diff.FieldWriter(prev, job.ManagedFields, "f:status", "f:conditions", `k:{"type":"Failed"}`)
			if f.Actor != nil {
				f.Actor.Detail = "wrote the Job's Failed condition: " + m.by
			} else {
				f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "no managedFields entry of the Job accounts for its Failed condition"}
			}
			f.Evidence = append(f.Evidence, Evidence{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("Job %s condition Failed=True, reason %s: %s", job.Name, c.Reason, c.Message)})
			if fok {
				f.Evidence = append(f.Evidence, Evidence{Seq: failed.Seq, Time: failed.Time, Text: "pod failed: " + failed.Detail})
			}
			spec := []string{}
			if job.Spec.BackoffLimit != nil {
				spec = append(spec, fmt.Sprintf("backoffLimit %d", *job.Spec.BackoffLimit))
			}
			if job.Spec.ActiveDeadlineSeconds != nil {
				spec = append(spec, fmt.Sprintf("activeDeadlineSeconds %d", *job.Spec.ActiveDeadlineSeconds))
			}
			if job.Spec.PodFailurePolicy != nil {
				spec = append(spec, fmt.Sprintf("podFailurePolicy with %d rules", len(job.Spec.PodFailurePolicy.Rules)))
			}
			spec = append(spec, fmt.Sprintf("failed %d, succeeded %d", job.Status.Failed, job.Status.Succeeded))
			f.Evidence = append(f.Evidence, Evidence{Seq: rec.Seq, Time: rec.Observed, Text: "Job " + job.Name + ": " + strings.Join(spec, ", ")})
			f.Evidence = append(f.Evidence, deletionEvidence(lc)...)
			f.Next = []string{"the Job failed: read why its pods failed (podtrace explain on each, kubectl logs), then fix and re-create the Job"}
			return f, true
		}
		prev = job.ManagedFields
	}
	return Finding{}, false
}

// controllerRef returns the pod's controller ownerReference as last
// recorded while it had one.
func controllerRef(pods []*corev1.Pod) *metav1.OwnerReference {
	for i := len(pods) - 1; i >= 0; i-- {
		if ref := metav1.GetControllerOfNoCopy(pods[i]); ref != nil {
			return ref
		}
	}
	return nil
}

// deleted explains a pod whose deletion was requested or that is gone
// with no DisruptionTarget condition: its owner was deleted first, its
// controller deleted it (scale-down, rollout), or a client did.
func deleted(lc *diff.Lifecycle, in diff.Input) Finding {
	req, requested := lc.Phase(diff.PhaseDeletionRequested)
	at := req.Time
	if !requested {
		at = lc.Steps[len(lc.Steps)-1].Time
	}
	audit := auditOf(in)
	del := audit.first("delete", "")
	var f Finding
	var evActor *diff.Actor
	owner := controllerRef(lc.Pods())
	if requested {
		// The controller when the deletion was asked for; one released
		// before is not the pod's.
		owner = nil
		for i := range lc.Pods() {
			if lc.Steps[i].Seq <= req.Seq {
				owner = metav1.GetControllerOfNoCopy(lc.Pods()[i])
			}
		}
	}
	switch {
	case owner != nil && ownerGoneBefore(in, owner, at):
		f = endedFinding(deletions[MechanismGarbageCollection])
		f.Evidence = append(f.Evidence, ownerGoneEvidence(in, owner)...)
	case owner != nil:
		m, ev := controllerDelete(lc, in, owner)
		if ev == nil {
			f = endedFinding(deletions[MechanismDelete])
			break
		}
		f = endedFinding(m)
		if m.name == MechanismControllerDelete {
			f.Headline = fmt.Sprintf("deleted by the controller of its %s %s", owner.Kind, owner.Name)
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: ev.Seq, Time: ev.Time, Text: fmt.Sprintf("event %s on %s %s: %s", ev.Reason, owner.Kind, owner.Name, ev.Message)})
		who := ev.Source
		if who == "" {
			who = "the " + owner.Kind + " controller"
		}
		evActor = &diff.Actor{Who: who, Basis: diff.BasisEvent, Detail: fmt.Sprintf("its %s event on %s %s", ev.Reason, owner.Kind, owner.Name)}
		f.Evidence = append(f.Evidence, rolloutEvidence(lc, in, owner, at, m.name)...)
	case !requested:
		f = endedFinding(deletions[MechanismNotObserved])
	default:
		f = endedFinding(deletions[MechanismDelete])
	}
	switch {
	case del != nil:
		a := del.Actor()
		f.Actor = &a
		f.Evidence = append(f.Evidence, Evidence{Time: del.Time, Text: fmt.Sprintf("audit log: DELETE by %s, %s (%d)", del.Identity(), del.Agent(), del.Code)})
	case evActor != nil:
		f.Actor = evActor
	case f.Mechanism == MechanismGarbageCollection:
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "the owner went first, and the garbage collector deletes the dependents of a deleted owner; only the audit log names the client"}
	case !requested:
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "the deletion was not observed; the audit log names the client"}
	default:
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "named only in the audit log (a DELETE leaves no managedFields entry): podtrace import --audit-log FILE --db TRACE"}
	}
	f.Evidence = append(f.Evidence, deletionEvidence(lc)...)
	return f
}

// deletionEvidence is the deletion request and the deletion, as recorded.
func deletionEvidence(lc *diff.Lifecycle) []Evidence {
	var out []Evidence
	if req, ok := lc.Phase(diff.PhaseDeletionRequested); ok {
		out = append(out, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	}
	if d, ok := lc.Phase(diff.PhaseDeleted); ok {
		text := "deleted"
		if d.Detail != "" {
			text += ": " + d.Detail
		}
		out = append(out, Evidence{Seq: d.Seq, Time: d.Time, Text: text})
	}
	return out
}

// ownerGoneBefore reports whether the owner was deleted, or its deletion
// requested, before at (a second of slack: the recorder sees the owner's
// and the pod's revisions from different watches).
func ownerGoneBefore(in diff.Input, owner *metav1.OwnerReference, at time.Time) bool {
	for _, rec := range in.Related[string(owner.UID)] {
		if rec.Observed.After(at.Add(time.Second)) {
			break
		}
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			return true
		}
		var m metav1.PartialObjectMetadata
		if json.Unmarshal(rec.Object, &m) == nil && m.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

func ownerGoneEvidence(in diff.Input, owner *metav1.OwnerReference) []Evidence {
	for _, rec := range in.Related[string(owner.UID)] {
		var m metav1.PartialObjectMetadata
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("owner %s %s deleted", owner.Kind, owner.Name)}}
		}
		if json.Unmarshal(rec.Object, &m) == nil && m.DeletionTimestamp != nil {
			return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("owner %s %s deletion requested (finalizers %v)", owner.Kind, owner.Name, m.Finalizers)}}
		}
	}
	return nil
}

// controllerDelete finds the owner's event saying it deleted the pod, and
// for a ReplicaSet whether a scale-down or a rollout made it.
func controllerDelete(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference) (mechanism, *diff.Event) {
	tmpl, ok := controllerDeletes[owner.Kind]
	if !ok {
		return mechanism{}, nil
	}
	args := []any{lc.Name}
	if strings.Count(tmpl.message, "%s") == 2 {
		args = append(args, owner.Name)
	}
	want := fmt.Sprintf(tmpl.message, args...)
	var ev *diff.Event
	for _, e := range diff.ReplayEvents(in.OwnerEvents[string(owner.UID)]) {
		if e.Reason == tmpl.reason && e.Message == want {
			e := e
			ev = &e
			break
		}
	}
	if ev == nil {
		return mechanism{}, nil
	}
	m := deletions[MechanismControllerDelete]
	if owner.Kind == "ReplicaSet" {
		switch {
		case olderRevision(in, owner, ev.Time):
			m = deletions[MechanismRollout]
		case replicasReduced(in, owner, lc.Steps[0].Time, ev.Time):
			m = deletions[MechanismScaleDown]
		}
	}
	return m, ev
}

// revisionAnnotation is the deployment controller's revision number of a
// Deployment and of each of its ReplicaSets.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// rsAt returns the ReplicaSet's revision last recorded by at (with a
// second of slack), and the one before it.
func rsAt(in diff.Input, uid string, at time.Time) (cur, prev *appsv1.ReplicaSet, rec store.Record) {
	for _, r := range in.Related[uid] {
		if r.Observed.After(at.Add(time.Second)) {
			break
		}
		var rs appsv1.ReplicaSet
		if json.Unmarshal(r.Object, &rs) != nil {
			continue
		}
		prev, cur, rec = cur, &rs, r
	}
	return cur, prev, rec
}

// deploymentAt returns the owner Deployment of rs as last recorded by at.
func deploymentAt(in diff.Input, rs *appsv1.ReplicaSet, at time.Time) (*appsv1.Deployment, store.Record) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != "Deployment" {
		return nil, store.Record{}
	}
	var d *appsv1.Deployment
	var rec store.Record
	for _, r := range in.Related[string(ref.UID)] {
		if r.Observed.After(at.Add(time.Second)) {
			break
		}
		var dep appsv1.Deployment
		if json.Unmarshal(r.Object, &dep) == nil {
			d, rec = &dep, r
		}
	}
	return d, rec
}

// olderRevision reports whether the ReplicaSet was an older revision of
// its Deployment at time at: the deployment controller numbers both, and
// a rollout scales the older ReplicaSets down.
func olderRevision(in diff.Input, owner *metav1.OwnerReference, at time.Time) bool {
	rs, _, _ := rsAt(in, string(owner.UID), at)
	if rs == nil {
		return false
	}
	d, _ := deploymentAt(in, rs, at)
	if d == nil {
		return false
	}
	mine, err1 := strconv.Atoi(rs.Annotations[revisionAnnotation])
	theirs, err2 := strconv.Atoi(d.Annotations[revisionAnnotation])
	return err1 == nil && err2 == nil && mine < theirs
}

// replicasReduced reports whether the ReplicaSet's spec.replicas went
// down at a revision recorded in the pod's life, from its first revision
// to at (with a second of slack: the watches of the ReplicaSet and of the
// pod deliver apart).
func replicasReduced(in diff.Input, owner *metav1.OwnerReference, from, at time.Time) bool {
	var prev *int32
	for _, r := range in.Related[string(owner.UID)] {
		if r.Observed.After(at.Add(time.Second)) {
			break
		}
		var rs appsv1.ReplicaSet
		if json.Unmarshal(r.Object, &rs) != nil || rs.Spec.Replicas == nil {
			continue
		}
		if prev != nil && *rs.Spec.Replicas < *prev && !r.Observed.Before(from) {
			return true
		}
		prev = rs.Spec.Replicas
	}
	return false
}

// rolloutEvidence says, for a pod of a ReplicaSet, what the owner chain
// shows: the ReplicaSet's replicas and who changed them, its revision
// against its Deployment's, the Deployment's scaling events.
func rolloutEvidence(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, at time.Time, mech string) []Evidence {
	if owner.Kind != "ReplicaSet" {
		return nil
	}
	var out []Evidence
	recs := in.Related[string(owner.UID)]
	if len(recs) == 0 {
		return []Evidence{{Text: "ReplicaSet " + owner.Name + " was not recorded"}}
	}
	// The revision where spec.replicas last went down, and its writer.
	var prev *appsv1.ReplicaSet
	var down *Evidence
	for _, r := range recs {
		if r.Observed.After(at.Add(time.Second)) {
			break
		}
		var rs appsv1.ReplicaSet
		if json.Unmarshal(r.Object, &rs) != nil {
			continue
		}
		if prev != nil && prev.Spec.Replicas != nil && rs.Spec.Replicas != nil && *rs.Spec.Replicas < *prev.Spec.Replicas {
			who := "writer unknown"
			if a := diff.FieldWriter(prev.ManagedFields, rs.ManagedFields, "f:spec", "f:replicas"); a != nil {
				who = "by " + a.Label()
			}
			down = &Evidence{Seq: r.Seq, Time: r.Observed, Text: fmt.Sprintf("ReplicaSet %s spec.replicas %d -> %d, %s", rs.Name, *prev.Spec.Replicas, *rs.Spec.Replicas, who)}
		}
		prev = &rs
	}
	if down != nil {
		out = append(out, *down)
	}
	rs, _, _ := rsAt(in, string(owner.UID), at)
	if rs == nil {
		return out
	}
	d, drec := deploymentAt(in, rs, at)
	if d == nil {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
			out = append(out, Evidence{Text: "Deployment " + ref.Name + " was not recorded"})
		}
		return out
	}
	out = append(out, Evidence{Seq: drec.Seq, Time: drec.Observed, Text: fmt.Sprintf("ReplicaSet %s at revision %s of Deployment %s, which is at revision %s with %d replicas",
		rs.Name, orUnknown(rs.Annotations[revisionAnnotation]), d.Name, orUnknown(d.Annotations[revisionAnnotation]), ptrOr(d.Spec.Replicas, 1))})
	if mech == MechanismScaleDown {
		// Who scaled the Deployment down.
		dr := in.Related[string(d.UID)]
		var pd *appsv1.Deployment
		for _, r := range dr {
			if r.Observed.After(at.Add(time.Second)) {
				break
			}
			var dep appsv1.Deployment
			if json.Unmarshal(r.Object, &dep) != nil {
				continue
			}
			if pd != nil && ptrOr(dep.Spec.Replicas, 1) < ptrOr(pd.Spec.Replicas, 1) {
				who := "writer unknown"
				if a := diff.FieldWriter(pd.ManagedFields, dep.ManagedFields, "f:spec", "f:replicas"); a != nil {
					who = "by " + a.Label()
				}
				out = append(out, Evidence{Seq: r.Seq, Time: r.Observed, Text: fmt.Sprintf("Deployment %s spec.replicas %d -> %d, %s", dep.Name, ptrOr(pd.Spec.Replicas, 1), ptrOr(dep.Spec.Replicas, 1), who)})
			}
			pd = &dep
		}
	}
	for _, e := range diff.ReplayEvents(in.OwnerEvents[string(d.UID)]) {
		// The deployment controller's "Scaled down replica set NAME ..."
		// (pkg/controller/deployment/sync.go) about this ReplicaSet.
		if e.Reason == "ScalingReplicaSet" && !e.Time.Before(lc.Steps[0].Time) && !e.Time.After(at.Add(time.Second)) &&
			slices.Contains(strings.Fields(e.Message), rs.Name) {
			out = append(out, Evidence{Seq: e.Seq, Time: e.Time, Text: fmt.Sprintf("event %s on Deployment %s: %s", e.Reason, d.Name, e.Message)})
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// orphaned finds the revision where the pod's controller ownerReference
// was removed: the controller released it (a label change made it stop
// matching the controller's selector), or a client removed it.
func orphaned(lc *diff.Lifecycle, in diff.Input) (Finding, bool) {
	for i := 1; i < len(lc.Pods()); i++ {
		before := metav1.GetControllerOfNoCopy(lc.Pods()[i-1])
		if before == nil || metav1.GetControllerOfNoCopy(lc.Pods()[i]) != nil {
			continue
		}
		if t := lc.Steps[i].Type; t == store.Deleted || t == store.DeletedUnknown {
			continue
		}
		step, pod := lc.Steps[i], lc.Pods()[i]
		f := endedFinding(deletions[MechanismOrphaned])
		f.Headline = fmt.Sprintf("released by its %s %s: its controller ownerReference was removed", before.Kind, before.Name)
		f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: fmt.Sprintf("ownerReference to %s %s (controller) removed", before.Kind, before.Name)})
		// The actor of that revision: the audit log's request when imported;
		// a request that only removes fields leaves no managedFields entry.
		a := step.Actors[0]
		if len(step.Actors) != 1 {
			a = diff.UnknownActor(step)
		}
		if r := auditOf(in).forRevision(step.ResourceVersion); r != nil {
			a = r.Actor()
		}
		f.Actor = &a
		// Why: the labels no longer match the owner's selector.
		if sel := ownerSelector(in, before, step.Time); sel != nil {
			if !sel.Matches(labels.Set(pod.Labels)) {
				text := fmt.Sprintf("labels %v no longer match %s %s's selector %s: its controller releases a pod that does not match", pod.Labels, before.Kind, before.Name, sel)
				for j := i; j > 0; j-- {
					if !sel.Matches(labels.Set(lc.Pods()[j].Labels)) && sel.Matches(labels.Set(lc.Pods()[j-1].Labels)) {
						if la := labelWriter(lc, j); la != nil {
							text += fmt.Sprintf("; the labels changed at #%d, by %s", lc.Steps[j].Seq, la.Label())
						}
						break
					}
				}
				f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: text})
			} else {
				f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: fmt.Sprintf("labels %v still match %s %s's selector %s: the controller did not release it for its labels", pod.Labels, before.Kind, before.Name, sel)})
			}
		}
		// Adopted again later?
		for j := i + 1; j < len(lc.Pods()); j++ {
			if ref := metav1.GetControllerOfNoCopy(lc.Pods()[j]); ref != nil {
				f.Evidence = append(f.Evidence, Evidence{Seq: lc.Steps[j].Seq, Time: lc.Steps[j].Time, Text: fmt.Sprintf("adopted by %s %s", ref.Kind, ref.Name)})
				break
			}
		}
		return f, true
	}
	return Finding{}, false
}

// labelWriter is the actor of step j's metadata.labels change.
func labelWriter(lc *diff.Lifecycle, j int) *diff.Actor {
	for _, c := range lc.Steps[j].Changes {
		if strings.HasPrefix(c.Path, "metadata.labels") && c.Manager != "" {
			for _, a := range lc.Steps[j].Actors {
				if a.Manager == c.Manager {
					return &a
				}
			}
		}
	}
	if len(lc.Steps[j].Actors) == 1 {
		return &lc.Steps[j].Actors[0]
	}
	return nil
}

// ownerSelector returns the selector of the owner as recorded by at.
func ownerSelector(in diff.Input, owner *metav1.OwnerReference, at time.Time) labels.Selector {
	var sel labels.Selector
	for _, r := range in.Related[string(owner.UID)] {
		if sel != nil && r.Observed.After(at.Add(time.Second)) {
			break
		}
		var o struct {
			Spec struct {
				Selector *metav1.LabelSelector `json:"selector"`
			} `json:"spec"`
		}
		if json.Unmarshal(r.Object, &o) != nil || o.Spec.Selector == nil {
			continue
		}
		if s, err := metav1.LabelSelectorAsSelector(o.Spec.Selector); err == nil {
			sel = s
		}
	}
	return sel
}

// audited is the pod's audit log, read for the ended finding: the
// successful requests and the refused ones.
type audited struct {
	requests []diff.AuditRequest
	denied   []diff.DeniedRequests
}

// auditOf reads the pod's imported audit events.
func auditOf(in diff.Input) audited {
	var a audited
	a.requests, a.denied = diff.ReadAudit(in.Audit)
	return a
}

// first returns the first successful request with that verb and
// subresource, or nil.
func (a audited) first(verb, subresource string) *diff.AuditRequest {
	for i := range a.requests {
		if r := &a.requests[i]; r.Verb == verb && r.Subresource == subresource {
			return r
		}
	}
	return nil
}

// forRevision returns the first successful request whose response carried
// the revision, or nil.
func (a audited) forRevision(rv string) *diff.AuditRequest {
	if rv == "" {
		return nil
	}
	for i := range a.requests {
		if r := &a.requests[i]; r.ResourceVersion == rv {
			return r
		}
	}
	return nil
}
