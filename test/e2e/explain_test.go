package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// The explain cases' names: namespaces, labels, webhooks.
const (
	lostNodeName = "lost-node"
	// lostTaint keeps every pod but the stranded one off the node that is
	// to be lost.
	lostTaint = "podtrace.dev/lost"

	frozenLabel       = "podtrace.dev/frozen"
	freezeConfig      = "freeze-pods"
	freezeWebhook     = "freeze.pods.podtrace.dev"
	freezeMessage     = "updates are frozen"
	injectLabel       = "sidecar-injection"
	injectConfig      = "sidecar-injector"
	injectWebhook     = "inject.sidecar.podtrace.dev"
	sidecarName       = "istio-proxy"
	jobControllerUser = "system:serviceaccount:kube-system:job-controller"
)

// explainCase is one failure (or non-failure) recorded by TestExplain: run
// makes it happen on the cluster while the recorder runs; check asserts on
// the finished recording.
type explainCase struct {
	name  string
	run   func(t *testing.T)
	check func(t *testing.T, db string)
}

// TestExplain records several real failure cases side by side, each in a
// namespace of its own, on one control plane and in one trace, and checks
// what `podtrace explain` and `podtrace diff` say about each.
func TestExplain(t *testing.T) {
	began := time.Now()
	c, client := newCluster(t, cluster.Options{Nodes: 2, NodeMonitorGracePeriod: 10 * time.Second, AuditPolicy: cluster.PodAuditPolicy})
	ctx := t.Context()
	lost, err := c.StartKwok(ctx, lostNodeName)
	if err != nil {
		t.Fatal(err)
	}
	if err := taintNode(ctx, client, lostNodeName, corev1.Taint{Key: lostTaint, Value: "true", Effect: corev1.TaintEffectNoSchedule}); err != nil {
		t.Fatal(err)
	}
	hooks := startAdmission(t)
	if err := hooks.register(ctx, client); err != nil {
		t.Fatal(err)
	}
	registered := time.Now()
	rec := startRecorder(t, c)
	// The API server picks a webhook configuration up within a second or
	// two; the recorder may have synced sooner.
	time.Sleep(time.Until(registered.Add(2 * time.Second)))

	cases := []*explainCase{
		customFinalizerCase(client),
		jobFinalizerCase(client, hooks),
		lostNodeCase(client, lost),
		sidecarCase(client),
		imagePullCase(client),
		rolloutCase(client),
		unschedulableCase(client),
	}
	t.Run("run", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.run(t)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(2 * time.Second) // let the watches deliver the last revisions
	rec.stop(t)
	t.Logf("cases recorded %s after the test began", time.Since(began).Round(time.Second))
	t.Run("explain", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { tc.check(t, rec.db) })
		}
	})

	// The same recording with the API server's audit log imported: what
	// was inferred becomes certain.
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Run("with audit log", func(t *testing.T) {
		t.Run("sidecar injection", func(t *testing.T) { sidecarAudited(t, rec.db) })
	})
}

// sidecarAudited: with the audit log, each field the sidecar webhook
// injected is attributed to that webhook by name, for certain.
func sidecarAudited(t *testing.T, db string) {
	const ns, name = "explain-sidecar", "app"
	lc := lifecycle(t, db, ns, name)
	if lc.Admission == nil || lc.Admission.Source != "audit log" {
		t.Fatalf("admission compared with %+v, want the audit log", lc.Admission)
	}
	injected := 0
	var got []string
	for _, c := range lc.Admission.Changes {
		got = append(got, fmt.Sprintf("%s %s by %s (%s)", c.Op, c.Path, c.By, c.Certainty))
		if strings.HasPrefix(c.Path, "spec.containers["+sidecarName+"]") {
			injected++
			if c.By != "mutating webhook "+injectWebhook || c.Certainty != "certain" {
				t.Errorf("%s attributed to %q (%s), want mutating webhook %s (certain)", c.Path, c.By, c.Certainty, injectWebhook)
			}
		}
	}
	if injected == 0 {
		t.Errorf("no injected field in the admission changes:\n%s", strings.Join(got, "\n"))
	}
	if lc.Audit == nil || len(lc.Audit.Patches) == 0 || lc.Audit.Patches[0].Webhook != injectWebhook {
		t.Errorf("audit patches %+v, want the %s patch", lc.Audit, injectWebhook)
	}
	if len(lc.Findings) != 0 {
		t.Errorf("a healthy pod got findings with the audit log: %+v", lc.Findings)
	}
}

// customFinalizerCase: a pod with a finalizer that no controller removes is
// deleted and stays.
func customFinalizerCase(client kubernetes.Interface) *explainCase {
	const ns, name, fin = "explain-finalizer", "held", "example.com/hold"
	return &explainCase{
		name: "custom finalizer",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			pod := simplePod(ns, name)
			pod.Finalizers = []string{fin}
			// A short grace period: kwok, unlike a kubelet, does not confirm
			// the deletion of a pod that still has finalizers, so the
			// deletion timestamp stays at the request plus the grace period.
			grace := int64(2)
			pod.Spec.TerminationGracePeriodSeconds = &grace
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			p := waitPod(t, client, ns, name, "its grace period over, containers stopped", func(p *corev1.Pod) bool {
				return p.DeletionTimestamp != nil && time.Now().After(p.DeletionTimestamp.Add(time.Second)) &&
					(p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
			})
			if !slices.Contains(p.Finalizers, fin) {
				t.Fatalf("finalizers %v, want %s still there", p.Finalizers, fin)
			}
		},
		check: func(t *testing.T, db string) {
			ex := explainPod(t, db, ns, name)
			if ex.Outcome != "Terminating" {
				t.Errorf("outcome %q, want Terminating", ex.Outcome)
			}
			f := findFinding(t, ex, "stuck-finalizer")
			if !strings.Contains(f.Headline, fin) {
				t.Errorf("headline %q does not name %s", f.Headline, fin)
			}
			if !slices.ContainsFunc(f.Next, func(s string) bool {
				return strings.Contains(s, fin) && strings.Contains(s, "no built-in controller owns it")
			}) {
				t.Errorf("next steps do not say that no built-in controller owns %s: %q", fin, f.Next)
			}
			// The webhooks of the other cases select other namespaces.
			if len(f.Suspects) != 0 {
				t.Errorf("suspects %+v, want none: no webhook intercepts pod UPDATE in %s", f.Suspects, ns)
			}
			text := explainText(t, db, ns, name)
			for _, s := range []string{"stuck-finalizer", fin, "no built-in controller owns it"} {
				if !strings.Contains(text, s) {
					t.Errorf("explain lacks %q:\n%s", s, text)
				}
			}
		},
	}
}

// jobFinalizerCase: a Job's pod finishes, and the job controller cannot
// remove its tracking finalizer because a validating webhook denies every
// pod UPDATE in the namespace.
func jobFinalizerCase(client kubernetes.Interface, hooks *webhookServer) *explainCase {
	const ns, job = "explain-job", "frozen-job"
	var (
		podName    string
		terminated bool // the pod had a deletionTimestamp at the end
	)
	return &explainCase{
		name: "job tracking finalizer",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, map[string]string{frozenLabel: "true"})
			one, none := int32(1), int32(0)
			j := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: ns},
				Spec: batchv1.JobSpec{
					Completions: &one, Parallelism: &one, BackoffLimit: &none,
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "work", Image: "busybox:1.36"}},
					}},
				},
			}
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var pod *corev1.Pod
			waitFor(t, "the job's pod to finish", time.Minute, func() (bool, error) {
				pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
				if err != nil || len(pods.Items) == 0 {
					return false, err
				}
				p := &pods.Items[0]
				pod = p
				return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
			})
			podName = pod.Name
			if !slices.Contains(pod.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Fatalf("job pod %s finished without the %s finalizer (finalizers %v): the job controller did not add it", pod.Name, batchv1.JobTrackingFinalizer, pod.Finalizers)
			}
			// Give the job controller every chance to remove the finalizer,
			// longer than explain waits before it says it was not removed.
			time.Sleep(explain.FinalizerRemovalGrace + 3*time.Second)
			p, err := client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the job pod is gone (%v): the case did not reproduce", err)
			}
			if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Fatalf("the job pod lost its finalizer (now %v): the case did not reproduce", p.Finalizers)
			}
			terminated = p.DeletionTimestamp != nil
			got, err := client.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			status, _ := json.Marshal(got.Status)
			t.Logf("the API server shows: pod %s phase %s, deletionTimestamp %v, finalizers %v; job status %s",
				p.Name, p.Status.Phase, p.DeletionTimestamp, p.Finalizers, status)
			denied := hooks.deniedFor(ns, podName)
			t.Logf("webhook %s denied %d UPDATEs of the pod: %v", freezeWebhook, len(denied), denied)
			if !slices.ContainsFunc(denied, func(s string) bool { return strings.HasPrefix(s, jobControllerUser) }) {
				t.Errorf("the webhook denied no UPDATE of the pod by %s; denied: %v", jobControllerUser, denied)
			}
		},
		check: func(t *testing.T, db string) {
			ex := explainPod(t, db, ns, podName)
			// What the API server showed decides which finding applies: a
			// finished pod never deleted, or a deleted one held.
			id := "finalizer-not-removed"
			if terminated {
				id = "stuck-finalizer"
			}
			f := findFinding(t, ex, id)
			if !strings.Contains(f.Headline, batchv1.JobTrackingFinalizer) {
				t.Errorf("headline %q does not name %s", f.Headline, batchv1.JobTrackingFinalizer)
			}
			if !slices.ContainsFunc(f.Next, func(s string) bool { return strings.Contains(s, "job controller") }) {
				t.Errorf("next steps do not name the job controller: %q", f.Next)
			}
			if !hasWebhook(f.Suspects, freezeWebhook) {
				t.Errorf("webhook %s is not a suspect: %+v", freezeWebhook, f.Suspects)
			}
			if !slices.ContainsFunc(f.Evidence, func(e explain.Evidence) bool { return strings.Contains(e.Text, "uncountedTerminatedPods") }) {
				t.Errorf("no evidence from the Job's status.uncountedTerminatedPods: %+v", f.Evidence)
			}
			text := explainText(t, db, ns, podName)
			for _, s := range []string{id, batchv1.JobTrackingFinalizer, "job controller", freezeWebhook} {
				if !strings.Contains(text, s) {
					t.Errorf("explain lacks %q:\n%s", s, text)
				}
			}
		},
	}
}

// lostNodeCase: a pod's node stops reporting; the pod, deleted, stays
// Terminating because no kubelet confirms that its containers stopped.
func lostNodeCase(client kubernetes.Interface, lost *cluster.KwokProcess) *explainCase {
	const ns, name = "explain-node", "stranded"
	return &explainCase{
		name: "lost node",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			pod := simplePod(ns, name)
			pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": lostNodeName}
			pod.Spec.Tolerations = []corev1.Toleration{{Key: lostTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "Ready on "+lostNodeName, func(p *corev1.Pod) bool { return p.Spec.NodeName == lostNodeName && podReady(p) })
			lost.Kill()
			waitFor(t, "node "+lostNodeName+" to stop being Ready", time.Minute, func() (bool, error) {
				n, err := client.CoreV1().Nodes().Get(ctx, lostNodeName, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						return c.Status != corev1.ConditionTrue, nil
					}
				}
				return false, nil
			})
			if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second) // long past what kwok would need to confirm it
			p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the pod is gone (%v): the case did not reproduce", err)
			}
			if p.DeletionTimestamp == nil {
				t.Fatalf("the pod has no deletionTimestamp after its deletion")
			}
		},
		check: func(t *testing.T, db string) {
			ex := explainPod(t, db, ns, name)
			if ex.Outcome != "Terminating" {
				t.Errorf("outcome %q, want Terminating", ex.Outcome)
			}
			f := findFinding(t, ex, "node-lost")
			if !strings.Contains(f.Headline, lostNodeName) {
				t.Errorf("headline %q does not name node %s", f.Headline, lostNodeName)
			}
			text := explainText(t, db, ns, name)
			for _, s := range []string{"node-lost", lostNodeName, "kubectl delete node " + lostNodeName} {
				if !strings.Contains(text, s) {
					t.Errorf("explain lacks %q:\n%s", s, text)
				}
			}
		},
	}
}

// sidecarCase: a mutating webhook injects a container on pod CREATE; the
// pod is healthy.
func sidecarCase(client kubernetes.Interface) *explainCase {
	const ns, name = "explain-sidecar", "app"
	return &explainCase{
		name: "sidecar injection",
		run: func(t *testing.T) {
			createNamespace(t, client, ns, map[string]string{injectLabel: "enabled"})
			stored := createPod(t, client, simplePod(ns, name))
			if !slices.ContainsFunc(stored.Spec.Containers, func(c corev1.Container) bool { return c.Name == sidecarName }) {
				t.Fatalf("stored pod has no %s container: the webhook did not mutate it", sidecarName)
			}
			waitPod(t, client, ns, name, "Ready", podReady)
		},
		check: func(t *testing.T, db string) {
			lc := lifecycle(t, db, ns, name)
			if lc.Admission == nil {
				t.Fatalf("no admission section")
			}
			path := "spec.containers[" + sidecarName + "]"
			var got []string
			found := false
			for _, c := range lc.Admission.Changes {
				got = append(got, fmt.Sprintf("%s %s by %s (%s)", c.Op, c.Path, c.By, c.Certainty))
				if c.Path == path && c.Op == diff.OpAdd && c.By == "a mutating webhook or admission plugin" {
					found = true
				}
			}
			t.Logf("admission, compared with %s:\n%s", lc.Admission.Source, strings.Join(got, "\n"))
			if !found {
				t.Errorf("admission changes lack %s added by a mutating webhook or admission plugin", path)
			}
			if !hasWebhook(lc.Admission.Webhooks, injectWebhook) {
				t.Errorf("admission webhooks %+v lack %s", lc.Admission.Webhooks, injectWebhook)
			}
			if hasWebhook(lc.Admission.Webhooks, freezeWebhook) {
				t.Errorf("admission webhooks list %s, which intercepts UPDATE only, in another namespace", freezeWebhook)
			}
			if len(lc.Findings) != 0 {
				t.Errorf("a healthy pod got findings: %+v", lc.Findings)
			}
			if text := explainText(t, db, ns, name); !strings.Contains(text, "Nothing looks wrong") {
				t.Errorf("explain does not say nothing looks wrong:\n%s", text)
			}
		},
	}
}

// imagePullCase: a pod whose image never pulls.
func imagePullCase(client kubernetes.Interface) *explainCase {
	const ns, name, container = "explain-image", "bad-image", "fetcher"
	return &explainCase{
		name: "image pull",
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			pod := simplePod(ns, name)
			pod.Annotations = map[string]string{"podtrace.dev/image-pull": "fail"}
			pod.Spec.Containers[0].Name = container
			pod.Spec.Containers[0].Image = "registry.example.com/nope:1.0"
			createPod(t, client, pod)
			waitPod(t, client, ns, name, "ImagePullBackOff", func(p *corev1.Pod) bool {
				for _, s := range p.Status.ContainerStatuses {
					if s.State.Waiting != nil && s.State.Waiting.Reason == "ImagePullBackOff" {
						return true
					}
				}
				return false
			})
		},
		check: func(t *testing.T, db string) {
			ex := explainPod(t, db, ns, name)
			if ex.Outcome != "Pending" {
				t.Errorf("outcome %q, want Pending", ex.Outcome)
			}
			f := findFinding(t, ex, "image-pull")
			if !strings.Contains(f.Headline, container) {
				t.Errorf("headline %q does not name container %s", f.Headline, container)
			}
			if text := explainText(t, db, ns, name); !strings.Contains(text, "image-pull") || !strings.Contains(text, container) {
				t.Errorf("explain does not name the image-pull finding and container %s:\n%s", container, text)
			}
		},
	}
}

// unschedulableCase: two pods no node takes, one for a label no node has,
// one pinned to the node whose taint it does not tolerate; explain names
// each node's cause.
func unschedulableCase(client kubernetes.Interface) *explainCase {
	const ns, ssd, pinned = "explain-unschedulable", "wants-ssd", "wants-lost"
	unscheduled := func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	}
	return &explainCase{
		name: "unschedulable",
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			a := simplePod(ns, ssd)
			a.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			createPod(t, client, a)
			b := simplePod(ns, pinned)
			b.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": lostNodeName}
			createPod(t, client, b)
			waitPod(t, client, ns, ssd, "marked unschedulable", unscheduled)
			waitPod(t, client, ns, pinned, "marked unschedulable", unscheduled)
		},
		check: func(t *testing.T, db string) {
			f := findFinding(t, explainPod(t, db, ns, ssd), "unschedulable")
			for _, want := range []string{"no node fits:", "kwok-node-0", "kwok-node-1", "lack label disk=ssd"} {
				if !strings.Contains(f.Headline, want) {
					t.Errorf("%s: headline %q lacks %q", ssd, f.Headline, want)
				}
			}
			if !slices.ContainsFunc(f.Next, func(s string) bool {
				return strings.Contains(s, "kubectl label node") && strings.Contains(s, "disk=ssd")
			}) {
				t.Errorf("%s: next %q does not say how to label a node", ssd, f.Next)
			}
			if !slices.ContainsFunc(f.Evidence, func(e explain.Evidence) bool { return strings.Contains(e.Text, "FailedScheduling") }) {
				t.Errorf("%s: the scheduler's message is not in the evidence: %+v", ssd, f.Evidence)
			}

			f = findFinding(t, explainPod(t, db, ns, pinned), "unschedulable")
			taint := lostNodeName + " has untolerated taint " + lostTaint + "=true:NoSchedule"
			for _, want := range []string{"no node fits:", "kwok-node-0 and kwok-node-1 lack label kubernetes.io/hostname=" + lostNodeName, taint} {
				if !strings.Contains(f.Headline, want) {
					t.Errorf("%s: headline %q lacks %q", pinned, f.Headline, want)
				}
			}
			if slices.ContainsFunc(f.Next, func(s string) bool { return strings.Contains(s, "kubectl label node") }) {
				t.Errorf("%s: next %q advises labelling a node with kubernetes.io/hostname, which the kubelet sets", pinned, f.Next)
			}
			if !slices.ContainsFunc(f.Next, func(s string) bool { return strings.Contains(s, "add a toleration") && strings.Contains(s, lostTaint) }) {
				t.Errorf("%s: next %q does not say to tolerate %s", pinned, f.Next, lostTaint)
			}
			if text := explainText(t, db, ns, pinned); !strings.Contains(text, taint) {
				t.Errorf("explain does not name the taint:\n%s", text)
			}
		},
	}
}

// rolloutCase: a Deployment replaces its pods after a template change;
// nothing is wrong with either generation.
func rolloutCase(client kubernetes.Interface) *explainCase {
	const ns, name = "explain-rollout", "web"
	var oldPods, newPods []string
	var newRS string
	return &explainCase{
		name: "rollout",
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			two := int32(2)
			labels := map[string]string{"app": name}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: appsv1.DeploymentSpec{
					Replicas: &two,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
					},
				},
			}
			if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, name)
			oldPods = podNames(t, client, ns, "app="+name)
			if len(oldPods) != 2 {
				t.Fatalf("pods %v, want 2", oldPods)
			}
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
				_, err = client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, name)
			for _, p := range oldPods {
				waitFor(t, "old pod "+p+" gone", time.Minute, podGone(client, ns, p))
			}
			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				if p.Spec.Containers[0].Image != "nginx:1.28" {
					t.Fatalf("pod %s runs %s after the rollout", p.Name, p.Spec.Containers[0].Image)
				}
				newPods = append(newPods, p.Name)
				if ref := metav1.GetControllerOf(&p); ref != nil {
					newRS = ref.Name
				}
			}
			if len(newPods) != 2 || newRS == "" {
				t.Fatalf("new pods %v (ReplicaSet %q), want 2 owned by the new ReplicaSet", newPods, newRS)
			}
		},
		check: func(t *testing.T, db string) {
			old := lifecycle(t, db, ns, oldPods[0])
			// Its one finding says how it ended: by the rollout.
			if len(old.Findings) != 1 || old.Findings[0].ID != "ended" || old.Findings[0].Severity != explain.Info || old.Findings[0].Mechanism != explain.MechanismRollout {
				t.Errorf("old pod %s findings %+v, want only the ended finding of a rollout", oldPods[0], old.Findings)
			}
			names := phaseNames(old)
			for _, want := range []string{diff.PhaseDeletionRequested, diff.PhaseDeleted} {
				if !slices.Contains(names, want) {
					t.Errorf("old pod %s phases %v lack %q", oldPods[0], names, want)
				}
			}
			if old.Outcome != "Deleted" {
				t.Errorf("old pod outcome %q, want Deleted", old.Outcome)
			}
			lc := lifecycle(t, db, ns, newPods[0])
			if len(lc.Findings) != 0 {
				t.Errorf("new pod %s got findings: %+v", newPods[0], lc.Findings)
			}
			if lc.Outcome != "Running" {
				t.Errorf("new pod outcome %q, want Running", lc.Outcome)
			}
			if lc.Admission == nil || lc.Admission.Source != "template of ReplicaSet "+newRS {
				t.Fatalf("admission %+v, want the source to be the template of ReplicaSet %s", lc.Admission, newRS)
			}
			// No webhook intercepts this namespace: nothing is laid at one's door.
			for _, c := range lc.Admission.Changes {
				if c.By == "a mutating webhook or admission plugin" {
					t.Errorf("admission change %s %s blamed on a webhook: none intercepts %s", c.Op, c.Path, ns)
				}
			}
			for _, p := range []string{oldPods[0], newPods[0]} {
				text := explainText(t, db, ns, p)
				if !strings.Contains(text, "Nothing looks wrong") {
					t.Errorf("explain %s does not say nothing looks wrong:\n%s", p, text)
				}
			}
		},
	}
}

// explained is the output of `podtrace explain -o json`.
type explained struct {
	Outcome  string            `json:"outcome"`
	Findings []explain.Finding `json:"findings"`
}

func explainPod(t *testing.T, db, ns, pod string) *explained {
	t.Helper()
	out := podtrace(t, "explain", pod, "-n", ns, "--db", db, "-o", "json")
	var ex explained
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatalf("decode explain -o json: %v\n%s", err, out)
	}
	return &ex
}

// explainText runs `podtrace explain` and logs what it says.
func explainText(t *testing.T, db, ns, pod string) string {
	t.Helper()
	text := podtrace(t, "explain", pod, "-n", ns, "--db", db, "--color", "never")
	t.Logf("podtrace explain %s -n %s:\n%s", pod, ns, text)
	return text
}

func findFinding(t *testing.T, ex *explained, id string) explain.Finding {
	t.Helper()
	var ids []string
	for _, f := range ex.Findings {
		if f.ID == id {
			return f
		}
		ids = append(ids, f.ID)
	}
	t.Fatalf("no %s finding; findings: %v\n%+v", id, ids, ex.Findings)
	return explain.Finding{}
}

func simplePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
	}
}

// createNamespace creates a namespace and waits for its default
// ServiceAccount, without which the API server refuses pods.
func createNamespace(t *testing.T, client kubernetes.Interface, name string, labels map[string]string) {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ServiceAccount "+name+"/default", time.Minute, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

func createPod(t *testing.T, client kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	p, err := client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return p
}

// waitPod waits until the pod satisfies ok and returns it.
func waitPod(t *testing.T, client kubernetes.Interface, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, "pod "+ns+"/"+name+" "+what, time.Minute, func() (bool, error) {
		var err error
		p, err = client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err == nil && ok(p), err
	})
	return p
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podNames(t *testing.T, client kubernetes.Interface, ns, selector string) []string {
	t.Helper()
	pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		out = append(out, p.Name)
	}
	return out
}

// waitRolledOut waits until the Deployment's latest template runs on every
// replica, all available, and no older pod is left counted.
func waitRolledOut(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	waitFor(t, "deployment "+ns+"/"+name+" rolled out", time.Minute, func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := *d.Spec.Replicas
		s := d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
			s.AvailableReplicas == want && s.ReadyReplicas == want, nil
	})
}

func taintNode(ctx context.Context, client kubernetes.Interface, name string, taint corev1.Taint) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// webhookServer serves two admission webhooks from the test process, over TLS
// on 127.0.0.1: one denies every pod UPDATE, one injects a sidecar on pod
// CREATE.
type webhookServer struct {
	srv *httptest.Server

	mu     sync.Mutex
	denied map[string][]string // "ns/name" -> "user operation" of each denied request
}

func startAdmission(t *testing.T) *webhookServer {
	t.Helper()
	a := &webhookServer{denied: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/freeze", func(w http.ResponseWriter, r *http.Request) {
		serveReview(w, r, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			a.mu.Lock()
			key := req.Namespace + "/" + req.Name
			a.denied[key] = append(a.denied[key], req.UserInfo.Username+" "+string(req.Operation))
			a.mu.Unlock()
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Message: freezeMessage,
			}}
		})
	})
	mux.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) {
		serveReview(w, r, func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			var pod corev1.Pod
			if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
				return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusBadRequest, Message: err.Error()}}
			}
			if slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == sidecarName }) {
				return &admissionv1.AdmissionResponse{Allowed: true}
			}
			patch := `[{"op":"add","path":"/spec/containers/-","value":{"name":"` + sidecarName + `","image":"docker.io/istio/proxyv2:1.24.0","args":["proxy","sidecar"]}}]`
			pt := admissionv1.PatchTypeJSONPatch
			return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: &pt}
		})
	})
	a.srv = httptest.NewUnstartedServer(mux)
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	return a
}

// serveReview answers an AdmissionReview with decide's response.
func serveReview(w http.ResponseWriter, r *http.Request, decide func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	resp := decide(review.Request)
	resp.UID = review.Request.UID
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// deniedFor returns the denied requests about one pod, as "user operation".
func (a *webhookServer) deniedFor(ns, name string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.denied[ns+"/"+name])
}

// register creates the two webhook configurations: freeze for pod UPDATE in
// namespaces labelled podtrace.dev/frozen=true, inject for pod CREATE in
// namespaces labelled sidecar-injection=enabled.
func (a *webhookServer) register(ctx context.Context, client kubernetes.Interface) error {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
	fail := admissionregv1.Fail
	none := admissionregv1.SideEffectClassNone
	timeout := int32(5)
	scope := admissionregv1.NamespacedScope
	rule := func(op admissionregv1.OperationType) []admissionregv1.RuleWithOperations {
		return []admissionregv1.RuleWithOperations{{
			Operations: []admissionregv1.OperationType{op},
			Rule:       admissionregv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
		}}
	}
	url := func(path string) *string { u := a.srv.URL + path; return &u }
	freeze := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: freezeConfig},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    freezeWebhook,
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: url("/freeze"), CABundle: ca},
			Rules:                   rule(admissionregv1.Update),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{frozenLabel: "true"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, freeze, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create validatingwebhookconfiguration %s: %w", freezeConfig, err)
	}
	never := admissionregv1.NeverReinvocationPolicy
	inject := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: injectConfig},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    injectWebhook,
			ClientConfig:            admissionregv1.WebhookClientConfig{URL: url("/inject"), CABundle: ca},
			Rules:                   rule(admissionregv1.Create),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{injectLabel: "enabled"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			ReinvocationPolicy:      &never,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, inject, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create mutatingwebhookconfiguration %s: %w", injectConfig, err)
	}
	return nil
}
