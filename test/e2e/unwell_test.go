package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// The kwok annotations of hack/kwok/stages that play an unwell kubelet.
const (
	kwokReady     = "podtrace.dev/ready"     // "never": Running, never Ready
	kwokTerminate = "podtrace.dev/terminate" // "never": the deletion never confirmed
	kwokInit      = "podtrace.dev/init"      // "fail": init containers exit 1
	kwokExitCode  = "podtrace.dev/exit-code-on-delete"
)

// unwellCase is one lifecycle of TestUnwell: run plays it while the
// recorder runs; want is the most severe finding's id ("" for no warning),
// check asserts on what explain says.
type unwellCase struct {
	ns, name string
	run      func(t *testing.T, client kubernetes.Interface)
	want     string
	check    func(t *testing.T, ex *explained)
}

// TestUnwell plays, on the local control plane, pods that were not well in
// the ways kwok can play (Running never Ready, a deletion never confirmed,
// an init container that fails, a StatefulSet's claim that never binds)
// beside their healthy controls, and checks explain's finding for each,
// without and with the audit log; and that `explain --follow` raises no
// alarm about a pod within its grace period while still recording.
func TestUnwell(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	rec := startRecorder(t, c)
	cases := []unwellCase{
		neverReadyCase(), readyControlCase(),
		neverConfirmedCase(), gracefulControlCase(),
		initFailedCase(), initControlCase(),
		claimCase("unwell-claim-class", "missing", ptr("no-such-class")),
		claimCase("unwell-claim-default", "nodefault", nil),
	}
	t.Run("run", func(t *testing.T) {
		t.Run("follow", func(t *testing.T) {
			t.Parallel()
			followWithinGrace(t, client, rec.db)
		})
		for _, tc := range cases {
			t.Run(tc.ns, func(t *testing.T) {
				t.Parallel()
				createNamespace(t, client, tc.ns, nil)
				tc.run(t, client)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(2 * time.Second) // the watches deliver the last revisions
	rec.stop(t)                 // and the invariant is checked over every pod
	check := func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.ns, func(t *testing.T) {
				ex := explainPod(t, rec.db, tc.ns, tc.name)
				got := ""
				if len(ex.Findings) > 0 && ex.Findings[0].Severity > explain.Info {
					got = ex.Findings[0].ID
				}
				text := explainText(t, rec.db, tc.ns, tc.name)
				if got != tc.want {
					t.Fatalf("most severe finding %q, want %q", got, tc.want)
				}
				if tc.want == "" && !strings.Contains(text, "Nothing looks wrong") {
					t.Errorf("a healthy pod: explain does not say nothing looks wrong")
				}
				if tc.check != nil {
					tc.check(t, ex)
				}
			})
		}
	}
	t.Run("explain", check)
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Run("with audit log", check)
}

func ptr[T any](v T) *T { return &v }

// neverReadyCase: a pod whose readiness probe never passes (kwok plays
// the kubelet's Unhealthy event and Ready False) stays Running, not Ready,
// well past what its probe allows.
func neverReadyCase() unwellCase {
	const ns, name = "unwell-ready", "never-ready"
	return unwellCase{ns: ns, name: name, want: "not-ready",
		run: func(t *testing.T, client kubernetes.Interface) {
			pod := probedPod(ns, name)
			pod.Annotations = map[string]string{kwokReady: "never"}
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			// Its probe allows 1s + 1s timeout, and podtrace 10s more.
			time.Sleep(explain.ReadySlack + 6*time.Second)
		},
		check: func(t *testing.T, ex *explained) {
			f := findFinding(t, ex, "not-ready")
			if !strings.Contains(f.Headline, "readiness probe failed") || !strings.Contains(f.Headline, "its probes allow 12s") {
				t.Errorf("headline %q: want the probe's failure and what it allows", f.Headline)
			}
			if !hasEvidence(f, "readiness probe httpGet HTTP :8080/ready, initialDelaySeconds 0, periodSeconds 1, timeoutSeconds 1, failureThreshold 1") {
				t.Errorf("the probe is not quoted: %+v", f.Evidence)
			}
		},
	}
}

// readyControlCase: the same probe, passing: no warning.
func readyControlCase() unwellCase {
	const ns, name = "unwell-ready-control", "ready"
	return unwellCase{ns: ns, name: name,
		run: func(t *testing.T, client kubernetes.Interface) {
			createPod(t, client, probedPod(ns, name))
			waitPod(t, client, ns, name, "Ready", podReady)
		},
	}
}

func probedPod(ns, name string) *corev1.Pod {
	pod := simplePod(ns, name)
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1,
	}
	return pod
}

// neverConfirmedCase: a pod deleted with a 2s grace period whose kubelet
// never reports its containers stopped nor confirms the deletion, on a node
// that stays Ready, no finalizer: Terminating past its grace period.
func neverConfirmedCase() unwellCase {
	const ns, name = "unwell-terminate", "never-confirmed"
	return unwellCase{ns: ns, name: name, want: "deletion-stuck",
		run: func(t *testing.T, client kubernetes.Interface) {
			pod := simplePod(ns, name)
			pod.Annotations = map[string]string{kwokTerminate: "never"}
			pod.Spec.TerminationGracePeriodSeconds = ptr(int64(2))
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(2*time.Second + explain.TerminationSlack + 4*time.Second)
			p := waitPod(t, client, ns, name, "still Terminating", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
			if len(p.Finalizers) != 0 || p.Status.Phase != corev1.PodRunning {
				t.Fatalf("finalizers %v, phase %s: the case did not reproduce", p.Finalizers, p.Status.Phase)
			}
		},
		check: func(t *testing.T, ex *explained) {
			f := findFinding(t, ex, "deletion-stuck")
			if f.Severity != explain.Critical || !strings.Contains(f.Headline, "past its grace period (2s)") || !strings.Contains(f.Headline, "the kubelet never reported its containers stopped") {
				t.Errorf("%s %q", f.Severity, f.Headline)
			}
			if !hasEvidence(f, "Ready=True") {
				t.Errorf("the node's state is not in the evidence: %+v", f.Evidence)
			}
		},
	}
}

// gracefulControlCase: a pod deleted gracefully, its container killed at
// the grace period (exit 137, phase Failed) and removed: no warning.
func gracefulControlCase() unwellCase {
	const ns, name = "unwell-terminate-control", "graceful"
	return unwellCase{ns: ns, name: name,
		run: func(t *testing.T, client kubernetes.Interface) {
			pod := simplePod(ns, name)
			pod.Annotations = map[string]string{kwokExitCode: "137"}
			pod.Spec.TerminationGracePeriodSeconds = ptr(int64(2))
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "pod "+name+" gone", time.Minute, podGone(client, ns, name))
		},
	}
}

// initFailedCase: an init container exits 1; restartPolicy Never: the pod
// fails, its container never starts.
func initFailedCase() unwellCase {
	const ns, name = "unwell-init", "init-fails"
	return unwellCase{ns: ns, name: name, want: "failed",
		run: func(t *testing.T, client kubernetes.Interface) {
			pod := initPod(ns, name)
			pod.Annotations = map[string]string{kwokInit: "fail"}
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		},
		check: func(t *testing.T, ex *explained) {
			if f := findFinding(t, ex, "failed"); f.Headline != "failed: init container setup exited 1 (Error)" {
				t.Errorf("headline %q", f.Headline)
			}
		},
	}
}

// initControlCase: the init container completes, the pod runs: no
// warning.
func initControlCase() unwellCase {
	const ns, name = "unwell-init-control", "init-completes"
	return unwellCase{ns: ns, name: name,
		run: func(t *testing.T, client kubernetes.Interface) {
			createPod(t, client, initPod(ns, name))
			waitPod(t, client, ns, name, "Ready", podReady)
		},
	}
}

func initPod(ns, name string) *corev1.Pod {
	pod := simplePod(ns, name)
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox:1.36", Command: []string{"true"}}}
	return pod
}

// claimCase: a StatefulSet whose claim template names a StorageClass that
// does not exist (class), or none while no StorageClass is the default
// (class nil): its claim never binds, its pod is never scheduled.
func claimCase(ns, sts string, class *string) unwellCase {
	name := sts + "-0"
	claim := "data-" + name
	return unwellCase{ns: ns, name: name, want: "unschedulable",
		run: func(t *testing.T, client kubernetes.Interface) {
			labels := map[string]string{"app": sts}
			set := &appsv1.StatefulSet{
				ObjectMeta: metav1.ObjectMeta{Name: sts, Namespace: ns},
				Spec: appsv1.StatefulSetSpec{
					Replicas: ptr(int32(1)), ServiceName: sts,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "db", Image: "postgres:17",
							VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/postgresql"}}}}}},
					VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
						ObjectMeta: metav1.ObjectMeta{Name: "data"},
						Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
							Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
					}},
				},
			}
			if _, err := client.AppsV1().StatefulSets(ns).Create(t.Context(), set, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPod(t, client, ns, name, "refused by the scheduler", func(p *corev1.Pod) bool {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
						return true
					}
				}
				return false
			})
			time.Sleep(explain.SchedulingAllowance / 3) // the volume controller's events on the claim
		},
		check: func(t *testing.T, ex *explained) {
			f := findFinding(t, ex, "unschedulable")
			if !strings.Contains(f.Headline, "PersistentVolumeClaim "+claim+" is Pending") {
				t.Errorf("headline %q does not name the claim", f.Headline)
			}
			want := "no StorageClass was recorded"
			if class != nil {
				want = `storageClassName "` + *class + `"`
			}
			if !hasEvidence(f, want) {
				t.Errorf("evidence lacks %q: %+v", want, f.Evidence)
			}
		},
	}
}

// followWithinGrace: `explain --follow` on a pod deleted with a 30s grace
// period and held a few seconds by a finalizer (as a controller that
// finishes its work), whose deletion kwok confirms at once (deletionTimestamp
// moves to then): while the recording runs, no warning, let alone a
// critical "deletion blocked".
func followWithinGrace(t *testing.T, client kubernetes.Interface, db string) {
	const ns, name, fin = "unwell-follow", "held-briefly", "podtrace.dev/cleanup"
	createNamespace(t, client, ns, nil)
	pod := simplePod(ns, name)
	pod.Finalizers = []string{fin}
	createPod(t, client, pod)
	waitPod(t, client, ns, name, "Ready", podReady)
	time.Sleep(2 * time.Second) // recorded
	ctx, cancel := context.WithCancel(t.Context())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, []string{"podtrace", "explain", name, "-n", ns, "--db", db, "--follow", "--color", "never"},
			app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	}()
	if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, ns, name, "confirmed by kwok (grace 0), held by its finalizer", func(p *corev1.Pod) bool {
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	})
	time.Sleep(6 * time.Second) // the follower reads the trace every second
	p, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Finalizers = nil
	if _, err := client.CoreV1().Pods(ns).Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod "+name+" gone", time.Minute, podGone(client, ns, name))
	time.Sleep(2 * time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("explain --follow: %v\n%s", err, errOut.String())
	}
	got := out.String()
	t.Logf("explain --follow:\n%s", got)
	t.Logf("podtrace diff:\n%s", podtrace(t, "diff", name, "-n", ns, "--db", db, "--color", "never"))
	// It followed the pod through the confirmation that moved its
	// deletionTimestamp to then, where the false alarm was raised.
	if !strings.Contains(got, "by a DELETE with grace period 0") {
		t.Fatalf("explain --follow did not show kwok's confirmation (grace 0): it did not follow the pod long enough to tell")
	}
	for _, s := range []string{"CRITICAL", "WARNING", "blocked"} {
		if strings.Contains(got, s) {
			t.Errorf("explain --follow says %s about a pod within its grace period", s)
		}
	}
}

func hasEvidence(f explain.Finding, sub string) bool {
	for _, e := range f.Evidence {
		if strings.Contains(e.Text, sub) {
			return true
		}
	}
	return false
}
