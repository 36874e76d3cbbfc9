package app

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
)

// The benchmarks' traces are written with the store API as a recorder would
// write them: one session; the namespaces, nodes, webhook configurations and
// ReplicaSets present at the start; nodes reporting status every five
// minutes; about 200 crash-looping Deployment pods in flight at a time, their
// revisions interleaved, each with the kubelet's aggregated events (one Event
// object per reason, its count going up). Pods carry two containers,
// conditions, container statuses with restarts and last terminations, and
// managedFields of four managers. Every tenth pod is deleted with
// foregroundDeletion and stays Terminating; every tenth (another) is deleted.

var benchEpoch = time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)

const (
	benchNamespaces = 20
	benchNodes      = 30
	benchInFlight   = 200                    // pods being written at a time
	benchTick       = 100 * time.Millisecond // between two records
	benchNodeStatus = 5 * time.Minute        // nodeStatusReportFrequency
)

// benchPodsProto says whether the traces keep pods as their protobuf, as
// `podtrace record` writes them (store.Record.Proto), or as JSON, as record
// wrote them before (and import and older traces still hold):
// $PODTRACE_BENCH_PODS=json for the latter. Readers pay the transcoding of
// the former; the two traces have different names in $PODTRACE_BENCH_DIR.
var benchPodsProto = os.Getenv("PODTRACE_BENCH_PODS") != "json"

// benchTraceName is name with "-pb" before its extension when the traces
// keep pods as protobuf (a trace of an earlier run's name holds JSON).
func benchTraceName(name string) string {
	if !benchPodsProto {
		return name
	}
	ext := filepath.Ext(name)
	return name[:len(name)-len(ext)] + "-pb" + ext
}

// benchUID makes a UUID-shaped UID from n.
func benchUID(n uint64) string {
	h := n*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	l := (n ^ 0xD6E8FEB86659FD93) * 0xBF58476D1CE4E5B9
	return fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff, uint16(l>>48)&0xfff, l&0xffffffffffff)
}

// traceGen writes the records of a synthetic recording through a
// store.Writer, flushing every store.BatchSize records.
type traceGen struct {
	tb      testing.TB
	w       *store.Writer
	now     time.Time
	rv      uint64
	records int
	rs      map[string]bool // ReplicaSets written
	nodes   []*corev1.Node
	nodeDue time.Time
}

func newTraceGen(tb testing.TB, path string) *traceGen {
	tb.Helper()
	w, err := store.NewWriter(path, store.Options{Version: "v0.1.0-bench"})
	if err != nil {
		tb.Fatal(err)
	}
	g := &traceGen{tb: tb, w: w, now: benchEpoch, rs: map[string]bool{}, nodeDue: benchEpoch.Add(benchNodeStatus)}
	if _, err := w.BeginSession(store.Session{Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.2",
		Args: []string{"podtrace", "record"}, Started: benchEpoch, Version: "v0.1.0-bench"}); err != nil {
		tb.Fatal(err)
	}
	for i := range benchNamespaces {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: benchNS(i), UID: types.UID(benchUID(uint64(i) + 1<<44)), CreationTimestamp: metav1.NewTime(benchEpoch.Add(-90 * 24 * time.Hour)),
				Labels: map[string]string{"kubernetes.io/metadata.name": benchNS(i), "team": benchNS(i)}},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		g.add(store.Initial, &ns.ObjectMeta, "v1", "Namespace", nil, ns)
	}
	for i := range benchNodes {
		name := fmt.Sprintf("kwok-node-%02d", i)
		n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(benchUID(uint64(i) + 1<<45)), CreationTimestamp: metav1.NewTime(benchEpoch.Add(-30 * 24 * time.Hour)),
				Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m6i.2xlarge", "type": "kwok"}},
			Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i), ProviderID: "kwok://" + name},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7800m"), corev1.ResourceMemory: resource.MustParse("31Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+10)}, {Type: corev1.NodeHostName, Address: name}},
				NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", ContainerRuntimeVersion: "containerd://2.1.0", OperatingSystem: "linux", Architecture: "amd64"},
			}}
		g.nodes = append(g.nodes, n)
		g.nodeStatus(n, store.Initial)
	}
	fail, ignore := admissionv1.Fail, admissionv1.Ignore
	none := admissionv1.SideEffectClassNone
	podRule := []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}
	mwc := &admissionv1.MutatingWebhookConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "digester-mutating-webhook-configuration", UID: types.UID(benchUID(1 << 46))},
		Webhooks: []admissionv1.MutatingWebhook{{Name: "digester-webhook-service.digester-system.svc", FailurePolicy: &fail, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"}, Rules: podRule,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"digest-resolution": "enabled"}}}}}
	g.add(store.Initial, &mwc.ObjectMeta, mwc.APIVersion, mwc.Kind, nil, mwc)
	vwc := &admissionv1.ValidatingWebhookConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "policy-validating-webhook-configuration", UID: types.UID(benchUID(1<<46 + 1))},
		Webhooks: []admissionv1.ValidatingWebhook{{Name: "policy.example.com", FailurePolicy: &ignore, SideEffects: &none,
			AdmissionReviewVersions: []string{"v1"}, Rules: podRule}}}
	g.add(store.Initial, &vwc.ObjectMeta, vwc.APIVersion, vwc.Kind, nil, vwc)
	return g
}

func benchNS(i int) string { return fmt.Sprintf("team-%02d", i%benchNamespaces) }

// add records a revision of obj (whose metadata is meta) at the current
// time, with a fresh resourceVersion, and moves the clock on.
func (g *traceGen) add(typ store.EventType, meta *metav1.ObjectMeta, apiVersion, kind string, refs []string, obj any) {
	g.tb.Helper()
	g.rv++
	meta.ResourceVersion = strconv.FormatUint(g.rv, 10)
	var b []byte
	var err error
	pod, proto := obj.(*corev1.Pod)
	if proto = proto && benchPodsProto; proto {
		b, err = pod.Marshal()
	} else {
		b, err = json.Marshal(obj)
	}
	if err != nil {
		g.tb.Fatalf("marshal %s %s: %v", kind, meta.Name, err)
	}
	g.w.Add(store.Record{Session: 1, Observed: g.now, Type: typ, APIVersion: apiVersion, Kind: kind,
		Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID), ResourceVersion: meta.ResourceVersion, Refs: refs, Object: b, Proto: proto})
	g.records++
	g.now = g.now.Add(benchTick)
	if g.w.Pending() >= store.BatchSize {
		if _, err := g.w.Flush(); err != nil {
			g.tb.Fatal(err)
		}
	}
	if g.now.After(g.nodeDue) && g.nodes != nil {
		g.nodeDue = g.nodeDue.Add(benchNodeStatus)
		for _, n := range g.nodes {
			g.nodeStatus(n, store.Updated)
		}
	}
}

// nodeStatus records the kubelet's periodic status of node n.
func (g *traceGen) nodeStatus(n *corev1.Node, typ store.EventType) {
	now := metav1.NewTime(g.now)
	n.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: n.CreationTimestamp, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: now, LastTransitionTime: n.CreationTimestamp, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: n.CreationTimestamp, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"DiskPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"MemoryPressure\"}":{"f:lastHeartbeatTime":{}},"k:{\"type\":\"Ready\"}":{"f:lastHeartbeatTime":{}}}}}`)},
		Subresource: "status"}}
	g.add(typ, &n.ObjectMeta, "v1", "Node", nil, n)
}

// close ends the session and closes the Writer (which compacts the file, as
// `podtrace record` does when it stops).
func (g *traceGen) close() {
	g.tb.Helper()
	if err := g.w.EndSession(1, g.now); err != nil {
		g.tb.Fatal(err)
	}
	if err := g.w.Close(); err != nil {
		g.tb.Fatal(err)
	}
}

const (
	kcmPodFields     = `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{},"f:team":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"%s\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:args":{},"f:env":{},"f:image":{},"f:name":{},"f:resources":{}},"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}},"f:restartPolicy":{},"f:tolerations":{},"f:volumes":{}}}`
	schedulerFields  = `{"f:spec":{"f:nodeName":{}}}`
	kubeletPodFields = `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"%s\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	labelFields      = `{"f:metadata":{"f:labels":{"f:debug":{}}}}`
	eventFields      = `{"f:count":{},"f:firstTimestamp":{},"f:involvedObject":{},"f:lastTimestamp":{},"f:message":{},"f:reason":{},"f:reportingComponent":{},"f:reportingInstance":{},"f:source":{"f:component":{},"f:host":{}},"f:type":{}}`
)

// crashPod is a Deployment's pod whose app container crashes and restarts
// until it has revs revisions: each cycle is a kubelet status update to
// running and ready, and one to CrashLoopBackOff with the last termination,
// each with its event.
type crashPod struct {
	i       int
	pod     corev1.Pod
	rs      *appsv1.ReplicaSet
	node    string
	revs, n int
	started time.Time
	events  map[string]*corev1.Event
}

// newCrashPod returns pod i (of ReplicaSet i/50) with revs revisions to come;
// name, if not empty, replaces the generated name.
func newCrashPod(i, revs int, name string) *crashPod {
	ns := benchNS(i / 50)
	rsName := fmt.Sprintf("worker-%04d-5d9c7b8f6", i/50)
	if name == "" {
		name = fmt.Sprintf("%s-%05x", rsName, uint32(i*7919)%0xfffff)
	}
	rs := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rsName, UID: types.UID(benchUID(uint64(i/50) + 1<<43)),
			Labels: map[string]string{"app": "worker", "pod-template-hash": "5d9c7b8f6"}}}
	p := &crashPod{i: i, rs: rs, revs: revs, node: fmt.Sprintf("kwok-node-%02d", i%benchNodes), events: map[string]*corev1.Event{}}
	p.pod.APIVersion, p.pod.Kind = "v1", "Pod"
	p.pod.Namespace, p.pod.Name, p.pod.UID = ns, name, types.UID(benchUID(uint64(i)+1))
	return p
}

func (p *crashPod) done() bool { return p.n >= p.revs }

// manage sets manager's managedFields entry (replacing its earlier one).
func (p *crashPod) manage(now time.Time, manager, subresource, fields string) {
	t := metav1.NewTime(now)
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &t, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
	for k, m := range p.pod.ManagedFields {
		if m.Manager == manager && m.Subresource == subresource {
			p.pod.ManagedFields[k] = e
			return
		}
	}
	p.pod.ManagedFields = append(p.pod.ManagedFields, e)
}

func (p *crashPod) condition(t corev1.PodConditionType, s corev1.ConditionStatus, now time.Time) {
	for k := range p.pod.Status.Conditions {
		if c := &p.pod.Status.Conditions[k]; c.Type == t {
			if c.Status != s {
				c.Status, c.LastTransitionTime = s, metav1.NewTime(now)
			}
			return
		}
	}
	p.pod.Status.Conditions = append(p.pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(now)})
}

// next records the pod's next revision and the event that goes with it.
func (p *crashPod) next(g *traceGen) {
	g.tb.Helper()
	now, r := g.now, p.n
	p.n++
	refs := []string{string(p.rs.UID)}
	last := p.n == p.revs
	switch {
	case r == 0:
		if !g.rs[p.rs.Name] {
			g.rs[p.rs.Name] = true
			g.add(store.Initial, &p.rs.ObjectMeta, "apps/v1", "ReplicaSet", nil, p.rs)
			now = g.now
		}
		ctrl := true
		p.pod.CreationTimestamp = metav1.NewTime(now)
		p.pod.GenerateName = p.rs.Name + "-"
		p.pod.Labels = map[string]string{"app": "worker", "team": p.pod.Namespace, "pod-template-hash": "5d9c7b8f6"}
		p.pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: p.rs.Name, UID: p.rs.UID, Controller: &ctrl, BlockOwnerDeletion: &ctrl}}
		grace := int64(30)
		p.pod.Spec = corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "worker", SchedulerName: "default-scheduler",
			Containers: []corev1.Container{
				{Name: "app", Image: "registry.example.com/team/worker@sha256:4f1e2d3c4b5a69788796a5b4c3d2e1f00112233445566778899aabbccddeeff", Args: []string{"--queue", p.pod.Namespace},
					Env:          []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "QUEUE", Value: p.pod.Namespace}},
					Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/worker"}}, TerminationMessagePath: "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent},
				{Name: "proxy", Image: "envoyproxy/envoy:v1.31.2", TerminationMessagePath: "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent},
			},
			Volumes:     []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "worker-config"}}}}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		}
		p.pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
		p.manage(now, "kube-controller-manager", "", fmt.Sprintf(kcmPodFields, p.rs.UID))
		g.add(store.Added, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
	case r == 1:
		p.pod.Spec.NodeName = p.node
		p.condition(corev1.PodScheduled, corev1.ConditionTrue, now)
		p.manage(now, "kube-scheduler", "binding", schedulerFields)
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
		p.event(g, corev1.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", p.pod.Namespace, p.pod.Name, p.node), "default-scheduler")
	case r == 2:
		st := metav1.NewTime(now)
		ip := fmt.Sprintf("10.244.%d.%d", p.i%benchNodes, p.i%250+2)
		p.pod.Status.HostIP, p.pod.Status.PodIP, p.pod.Status.StartTime = fmt.Sprintf("10.0.0.%d", p.i%benchNodes+10), ip, &st
		p.pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.condition(corev1.PodReady, corev1.ConditionFalse, now)
		p.condition(corev1.ContainersReady, corev1.ConditionFalse, now)
		for _, c := range p.pod.Spec.Containers {
			p.pod.Status.ContainerStatuses = append(p.pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		}
		p.manage(now, "kubelet", "status", fmt.Sprintf(kubeletPodFields, ip))
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
		p.event(g, corev1.EventTypeNormal, "Pulled", `Container image "registry.example.com/team/worker@sha256:4f1e2d3c" already present on machine`, "kubelet")
	case r == 3:
		p.pod.Labels["debug"] = "true"
		p.manage(now, "kubectl-label", "", labelFields)
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
	case last && p.i%10 == 0:
		// Deleted with foregroundDeletion: the API server adds the
		// finalizer, which nothing removes.
		grace := int64(30)
		dt := metav1.NewTime(now.Add(30 * time.Second))
		p.pod.DeletionTimestamp, p.pod.DeletionGracePeriodSeconds = &dt, &grace
		p.pod.Finalizers = append(p.pod.Finalizers, metav1.FinalizerDeleteDependents)
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
	case p.i%10 == 5 && p.n == p.revs-1:
		grace := int64(30)
		dt := metav1.NewTime(now.Add(30 * time.Second))
		p.pod.DeletionTimestamp, p.pod.DeletionGracePeriodSeconds = &dt, &grace
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
		p.event(g, corev1.EventTypeNormal, "Killing", "Stopping container app", "kubelet")
	case last && p.i%10 == 5:
		g.add(store.Deleted, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
	case r%2 == 0:
		// The app container starts again.
		p.started = now
		p.pod.Status.Phase = corev1.PodRunning
		p.condition(corev1.PodReady, corev1.ConditionTrue, now)
		p.condition(corev1.ContainersReady, corev1.ConditionTrue, now)
		for k := range p.pod.Status.ContainerStatuses {
			cs := &p.pod.Status.ContainerStatuses[k]
			if k > 0 && cs.State.Running != nil {
				continue // the proxy keeps running
			}
			started := true
			cs.Ready, cs.Started = true, &started
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
			cs.ContainerID = fmt.Sprintf("containerd://%x", sha256.Sum256([]byte(fmt.Sprint(p.i, r, k))))
			cs.ImageID = cs.Image
		}
		p.manage(now, "kubelet", "status", fmt.Sprintf(kubeletPodFields, p.pod.Status.PodIP))
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
		p.event(g, corev1.EventTypeNormal, "Started", "Started container app", "kubelet")
	default:
		// It exits with an error and backs off.
		p.condition(corev1.PodReady, corev1.ConditionFalse, now)
		p.condition(corev1.ContainersReady, corev1.ConditionFalse, now)
		cs := &p.pod.Status.ContainerStatuses[0]
		f := false
		cs.Ready, cs.Started = false, &f
		cs.RestartCount++
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			StartedAt: metav1.NewTime(p.started), FinishedAt: metav1.NewTime(now), ContainerID: cs.ContainerID}}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %ds restarting failed container=app pod=%s_%s(%s)", min(10<<min(cs.RestartCount, 5), 300), p.pod.Name, p.pod.Namespace, p.pod.UID)}}
		p.manage(now, "kubelet", "status", fmt.Sprintf(kubeletPodFields, p.pod.Status.PodIP))
		g.add(store.Updated, &p.pod.ObjectMeta, "v1", "Pod", refs, &p.pod)
		p.event(g, corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off restarting failed container app in pod %s_%s(%s)", p.pod.Name, p.pod.Namespace, p.pod.UID), "kubelet")
	}
}

// event records the Event for reason about the pod: created the first
// time, its count and lastTimestamp updated after, as the kubelet's event
// correlator does.
func (p *crashPod) event(g *traceGen, typ, reason, message, component string) {
	now := metav1.NewTime(g.now)
	ev, typRec := p.events[reason], store.Updated
	if ev == nil {
		typRec = store.Added
		ev = &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
			ObjectMeta: metav1.ObjectMeta{Namespace: p.pod.Namespace, Name: fmt.Sprintf("%s.%016x", p.pod.Name, uint64(len(p.events)+1)*0x9E3779B97F4A7C15>>4),
				UID: types.UID(benchUID(uint64(p.i)<<4 + uint64(len(p.events)) + 1<<50)), CreationTimestamp: now},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.pod.Namespace, Name: p.pod.Name, UID: p.pod.UID, APIVersion: "v1", FieldPath: "spec.containers{app}"},
			Reason:         reason, Message: message, Type: typ, FirstTimestamp: now,
			Source:              corev1.EventSource{Component: component, Host: p.node},
			ReportingController: component, ReportingInstance: p.node}
		p.events[reason] = ev
	}
	ev.Count++
	ev.LastTimestamp = now
	ev.InvolvedObject.ResourceVersion = p.pod.ResourceVersion
	ev.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: component, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(eventFields)}}}
	g.add(typRec, &ev.ObjectMeta, "v1", "Event", []string{string(p.pod.UID)}, ev)
}

// benchTrace is a trace file written for the benchmarks.
type benchTrace struct {
	path string
	pods int
	// target is the pod of many revisions in a diff trace.
	targetNS, target string
	targetRevs       int
}

// benchTraces are built once per process, kept in one directory and
// removed by TestMain; with $PODTRACE_BENCH_DIR they are kept there and
// reused by later runs (delete the files when the generator changes).
var (
	benchTraces   = map[string]*benchTrace{}
	benchTraceDir string
)

// benchTracePath returns where trace name lives and whether it is there
// already, from an earlier run with $PODTRACE_BENCH_DIR.
func benchTracePath(tb testing.TB, name string) (string, bool) {
	tb.Helper()
	if d := os.Getenv("PODTRACE_BENCH_DIR"); d != "" {
		path := filepath.Join(d, name)
		_, err := os.Stat(path)
		return path, err == nil
	}
	if benchTraceDir == "" {
		d, err := os.MkdirTemp("", "podtrace-app-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		benchTraceDir = d
	}
	return filepath.Join(benchTraceDir, name), false
}

// writeBenchTrace writes a trace to path via a temporary file of this
// process, so that an interrupted build leaves no half trace to be reused
// and two benchmark runs sharing $PODTRACE_BENCH_DIR do not write one file
// together (it happened: a trace of twice the records).
func writeBenchTrace(tb testing.TB, path string, write func(g *traceGen)) {
	tb.Helper()
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	os.Remove(tmp)
	start := time.Now()
	g := newTraceGen(tb, tmp)
	write(g)
	g.close()
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("wrote %s: %d records in %s", path, g.records, time.Since(start).Round(time.Millisecond))
}

// diffTrace returns a trace of about n records in which one pod,
// team-07/worker-0007-5d9c7b8f6-x2k4p, has 1,000 revisions spread over the whole
// recording among the crash-looping pods of 100 revisions each.
func diffTrace(tb testing.TB, n int) *benchTrace {
	tb.Helper()
	name := benchTraceName(fmt.Sprintf("diff-%d.db", n))
	if bt := benchTraces[name]; bt != nil {
		return bt
	}
	const targetRevs = 1000
	target := newCrashPod(7*50+3, targetRevs, "worker-0007-5d9c7b8f6-x2k4p")
	bt := &benchTrace{targetNS: target.pod.Namespace, target: target.pod.Name, targetRevs: targetRevs}
	path, ok := benchTracePath(tb, name)
	bt.path = path
	if !ok {
		writeBenchTrace(tb, path, func(g *traceGen) {
			// The target's revisions and events are about two records in
			// every n/1,000.
			every := max(n/targetRevs, 4)
			next := 0
			var active []*crashPod
			pods := 0
			for k := 0; g.records < n || !target.done(); k++ {
				if !target.done() && (g.records >= next || g.records >= n) {
					target.next(g)
					next += every
					continue
				}
				for len(active) < benchInFlight {
					if pods == target.i {
						pods++
					}
					active = append(active, newCrashPod(pods, 100, ""))
					pods++
				}
				p := active[k%len(active)]
				p.next(g)
				if p.done() {
					i := k % len(active)
					active[i] = active[len(active)-1]
					active = active[:len(active)-1]
				}
			}
			bt.pods = pods + 1
		})
	}
	benchTraces[name] = bt
	return bt
}

// reportTrace returns a trace of pods crash-looping pods of revs revisions
// each, about 200 in flight at a time.
func reportTrace(tb testing.TB, pods, revs int) *benchTrace {
	tb.Helper()
	name := benchTraceName(fmt.Sprintf("report-%dx%d.db", pods, revs))
	if bt := benchTraces[name]; bt != nil {
		return bt
	}
	path, ok := benchTracePath(tb, name)
	bt := &benchTrace{path: path, pods: pods}
	if !ok {
		writeBenchTrace(tb, path, func(g *traceGen) {
			var active []*crashPod
			started := 0
			for k := 0; started < pods || len(active) > 0; k++ {
				for len(active) < benchInFlight && started < pods {
					active = append(active, newCrashPod(started, revs, ""))
					started++
				}
				i := k % len(active)
				p := active[i]
				p.next(g)
				if p.done() {
					active[i] = active[len(active)-1]
					active = active[:len(active)-1]
				}
			}
		})
	}
	benchTraces[name] = bt
	return bt
}
