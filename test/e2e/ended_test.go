package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// The nodes of the ended cases that evict or lose their pods: tainted
// NoSchedule so that no other case's pod lands there.
const (
	endedTaintNode = "ended-taint"
	endedGCNode    = "ended-gc"
	endedKeepOff   = "podtrace.dev/ended"
	endedEvictKey  = "podtrace.dev/evict"
	rsController   = "system:serviceaccount:kube-system:replicaset-controller"
)

// endedCase is one way a pod ends, recorded by TestEnded: run ends the pod
// on the cluster while the recorder runs and returns its name; check and
// audited assert the ended finding without and with the audit log.
type endedCase struct {
	name    string
	ns      string
	run     func(t *testing.T) string
	check   func(t *testing.T, f explain.Finding)
	audited func(t *testing.T, f explain.Finding)
	pod     string
}

// TestEnded ends pods in every way the local control plane can, each in a
// namespace of its own, in one recording, and checks the ended finding of
// each: its mechanism, its actor and how the actor is known, first from
// the recording alone, then with the API server's audit log imported.
// Node-pressure eviction (a kubelet's) cannot happen on kwok and is
// covered by the unit tests only.
func TestEnded(t *testing.T) {
	began := time.Now()
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	ctx := t.Context()
	if _, err := c.StartKwok(ctx, endedTaintNode, endedGCNode); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{endedTaintNode, endedGCNode} {
		if err := taintNode(ctx, client, n, corev1.Taint{Key: endedKeepOff, Value: "true", Effect: corev1.TaintEffectNoSchedule}); err != nil {
			t.Fatal(err)
		}
	}
	rec := startRecorder(t, c)

	cases := []*endedCase{
		deleteCase(client),
		scaleDownCase(client),
		rolloutEndedCase(client),
		preemptionCase(client, c.Nodes[0]),
		evictionCase(client),
		taintCase(client),
		podGCCase(client),
		jobBackoffCase(client),
		orphanCase(client),
	}
	healthy := healthyCase(client)
	// The cases of several pods, or of none that ended: each checks its
	// pods itself, without and with the audit log.
	multi := []*podsCase{namespaceCase(client), refusedEvictionCase(client)}
	t.Run("run", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.pod = tc.run(t)
			})
		}
		for _, tc := range multi {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.run(t)
			})
		}
		t.Run("healthy", func(t *testing.T) {
			t.Parallel()
			healthy.run(t)
		})
	})
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(2 * time.Second) // let the watches deliver the last revisions
	rec.stop(t)
	t.Logf("cases recorded %s after the test began", time.Since(began).Round(time.Second))

	t.Run("explain", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { tc.check(t, endedFinding(t, rec.db, tc.ns, tc.pod)) })
		}
		for _, tc := range multi {
			t.Run(tc.name, func(t *testing.T) { tc.check(t, rec.db, false) })
		}
		t.Run("healthy", func(t *testing.T) { healthy.check(t, rec.db) })
	})
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Run("with audit log", func(t *testing.T) {
		for _, tc := range cases {
			if tc.audited != nil {
				t.Run(tc.name, func(t *testing.T) { tc.audited(t, endedFinding(t, rec.db, tc.ns, tc.pod)) })
			}
		}
		for _, tc := range multi {
			t.Run(tc.name, func(t *testing.T) { tc.check(t, rec.db, true) })
		}
		t.Run("healthy", func(t *testing.T) { healthy.check(t, rec.db) })
	})
}

// podsCase is a case of several pods, or of a pod that did not end: run
// plays it, check asserts every pod's findings, with the audit log
// imported or not.
type podsCase struct {
	name  string
	run   func(t *testing.T)
	check func(t *testing.T, db string, audited bool)
}

// endedFinding returns the pod's one ended finding, logging explain's text.
func endedFinding(t *testing.T, db, ns, pod string) explain.Finding {
	t.Helper()
	explainText(t, db, ns, pod)
	ex := explainPod(t, db, ns, pod)
	var got []explain.Finding
	for _, f := range ex.Findings {
		if f.ID == "ended" {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d ended findings for %s/%s, want 1: %+v", len(got), ns, pod, ex.Findings)
	}
	return got[0]
}

// wantEnded checks the mechanism, the severity and the actor's basis, and
// that the actor's who contains who.
func wantEnded(t *testing.T, f explain.Finding, mechanism string, sev explain.Severity, basis diff.Basis, who string) {
	t.Helper()
	if f.Mechanism != mechanism {
		t.Errorf("mechanism %q, want %q (headline %q)", f.Mechanism, mechanism, f.Headline)
	}
	if f.Severity != sev {
		t.Errorf("severity %s, want %s", f.Severity, sev)
	}
	if f.Actor == nil {
		t.Fatalf("no actor")
	}
	if f.Actor.Basis != basis || !strings.Contains(f.Actor.Who, who) {
		t.Errorf("actor %q known by %s (%s), want %q known by %s", f.Actor.Who, f.Actor.Basis, f.Actor.Detail, who, basis)
	}
}

func wantEvidence(t *testing.T, f explain.Finding, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !slices.ContainsFunc(f.Evidence, func(e explain.Evidence) bool { return strings.Contains(e.Text, sub) }) {
			var texts []string
			for _, e := range f.Evidence {
				texts = append(texts, e.Text)
			}
			t.Errorf("no evidence mentions %q:\n%s", sub, strings.Join(texts, "\n"))
		}
	}
}

// auditedAs checks an actor the audit log names: the user and the test's
// user agent, or a controller's service account.
func auditedAs(t *testing.T, f explain.Finding, mechanism, user, agent string) {
	t.Helper()
	wantEnded(t, f, mechanism, f.Severity, diff.BasisAuditLog, user)
	if f.Actor != nil && agent != "" && !strings.Contains(f.Actor.UserAgent, agent) {
		t.Errorf("actor user agent %q, want %q", f.Actor.UserAgent, agent)
	}
}

// deleteCase: a client deletes a bare pod.
func deleteCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-delete", "doomed"
	return &endedCase{
		name: "delete by a client", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			createPod(t, client, simplePod(ns, name))
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "pod deleted", time.Minute, podGone(client, ns, name))
			return name
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismDelete, explain.Info, diff.BasisUnknown, "unknown")
			if !strings.Contains(f.Actor.Detail, "audit log") {
				t.Errorf("actor detail %q does not say the audit log names the client", f.Actor.Detail)
			}
		},
		audited: func(t *testing.T, f explain.Finding) {
			// The cluster's admin client, with the test's user agent.
			auditedAs(t, f, explain.MechanismDelete, "", "e2e-client")
		},
	}
}

// waitJobComplete waits for the Job's Complete condition.
func waitJobComplete(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	waitFor(t, "job "+ns+"/"+name+" complete", time.Minute, func() (bool, error) {
		j, err := client.BatchV1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// deployment is a Deployment of n nginx pods labelled app=name.
func deployment(ns, name string, n int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
			},
		},
	}
}

func updateDeployment(t *testing.T, client kubernetes.Interface, ns, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(d)
		_, err = client.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goneOf waits until some of pods are gone and returns the first gone.
func goneOf(t *testing.T, client kubernetes.Interface, ns string, before, after []string) string {
	t.Helper()
	for _, p := range before {
		if !slices.Contains(after, p) {
			waitFor(t, "pod "+p+" gone", time.Minute, podGone(client, ns, p))
			return p
		}
	}
	t.Fatalf("no pod of %v is gone (now %v)", before, after)
	return ""
}

// scaleDownCase: a Deployment scaled from 3 to 1 replicas.
func scaleDownCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-scale", "web"
	return &endedCase{
		name: "deployment scale-down", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), deployment(ns, name, 3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, name)
			before := podNames(t, client, ns, "app="+name)
			updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { one := int32(1); d.Spec.Replicas = &one })
			waitRolledOut(t, client, ns, name)
			waitFor(t, "one pod left", time.Minute, func() (bool, error) { return len(podNames(t, client, ns, "app="+name)) == 1, nil })
			return goneOf(t, client, ns, before, podNames(t, client, ns, "app="+name))
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismScaleDown, explain.Info, diff.BasisEvent, "replicaset-controller")
			wantEvidence(t, f, "SuccessfulDelete", "spec.replicas 3 -> 1")
		},
		audited: func(t *testing.T, f explain.Finding) {
			auditedAs(t, f, explain.MechanismScaleDown, rsController, "")
		},
	}
}

// rolloutEndedCase: a Deployment's template changes; an old pod goes.
func rolloutEndedCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-rollout", "web"
	return &endedCase{
		name: "deployment rollout", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			if _, err := client.AppsV1().Deployments(ns).Create(t.Context(), deployment(ns, name, 2), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, name)
			before := podNames(t, client, ns, "app="+name)
			updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
			waitRolledOut(t, client, ns, name)
			for _, p := range before {
				waitFor(t, "old pod "+p+" gone", time.Minute, podGone(client, ns, p))
			}
			return before[0]
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismRollout, explain.Info, diff.BasisEvent, "replicaset-controller")
			wantEvidence(t, f, "SuccessfulDelete", "which is at revision 2")
		},
		audited: func(t *testing.T, f explain.Finding) {
			auditedAs(t, f, explain.MechanismRollout, rsController, "")
		},
	}
}

// preemptionCase: a high-priority pod preempts a low-priority one from a
// node without room for both.
func preemptionCase(client kubernetes.Interface, node string) *endedCase {
	const ns, low, high = "ended-preempt", "low", "high"
	return &endedCase{
		name: "preemption", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			for name, value := range map[string]int32{"ended-low": 100, "ended-high": 1000} {
				pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
				if _, err := client.SchedulingV1().PriorityClasses().Create(t.Context(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			pod := func(name, class string) *corev1.Pod {
				p := simplePod(ns, name)
				p.Spec.PriorityClassName = class
				p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
				// The default node has 32 CPUs: room for one of them.
				p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")}
				return p
			}
			createPod(t, client, pod(low, "ended-low"))
			waitPod(t, client, ns, low, "Ready", podReady)
			createPod(t, client, pod(high, "ended-high"))
			waitFor(t, "pod "+low+" preempted and gone", 2*time.Minute, podGone(client, ns, low))
			waitPod(t, client, ns, high, "Ready", podReady)
			return low
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismPreemption, explain.Info, diff.BasisManagedFields, "scheduler")
			wantEvidence(t, f, "PreemptionByScheduler", "preemptor pod "+ns+"/"+high+" (named by the event's message): priority 1000", "this pod's priority 100")
		},
	}
}

// evictionCase: a client evicts a pod through the Eviction API, refused
// first (429) while a PodDisruptionBudget allows no disruption.
func evictionCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-evict", "evictee"
	return &endedCase{
		name: "eviction API", ns: ns,
		run: func(t *testing.T) string {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			createPod(t, client, simplePod(ns, name))
			waitPod(t, client, ns, name, "Ready", podReady)
			zero := intstr.FromInt32(0)
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns},
				Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
			if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			waitFor(t, "an eviction refused by the budget", time.Minute, func() (bool, error) {
				err := client.CoreV1().Pods(ns).EvictV1(ctx, ev)
				return apierrors.IsTooManyRequests(err), err
			})
			if err := client.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "keep", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the eviction allowed", time.Minute, func() (bool, error) {
				err := client.CoreV1().Pods(ns).EvictV1(ctx, ev)
				return err == nil, err
			})
			waitFor(t, "pod evicted", time.Minute, podGone(client, ns, name))
			return name
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismEvictionAPI, explain.Info, diff.BasisUnknown, "unknown")
			// The budget was deleted before the eviction that went
			// through: none selected the pod then.
			wantEvidence(t, f, "EvictionByEvictionAPI", "no PodDisruptionBudget recorded in namespace "+ns+" selected this pod then")
		},
		audited: func(t *testing.T, f explain.Finding) {
			auditedAs(t, f, explain.MechanismEvictionAPI, "", "e2e-client")
			wantEvidence(t, f, "create eviction attempt", "(429): Cannot evict pod as it would violate the pod's disruption budget.")
		},
	}
}

// taintCase: a NoExecute taint the pod tolerates for 2s only.
func taintCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-taint", "tenant"
	return &endedCase{
		name: "taint eviction", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			p := simplePod(ns, name)
			two := int64(2)
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": endedTaintNode}
			p.Spec.Tolerations = []corev1.Toleration{
				{Key: endedKeepOff, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: endedEvictKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &two},
			}
			createPod(t, client, p)
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := taintNode(t.Context(), client, endedTaintNode, corev1.Taint{Key: endedEvictKey, Value: "now", Effect: corev1.TaintEffectNoExecute}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "pod evicted by the taint", time.Minute, podGone(client, ns, name))
			return name
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismTaintEviction, explain.Info, diff.BasisManagedFields, "kube-controller-manager")
			wantEvidence(t, f, "DeletionByTaintManager", endedEvictKey+"=now:NoExecute", "tolerationSeconds 2")
			// The node's managedFields have whole seconds: when the test's
			// taints land within one second of its earlier write, the
			// entry's time does not move and the writer is honestly
			// unknown. Never anyone else.
			taint := slices.IndexFunc(f.Evidence, func(e explain.Evidence) bool { return strings.Contains(e.Text, endedEvictKey+"=now:NoExecute") })
			if taint >= 0 {
				if text := f.Evidence[taint].Text; !strings.Contains(text, "set by e2e-client") && !strings.Contains(text, "its writer unknown") {
					t.Errorf("the taint's evidence names neither its writer e2e-client nor an unknown one: %q", text)
				}
			}
		},
		audited: func(t *testing.T, f explain.Finding) {
			wantEvidence(t, f, "audit log: DELETE by system:serviceaccount:kube-system:")
		},
	}
}

// podGCCase: the pod's node is deleted; PodGC deletes the orphaned pod.
func podGCCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-podgc", "stranded"
	return &endedCase{
		name: "PodGC of a pod on a deleted node", ns: ns,
		run: func(t *testing.T) string {
			createNamespace(t, client, ns, nil)
			p := simplePod(ns, name)
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": endedGCNode}
			p.Spec.Tolerations = []corev1.Toleration{{Key: endedKeepOff, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			createPod(t, client, p)
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Nodes().Delete(t.Context(), endedGCNode, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// PodGC waits out a 40s quarantine, at its 20s period.
			waitFor(t, "pod deleted by PodGC", 3*time.Minute, podGone(client, ns, name))
			return name
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismPodGC, explain.Warning, diff.BasisManagedFields, "kube-controller-manager")
			wantEvidence(t, f, "DeletionByPodGC")
		},
		audited: func(t *testing.T, f explain.Finding) {
			wantEvidence(t, f, "audit log: DELETE by system:serviceaccount:kube-system:pod-garbage-collector")
		},
	}
}

// jobBackoffCase: a Job whose one pod fails, with backoffLimit 0.
func jobBackoffCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-job", "flaky"
	return &endedCase{
		name: "job backoffLimit exceeded", ns: ns,
		run: func(t *testing.T) string {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			zero := int32(0)
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: batchv1.JobSpec{BackoffLimit: &zero, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"podtrace.dev/complete": "failed"}},
					Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "busybox:1.36"}}},
				}}}
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "job failed", time.Minute, func() (bool, error) {
				j, err := client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range j.Status.Conditions {
					if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
						return true, nil
					}
				}
				return false, nil
			})
			pods := podNames(t, client, ns, "job-name="+name)
			if len(pods) != 1 {
				t.Fatalf("job pods %v, want 1", pods)
			}
			return pods[0]
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismJobBackoffLimit, explain.Warning, diff.BasisManagedFields, "kube-controller-manager")
			wantEvidence(t, f, "BackoffLimitExceeded", "backoffLimit 0")
		},
	}
}

// orphanCase: a ReplicaSet's pod is relabelled out of its selector; the
// ReplicaSet controller releases it.
func orphanCase(client kubernetes.Interface) *endedCase {
	const ns, name = "ended-orphan", "keep"
	return &endedCase{
		name: "orphaned by a label change", ns: ns,
		run: func(t *testing.T) string {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			one := int32(1)
			labels := map[string]string{"app": name}
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}}}}}
			if _, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var pod string
			waitFor(t, "the ReplicaSet's pod", time.Minute, func() (bool, error) {
				ps := podNames(t, client, ns, "app="+name)
				if len(ps) == 1 {
					pod = ps[0]
				}
				return pod != "", nil
			})
			waitPod(t, client, ns, pod, "Ready", podReady)
			patch := []byte(`{"metadata":{"labels":{"app":"debug"}}}`)
			if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitPod(t, client, ns, pod, "released", func(p *corev1.Pod) bool { return metav1.GetControllerOf(p) == nil })
			return pod
		},
		check: func(t *testing.T, f explain.Finding) {
			wantEnded(t, f, explain.MechanismOrphaned, explain.Info, diff.BasisUnknown, "unknown")
			wantEvidence(t, f, "ownerReference to ReplicaSet "+name, "no longer match", "by e2e-client")
		},
		audited: func(t *testing.T, f explain.Finding) {
			auditedAs(t, f, explain.MechanismOrphaned, rsController, "")
		},
	}
}

// healthyCase: a rollout, a scale up and down, a Job that succeeds:
// every pod ends as asked, and none gets a warning.
type healthyCaseT struct {
	run   func(t *testing.T)
	check func(t *testing.T, db string)
}

func healthyCase(client kubernetes.Interface) *healthyCaseT {
	const ns, name, job = "ended-healthy", "web", "batch"
	var mu sync.Mutex
	seen := map[string]bool{}
	note := func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range podNames(t, client, ns, "") {
			seen[p] = true
		}
	}
	return &healthyCaseT{
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, name, 2), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, name)
			note(t)
			updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
			waitRolledOut(t, client, ns, name)
			note(t)
			updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { n := int32(4); d.Spec.Replicas = &n })
			waitRolledOut(t, client, ns, name)
			note(t)
			updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { n := int32(1); d.Spec.Replicas = &n })
			waitRolledOut(t, client, ns, name)
			waitFor(t, "one web pod left", time.Minute, func() (bool, error) { return len(podNames(t, client, ns, "app="+name)) == 1, nil })
			two := int32(2)
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: ns},
				Spec: batchv1.JobSpec{Completions: &two, Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"podtrace.dev/complete": "succeeded"}},
					Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "busybox:1.36"}}},
				}}}
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitJobComplete(t, client, ns, job)
			note(t)
		},
		check: func(t *testing.T, db string) {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 8 {
				t.Fatalf("only %d pods seen: %v", len(seen), seen)
			}
			ended := map[string]int{}
			for p := range seen {
				ex := explainPod(t, db, ns, p)
				for _, f := range ex.Findings {
					if f.Severity > explain.Info {
						t.Errorf("healthy pod %s got %s finding %s: %s", p, f.Severity, f.ID, f.Headline)
					}
					if f.ID == "ended" {
						ended[f.Mechanism]++
					}
				}
			}
			t.Logf("ended mechanisms of the healthy pods: %v", ended)
			if ended[explain.MechanismRollout] == 0 || ended[explain.MechanismScaleDown] == 0 {
				t.Errorf("ended mechanisms %v, want rollouts and scale-downs", ended)
			}
		},
	}
}

// namespaceCase: a namespace with a Deployment's pods and a bare pod in
// it is deleted; the namespace controller deletes them all. A healthy
// control: every pod reads as deleted with its namespace, no warning; the
// actor is the namespace controller (inferred from the namespace's
// deletionTimestamp), or with the audit log the request that asked (its
// deletecollection, or the garbage collector's DELETE for a pod whose
// ReplicaSet went first), never the node's DELETE that confirmed it.
func namespaceCase(client kubernetes.Interface) *podsCase {
	const ns = "ended-namespace"
	var pods []string
	return &podsCase{
		name: "namespace deleted",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 2), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			createPod(t, client, simplePod(ns, "lone"))
			waitRolledOut(t, client, ns, "web")
			waitPod(t, client, ns, "lone", "Ready", podReady)
			pods = podNames(t, client, ns, "")
			if len(pods) != 3 {
				t.Fatalf("pods %v, want 3", pods)
			}
			if err := client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "namespace "+ns+" gone", 3*time.Minute, func() (bool, error) {
				_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
		},
		check: func(t *testing.T, db string, audited bool) {
			for _, p := range pods {
				explainText(t, db, ns, p)
				ex := explainPod(t, db, ns, p)
				for _, f := range ex.Findings {
					if f.Severity > explain.Info {
						t.Errorf("%s: %s finding %s: %s", p, f.Severity, f.ID, f.Headline)
					}
				}
				f := findFinding(t, ex, "ended")
				if f.Mechanism != explain.MechanismNamespaceDeletion || f.Severity != explain.Info {
					t.Errorf("%s: mechanism %q (%s), want %q: %s", p, f.Mechanism, f.Severity, explain.MechanismNamespaceDeletion, f.Headline)
				}
				wantEvidence(t, f, "namespace "+ns+" deletion requested")
				if f.Actor == nil {
					t.Fatalf("%s: no actor", p)
				}
				if !audited {
					if f.Actor.Basis != diff.BasisFieldSemantics || !strings.Contains(f.Actor.Who, "namespace controller") {
						t.Errorf("%s: actor %q (%s), want the namespace controller, inferred", p, f.Actor.Who, f.Actor.Basis)
					}
					continue
				}
				controllers := []string{"system:serviceaccount:kube-system:namespace-controller", "system:serviceaccount:kube-system:generic-garbage-collector"}
				if f.Actor.Basis != diff.BasisAuditLog || !slices.Contains(controllers, f.Actor.User) {
					t.Errorf("%s: actor %q (%s, user %q), want the namespace controller's or the garbage collector's request from the audit log", p, f.Actor.Who, f.Actor.Basis, f.Actor.User)
				}
				// The node's DELETE is there, as the confirmation.
				wantEvidence(t, f, "after the deletion was asked for: its confirmation, not its cause")
			}
		},
	}
}

// refusedEvictionCase: a PodDisruptionBudget allows no disruption; every
// eviction of its pod is refused (429) and the pod stays, as under a
// kubectl drain that hangs. Only the audit log holds the attempts.
func refusedEvictionCase(client kubernetes.Interface) *podsCase {
	const ns, name, budget = "ended-refused", "guarded", "hold"
	const attempts = 3
	return &podsCase{
		name: "eviction refused by a budget",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			createPod(t, client, simplePod(ns, name))
			waitPod(t, client, ns, name, "Ready", podReady)
			// minAvailable as a number: the disruption controller counts a
			// bare pod (a percentage, or maxUnavailable, needs its
			// controller's scale).
			one := intstr.FromInt32(1)
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: budget, Namespace: ns},
				Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
			if _, err := client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The disruption controller first computes the budget's
			// status; until then the API server refuses too ("still being
			// processed").
			waitFor(t, "the budget's status", time.Minute, func() (bool, error) {
				p, err := client.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, budget, metav1.GetOptions{})
				return err == nil && p.Status.ObservedGeneration >= p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DesiredHealthy == 1, err
			})
			ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			for range attempts {
				if err := client.CoreV1().Pods(ns).EvictV1(ctx, ev); !apierrors.IsTooManyRequests(err) {
					t.Fatalf("eviction: %v, want 429 TooManyRequests", err)
				}
				time.Sleep(300 * time.Millisecond)
			}
		},
		check: func(t *testing.T, db string, audited bool) {
			explainText(t, db, ns, name)
			ex := explainPod(t, db, ns, name)
			for _, f := range ex.Findings {
				if f.ID == "ended" {
					t.Errorf("an ended finding for a pod never evicted: %s", f.Headline)
				}
			}
			if !audited {
				// Nothing in the recording says an eviction was tried.
				for _, f := range ex.Findings {
					if f.ID == "eviction-refused" {
						t.Errorf("an eviction-refused finding without the audit log: %s", f.Headline)
					}
				}
				return
			}
			f := findFinding(t, ex, "eviction-refused")
			if f.Severity != explain.Warning {
				t.Errorf("severity %s, want warning", f.Severity)
			}
			if !strings.Contains(f.Headline, fmt.Sprintf("%d evictions refused by PodDisruptionBudget %s: it needs 1 healthy pods and has 1 currently", attempts, budget)) {
				t.Errorf("headline %q", f.Headline)
			}
			if f.Actor == nil || f.Actor.Basis != diff.BasisAuditLog || f.Actor.UserAgent != "e2e-client" {
				t.Errorf("actor %+v, want the test's client from the audit log", f.Actor)
			}
			wantEvidence(t, f, fmt.Sprintf("%d create eviction attempts by", attempts), "PodDisruptionBudget "+budget+" (minAvailable 1, selector app="+name+"): disruptionsAllowed 0, currentHealthy 1, desiredHealthy 1, expectedPods 1",
				"no eviction of this pod went through")
		},
	}
}
