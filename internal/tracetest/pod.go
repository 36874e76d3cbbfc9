// Package tracetest makes the recorded objects that the tests and benchmarks
// of admission, diff, explain and redact replay: fixtures, as httptest is
// for net/http.
// It imports store and the Kubernetes types, never a podtrace package
// above store.
package tracetest

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
)

// BasePod is a two-container pod, pending and scheduled, with one toleration
// per container.
func BasePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ci", ResourceVersion: "10", Labels: map[string]string{"app": "ci"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "build", Image: "alpine:3.20", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				{Name: "helper", Image: "helper:v1"},
			},
			Tolerations: []corev1.Toleration{
				{Key: "a", Operator: corev1.TolerationOpExists},
				{Key: "b", Operator: corev1.TolerationOpExists},
			},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		},
	}
}

// History makes n revisions of a two-container pod whose status changes a
// little each time, as a crash-looping pod's does, with managedFields.
func History(n int) []store.Record {
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	pod := BasePod()
	pod.UID = "uid-1"
	pod.Spec.NodeName = "node-1"
	recs := make([]store.Record, n)
	for i := range n {
		ts := metav1.NewTime(base.Add(time.Duration(i) * time.Second))
		pod.ResourceVersion = fmt.Sprint(1000 + i)
		pod.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: "runner", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: base},
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{"f:image":{}}}}}`)}},
			{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &ts,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:containerStatuses":{},"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}}}}`)}},
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{
			{Name: "build", RestartCount: int32(i), ContainerID: fmt.Sprintf("containerd://%064x", i),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}}},
			{Name: "helper", Ready: i%2 == 0},
		}
		raw, _ := json.Marshal(pod)
		typ := store.Updated
		if i == 0 {
			typ = store.Added
		}
		recs[i] = store.Record{Seq: uint64(i + 1), Observed: ts.Time, Type: typ, APIVersion: "v1", Kind: "Pod",
			Namespace: "ci", Name: "job", UID: "uid-1", ResourceVersion: pod.ResourceVersion, Object: raw}
	}
	return recs
}

// CrashLoop makes the revisions of one pod of the report benchmark in
// cmd/podtrace/app (benchtrace_test.go): a Deployment's pod with two
// containers and four field managers, created, scheduled, started, labelled,
// then crash looping (a kubelet status update to running and ready, then one
// to CrashLoopBackOff with the last termination), with the kubelet's
// aggregated events.
func CrashLoop(revs int) (pod, events []store.Record) {
	now := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	rv := 1000
	var seq uint64
	add := func(typ store.EventType, meta *metav1.ObjectMeta, kind string, obj any) store.Record {
		rv++
		seq++
		meta.ResourceVersion = fmt.Sprint(rv)
		raw, _ := json.Marshal(obj)
		now = now.Add(100 * time.Millisecond)
		return store.Record{Seq: seq, Observed: now, Type: typ, APIVersion: "v1", Kind: kind,
			Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID), ResourceVersion: meta.ResourceVersion, Object: raw}
	}
	var p corev1.Pod
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Namespace, p.Name, p.UID = "team-01", "worker-0001-5d9c7b8f6-x7k2p", "3f1e2d3c-4b5a-4978-a796-a5b4c3d2e1f0"
	manage := func(manager, sub, fields string) {
		t := metav1.NewTime(now)
		e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: sub}
		for k, m := range p.ManagedFields {
			if m.Manager == manager && m.Subresource == sub {
				p.ManagedFields[k] = e
				return
			}
		}
		p.ManagedFields = append(p.ManagedFields, e)
	}
	condition := func(t corev1.PodConditionType, s corev1.ConditionStatus) {
		for k := range p.Status.Conditions {
			if c := &p.Status.Conditions[k]; c.Type == t {
				if c.Status != s {
					c.Status, c.LastTransitionTime = s, metav1.NewTime(now)
				}
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(now)})
	}
	evs := map[string]*corev1.Event{}
	event := func(typ, reason, message, component string) {
		t := metav1.NewTime(now)
		ev, rt := evs[reason], store.Updated
		if ev == nil {
			rt = store.Added
			ev = &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
				ObjectMeta:     metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("%s.%x", p.Name, len(evs)+1), UID: types.UID(fmt.Sprint("event-", len(evs))), CreationTimestamp: t},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1", FieldPath: "spec.containers{app}"},
				Reason:         reason, Message: message, Type: typ, FirstTimestamp: t,
				Source: corev1.EventSource{Component: component, Host: "kwok-node-01"}, ReportingController: component, ReportingInstance: "kwok-node-01"}
			evs[reason] = ev
		}
		ev.Count++
		ev.LastTimestamp = t
		ev.InvolvedObject.ResourceVersion = p.ResourceVersion
		ev.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: component, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:reportingComponent":{},"f:reportingInstance":{},"f:source":{"f:component":{},"f:host":{}},"f:type":{}}`)}}}
		events = append(events, add(rt, &ev.ObjectMeta, "Event", ev))
	}
	const kubeletFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.3\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	var started time.Time
	for r := range revs {
		typ := store.Updated
		switch {
		case r == 0:
			typ = store.Added
			ctrl := true
			grace := int64(30)
			p.CreationTimestamp = metav1.NewTime(now)
			p.GenerateName = "worker-0001-5d9c7b8f6-"
			p.Labels = map[string]string{"app": "worker", "team": p.Namespace, "pod-template-hash": "5d9c7b8f6"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "worker-0001-5d9c7b8f6", UID: "rs-uid", Controller: &ctrl, BlockOwnerDeletion: &ctrl}}
			p.Spec = corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
				ServiceAccountName: "worker", SchedulerName: "default-scheduler",
				Containers: []corev1.Container{
					{Name: "app", Image: "registry.example.com/team/worker@sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff", Args: []string{"--queue", p.Namespace},
						Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "QUEUE", Value: p.Namespace}},
						Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/worker"}}, TerminationMessagePath: "/dev/termination-log",
						TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent},
					{Name: "proxy", Image: "envoyproxy/envoy:v1.31.2", TerminationMessagePath: "/dev/termination-log",
						TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent},
				},
				Volumes:     []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "worker-config"}}}}},
				Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			}
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
			manage("kube-controller-manager", "", `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:team":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"rs-uid\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:env":{},"f:image":{},"f:name":{},"f:resources":{}},"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}},"f:restartPolicy":{},"f:tolerations":{},"f:volumes":{}}}`)
		case r == 1:
			p.Spec.NodeName = "kwok-node-01"
			condition(corev1.PodScheduled, corev1.ConditionTrue)
			manage("kube-scheduler", "binding", `{"f:spec":{"f:nodeName":{}}}`)
		case r == 2:
			st := metav1.NewTime(now)
			p.Status.HostIP, p.Status.PodIP, p.Status.StartTime = "10.0.0.11", "10.244.1.3", &st
			p.Status.PodIPs = []corev1.PodIP{{IP: "10.244.1.3"}}
			condition(corev1.PodReady, corev1.ConditionFalse)
			condition(corev1.ContainersReady, corev1.ConditionFalse)
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
			}
			manage("kubelet", "status", kubeletFields)
		case r == 3:
			p.Labels["debug"] = "true"
			manage("kubectl-label", "", `{"f:metadata":{"f:labels":{"f:debug":{}}}}`)
		case r%2 == 0:
			started = now
			p.Status.Phase = corev1.PodRunning
			condition(corev1.PodReady, corev1.ConditionTrue)
			condition(corev1.ContainersReady, corev1.ConditionTrue)
			for k := range p.Status.ContainerStatuses {
				cs := &p.Status.ContainerStatuses[k]
				if k > 0 && cs.State.Running != nil {
					continue
				}
				yes := true
				cs.Ready, cs.Started = true, &yes
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
				cs.ContainerID = fmt.Sprintf("containerd://%064x", r*7+k)
				cs.ImageID = cs.Image
			}
			manage("kubelet", "status", kubeletFields)
		default:
			condition(corev1.PodReady, corev1.ConditionFalse)
			condition(corev1.ContainersReady, corev1.ConditionFalse)
			cs := &p.Status.ContainerStatuses[0]
			no := false
			cs.Ready, cs.Started = false, &no
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(now), ContainerID: cs.ContainerID}}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %ds restarting failed container=app pod=%s_%s(%s)", min(10<<min(cs.RestartCount, 5), 300), p.Name, p.Namespace, p.UID)}}
			manage("kubelet", "status", kubeletFields)
		}
		pod = append(pod, add(typ, &p.ObjectMeta, "Pod", &p))
		switch {
		case r == 1:
			event(corev1.EventTypeNormal, "Scheduled", "Successfully assigned "+p.Namespace+"/"+p.Name+" to kwok-node-01", "default-scheduler")
		case r == 2:
			event(corev1.EventTypeNormal, "Pulled", `Container image "registry.example.com/team/worker@sha256:4f1e2d3c" already present on machine`, "kubelet")
		case r > 3 && r%2 == 0:
			event(corev1.EventTypeNormal, "Started", "Started container app", "kubelet")
		case r > 3:
			event(corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container app in pod %s_%s(%s)", p.Name, p.Namespace, p.UID), "kubelet")
		}
	}
	return pod, events
}

// ManagedEntry is a managedFields entry of an Update by manager (on the
// subresource, "" for the object itself) at time at, owning fields (a
// fieldsV1 JSON object).
func ManagedEntry(manager, subresource string, at time.Time, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(at)
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
		APIVersion: "v1", FieldsType: "FieldsV1", Time: &t, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}
