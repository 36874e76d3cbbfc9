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
	MechanismNamespaceDeletion = "namespace-deletion"
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
	MechanismNamespaceDeletion: {MechanismNamespaceDeletion, Info, "deleted with its namespace: the namespace controller deletes everything in a namespace being deleted", "the namespace controller (kube-controller-manager)"},
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
			forced(lc, &f)
		}
	}
	return append(out, f)
}

// forced notes a deletion asked for with grace period 0 while the pod was
// bound to a node and not finished (kubectl delete --force
// --grace-period=0): the API server removes the object at once, without
// the kubelet's confirmation that the containers stopped.
func forced(lc *diff.Lifecycle, f *Finding) {
	req, ok := lc.Phase(diff.PhaseDeletionRequested)
	if !ok {
		return
	}
	for i, s := range lc.Steps {
		if s.Seq != req.Seq {
			continue
		}
		pod := lc.Pods()[i]
		g := pod.DeletionGracePeriodSeconds
		if g == nil || *g != 0 || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return
		}
		f.Headline += ", with grace period 0 (a forced deletion)"
		f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Time, Text: fmt.Sprintf(
			"grace period 0 while the pod was bound to node %s and %s: the API server removed it without waiting for the kubelet to confirm that its containers stopped; they may have run on until the kubelet saw the deletion, which the recording cannot see",
			pod.Spec.NodeName, orUnknown(string(pod.Status.Phase)))})
		return
	}
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
	asked, others := lc.Deletion()
	// The condition's writer, from managedFields: the component that
	// decided (the scheduler, a controller, the kubelet).
	writer := conditionWriter(lc, i)
	switch m.name {
	case MechanismEvictionAPI:
		// The API server adds the condition inside the eviction request: no
		// manager's entry records it, only the audit log names the client.
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "named only in the audit log, by its create of pods/eviction: podtrace import --audit-log FILE --db TRACE"}
		if r := firstRequest(lc, "create", "eviction"); r != nil {
			a := r.Actor()
			f.Actor = &a
			f.Evidence = append(f.Evidence, Evidence{Time: r.Time, Text: fmt.Sprintf("audit log: eviction created by %s (%d)", r.Identity(), r.Code)})
		}
		if lc.Audit != nil {
			for _, d := range lc.Audit.Denied {
				if d.Subresource == "eviction" {
					f.Evidence = append(f.Evidence, Evidence{Time: d.First, Text: "audit log: " + d.Summary()})
				}
			}
		}
		f.Evidence = append(f.Evidence, budgetEvidence(lc, in, step.Time)...)
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
	if asked != nil && asked.Subresource != "eviction" {
		// The DELETE that followed the condition.
		f.Evidence = append(f.Evidence, Evidence{Time: asked.Time, Text: "audit log: " + deletionRequestText(asked, true)})
	}
	f.Evidence = append(f.Evidence, otherDeletions(asked, others)...)
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
	// The Job's first revision with Failed=True, found once per command:
	// its pods ask the same.
	recs := in.Related[string(owner.UID)]
	jf := diff.Memo(in.Histories, recs, func() jobFailure {
		var prev []metav1.ManagedFieldsEntry
		revs := diff.DecodeHistory[batchv1.Job](in.Histories, recs)
		for i := range revs {
			if revs[i].Object == nil {
				continue
			}
			if slices.ContainsFunc(revs[i].Object.Status.Conditions, func(c batchv1.JobCondition) bool {
				return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
			}) {
				return jobFailure{rev: &revs[i], prev: prev}
			}
			prev = revs[i].Object.ManagedFields
		}
		return jobFailure{}
	})
	if jf.rev != nil {
		rec, job, prev := *jf.rev, jf.rev.Object, jf.prev
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
	}
	return Finding{}, false
}

// jobFailure is a Job's first revision with Failed=True, and the
// managedFields of the revision before it.
type jobFailure struct {
	rev  *diff.Revision[batchv1.Job]
	prev []metav1.ManagedFieldsEntry
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
// with no DisruptionTarget condition: its namespace was being deleted,
// its owner was deleted first, its controller deleted it (scale-down,
// rollout, a Job's or StatefulSet's controller), or a client did. Its
// actor is whoever asked for the deletion (set its deletionTimestamp),
// never the DELETE that confirmed it: the audit log decides when
// imported, else the controller's own event, else the owners' recorded
// history, which is inference from the fields' semantics and says so.
func deleted(lc *diff.Lifecycle, in diff.Input) Finding {
	req, requested := lc.Phase(diff.PhaseDeletionRequested)
	at := req.Time
	if !requested {
		at = lc.Steps[len(lc.Steps)-1].Time
	}
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
	var f Finding
	// byFields is the actor the recorded fields or a controller's event
	// name; accounts, the identities under which the audit log may show
	// that actor's request (controllerAccounts).
	var byFields *diff.Actor
	var accounts []string
	if owner != nil {
		accounts = append(accounts, controllerAccounts[owner.Kind])
	}
	// What was observed by the time the deletion was asked for explains
	// it first; what the watches' slack alone lets in (observed just
	// after: the owner's watch and the pod's deliver apart) only when
	// nothing observed before does.
	nsRev, nsDeleting, nsStrict := namespaceDeletion(in, lc.Namespace, at)
	ownerGone, gone, goneStrict := Evidence{}, false, false
	var m mechanism
	var ev *diff.Event
	var inf inference
	var inferred bool
	if owner != nil {
		ownerGone, gone, goneStrict = ownerGoneBefore(in, owner, at)
		if m, ev = controllerDelete(lc, in, owner); ev == nil {
			inf, inferred = controllerInferred(lc, in, owner, at)
		}
	}
	namespace := func() {
		f = endedFinding(deletions[MechanismNamespaceDeletion])
		f.Headline = fmt.Sprintf("deleted with its namespace %s: the namespace controller deletes everything in a namespace being deleted", lc.Namespace)
		text := fmt.Sprintf("namespace %s deleted", lc.Namespace)
		if !nsRev.Deleted() {
			text = fmt.Sprintf("namespace %s deletion requested (deletionTimestamp %s, phase %s)", lc.Namespace,
				nsRev.Object.DeletionTimestamp.UTC().Format(time.RFC3339), orUnknown(string(nsRev.Object.Status.Phase)))
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: nsRev.Seq, Time: nsRev.Observed, Text: text})
		if gone {
			f.Evidence = append(f.Evidence, ownerGone)
		}
		byFields = &diff.Actor{Who: "the namespace controller (kube-controller-manager)", Basis: diff.BasisFieldSemantics,
			Detail: fmt.Sprintf("inferred: namespace %s was being deleted when this pod's deletion was asked for, and the namespace controller deletes every object in it (a deletecollection of its pods; the garbage collector deletes the dependents of the owners it deletes); the audit log names the request", lc.Namespace)}
		accounts = append(accounts, accountNamespaceController, accountGarbageCollector)
	}
	collected := func() {
		f = endedFinding(deletions[MechanismGarbageCollection])
		f.Evidence = append(f.Evidence, ownerGone)
		byFields = &diff.Actor{Who: "the garbage collector (kube-controller-manager)", Basis: diff.BasisFieldSemantics,
			Detail: fmt.Sprintf("inferred: its owner %s %s went before this pod's deletion was asked for, and the garbage collector deletes the dependents of a deleted owner; the audit log names the request", owner.Kind, owner.Name)}
		accounts = []string{accountGarbageCollector}
	}
	switch {
	case nsDeleting && nsStrict:
		namespace()
	case gone && goneStrict:
		collected()
	case ev != nil:
		f = endedFinding(m)
		if m.name == MechanismControllerDelete {
			f.Headline = fmt.Sprintf("deleted by the controller of its %s %s", owner.Kind, owner.Name)
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: ev.Seq, Time: ev.Time, Text: fmt.Sprintf("event %s on %s %s: %s", ev.Reason, owner.Kind, owner.Name, ev.Message)})
		who := ev.Source
		if who == "" {
			who = "the " + owner.Kind + " controller"
		}
		byFields = &diff.Actor{Who: who, Basis: diff.BasisEvent, Detail: fmt.Sprintf("its %s event on %s %s", ev.Reason, owner.Kind, owner.Name)}
		f.Evidence = append(f.Evidence, rolloutEvidence(lc, in, owner, at, m.name)...)
	case inferred:
		f = endedFinding(inf.m)
		f.Headline = inf.headline
		f.Evidence = append(f.Evidence, inf.evidence...)
		byFields = &diff.Actor{Who: inf.m.by, Basis: diff.BasisFieldSemantics, Detail: "inferred: " + inf.why +
			"; no event of the controller names this pod (client-go's event correlator aggregates a controller's events about one object, and drops them past a rate); the audit log names the request"}
	case nsDeleting:
		namespace()
	case gone:
		collected()
	case !requested:
		f = endedFinding(deletions[MechanismNotObserved])
	default:
		f = endedFinding(deletions[MechanismDelete])
	}
	asked, others := lc.Deletion()
	switch {
	case asked != nil:
		a := asked.Actor()
		if byFields != nil && !controllerAccount(asked, accounts) {
			// The fields (or the controller's event) pointed at a
			// controller; the request that asked came from someone else.
			// The audit log decides.
			what := "the recorded fields pointed at"
			if byFields.Basis == diff.BasisEvent {
				what = "the controller's event named"
			}
			f.Evidence = append(f.Evidence, Evidence{Time: asked.Time, Text: fmt.Sprintf("%s %s, but the audit log shows the deletion asked for by %s: not that controller's request", what, byFields.Who, asked.Identity())})
			m := deletions[MechanismDelete]
			f.Mechanism, f.Severity, f.Headline = m.name, m.severity, m.what
		}
		f.Actor = &a
		f.Evidence = append(f.Evidence, Evidence{Time: asked.Time, Text: "audit log: " + deletionRequestText(asked, true)})
	case byFields != nil:
		f.Actor = byFields
	case !requested:
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "the deletion was not observed; the audit log names the client"}
	default:
		f.Actor = &diff.Actor{Who: "unknown", Basis: diff.BasisUnknown, Detail: "named only in the audit log (a DELETE leaves no managedFields entry): podtrace import --audit-log FILE --db TRACE"}
	}
	f.Evidence = append(f.Evidence, otherDeletions(asked, others)...)
	f.Evidence = append(f.Evidence, deletionEvidence(lc)...)
	return f
}

// deletionRequestText describes a request that asked for a pod's
// deletion: "DELETE by admin, kubectl/v1.37 (200), grace period 30s".
func deletionRequestText(r *diff.AuditRequest, withCode bool) string {
	var b strings.Builder
	switch {
	case r.Verb == "deletecollection":
		b.WriteString("deletecollection of the namespace's pods")
		if r.Selector != "" {
			b.WriteString(" (" + r.Selector + ")")
		}
	case r.Subresource == "eviction":
		b.WriteString("eviction")
	default:
		b.WriteString("DELETE")
	}
	b.WriteString(" by " + r.Identity())
	if a := r.Agent(); a != "" {
		b.WriteString(", " + a)
	}
	if withCode {
		fmt.Fprintf(&b, " (%d)", r.Code)
	}
	if r.GracePeriodSeconds != nil {
		fmt.Fprintf(&b, ", grace period %ds", *r.GracePeriodSeconds)
	}
	return b.String()
}

// otherDeletions is the evidence of the successful deletion requests that
// did not ask for the deletion: those after it confirmed it (the node's
// kubelet deletes a pod with grace period 0 once its containers stopped)
// or forced it.
func otherDeletions(asked *diff.AuditRequest, others []diff.AuditRequest) []Evidence {
	var out []Evidence
	for i := range others {
		r := &others[i]
		what := "did not ask for the deletion"
		if asked != nil && r.Time.After(asked.Time) {
			what = "after the deletion was asked for: its confirmation, not its cause"
			if r.GracePeriodSeconds != nil && *r.GracePeriodSeconds == 0 {
				what += " (a node's kubelet deletes a pod with grace period 0 once its containers stopped)"
			}
		}
		out = append(out, Evidence{Time: r.Time, Text: fmt.Sprintf("audit log: %s (%d) %s", deletionRequestText(r, false), r.Code, what)})
	}
	return out
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

// The service accounts under which kube-controller-manager's controllers
// make their requests with --use-service-account-credentials (each
// controller's client is built as ClientOrDie(NAME), cmd/kube-controller-
// manager/app); without it they all act as system:kube-controller-manager.
const (
	accountNamespaceController = "namespace-controller"
	accountGarbageCollector    = "generic-garbage-collector"
	kubeControllerManager      = "system:kube-controller-manager"
	kubeSystemAccount          = "system:serviceaccount:kube-system:"
)

// controllerAccounts are the accounts of the controllers of pods, by the
// kind of their controller.
var controllerAccounts = map[string]string{
	"ReplicaSet":  "replicaset-controller",
	"StatefulSet": "statefulset-controller",
	"DaemonSet":   "daemon-set-controller",
	"Job":         "job-controller",
}

// controllerAccount reports whether r was made by kube-controller-manager
// as itself or as one of the controllers' accounts.
func controllerAccount(r *diff.AuditRequest, accounts []string) bool {
	user := r.User
	if r.ImpersonatedUser != "" {
		user = r.ImpersonatedUser
	}
	if user == kubeControllerManager {
		return true
	}
	name, ok := strings.CutPrefix(user, kubeSystemAccount)
	return ok && name != "" && slices.Contains(accounts, name)
}

// controllerDelete finds the owner's event saying it deleted the pod, and
// for a ReplicaSet whether a scale-down or a rollout made it. An event the
// correlator aggregated ("(combined from similar events): Deleted pod:
// NAME") names the last pod it counts.
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
	for _, e := range diff.ReplayOwnerEvents(in.Histories, string(owner.UID), in.OwnerEvents[string(owner.UID)]) {
		if e.Reason == tmpl.reason && strings.TrimPrefix(e.Message, combinedPrefix) == want {
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

// combinedPrefix starts the message of an Event that client-go's event
// correlator made of several similar ones (tools/record/events_cache.go).
const combinedPrefix = "(combined from similar events): "

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
		if r := requestOf(lc, step.Seq); r != nil {
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
	recs := in.Related[string(owner.UID)]
	var ls *metav1.LabelSelector
	switch owner.Kind {
	case "ReplicaSet":
		if r, _ := revAt(replicaSetOf(in, string(owner.UID)).revs, at); r != nil {
			ls = r.Object.Spec.Selector
		}
	case "StatefulSet":
		if r, _ := revAt(diff.DecodeHistory[appsv1.StatefulSet](in.Histories, recs), at); r != nil {
			ls = r.Object.Spec.Selector
		}
	case "DaemonSet":
		if r, _ := revAt(diff.DecodeHistory[appsv1.DaemonSet](in.Histories, recs), at); r != nil {
			ls = r.Object.Spec.Selector
		}
	case "Job":
		if r, _ := revAt(diff.DecodeHistory[batchv1.Job](in.Histories, recs), at); r != nil {
			ls = r.Object.Spec.Selector
		}
	}
	if ls == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil
	}
	return sel
}

// firstRequest returns the first successful request of the pod's audit
// log with that verb and subresource, or nil.
func firstRequest(lc *diff.Lifecycle, verb, subresource string) *diff.AuditRequest {
	if lc.Audit == nil {
		return nil
	}
	for i := range lc.Audit.Requests {
		if r := &lc.Audit.Requests[i]; r.Verb == verb && r.Subresource == subresource && r.Code < 400 {
			return r
		}
	}
	return nil
}

// requestOf returns the first successful request of the pod's audit log
// that produced the revision seq, or nil.
func requestOf(lc *diff.Lifecycle, seq uint64) *diff.AuditRequest {
	if lc.Audit == nil || seq == 0 {
		return nil
	}
	for i := range lc.Audit.Requests {
		if r := &lc.Audit.Requests[i]; r.Seq == seq && r.Code < 400 {
			return r
		}
	}
	return nil
}
