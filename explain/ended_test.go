package explain

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

const (
	endRSUID  = types.UID("rs-uid-1")
	endDepUID = types.UID("dep-uid-1")
)

// endMF is a managedFields entry of manager, written at start+at.
func endMF(manager, subresource, fields string, at time.Duration) metav1.ManagedFieldsEntry {
	ts := metav1.NewTime(finStart.Add(at))
	op := metav1.ManagedFieldsOperationUpdate
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, Time: &ts,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// endPod is a running pod owned by the ReplicaSet web-1 (or by nothing).
func endPod(owned bool) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1-abcde", Namespace: finNS, UID: finPodUID, ResourceVersion: "100",
			CreationTimestamp: metav1.NewTime(finStart), Labels: map[string]string{"app": "web"},
			ManagedFields: []metav1.ManagedFieldsEntry{endMF("kube-controller-manager", "", `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, 0)}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "nginx", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(finStart)}}}}},
	}
	if owned {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: endRSUID, Controller: &yes, BlockOwnerDeletion: &yes}}
	}
	return p
}

func endRev(p *corev1.Pod, rv string) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	return p
}

// endDisrupt adds the DisruptionTarget condition, written by manager.
func endDisrupt(p *corev1.Pod, rv, reason, manager string, at time.Duration) *corev1.Pod {
	p = endRev(p, rv)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: "m"})
	p.ManagedFields = append(p.ManagedFields, endMF(manager, "status", `{"f:status":{"f:conditions":{"k:{\"type\":\"DisruptionTarget\"}":{".":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`, at))
	return p
}

// endRS is the ReplicaSet web-1 at a revision of its Deployment with
// replicas, last scaled by manager.
func endRS(rv string, replicas int32, revision, manager string) *appsv1.ReplicaSet {
	yes := true
	return &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: finNS, UID: endRSUID, ResourceVersion: rv,
			Annotations:     map[string]string{revisionAnnotation: revision},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: endDepUID, Controller: &yes}},
			ManagedFields:   []metav1.ManagedFieldsEntry{endMF(manager, "", `{"f:spec":{"f:replicas":{}}}`, time.Duration(replicas)*time.Second)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
}

func endDeployment(rv string, replicas int32, revision string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: finNS, UID: endDepUID, ResourceVersion: rv,
			Annotations: map[string]string{revisionAnnotation: revision}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas},
	}
}

// endEvent is an Event about obj with a reason and message.
func endEvent(t *testing.T, seq uint64, at time.Duration, uid, kind, name, reason, message, component string, related *corev1.ObjectReference) store.Record {
	ev := &corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", name, seq), Namespace: finNS, UID: types.UID(fmt.Sprintf("ev-%d", seq)), ResourceVersion: fmt.Sprint(seq)},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: finNS, UID: types.UID(uid)},
		Reason:         reason, Message: message, Type: corev1.EventTypeNormal, Count: 1,
		Source:         corev1.EventSource{Component: component},
		FirstTimestamp: metav1.NewTime(finStart.Add(at)), LastTimestamp: metav1.NewTime(finStart.Add(at)),
		Related: related,
	}
	return finRecord(t, seq, at, store.Added, "Event", ev)
}

// endAudit is an imported audit event about the pod.
func endAudit(t *testing.T, at time.Duration, verb, subresource, user, agent string, code int) store.Record {
	return endAuditWith(t, at, verb, subresource, user, agent, code, nil)
}

// endAuditWith is endAudit with the fields of extra set over the event's
// (requestObject, responseObject, responseStatus, requestURI...).
func endAuditWith(t *testing.T, at time.Duration, verb, subresource, user, agent string, code int, extra map[string]any) store.Record {
	t.Helper()
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": fmt.Sprintf("a-%s-%s-%d-%d", verb, subresource, code, at), "stage": "ResponseComplete",
		"verb": verb, "objectRef": map[string]any{"resource": "pods", "namespace": finNS, "name": "web-1-abcde", "subresource": subresource},
		"user": map[string]any{"username": user}, "userAgent": agent,
		"responseStatus": map[string]any{"code": code, "message": "m"}, "stageTimestamp": finStart.Add(at).Format(time.RFC3339Nano),
	}
	for k, v := range extra {
		ev[k] = v
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Observed: finStart.Add(at), Type: store.Added, APIVersion: "audit.k8s.io/v1", Kind: "Event", Name: ev["auditID"].(string), UID: ev["auditID"].(string), Object: b}
	if resp, ok := extra["responseObject"].(map[string]any); ok {
		if md, ok := resp["metadata"].(map[string]any); ok {
			rec.ResourceVersion, _ = md["resourceVersion"].(string)
		}
	}
	return rec
}

// budgetRefusal is the responseStatus of an eviction a
// PodDisruptionBudget refused, as the eviction subresource answers it.
func budgetRefusal(budget string, needs, has int) map[string]any {
	return map[string]any{"responseStatus": map[string]any{"code": 429, "reason": "TooManyRequests",
		"message": "Cannot evict pod as it would violate the pod's disruption budget.",
		"details": map[string]any{"causes": []any{map[string]any{"reason": "DisruptionBudget",
			"message": fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", budget, needs, has)}}}}}
}

// deleteOptions is the requestObject of a DELETE with a grace period.
func deleteOptions(grace int64) map[string]any {
	return map[string]any{"requestObject": map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": grace}}
}

// endInput builds a replay input of the pod's revisions and the related
// records, keyed by UID.
func endInput(pods []store.Record, related map[string][]store.Record) diff.Input {
	if related == nil {
		related = map[string][]store.Record{}
	}
	return diff.Input{Pod: pods, Related: related, End: finStart.Add(time.Minute)}
}

func TestEnded(t *testing.T) {
	running := endPod(true)
	deleting := finDeleted(endRev(running, "110"), "110", 20*time.Second, 30)
	gone := func(t *testing.T, seq uint64, p *corev1.Pod) store.Record {
		return finRecord(t, seq, 22*time.Second, store.Deleted, "Pod", p)
	}
	// A running pod of web-1, deleted 20s in.
	deletedRS := func(t *testing.T) []store.Record {
		return []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", running),
			finRecord(t, 20, 20*time.Second, store.Updated, "Pod", deleting),
			gone(t, 21, deleting),
		}
	}
	rsDeleted := func(t *testing.T) []store.Record {
		return []store.Record{endEvent(t, 19, 20*time.Second, string(endRSUID), "ReplicaSet", "web-1", "SuccessfulDelete", "Deleted pod: web-1-abcde", "replicaset-controller", nil)}
	}
	bare := endPod(false)
	bareDeleting := finDeleted(endRev(bare, "110"), "110", 20*time.Second, 30)
	deletedBare := func(t *testing.T) []store.Record {
		return []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", bare),
			finRecord(t, 20, 20*time.Second, store.Updated, "Pod", bareDeleting),
			gone(t, 21, bareDeleting),
		}
	}
	// disruptedBare: the condition at 18s, written by manager, then the
	// deletion.
	disruptedBare := func(t *testing.T, reason, manager string) []store.Record {
		d := endDisrupt(bare, "105", reason, manager, 18*time.Second)
		del := finDeleted(endRev(d, "110"), "110", 20*time.Second, 30)
		return []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", bare),
			finRecord(t, 15, 18*time.Second, store.Updated, "Pod", d),
			finRecord(t, 20, 20*time.Second, store.Updated, "Pod", del),
			gone(t, 21, del),
		}
	}
	jobPod := func(t *testing.T, reason string) diff.Input {
		created := finJobPod()
		failed := finFinished(finRunning(created, "101"), "102", corev1.PodFailed)
		job := finJob("50")
		fj := finJob("51")
		fj.Status.Failed = 1
		fj.Spec.BackoffLimit = new(int32)
		fj.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "job failed",
			LastTransitionTime: metav1.NewTime(finStart.Add(6 * time.Second))}}
		fj.ManagedFields = []metav1.ManagedFieldsEntry{endMF("kube-controller-manager", "status", `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Failed\"}":{".":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:failed":{}}}`, 6*time.Second)}
		pods := []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", created),
			finRecord(t, 11, 2*time.Second, store.Updated, "Pod", finRunning(created, "101")),
			finRecord(t, 13, 5*time.Second, store.Updated, "Pod", failed),
		}
		jobs := []store.Record{finRecord(t, 12, time.Second, store.Added, "Job", job), finRecord(t, 14, 6*time.Second, store.Updated, "Job", fj)}
		return endInput(pods, map[string][]store.Record{string(finJobUID): jobs})
	}

	// preempted: the scheduler's condition and DELETE; its Preempted event
	// names the preemptor as its related object, or in its message only.
	preempted := func(t *testing.T, related bool) diff.Input {
		var rel *corev1.ObjectReference
		if related {
			rel = &corev1.ObjectReference{Kind: "Pod", Namespace: finNS, Name: "urgent", UID: "pre-uid"}
		}
		low, high := int32(100), int32(1000)
		victim := endPod(false)
		victim.Spec.Priority = &low
		victim.Spec.PriorityClassName = "low"
		pre := endPod(false)
		pre.Name, pre.UID, pre.Spec.Priority, pre.Spec.PriorityClassName = "urgent", "pre-uid", &high, "high"
		d := endDisrupt(victim, "105", corev1.PodReasonPreemptionByScheduler, "kube-scheduler", 18*time.Second)
		del := finDeleted(endRev(d, "110"), "110", 18*time.Second, 30)
		in := endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", victim), finRecord(t, 15, 18*time.Second, store.Updated, "Pod", d),
			finRecord(t, 16, 18*time.Second, store.Updated, "Pod", del)},
			map[string][]store.Record{"pre-uid": {finRecord(t, 14, 17*time.Second, store.Added, "Pod", pre)}})
		in.Events = []store.Record{endEvent(t, 17, 18*time.Second, string(finPodUID), "Pod", victim.Name, "Preempted", "Preempted by pod pre-uid on node node-a", "default-scheduler",
			rel)}
		return in
	}

	tests := []struct {
		name      string
		in        func(t *testing.T) diff.Input
		none      bool // no ended finding
		mechanism string
		severity  Severity
		basis     diff.Basis
		who       string
		evidence  []string
	}{{
		name: "running pod: nothing ended",
		in: func(t *testing.T) diff.Input {
			return endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", running)}, nil)
		},
		none: true,
	}, {
		name: "finished Job pod, not deleted: nothing ended",
		in: func(t *testing.T) diff.Input {
			created := finJobPod()
			done := finFinished(finRunning(created, "101"), "102", corev1.PodSucceeded)
			done.Finalizers = nil
			return endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", created), finRecord(t, 13, 5*time.Second, store.Updated, "Pod", done)}, nil)
		},
		none: true,
	}, {
		name:      "deleted by a client, no audit log: unknown",
		in:        func(t *testing.T) diff.Input { return endInput(deletedBare(t), nil) },
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
		evidence: []string{"deletion requested: grace period 30s"},
	}, {
		name: "deleted by a client, with the audit log",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedBare(t), nil)
			in.Audit = []store.Record{endAudit(t, 20*time.Second, "delete", "", "alice", "kubectl/v1.37.2", 200), endAudit(t, 22*time.Second, "delete", "", "system:node:node-a", "kubelet", 200)}
			return in
		},
		mechanism: MechanismDelete, basis: diff.BasisAuditLog, who: "alice",
		evidence: []string{"audit log: DELETE by alice, kubectl/v1.37.2 (200)"},
	}, {
		name: "scale-down: the ReplicaSet controller's event, replicas reduced",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedRS(t), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRS("1", 3, "1", "kube-controller-manager")),
					finRecord(t, 18, 19*time.Second, store.Updated, "ReplicaSet", endRS("2", 1, "1", "kube-controller-manager"))},
				string(endDepUID): {finRecord(t, 4, -time.Second, store.Added, "Deployment", endDeployment("1", 3, "1"))},
			})
			in.OwnerEvents = map[string][]store.Record{string(endRSUID): rsDeleted(t)}
			return in
		},
		mechanism: MechanismScaleDown, basis: diff.BasisEvent, who: "replicaset-controller",
		evidence: []string{"event SuccessfulDelete on ReplicaSet web-1: Deleted pod: web-1-abcde", "spec.replicas 3 -> 1, by a controller in kube-controller-manager", "which is at revision 1"},
	}, {
		name: "rollout: an older revision of its Deployment",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedRS(t), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRS("1", 2, "1", "kube-controller-manager")),
					finRecord(t, 18, 19*time.Second, store.Updated, "ReplicaSet", endRS("2", 1, "1", "kube-controller-manager"))},
				string(endDepUID): {finRecord(t, 4, -time.Second, store.Added, "Deployment", endDeployment("1", 2, "1")),
					finRecord(t, 17, 15*time.Second, store.Updated, "Deployment", endDeployment("2", 2, "2"))},
			})
			in.OwnerEvents = map[string][]store.Record{string(endRSUID): rsDeleted(t),
				string(endDepUID): {endEvent(t, 16, 19*time.Second, string(endDepUID), "Deployment", "web", "ScalingReplicaSet", "Scaled down replica set web-1 from 2 to 1", "deployment-controller", nil)}}
			return in
		},
		mechanism: MechanismRollout, basis: diff.BasisEvent, who: "replicaset-controller",
		evidence: []string{"revision 1 of Deployment web, which is at revision 2", "Scaled down replica set web-1 from 2 to 1"},
	}, {
		name: "a ReplicaSet pod deleted with no controller event: a client's DELETE",
		in: func(t *testing.T) diff.Input {
			return endInput(deletedRS(t), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRS("1", 3, "1", "kube-controller-manager"))}})
		},
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
	}, {
		name: "garbage collection: the owner was deleted first",
		in: func(t *testing.T) diff.Input {
			return endInput(deletedRS(t), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRS("1", 3, "1", "kube-controller-manager")),
					finRecord(t, 18, 19*time.Second, store.Deleted, "ReplicaSet", endRS("1", 3, "1", "kube-controller-manager"))}})
		},
		mechanism: MechanismGarbageCollection, basis: diff.BasisFieldSemantics, who: "the garbage collector",
		evidence: []string{"owner ReplicaSet web-1 deleted"},
	}, {
		name:      "preemption: the scheduler's condition, the preemptor's priority",
		in:        func(t *testing.T) diff.Input { return preempted(t, true) },
		mechanism: MechanismPreemption, basis: diff.BasisManagedFields, who: "the scheduler",
		evidence: []string{"reason PreemptionByScheduler", "preemptor pod ci/urgent (named by the event's related object): priority 1000 (PriorityClass high); this pod's priority 100 (PriorityClass low)", "on node node-a", "Preempted by pod pre-uid"},
	}, {
		name:      "preemption: the preemptor named in the event's message only",
		in:        func(t *testing.T) diff.Input { return preempted(t, false) },
		mechanism: MechanismPreemption, basis: diff.BasisManagedFields, who: "the scheduler",
		evidence: []string{"preemptor pod ci/urgent (named by the event's message): priority 1000"},
	}, {
		name: "Eviction API, no audit log: the client unknown, the budget not recorded",
		in: func(t *testing.T) diff.Input {
			return endInput(disruptedBare(t, reasonEvictionByEvictionAPI, "kube-apiserver"), nil)
		},
		mechanism: MechanismEvictionAPI, basis: diff.BasisUnknown, who: "unknown",
		evidence: []string{"no PodDisruptionBudget was recorded in namespace ci"},
	}, {
		name: "Eviction API, with the audit log: the client and the refusals",
		in: func(t *testing.T) diff.Input {
			in := endInput(disruptedBare(t, reasonEvictionByEvictionAPI, "kube-apiserver"), nil)
			in.Audit = []store.Record{
				endAuditWith(t, 10*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429, budgetRefusal("keep", 1, 1)),
				endAuditWith(t, 12*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429, budgetRefusal("keep", 1, 1)),
				endAudit(t, 18*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 201),
			}
			return in
		},
		mechanism: MechanismEvictionAPI, basis: diff.BasisAuditLog, who: "drainer",
		evidence: []string{"2 create eviction attempts by drainer denied (429): Cannot evict pod as it would violate the pod's disruption budget.", "eviction created by drainer (201)"},
	}, {
		name: "taint eviction: the node's taint and the pod's tolerationSeconds",
		in: func(t *testing.T) diff.Input {
			five := int64(5)
			tol := endPod(false)
			tol.Spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five}}
			d := endDisrupt(tol, "105", reasonDeletionByTaintManager, "kube-controller-manager", 18*time.Second)
			node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid"}}
			tainted := node.DeepCopy()
			tainted.ResourceVersion = "2"
			tainted.Spec.Taints = []corev1.Taint{{Key: "maintenance", Value: "now", Effect: corev1.TaintEffectNoExecute}}
			tainted.ManagedFields = []metav1.ManagedFieldsEntry{endMF("kubectl-taint", "", `{"f:spec":{"f:taints":{}}}`, 12*time.Second)}
			return endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", tol), finRecord(t, 15, 18*time.Second, store.Updated, "Pod", d)},
				map[string][]store.Record{"node-uid": {finRecord(t, 1, -time.Minute, store.Initial, "Node", node), finRecord(t, 12, 12*time.Second, store.Updated, "Node", tainted)}})
		},
		mechanism: MechanismTaintEviction, basis: diff.BasisManagedFields, who: "kube-controller-manager",
		evidence: []string{"node node-a taint maintenance=now:NoExecute, set by kubectl (kubectl-taint) (managedFields); by the pod: tolerated for tolerationSeconds 5"},
	}, {
		name: "node-pressure eviction by the kubelet: a warning",
		in: func(t *testing.T) diff.Input {
			d := endDisrupt(bare, "105", corev1.PodReasonTerminationByKubelet, "kubelet", 18*time.Second)
			d.Status.Phase, d.Status.Reason, d.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
			return endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", bare), finRecord(t, 15, 18*time.Second, store.Updated, "Pod", d)}, nil)
		},
		mechanism: MechanismNodePressure, severity: Warning, basis: diff.BasisManagedFields, who: "the kubelet",
		evidence: []string{"status.reason Evicted: The node was low on resource: memory."},
	}, {
		name: "PodGC of a pod on a deleted node: a warning",
		in: func(t *testing.T) diff.Input {
			return endInput(disruptedBare(t, reasonDeletionByPodGC, "kube-controller-manager"), nil)
		},
		mechanism: MechanismPodGC, severity: Warning, basis: diff.BasisManagedFields, who: "kube-controller-manager",
		evidence: []string{"reason DeletionByPodGC"},
	}, {
		name:      "Job backoffLimit exceeded: a warning, the job controller's condition",
		in:        func(t *testing.T) diff.Input { return jobPod(t, batchv1.JobReasonBackoffLimitExceeded) },
		mechanism: MechanismJobBackoffLimit, severity: Warning, basis: diff.BasisManagedFields, who: "kube-controller-manager",
		evidence: []string{"Job build condition Failed=True, reason BackoffLimitExceeded", "backoffLimit 0"},
	}, {
		name:      "Job activeDeadlineSeconds",
		in:        func(t *testing.T) diff.Input { return jobPod(t, batchv1.JobReasonDeadlineExceeded) },
		mechanism: MechanismJobDeadline, severity: Warning, basis: diff.BasisManagedFields, who: "kube-controller-manager",
	}, {
		name:      "Job podFailurePolicy",
		in:        func(t *testing.T) diff.Input { return jobPod(t, batchv1.JobReasonPodFailurePolicy) },
		mechanism: MechanismJobFailurePolicy, severity: Warning, basis: diff.BasisManagedFields, who: "kube-controller-manager",
	}, {
		name: "orphaned by a label change: the release's actor unknown without the audit log",
		in: func(t *testing.T) diff.Input {
			relabelled := endRev(running, "101")
			relabelled.Labels = map[string]string{"app": "debug"}
			relabelled.ManagedFields = append(relabelled.ManagedFields, endMF("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:app":{}}}}`, 5*time.Second))
			released := endRev(relabelled, "102")
			released.OwnerReferences = nil
			return endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", running), finRecord(t, 11, 5*time.Second, store.Updated, "Pod", relabelled),
				finRecord(t, 12, 6*time.Second, store.Updated, "Pod", released)},
				map[string][]store.Record{string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRS("1", 1, "1", "kube-controller-manager"))}})
		},
		mechanism: MechanismOrphaned, basis: diff.BasisUnknown, who: "unknown",
		evidence: []string{"ownerReference to ReplicaSet web-1 (controller) removed", "no longer match ReplicaSet web-1's selector app=web", "the labels changed at #11, by kubectl label (managedFields)"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, lc.Findings, lc)
			f := finFind(lc.Findings, "ended")
			if tc.none {
				if f != nil {
					t.Fatalf("ended finding %+v, want none", *f)
				}
				return
			}
			if f == nil {
				t.Fatalf("no ended finding; findings %v", finIDs(lc.Findings))
			}
			var ev []string
			for _, e := range f.Evidence {
				ev = append(ev, e.Text)
			}
			if f.Mechanism != tc.mechanism || f.Severity != tc.severity {
				t.Errorf("mechanism %q (%s), want %q (%s); headline %q", f.Mechanism, f.Severity, tc.mechanism, tc.severity, f.Headline)
			}
			if f.Actor == nil || f.Actor.Basis != tc.basis || !strings.Contains(f.Actor.Who, tc.who) {
				t.Errorf("actor %+v, want %q known by %s", f.Actor, tc.who, tc.basis)
			}
			for _, want := range tc.evidence {
				if !evidenceHas(f, want) {
					t.Errorf("no evidence has %q:\n%s", want, strings.Join(ev, "\n"))
				}
			}
		})
	}
}
