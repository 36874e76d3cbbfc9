package explain

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// uwPod is a pod of one container "web" with a readiness probe, not owned,
// as the API server stores it.
func uwPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: finNS, UID: finPodUID, ResourceVersion: "100",
			CreationTimestamp: metav1.NewTime(finStart)},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{
			Name: "web", Image: "registry.example.com/web:2",
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 5, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
			},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// uwRev is p at resourceVersion rv with f applied.
func uwRev(p *corev1.Pod, rv string, f func(*corev1.Pod)) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	f(p)
	return p
}

// uwRunning: scheduled, the container running since 2s, Ready as given,
// as the kubelet reports it.
func uwRunning(p *corev1.Pod, rv string, ready bool) *corev1.Pod {
	return uwRev(p, rv, func(p *corev1.Pod) {
		p.Spec.NodeName = "node-a"
		p.Status.Phase = corev1.PodRunning
		status, reason, msg := corev1.ConditionTrue, "", ""
		if !ready {
			status, reason, msg = corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [web]"
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(finStart.Add(2 * time.Second))},
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: ready, Image: "registry.example.com/web:2",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(finStart.Add(2 * time.Second))}}}}
	})
}

// uwEvent is an Event about the pod.
func uwEvent(t *testing.T, seq uint64, at time.Duration, typ, reason, message string, count int32) store.Record {
	ev := &corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web-0.%d", seq), Namespace: finNS, UID: types.UID(fmt.Sprintf("ev-%d", seq)), ResourceVersion: fmt.Sprint(seq)},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: finNS, Name: "web-0", UID: finPodUID},
		Reason:         reason, Message: message, Type: typ, Count: count,
		Source:        corev1.EventSource{Component: "kubelet", Host: "node-a"},
		LastTimestamp: metav1.NewTime(finStart.Add(at)), FirstTimestamp: metav1.NewTime(finStart.Add(at)),
	}
	return finRecord(t, seq, at, store.Added, "Event", ev)
}

// uwInput is the pod's revisions, one a second from 0 unless at says, its
// events, and the end of the recording.
func uwInput(t *testing.T, end time.Duration, events []store.Record, revs ...any) diff.Input {
	var recs []store.Record
	at := time.Duration(0)
	for i, r := range revs {
		switch v := r.(type) {
		case time.Duration:
			at = v
		case *corev1.Pod:
			typ := store.Updated
			if i == 0 {
				typ = store.Added
			}
			recs = append(recs, finRecord(t, uint64(10+i), at, typ, "Pod", v))
			at += time.Second
		case store.EventType: // the pod's removal, as of its last revision
			var last *corev1.Pod
			for _, r := range revs[:i] {
				if p, ok := r.(*corev1.Pod); ok {
					last = p
				}
			}
			recs = append(recs, finRecord(t, uint64(10+i), at, v, "Pod", last))
		}
	}
	in := finInput(t, recs, nil, false, end)
	in.Events = events
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid-a"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}}}
	in.Related["node-uid-a"] = []store.Record{finRecord(t, 5, -time.Minute, store.Initial, "Node", node)}
	return in
}

// TestUnwellRules: each rule that reads an unwell stretch, on a history
// shaped as the kubelet writes it, and the healthy controls beside them:
// the findings' ids (the most severe first, "" for no warning), their
// goldens, and the invariant (golden checks it).
func TestUnwellRules(t *testing.T) {
	p := uwPod()
	deleted := func(p *corev1.Pod, rv string, at time.Duration, grace int64) *corev1.Pod {
		return finDeleted(p, rv, at, grace)
	}
	stopped := func(p *corev1.Pod, rv string, code int32, reason string) *corev1.Pod {
		return uwRev(p, rv, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			if code != 0 {
				p.Status.Phase = corev1.PodFailed
			}
			p.Status.Conditions[1].Status, p.Status.Conditions[1].Reason = corev1.ConditionFalse, "PodCompleted"
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason,
				StartedAt: metav1.NewTime(finStart.Add(2 * time.Second)), FinishedAt: metav1.NewTime(finStart.Add(40 * time.Second))}}
		})
	}
	unhealthy := func(t *testing.T, seq uint64, at time.Duration, count int32) store.Record {
		return uwEvent(t, seq, at, corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", count)
	}
	for _, tc := range []struct {
		name  string
		in    func(t *testing.T) diff.Input
		want  string // the most severe finding's id if a warning or worse
		check func(t *testing.T, lc *Lifecycle)
	}{{
		name: "not-ready: running, its readiness probe failing for 3 minutes",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 3*time.Minute, []store.Record{unhealthy(t, 30, 10*time.Second, 1), unhealthy(t, 31, 2*time.Minute, 20)},
				p, 2*time.Second, uwRunning(p, "101", false))
		},
		want: "not-ready",
		check: func(t *testing.T, lc *Lifecycle) {
			f := finFind(lc.Findings, "not-ready")
			if !strings.Contains(f.Headline, "its probes allow 26s") || !strings.Contains(f.Headline, "readiness probe failed, 20 times at least") {
				t.Errorf("headline %q: want the allowance and the probe's failures", f.Headline)
			}
			if !evidenceHas(f, "readiness probe httpGet HTTP :8080/healthz, initialDelaySeconds 0, periodSeconds 5, timeoutSeconds 1, failureThreshold 3") {
				t.Errorf("evidence does not quote the probe: %+v", f.Evidence)
			}
		},
	}, {
		name: "healthy: readiness failed twice during start-up, then Ready within what the probe allows",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 3*time.Minute, []store.Record{unhealthy(t, 30, 4*time.Second, 2)},
				p, 2*time.Second, uwRunning(p, "101", false), 12*time.Second, uwRunning(p, "102", true))
		},
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "probe-failed"); f == nil || f.Severity != Info {
				t.Errorf("want an info probe-failed citing the start-up's failures; findings %v", finIDs(lc.Findings))
			}
		},
	}, {
		name: "deletion-stuck: the kubelet never reports the containers stopped",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, 5*time.Second, corev1.EventTypeNormal, "Killing", "Stopping container web", 1)},
				p, 2*time.Second, uwRunning(p, "101", true), 5*time.Second, deleted(uwRunning(p, "102", true), "102", 5*time.Second, 5))
		},
		want: "deletion-stuck",
		check: func(t *testing.T, lc *Lifecycle) {
			f := finFind(lc.Findings, "deletion-stuck")
			if f.Severity != Critical || !strings.Contains(f.Headline, "past its grace period (5s) on node node-a: the kubelet never reported its containers stopped") {
				t.Errorf("%s %q", f.Severity, f.Headline)
			}
		},
	}, {
		name: "deletion-slow: removed 40s past its grace period",
		in: func(t *testing.T) diff.Input {
			d := deleted(uwRunning(p, "102", true), "102", 5*time.Second, 5)
			s := stopped(d, "103", 137, "Error")
			return uwInput(t, 2*time.Minute, nil, p, 2*time.Second, uwRunning(p, "101", true), 5*time.Second, d, 49*time.Second, s, 50*time.Second, store.Deleted)
		},
		want: "deletion-slow",
	}, {
		name: "healthy: graceful deletion, SIGKILL at the grace period (exit 137), removed at once",
		in: func(t *testing.T) diff.Input {
			d := deleted(uwRunning(p, "102", true), "102", 5*time.Second, 30)
			s := stopped(d, "103", 137, "Error")
			return uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, 5*time.Second, corev1.EventTypeNormal, "Killing", "Stopping container web", 1)},
				p, 2*time.Second, uwRunning(p, "101", true), 5*time.Second, d, 35*time.Second, s, 36*time.Second, store.Deleted)
		},
	}, {
		name: "restarted: the kubelet killed it for a failed liveness probe",
		in: func(t *testing.T) diff.Input {
			r := uwRev(uwRunning(p, "102", true), "102", func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 1
				p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
					FinishedAt: metav1.NewTime(finStart.Add(40 * time.Second))}
			})
			return uwInput(t, 2*time.Minute, []store.Record{
				uwEvent(t, 30, 35*time.Second, corev1.EventTypeWarning, "Unhealthy", "Liveness probe failed: Get \"http://10.0.0.5:8080/live\": context deadline exceeded", 3),
				uwEvent(t, 31, 39*time.Second, corev1.EventTypeNormal, "Killing", "Container web failed liveness probe, will be restarted", 1),
			}, p, 2*time.Second, uwRunning(p, "101", true), 41*time.Second, r)
		},
		want: "restarted",
	}, {
		name: "crash-loop: the kubelet kills it for its startup probe, quoted from the spec",
		in: func(t *testing.T) diff.Input {
			probed := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}},
					PeriodSeconds: 5, FailureThreshold: 3, TimeoutSeconds: 1, SuccessThreshold: 1}
			})
			loop := uwRev(uwRunning(probed, "101", false), "101", func(p *corev1.Pod) {
				cs := &p.Status.ContainerStatuses[0]
				cs.RestartCount = 3
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: "back-off 40s restarting failed container=web pod=web-0_ci(0000)"}}
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error",
					FinishedAt: metav1.NewTime(finStart.Add(50 * time.Second))}
			})
			return uwInput(t, 2*time.Minute, []store.Record{
				uwEvent(t, 30, 20*time.Second, corev1.EventTypeWarning, "Unhealthy", "Startup probe failed: dial tcp 10.0.0.5:9000: connect: connection refused", 9),
				uwEvent(t, 31, 21*time.Second, corev1.EventTypeNormal, "Killing", "Container web failed startup probe, will be restarted", 1),
				uwEvent(t, 32, 49*time.Second, corev1.EventTypeNormal, "Killing", "Container web failed startup probe, will be restarted", 3),
				uwEvent(t, 33, 51*time.Second, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container web in pod web-0_ci(0000)", 2),
			}, probed, 2*time.Second, uwRunning(probed, "101", true), 51*time.Second, loop)
		},
		want: "crash-loop",
	}, {
		name: "node-not-ready: the node stopped reporting under a running pod and came back",
		in: func(t *testing.T) diff.Input {
			in := uwInput(t, 2*time.Minute, []store.Record{
				uwEvent(t, 30, 45*time.Second, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready", 1),
			}, p, 2*time.Second, uwRunning(p, "101", true))
			node := func(rv string, at time.Duration, status corev1.ConditionStatus, reason string, taints ...corev1.Taint) store.Record {
				n := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid-a", ResourceVersion: rv},
					Spec: corev1.NodeSpec{Taints: taints},
					Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: reason,
						LastTransitionTime: metav1.NewTime(finStart.Add(at))}}}}
				return finRecord(t, 0, at, store.Updated, "Node", n)
			}
			in.Related["node-uid-a"] = []store.Record{
				node("1", 0, corev1.ConditionTrue, "KubeletReady"),
				node("2", 45*time.Second, corev1.ConditionUnknown, "NodeStatusUnknown", corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}),
				node("3", 80*time.Second, corev1.ConditionTrue, "KubeletReady"),
			}
			for i := range in.Related["node-uid-a"] {
				in.Related["node-uid-a"][i].Seq = uint64(40 + i)
			}
			return in
		},
		want: "node-not-ready",
	}, {
		name: "crash-loop: a command that exits 0 under restartPolicy Always",
		in: func(t *testing.T) diff.Input {
			loop := uwRev(uwRunning(p, "101", false), "101", func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyAlways
				cs := &p.Status.ContainerStatuses[0]
				cs.RestartCount = 2
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 20s restarting failed container=web pod=web-0_ci(0000)"}}
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(finStart.Add(20 * time.Second))}
			})
			return uwInput(t, time.Minute, nil, p, 2*time.Second, uwRunning(p, "101", true), 21*time.Second, loop)
		},
		want: "crash-loop",
	}, {
		name: "image-pull: imagePullPolicy Never and the image not on the node",
		in: func(t *testing.T) diff.Input {
			w := uwRev(uwRunning(p, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				cs := &p.Status.ContainerStatuses[0]
				cs.Image = "registry.example.com/web:9"
				cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull",
					Message: `Container image "registry.example.com/web:9" is not present with pull policy of Never`}}
			})
			return uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, 3*time.Second, corev1.EventTypeWarning, "ErrImageNeverPull",
				`Container image "registry.example.com/web:9" is not present with pull policy of Never`, 1)}, p, 2*time.Second, w)
		},
		want: "image-pull",
	}, {
		name: "init-running: an init container that waits on and on holds the pod Pending",
		in: func(t *testing.T) diff.Input {
			withInit := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "wait-for-db", Image: "registry.example.com/tools:1", Command: []string{"sh", "-c", "until nc -z db 5432; do sleep 2; done"}}}
			})
			bound := uwRev(withInit, "101", func(p *corev1.Pod) { p.Spec.NodeName = "node-a" })
			waiting := uwRev(bound, "102", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
					{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized", Message: "containers with incomplete status: [wait-for-db]"},
				}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "wait-for-db", Image: "registry.example.com/tools:1",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(finStart.Add(3 * time.Second))}}}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Image: "registry.example.com/web:2",
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
			})
			return uwInput(t, 7*time.Minute, nil, withInit, 2*time.Second, bound, 3*time.Second, waiting)
		},
		want: "init-running",
	}, {
		name: "container-error: a ConfigMap its env names is missing",
		in: func(t *testing.T) diff.Input {
			e := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-env"}}}}
			})
			w := uwRev(uwRunning(e, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `configmap "web-env" not found`}}
			})
			// The kubelet's retries count one event up: cited first and last.
			return uwInput(t, time.Minute, []store.Record{
				uwEvent(t, 30, 3*time.Second, corev1.EventTypeWarning, "Failed", `Error: configmap "web-env" not found`, 4),
				uwEvent(t, 31, 13*time.Second, corev1.EventTypeWarning, "Failed", `Error: configmap "web-env" not found`, 5),
				uwEvent(t, 32, 23*time.Second, corev1.EventTypeWarning, "Failed", `Error: configmap "web-env" not found`, 6),
			}, e, 2*time.Second, w)
		},
		want: "container-error",
	}, {
		name: "exited: one container exited 1, the other runs on (restartPolicy Never)",
		in: func(t *testing.T) diff.Input {
			two := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sync", Image: "registry.example.com/sync:1"})
			})
			r := uwRev(uwRunning(two, "101", true), "101", func(p *corev1.Pod) {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: "sync", State: corev1.ContainerState{
					Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(finStart.Add(3 * time.Second))}}})
				p.Status.Conditions[1].Status, p.Status.Conditions[1].Reason = corev1.ConditionFalse, "ContainersNotReady"
			})
			return uwInput(t, 5*time.Second, nil, two, 2*time.Second, uwRunning(two, "101", true), 3*time.Second, r)
		},
		want: "exited",
	}, {
		name: "init container failed: Init:Error, phase Failed, main container never started",
		in: func(t *testing.T) diff.Input {
			ip := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyNever
				p.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "registry.example.com/migrate:1"}}
			})
			f := uwRev(ip, "101", func(p *corev1.Pod) {
				p.Spec.NodeName = "node-a"
				p.Status.Phase = corev1.PodFailed
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized", Message: "containers with incomplete status: [migrate]"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					FinishedAt: metav1.NewTime(finStart.Add(3 * time.Second))}}}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
			})
			return uwInput(t, time.Minute, nil, ip, 3*time.Second, f)
		},
		want: "failed",
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "failed"); f.Headline != "failed: init container migrate exited 1 (Error)" {
				t.Errorf("headline %q", f.Headline)
			}
		},
	}, {
		name: "failed with no reason and no container that exited non-zero: the headline says so",
		in: func(t *testing.T) diff.Input {
			f := uwRev(uwRunning(p, "101", true), "102", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
			return uwInput(t, time.Minute, nil, p, 2*time.Second, uwRunning(p, "101", true), 3*time.Second, f)
		},
		want: "failed",
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "failed"); strings.TrimSpace(strings.TrimPrefix(f.Headline, "failed:")) == "" {
				t.Errorf("empty headline %q", f.Headline)
			}
		},
	}, {
		name: "oom-killed: the memory limit and request named",
		in: func(t *testing.T) diff.Input {
			r := uwRev(uwRunning(p, "102", true), "102", func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].RestartCount = 1
				p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
					FinishedAt: metav1.NewTime(finStart.Add(20 * time.Second))}
			})
			return uwInput(t, time.Minute, nil, p, 2*time.Second, uwRunning(p, "101", true), 21*time.Second, r)
		},
		want: "oom-killed",
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "oom-killed"); !strings.Contains(f.Headline, "memory limit 64Mi, request 32Mi") {
				t.Errorf("headline %q", f.Headline)
			}
		},
	}, {
		name: "volume: a hostPath directory that is not there, named with its path",
		in: func(t *testing.T) diff.Input {
			dir := corev1.HostPathDirectory
			v := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data", Type: &dir}}}}
			})
			w := uwRev(uwRunning(v, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			})
			return uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, 3*time.Second, corev1.EventTypeWarning, "FailedMount",
				`MountVolume.SetUp failed for volume "data" : hostPath type check failed, /srv/data is not a directory`, 5)}, v, 2*time.Second, w)
		},
		want: "volume",
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "volume"); !strings.HasPrefix(f.Headline, `volume "data" (hostPath /srv/data, type Directory): FailedMount`) {
				t.Errorf("headline %q", f.Headline)
			}
		},
	}, {
		name: "volume: a ConfigMap volume not found",
		in: func(t *testing.T) diff.Input {
			v := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}}
			})
			w := uwRev(uwRunning(v, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			})
			return uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, 3*time.Second, corev1.EventTypeWarning, "FailedMount",
				`MountVolume.SetUp failed for volume "config" : configmap "web-config" not found`, 9)}, v, 2*time.Second, w)
		},
		want: "volume",
		check: func(t *testing.T, lc *Lifecycle) {
			if f := finFind(lc.Findings, "volume"); !strings.Contains(f.Headline, `volume "config" (ConfigMap web-config)`) {
				t.Errorf("headline %q", f.Headline)
			}
		},
	}, {
		name: "unschedulable: a StatefulSet's claim Pending, its StorageClass missing",
		in: func(t *testing.T) diff.Input {
			v := uwRev(p, "100", func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-web-0"}}}}
			})
			w := uwRev(v, "101", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."}}
			})
			in := uwInput(t, 2*time.Minute, []store.Record{uwEvent(t, 30, time.Second, corev1.EventTypeWarning, "FailedScheduling", w.Status.Conditions[0].Message, 3)}, v, w)
			class := "fast-ssd"
			pvc := &corev1.PersistentVolumeClaim{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
				ObjectMeta: metav1.ObjectMeta{Name: "data-web-0", Namespace: finNS, UID: "pvc-uid-1"},
				Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
				Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
			in.Claims = map[string][]store.Record{"pvc-uid-1": {finRecord(t, 6, 0, store.Added, "PersistentVolumeClaim", pvc)}}
			ev := &corev1.Event{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
				ObjectMeta:     metav1.ObjectMeta{Name: "data-web-0.1", Namespace: finNS, UID: "ev-pvc-1"},
				InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: finNS, Name: "data-web-0", UID: "pvc-uid-1"},
				Type:           corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: `storageclass.storage.k8s.io "fast-ssd" not found`, Count: 5,
				LastTimestamp: metav1.NewTime(finStart.Add(time.Second))}
			in.ClaimEvents = map[string][]store.Record{"pvc-uid-1": {finRecord(t, 7, time.Second, store.Added, "Event", ev)}}
			std := &storagev1.StorageClass{TypeMeta: metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
				ObjectMeta: metav1.ObjectMeta{Name: "standard", UID: "sc-uid-1"}, Provisioner: "rancher.io/local-path"}
			in.StorageClasses = map[string][]store.Record{"sc-uid-1": {finRecord(t, 4, -time.Minute, store.Initial, "StorageClass", std)}}
			return in
		},
		want: "unschedulable",
		check: func(t *testing.T, lc *Lifecycle) {
			f := finFind(lc.Findings, "unschedulable")
			if !strings.Contains(f.Headline, "PersistentVolumeClaim data-web-0 is Pending: ProvisioningFailed") || !evidenceHas(f, `no StorageClass "fast-ssd" among those recorded (standard)`) {
				t.Errorf("headline %q, evidence %+v: want the claim named, and its class missing", f.Headline, f.Evidence)
			}
		},
	}, {
		name: "event-warning: the sandbox cannot be created",
		in: func(t *testing.T) diff.Input {
			w := uwRev(uwRunning(p, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			})
			return uwInput(t, time.Minute, []store.Record{uwEvent(t, 30, 3*time.Second, corev1.EventTypeWarning, "FailedCreatePodSandBox",
				`Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "abc": plugin type="bridge" failed (add): failed to allocate for range 0: no IP addresses available in range set`, 7)}, p, 2*time.Second, w)
		},
		want: "event-warning",
	}, {
		name: "unexplained: a Warning event of a reason no rule knows",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, time.Minute, []store.Record{uwEvent(t, 30, 20*time.Second, corev1.EventTypeWarning, "QuotaDrift", "the operator's quota check failed", 1)},
				p, 2*time.Second, uwRunning(p, "101", true))
		},
		want: "unexplained",
	}, {
		name: "unexplained: Pending for 6 minutes after it was scheduled, no reason given",
		in: func(t *testing.T) diff.Input {
			w := uwRev(uwRunning(p, "101", false), "101", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			})
			return uwInput(t, 6*time.Minute, nil, p, 2*time.Second, w)
		},
		want: "unexplained",
		check: func(t *testing.T, lc *Lifecycle) {
			f := finFind(lc.Findings, "unexplained")
			if !strings.Contains(f.Headline, "Pending after it was scheduled for 5m58s (up to 5m0s is normal): the cause is not known to podtrace") || !evidenceHas(f, "node node-a as recorded then: Ready=True KubeletReady") {
				t.Errorf("headline %q, evidence %+v", f.Headline, f.Evidence)
			}
		},
	}, {
		name: "healthy: unbound for 90s in the scheduler's queue, nothing said of it, then bound and Ready",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 10*time.Minute, nil, p, 90*time.Second, uwRunning(p, "101", true))
		},
	}, {
		name: "unexplained: unbound for 6 minutes, no scheduler said anything of it",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 6*time.Minute, nil, uwRev(p, "100", func(p *corev1.Pod) { p.Spec.SchedulerName = "batch-scheduler" }))
		},
		want: "unexplained",
		check: func(t *testing.T, lc *Lifecycle) {
			f := finFind(lc.Findings, "unexplained")
			if !strings.Contains(f.Headline, "not scheduled for 6m0s (up to 5m0s is normal)") || !evidenceHas(f, `the scheduler "batch-scheduler" had not tried the pod`) {
				t.Errorf("headline %q, evidence %+v", f.Headline, f.Evidence)
			}
		},
	}, {
		name: "unwell: the scheduler said Unschedulable 40s ago, with no event recorded",
		in: func(t *testing.T) diff.Input {
			u := uwRev(p, "101", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
					Message: "0/1 nodes are available: 1 Insufficient memory."}}
			})
			return uwInput(t, 41*time.Second, nil, p, u)
		},
		want: "unschedulable",
	}, {
		name: "healthy: created, scheduled, started and Ready at once",
		in: func(t *testing.T) diff.Input {
			return uwInput(t, 10*time.Minute, nil, p, 2*time.Second, uwRunning(p, "101", true))
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := worstID(lc.Findings)
			if got != tc.want {
				t.Errorf("most severe finding %q, want %q; findings:\n%s", got, tc.want, findingsText(lc.Findings))
			}
			if tc.check != nil && (tc.want == "" || got == tc.want) {
				tc.check(t, lc)
			}
			golden(t, lc.Findings, lc)
		})
	}
}
