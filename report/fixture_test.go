package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// The fixture builds traces the way the recorder would have seen them: pod
// revisions as JSON with managedFields, events, dependents, the namespace and
// the webhook configurations, which diff.Replay then turns into lifecycles.

// Hostile strings: cluster data that must stay text in every rendering.
const (
	hostileScript = `<script>alert(1)</script>`
	hostileBreak  = `</script><img src=x onerror=alert(1)>`
	hostileMD     = "a|b `c` ```d"
)

var fixtureStart = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// clock hands out record sequence numbers and resource versions and keeps
// the time of the story.
type clock struct {
	seq uint64
	now time.Time
}

func (c *clock) next() uint64 { c.seq++; return c.seq }

func (c *clock) tick(d time.Duration) { c.now = c.now.Add(d) }

// record builds a store.Record of obj as JSON.
func (c *clock) record(tb testing.TB, typ store.EventType, apiVersion, kind string, meta metav1.ObjectMeta, refs []string, obj any) store.Record {
	tb.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		tb.Fatalf("marshal %s %s: %v", kind, meta.Name, err)
	}
	seq := c.next()
	return store.Record{
		Seq: seq, Session: 1, Observed: c.now, Type: typ,
		APIVersion: apiVersion, Kind: kind, Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID),
		ResourceVersion: strconv.FormatUint(1000+seq, 10), Refs: refs, Object: b,
	}
}

// story is the recorded history of one pod, built revision by revision.
type story struct {
	tb  testing.TB
	c   *clock
	pod corev1.Pod
	in  diff.Input
	evn int
}

func newStory(tb testing.TB, c *clock, ns, name, uid string) *story {
	s := &story{tb: tb, c: c, in: diff.Input{Related: map[string][]store.Record{}, Webhooks: map[string][]store.Record{}}}
	s.pod.APIVersion, s.pod.Kind = "v1", "Pod"
	s.pod.Namespace, s.pod.Name, s.pod.UID = ns, name, types.UID(uid)
	s.pod.CreationTimestamp = metav1.NewTime(c.now)
	return s
}

// write records a revision of the pod made by manager (empty: the API server
// itself, which leaves managedFields alone). fields is the manager's whole
// fieldsV1 after the write.
func (s *story) write(typ store.EventType, manager, subresource, fields string, mutate func(p *corev1.Pod)) {
	s.tb.Helper()
	if mutate != nil {
		mutate(&s.pod)
	}
	if manager != "" {
		now := metav1.NewTime(s.c.now)
		entry := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
		replaced := false
		for i, m := range s.pod.ManagedFields {
			if m.Manager == manager && m.Subresource == subresource {
				s.pod.ManagedFields[i], replaced = entry, true
			}
		}
		if !replaced {
			s.pod.ManagedFields = append(s.pod.ManagedFields, entry)
		}
	}
	s.pod.ResourceVersion = strconv.FormatUint(1000+s.c.seq+1, 10)
	s.in.Pod = append(s.in.Pod, s.c.record(s.tb, typ, "v1", "Pod", s.pod.ObjectMeta, nil, &s.pod))
}

// event records a core/v1 Event about the pod.
func (s *story) event(typ, reason, message, component string, count int32) {
	s.tb.Helper()
	s.evn++
	ev := corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Namespace: s.pod.Namespace, Name: fmt.Sprintf("%s.%d", s.pod.Name, s.evn), UID: types.UID(fmt.Sprintf("%s-ev-%d", s.pod.UID, s.evn))},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: s.pod.Namespace, Name: s.pod.Name, UID: s.pod.UID},
		Type:           typ, Reason: reason, Message: message, Count: count,
		Source:         corev1.EventSource{Component: component},
		FirstTimestamp: metav1.NewTime(s.c.now), LastTimestamp: metav1.NewTime(s.c.now),
	}
	s.in.Events = append(s.in.Events, s.c.record(s.tb, store.Added, "v1", "Event", ev.ObjectMeta, []string{string(s.pod.UID)}, &ev))
}

// dependent records a revision of an object owned by the pod (metadata
// only, as the recorder keeps it for Secrets and ConfigMaps).
func (s *story) dependent(typ store.EventType, kind, name, uid string) {
	s.tb.Helper()
	yes := true
	m := metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: s.pod.Namespace, Name: name, UID: types.UID(uid),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: s.pod.Name, UID: s.pod.UID, BlockOwnerDeletion: &yes}}},
	}
	s.in.Related[uid] = append(s.in.Related[uid], s.c.record(s.tb, typ, "v1", kind, m.ObjectMeta, []string{string(s.pod.UID)}, &m))
}

// namespace records the pod's namespace as present before the recording.
func (s *story) namespace(labels map[string]string) {
	s.tb.Helper()
	ns := corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: s.pod.Namespace, UID: types.UID("ns-" + s.pod.Namespace), Labels: labels}}
	uid := string(ns.UID)
	s.in.Related[uid] = append(s.in.Related[uid], s.c.record(s.tb, store.Initial, "v1", "Namespace", ns.ObjectMeta, nil, &ns))
}

// digesterWebhook records a k8s-digester-like mutating webhook that
// intercepts pod CREATE and UPDATE in namespaces labelled for it.
func (s *story) digesterWebhook() {
	s.tb.Helper()
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	cfg := admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "digester-mutating-webhook-configuration", UID: types.UID("mwc-digester")},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:          "digester-webhook-service.digester-system.svc",
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"digest-resolution": "enabled"}},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}
	uid := string(cfg.UID)
	s.in.Webhooks[uid] = append(s.in.Webhooks[uid], s.c.record(s.tb, store.Initial, cfg.APIVersion, cfg.Kind, cfg.ObjectMeta, nil, &cfg))
}

func (s *story) replay() *explain.Lifecycle {
	s.tb.Helper()
	lc, err := explain.Replay(s.in, diff.Options{})
	if err != nil {
		s.tb.Fatalf("replay %s/%s: %v", s.pod.Namespace, s.pod.Name, err)
	}
	return lc
}

func condition(t corev1.PodConditionType, status corev1.ConditionStatus, at time.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: status, LastTransitionTime: metav1.NewTime(at)}
}

func setCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			if p.Status.Conditions[i].Status != c.Status {
				p.Status.Conditions[i] = c
			}
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

const (
	kubeletFields = `{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`
	bindingFields = `{"f:spec":{"f:nodeName":{}}}`
)

// digesterStory is the case podtrace was born for: a CI job pod created by
// the runner with digest-pinned images, run to completion, deleted with
// foregroundDeletion; the garbage collector deletes its pull Secret and its
// ConfigMap, then nothing: the finalizer is never removed.
func digesterStory(tb testing.TB, c *clock) *explain.Lifecycle {
	return digesterRecords(tb, c).replay()
}

// digesterRecords is the recorded history of the digester story.
func digesterRecords(tb testing.TB, c *clock) *story {
	return runnerRecords(tb, c, runner{name: "runner-x7k2p-project-42-concurrent-0", uid: "9d3c6a1e-0f4b-4c55-9a7e-2b1f0c8d7e61"})
}

// runner is one CI job pod of the digester story: its name (made from
// generateName when given), and how the runner deleted it.
type runner struct {
	name, uid, generateName string
	// background: deleted with Background propagation, so gone at once
	// (the garbage collector deletes the dependents after), where the
	// story's Foreground deletion sticks.
	background bool
}

// runnerRecords is the recorded history of a runner's job pod in the
// digester's namespace: created, run to completion, deleted.
func runnerRecords(tb testing.TB, c *clock, r runner) *story {
	s := newStory(tb, c, "ci", r.name, r.uid)
	s.pod.GenerateName = r.generateName
	s.namespace(map[string]string{"digest-resolution": "enabled", "kubernetes.io/metadata.name": "ci"})
	s.digesterWebhook()
	pull := r.name + "-pull"
	scripts := r.name + "-scripts"
	s.write(store.Added, "gitlab-runner", "",
		`{"f:metadata":{"f:labels":{}},"f:spec":{"f:containers":{},"f:imagePullSecrets":{},"f:restartPolicy":{}}}`,
		func(p *corev1.Pod) {
			p.Labels = map[string]string{"job.runner.gitlab.com/id": "42", "pod": p.Name}
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pull}}
			p.Spec.Containers = []corev1.Container{
				{Name: "build", Image: "alpine@sha256:9cee2b382fe2412cd77d5d437d15a93da8de373813621f2e4d17a3f6c7d1a8f3", Command: []string{"sh", "-c"}},
				{Name: "helper", Image: "registry.gitlab.com/gitlab-org/gitlab-runner/gitlab-runner-helper@sha256:4b3a9d1e"},
			}
		})
	c.tick(200 * time.Millisecond)
	pullUID, scriptsUID := r.uid[:8]+"-pull", r.uid[:8]+"-scripts"
	if r.uid == "9d3c6a1e-0f4b-4c55-9a7e-2b1f0c8d7e61" {
		pullUID, scriptsUID = "5e1f0a22-pull", "5e1f0a22-scripts" // as the goldens have them
	}
	s.dependent(store.Added, "Secret", pull, pullUID)
	s.dependent(store.Added, "ConfigMap", scripts, scriptsUID)
	c.tick(800 * time.Millisecond)
	s.write(store.Updated, "kube-scheduler", "binding", bindingFields, func(p *corev1.Pod) { p.Spec.NodeName = "kwok-node-1" })
	s.event("Normal", "Scheduled", "Successfully assigned ci/"+s.pod.Name+" to kwok-node-1", "default-scheduler", 1)
	c.tick(1500 * time.Millisecond)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.HostIP, p.Status.PodIP = "10.0.0.11", "10.244.1.17"
		st := metav1.NewTime(c.now)
		p.Status.StartTime = &st
		setCondition(p, condition(corev1.PodScheduled, corev1.ConditionTrue, c.now.Add(-1500*time.Millisecond)))
		setCondition(p, condition(corev1.PodReady, corev1.ConditionFalse, c.now))
		for _, ct := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Image: ct.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		}
	})
	s.event("Normal", "Pulled", "Container image \"alpine@sha256:9cee2b38\" already present on machine", "kubelet", 1)
	c.tick(2 * time.Second)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		setCondition(p, condition(corev1.PodReady, corev1.ConditionTrue, c.now))
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready, cs.State = true, corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.now)}}
		}
	})
	s.event("Normal", "Started", "Started container build", "kubelet", 1)
	started := c.now
	c.tick(3*time.Minute + 12*time.Second)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		setCondition(p, condition(corev1.PodReady, corev1.ConditionFalse, c.now))
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready, cs.State = false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(c.now)}}
		}
	})
	c.tick(4 * time.Second)
	// The runner deletes the pod with propagationPolicy Foreground: the API
	// server sets deletionTimestamp and adds foregroundDeletion. With
	// Background, it adds no finalizer and the pod goes once its
	// containers stopped.
	s.write(store.Updated, "", "", "", func(p *corev1.Pod) {
		grace := int64(30)
		dt := metav1.NewTime(c.now.Add(30 * time.Second))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &dt, &grace
		if !r.background {
			p.Finalizers = append(p.Finalizers, metav1.FinalizerDeleteDependents)
		}
	})
	if r.background {
		c.tick(100 * time.Millisecond)
		s.write(store.Deleted, "", "", "", nil)
	}
	c.tick(300 * time.Millisecond)
	s.dependent(store.Deleted, "ConfigMap", scripts, scriptsUID)
	c.tick(200 * time.Millisecond)
	s.dependent(store.Deleted, "Secret", pull, pullUID)
	c.tick(6*time.Minute + 30*time.Second)
	s.in.End = c.now
	return s
}

// audit records an audit.k8s.io/v1 Event about the pod, as podtrace
// import --audit-log stores it.
func (s *story) audit(id string, at time.Time, verb, subresource, user, agent string, code int, message, rv string, annotations map[string]string) {
	s.tb.Helper()
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "stage": "ResponseComplete", "verb": verb,
		"objectRef":      map[string]any{"resource": "pods", "namespace": s.pod.Namespace, "name": s.pod.Name, "subresource": subresource},
		"user":           map[string]any{"username": user},
		"userAgent":      agent,
		"responseStatus": map[string]any{"code": code, "message": message},
		"stageTimestamp": at,
		"annotations":    annotations,
	}
	b, err := json.Marshal(ev)
	if err != nil {
		s.tb.Fatal(err)
	}
	s.in.Audit = append(s.in.Audit, store.Record{Seq: s.c.next(), Session: 1, Observed: at, Type: store.Added,
		APIVersion: "audit.k8s.io/v1", Kind: "Event", UID: id, ResourceVersion: rv, Object: b})
}

// Strings of the audit fixture: the webhook that denies the garbage
// collector, and an env value its patch sets that redaction must hide.
const (
	digesterWebhookName = "digester-webhook-service.digester-system.svc"
	auditSecret         = "hunter2-token"
)

// auditTrace is the fixture trace with the audit log of the digester
// story imported: the runner's create (patched by the digester webhook)
// and delete, the scheduler's binding, and the garbage collector's three
// finalizer removals that the webhook denied. User agents and the denial
// message carry hostile strings.
func auditTrace(tb testing.TB) *Trace {
	tb.Helper()
	tr := fixtureTrace(tb)
	s := digesterRecords(tb, &clock{now: fixtureStart})
	s.runnerAudit(3)
	lc := s.replay()
	for i, p := range tr.Pods {
		if p.UID == lc.UID {
			tr.Pods[i] = lc
		}
	}
	return tr
}

// runnerAudit records the audit log of a runner story: the runner's
// create (patched by the digester webhook) and delete, the scheduler's
// binding, and denied finalizer removals by the garbage collector. User
// agents and the denial message carry hostile strings.
func (s *story) runnerAudit(denied int) {
	created, bound, deleted := s.in.Pod[0], s.in.Pod[1], s.in.Pod[5]
	runner := "system:serviceaccount:gitlab:gitlab-runner"
	patch := `{"configuration":"digester-mutating-webhook-configuration","webhook":"` + digesterWebhookName + `","patch":[` +
		`{"op":"replace","path":"/spec/containers/0/image","value":"alpine@sha256:9cee2b382fe2412cd77d5d437d15a93da8de373813621f2e4d17a3f6c7d1a8f3"},` +
		`{"op":"add","path":"/spec/containers/0/env/0/value","value":"` + auditSecret + `"}],"patchType":"JSONPatch"}`
	s.audit("a-create", created.Observed, "create", "", runner, "gitlab-runner 17.0.0 "+hostileMD, 201, "", created.ResourceVersion,
		map[string]string{"patch.webhook.admission.k8s.io/round_0_index_0": patch})
	s.audit("a-bind", bound.Observed, "create", "binding", "system:kube-scheduler", "kube-scheduler/v1.37.2", 201, "", "", nil)
	s.audit("a-delete", deleted.Observed, "delete", "", runner, "gitlab-runner 17.0.0 "+hostileMD, 200, "", deleted.ResourceVersion, nil)
	message := `admission webhook "` + digesterWebhookName + `" denied the request: failed to create keychain: secrets "` + s.pod.Name + `-pull" not found ` + hostileBreak
	for i := range denied {
		s.audit(fmt.Sprintf("a-gc-%d", i), deleted.Observed.Add(time.Duration(1+90*i)*time.Second), "patch", "",
			"system:serviceaccount:kube-system:generic-garbage-collector", "kube-controller-manager/v1.37.2 "+hostileScript, 500, message, "", nil)
	}
}

// healthyStory is a Deployment's pod that starts and stays ready.
func healthyStory(tb testing.TB, c *clock) *explain.Lifecycle {
	s := newStory(tb, c, "shop", "web-7d9f8c6b5d-q2x8m", "3f2b7c10-8e4a-4d1b-b2a9-6c5d4e3f2a10")
	ctrl := true
	// The ReplicaSet's template asks for nginx:1.27; the stored pod has a
	// digest: something rewrote it at admission.
	rs := appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-7d9f8c6b5d", UID: "rs-1"},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5d"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		}}}
	s.in.Related["rs-1"] = []store.Record{c.record(tb, store.Initial, rs.APIVersion, rs.Kind, rs.ObjectMeta, nil, &rs)}
	s.write(store.Added, "kube-controller-manager", "",
		`{"f:metadata":{"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}`,
		func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5d"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d", UID: "rs-1", Controller: &ctrl}}
			p.Spec.Containers = []corev1.Container{{Name: "web", Image: "nginx@sha256:5f0c1b2d"}}
		})
	c.tick(400 * time.Millisecond)
	s.write(store.Updated, "kube-scheduler", "binding", bindingFields, func(p *corev1.Pod) { p.Spec.NodeName = "kwok-node-2" })
	s.event("Normal", "Scheduled", "Successfully assigned shop/"+s.pod.Name+" to kwok-node-2", "default-scheduler", 1)
	c.tick(2 * time.Second)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.244.2.5"
		setCondition(p, condition(corev1.PodScheduled, corev1.ConditionTrue, c.now.Add(-2*time.Second)))
		setCondition(p, condition(corev1.PodReady, corev1.ConditionTrue, c.now))
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Image: "nginx@sha256:5f0c1b2d", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.now)}}}}
	})
	s.event("Normal", "Started", "Started container web", "kubelet", 1)
	s.in.End = fixtureStart.Add(10*time.Minute + 30*time.Second)
	return s.replay()
}

// hostileStory is a pod whose labels, annotations, image and events carry
// markup and markdown that a report must show as text.
func hostileStory(tb testing.TB, c *clock) *explain.Lifecycle {
	s := newStory(tb, c, "ci", "hostile", "0badc0de-<b>uid</b>")
	s.write(store.Added, "kubectl-create", "",
		`{"f:metadata":{"f:labels":{},"f:annotations":{}},"f:spec":{"f:containers":{}}}`,
		func(p *corev1.Pod) {
			p.Labels = map[string]string{"x": hostileScript, "md": hostileMD}
			p.Annotations = map[string]string{"note": hostileBreak}
			p.Spec.Containers = []corev1.Container{{Name: "app", Image: "evil" + hostileBreak}}
		})
	c.tick(time.Second)
	s.write(store.Updated, "kube-scheduler", "binding", bindingFields, func(p *corev1.Pod) { p.Spec.NodeName = "kwok-node-1" })
	c.tick(time.Second)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "evil" + hostileBreak,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull " + hostileScript + " " + hostileMD}}}}
	})
	s.event("Warning", "Failed", "Failed to pull image "+hostileBreak, "kubelet", 3)
	c.tick(time.Second)
	s.write(store.Updated, "kubectl-label", "", `{"f:metadata":{"f:labels":{"f:x":{}}}}`, func(p *corev1.Pod) {
		p.Labels["x"] = hostileBreak
	})
	s.in.End = fixtureStart.Add(10*time.Minute + 30*time.Second)
	return s.replay()
}

// fixtureTrace is the trace of the golden tests: the digester story, a
// healthy pod and a hostile one, generated at a fixed time.
func fixtureTrace(tb testing.TB) *Trace {
	tb.Helper()
	c := &clock{now: fixtureStart}
	pods := []*explain.Lifecycle{digesterStory(tb, c)}
	c.now = fixtureStart.Add(20 * time.Second)
	pods = append(pods, healthyStory(tb, c))
	c.now = fixtureStart.Add(40 * time.Second)
	pods = append(pods, hostileStory(tb, c))
	SortPods(pods)
	return &Trace{
		File: "digester-" + hostileBreak + ".db",
		Sessions: []store.Session{{
			ID: 1, Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.2", Context: "kind-" + hostileMD,
			Started: fixtureStart.Add(-10 * time.Second), Stopped: fixtureStart.Add(10*time.Minute + 30*time.Second), Version: "v0.1.0",
		}},
		Pods:      pods,
		Generated: time.Date(2026, 3, 14, 9, 15, 0, 0, time.UTC),
	}
}

func fixturePod(tb testing.TB, tr *Trace, name string) *explain.Lifecycle {
	tb.Helper()
	for _, p := range tr.Pods {
		if p.Name == name {
			return p
		}
	}
	tb.Fatalf("no pod %s in the fixture", name)
	return nil
}
