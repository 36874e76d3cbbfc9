package explain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// fitNode0 makes a kwok-like node: 2 cpu, 4Gi, 110 pods, Ready, with the
// given labels.
func fitNodeObj(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	l := map[string]string{"kubernetes.io/hostname": name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: l},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// fitPending is a pod the scheduler could not place: created at 0, marked
// PodScheduled=False at 1s.
func fitPending(mutate func(*corev1.Pod)) []*corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: finNS, UID: "uid-pending", ResourceVersion: "200", CreationTimestamp: metav1.NewTime(finStart)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if mutate != nil {
		mutate(p)
	}
	q := p.DeepCopy()
	q.ResourceVersion = "201"
	q.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: fitMessage, LastTransitionTime: metav1.NewTime(finStart.Add(time.Second))}}
	return []*corev1.Pod{p, q}
}

// fitMessage is the scheduler's message, long enough to be shortened.
const fitMessage = "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."

// fitEvent is the scheduler's FailedScheduling event at start+at.
func fitEvent(t *testing.T, seq uint64, at time.Duration) store.Record {
	ev := &corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: "pending.1", Namespace: finNS, UID: types.UID(fmt.Sprintf("ev-%d", seq)), ResourceVersion: fmt.Sprint(seq)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: finNS, Name: "pending", UID: "uid-pending"},
		Reason:         "FailedScheduling", Message: fitMessage, Type: corev1.EventTypeWarning, Count: 1,
		Source:        corev1.EventSource{Component: "default-scheduler"},
		LastTimestamp: metav1.NewTime(finStart.Add(at)), FirstTimestamp: metav1.NewTime(finStart.Add(at)),
	}
	return finRecord(t, seq, at, store.Added, "Event", ev)
}

// boundPod is another pod on node, requesting cpu, in phase.
func boundPod(name, node, cpu string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "other", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestUnschedulableNodeFit(t *testing.T) {
	ssd := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }
	gpu := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	// input: the pod's revisions, a FailedScheduling event at 2s, nodes
	// recorded from -1m, the end at 10s.
	input := func(t *testing.T, pods []*corev1.Pod, nodes []*corev1.Node, others ...*corev1.Pod) diff.Input {
		in := finInput(t, nil, nil, false, 10*time.Second)
		for i, p := range pods {
			typ := store.Updated
			if i == 0 {
				typ = store.Added
			}
			in.Pod = append(in.Pod, finRecord(t, uint64(20+i), time.Duration(i)*time.Second, typ, "Pod", p))
		}
		in.Events = []store.Record{fitEvent(t, 30, 2*time.Second)}
		in.Nodes = map[string][]store.Record{}
		for i, n := range nodes {
			in.Nodes[string(n.UID)] = append(in.Nodes[string(n.UID)], finRecord(t, uint64(3+i), -time.Minute, store.Initial, "Node", n))
		}
		in.NodePods = map[string][]store.Record{}
		for i, p := range others {
			in.NodePods[string(p.UID)] = []store.Record{finRecord(t, uint64(40+i), -30*time.Second, store.Initial, "Pod", p)}
		}
		return in
	}
	tests := []struct {
		name     string
		in       func(t *testing.T) diff.Input
		headline string
		next     []string
		evidence []string
		notNext  []string
	}{{
		name: "one node lacks the label, the other has an untolerated taint",
		in: func(t *testing.T) diff.Input {
			return input(t, fitPending(ssd), []*corev1.Node{fitNodeObj("kwok-node-0", nil), fitNodeObj("kwok-node-1", map[string]string{"disk": "ssd"}, gpu)})
		},
		headline: "never scheduled: no node fits: kwok-node-0 lacks label disk=ssd; kwok-node-1 has untolerated taint dedicated=gpu:NoSchedule",
		next: []string{"label a node that should run it: kubectl label node kwok-node-0 disk=ssd; or change the pod's spec.nodeSelector",
			"add a toleration to the pod, {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}, if it may run there; or remove the taint: kubectl taint node kwok-node-1 dedicated=gpu:NoSchedule-"},
		evidence: []string{"FailedScheduling (x1): " + fitMessage, "node kwok-node-0, as recorded when the scheduler last failed: lacks label disk=ssd"},
	}, {
		name: "both nodes lack the label: grouped",
		in: func(t *testing.T) diff.Input {
			return input(t, fitPending(ssd), []*corev1.Node{fitNodeObj("kwok-node-0", nil), fitNodeObj("kwok-node-1", map[string]string{"disk": "hdd"})})
		},
		headline: "never scheduled: no node fits: kwok-node-0 and kwok-node-1 lack label disk=ssd",
		next:     []string{"label a node that should run it: kubectl label node kwok-node-0 disk=ssd; or change the pod's spec.nodeSelector"},
		evidence: []string{"node kwok-node-1, as recorded when the scheduler last failed: lacks label disk=ssd (it has disk=hdd)"},
	}, {
		name: "a label the kubelet sets: no advice to label by hand",
		in: func(t *testing.T) diff.Input {
			pods := fitPending(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "gone"} })
			return input(t, pods, []*corev1.Node{fitNodeObj("kwok-node-0", nil), fitNodeObj("kwok-node-1", nil, gpu), fitNodeObj("kwok-node-2", nil), fitNodeObj("kwok-node-3", nil), fitNodeObj("kwok-node-4", nil)})
		},
		headline: "never scheduled: no node fits: kwok-node-0, kwok-node-2 and 2 more lack label kubernetes.io/hostname=gone; kwok-node-1 lacks label kubernetes.io/hostname=gone, has untolerated taint dedicated=gpu:NoSchedule",
		next:     []string{"kubernetes.io/hostname is set by the kubelet or the cloud provider, not by hand"},
		notNext:  []string{"kubectl label"},
	}, {
		name: "the taint tolerated: the node passes, the scheduler's message stands",
		in: func(t *testing.T) diff.Input {
			pods := fitPending(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			})
			return input(t, pods, []*corev1.Node{fitNodeObj("kwok-node-1", nil, gpu)})
		},
		headline: "never scheduled: condition PodScheduled=False Unschedulable: 0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. ...",
		next:     []string{"kwok-node-1 passes every check podtrace makes: the scheduler's message says what else rules it out"},
	}, {
		name: "no node recorded: the scheduler's message, shortened at a sentence, and the gap said",
		in: func(t *testing.T) diff.Input {
			return input(t, fitPending(ssd), nil)
		},
		headline: "never scheduled: condition PodScheduled=False Unschedulable: 0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}. ...",
		evidence: []string{"the trace holds no node recorded as of 2026-05-04T10:00:02Z", "condition PodScheduled=False Unschedulable: " + fitMessage},
	}, {
		name: "too little cpu left by the pods recorded on the node; a finished pod holds none",
		in: func(t *testing.T) diff.Input {
			return input(t, fitPending(nil), []*corev1.Node{fitNodeObj("kwok-node-0", nil)},
				boundPod("busy", "kwok-node-0", "1500m", corev1.PodRunning), boundPod("done", "kwok-node-0", "1", corev1.PodSucceeded))
		},
		headline: "never scheduled: no node fits: kwok-node-0 has too little cpu free: the pod requests 1, 500m of 2 allocatable is free, as far as recorded",
		next:     []string{"lower the pod's cpu request (1), or make room on kwok-node-0, or add a node"},
	}, {
		name: "room once the other pod finished",
		in: func(t *testing.T) diff.Input {
			return input(t, fitPending(nil), []*corev1.Node{fitNodeObj("kwok-node-0", nil)}, boundPod("done", "kwok-node-0", "1500m", corev1.PodSucceeded))
		},
		next: []string{"kwok-node-0 passes every check podtrace makes"},
	}, {
		name: "cordoned and NotReady",
		in: func(t *testing.T) diff.Input {
			cordoned := fitNodeObj("kwok-node-0", nil, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
			cordoned.Spec.Unschedulable = true
			down := fitNodeObj("kwok-node-1", nil, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
			down.Status.Conditions[0].Status, down.Status.Conditions[0].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
			return input(t, fitPending(nil), []*corev1.Node{cordoned, down})
		},
		headline: "never scheduled: no node fits: kwok-node-0 is cordoned (spec.unschedulable); kwok-node-1 is NotReady (taint node.kubernetes.io/not-ready:NoSchedule)",
		next:     []string{"kubectl uncordon kwok-node-0", "kwok-node-1 not Ready"},
	}, {
		name: "required node affinity",
		in: func(t *testing.T) diff.Input {
			pods := fitPending(func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpExists},
						{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-1"}},
					}}}}}}
			})
			return input(t, pods, []*corev1.Node{fitNodeObj("kwok-node-0", map[string]string{"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "us-1"})})
		},
		headline: "never scheduled: no node fits: kwok-node-0 matches no required node affinity term (topology.kubernetes.io/zone In [eu-1], the node has topology.kubernetes.io/zone=us-1)",
	}, {
		name: "the node as it was when the scheduler failed, not as it ended",
		in: func(t *testing.T) diff.Input {
			in := input(t, fitPending(nil), []*corev1.Node{fitNodeObj("kwok-node-1", nil, gpu)})
			in.Nodes["uid-kwok-node-1"] = append(in.Nodes["uid-kwok-node-1"], finRecord(t, 50, 5*time.Second, store.Updated, "Node", fitNodeObj("kwok-node-1", nil)))
			return in
		},
		headline: "never scheduled: no node fits: kwok-node-1 has untolerated taint dedicated=gpu:NoSchedule",
	}, {
		name: "a gated pod: no node is at fault",
		in: func(t *testing.T) diff.Input {
			pods := fitPending(func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}} })
			pods[1].Status.Conditions[0].Reason, pods[1].Status.Conditions[0].Message = corev1.PodReasonSchedulingGated, "Scheduling is blocked due to non-empty scheduling gates"
			in := input(t, pods, []*corev1.Node{fitNodeObj("kwok-node-0", nil, gpu)})
			in.Events = nil
			return in
		},
		headline: "never scheduled: condition PodScheduled=False SchedulingGated: Scheduling is blocked due to non-empty scheduling gates",
		next:     []string{"the pod waits for its scheduling gates to be removed"},
		notNext:  []string{"kubectl taint"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, lc.Findings, lc)
			f := finFind(lc.Findings, "unschedulable")
			if f == nil {
				t.Fatalf("no unschedulable finding: %+v", lc.Findings)
			}
			t.Logf("headline: %s\nnext: %q\nevidence: %+v", f.Headline, f.Next, f.Evidence)
			if tc.headline != "" && f.Headline != tc.headline {
				t.Errorf("headline (-want +got):\n-%s\n+%s", tc.headline, f.Headline)
			}
			for _, n := range tc.next {
				if !hasText(f.Next, n) {
					t.Errorf("next %q lacks %q", f.Next, n)
				}
			}
			for _, n := range tc.notNext {
				if hasText(f.Next, n) {
					t.Errorf("next %q has %q", f.Next, n)
				}
			}
			for _, e := range tc.evidence {
				if !evidenceHas(f, e) {
					t.Errorf("evidence lacks %q: %+v", e, f.Evidence)
				}
			}
		})
	}
}

// TestUnschedulableThenScheduled: a pod the scheduler placed soon after a
// failure is healthy.
func TestUnschedulableThenScheduled(t *testing.T) {
	pods := fitPending(nil)
	bound := pods[1].DeepCopy()
	bound.ResourceVersion = "202"
	bound.Spec.NodeName = "kwok-node-0"
	bound.Status.Conditions[0].Status = corev1.ConditionTrue
	in := finInput(t, []store.Record{
		finRecord(t, 20, 0, store.Added, "Pod", pods[0]),
		finRecord(t, 21, time.Second, store.Updated, "Pod", pods[1]),
		finRecord(t, 22, 3*time.Second, store.Updated, "Pod", bound),
	}, nil, false, 10*time.Second)
	in.Events = []store.Record{fitEvent(t, 30, 2*time.Second)}
	lc, err := Replay(in, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// No warning; the scheduler's failure is in an info finding's
	// evidence, as every Warning event is in some finding's.
	if len(lc.Findings) != 1 || lc.Findings[0].Severity != Info || lc.Findings[0].ID != "unschedulable" {
		t.Errorf("findings %+v, want one info finding, unschedulable", lc.Findings)
	}
	if v := Check(lc); len(v) > 0 {
		t.Errorf("invariant: %v", v)
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short.", 160, "short."},
		{"First sentence. Second sentence. Third.", 20, "First sentence. ..."},
		{"First sentence. Second sentence. Third.", 33, "First sentence. Second sentence. ..."},
		{"one clause; another clause. end", 15, "one clause ..."},
		// No boundary within n: the first one after it; none at all: whole.
		{"a long first sentence. b", 5, "a long first sentence. ..."},
		{"no boundary at all in this message", 5, "no boundary at all in this message"},
		// A period inside a name is no boundary.
		{"node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate", 20, "node(s) had taint {node.kubernetes.io/not-ready: }, that the pod didn't tolerate"},
	} {
		if got := shorten(tc.in, tc.n); got != tc.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if s := shorten(strings.Repeat("x", 200), 10); !strings.HasPrefix(s, "xxxx") || len(s) != 200 {
		t.Errorf("a message without a boundary was cut: %q", s)
	}
}
