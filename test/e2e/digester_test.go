package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestDigesterCase records the case podtrace was born for and checks that
// the recording shows its cause: the images rewritten at admission by a
// webhook that intercepts pod CREATE and UPDATE, the Foreground deletion
// with its finalizer, the dependents deleted after it, then silence while
// that webhook stands in the way of the garbage collector's UPDATE.
func TestDigesterCase(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	const ns, job = "ci", "runner-job-1"
	startDigester(t, c, client, ns)
	rec := startRecorder(t, c)
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	playStuckJob(t, client, ns, job, 25*time.Second) // long past every retry that could have removed the finalizer
	rec.stop(t)

	lc := lifecycle(t, rec.db, ns, job)
	if lc.Outcome != "Terminating" {
		t.Errorf("outcome %q, want Terminating", lc.Outcome)
	}
	if lc.Terminating < diff.Duration(20*time.Second) {
		t.Errorf("terminating for %s, want at least 20s", lc.Terminating)
	}
	del := findPhase(t, lc, diff.PhaseDeletionRequested)
	if !strings.Contains(del.Detail, "propagation Foreground") || !strings.Contains(del.Detail, "foregroundDeletion") {
		t.Errorf("deletion detail %q, want Foreground propagation and the foregroundDeletion finalizer", del.Detail)
	}
	findPhase(t, lc, diff.PhaseStillPresent)

	// The dependents, deleted one by one after the deletion request.
	deleted := map[string]bool{}
	for _, d := range lc.Dependents {
		if !d.Deleted.IsZero() && d.Deleted.After(del.Time) {
			deleted[d.Kind+"/"+d.Name] = true
		}
	}
	for _, want := range []string{"Secret/" + digester.SecretName(job), "ConfigMap/" + digester.ConfigMapName(job), "Service/" + digester.ServiceName(job)} {
		if !deleted[want] {
			t.Errorf("dependent %s not seen deleted after the deletion request; dependents: %+v", want, lc.Dependents)
		}
	}

	// Admission: the webhook that could have rewritten the images.
	if lc.Admission == nil || !hasWebhook(lc.Admission.Webhooks, digester.WebhookName) {
		t.Errorf("admission lists no %s webhook: %+v", digester.WebhookName, lc.Admission)
	}
	first := lc.Steps[0]
	if !hasChange(first.Changes, "spec.containers[build].image", "@sha256:") {
		t.Errorf("first revision shows no digest image: %+v", first.Changes)
	}

	// The diagnosis: the finalizer stuck, the webhook as suspect.
	var stuck *explain.Finding
	for i := range lc.Findings {
		if lc.Findings[i].ID == "stuck-finalizer" {
			stuck = &lc.Findings[i]
		}
	}
	if stuck == nil {
		t.Fatalf("no stuck-finalizer finding; findings: %+v", lc.Findings)
	}
	if !hasWebhook(stuck.Suspects, digester.WebhookName) {
		t.Errorf("the digester webhook is not a suspect: %+v", stuck.Suspects)
	}
	if !strings.Contains(stuck.Headline, "foregroundDeletion") {
		t.Errorf("headline %q does not name the finalizer", stuck.Headline)
	}
	explain := podtrace(t, "explain", job, "-n", ns, "--db", rec.db, "--color", "never")
	for _, s := range []string{"stuck-finalizer", "foregroundDeletion", digester.WebhookName, "garbage collector"} {
		if !strings.Contains(explain, s) {
			t.Errorf("explain lacks %q:\n%s", s, explain)
		}
	}
}

// playStuckJob plays the CI runner's job and its Foreground deletion, waits
// for the given time and checks that the case reproduced: the pod is still
// there, held by its finalizer.
func playStuckJob(t *testing.T, client kubernetes.Interface, ns, job string, wait time.Duration) {
	t.Helper()
	ctx := context.Background()
	pod, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: job})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pod.Spec.Containers[0].Image, "@sha256:") {
		t.Fatalf("stored image %q is not a digest: the webhook did not mutate the pod", pod.Spec.Containers[0].Image)
	}
	waitFor(t, "job pod Succeeded", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod is gone: the case did not reproduce (%v)", err)
	}
	if len(p.Finalizers) == 0 {
		t.Fatalf("the pod lost its finalizers: the case did not reproduce")
	}
}

// startDigester serves the digester webhook from the test process,
// registers it with the cluster and labels namespace ns for it, as the
// case's cluster had it.
func startDigester(t *testing.T, c *cluster.Cluster, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	srv, err := digester.NewServer(digester.ServerOptions{Client: c.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if _, err := digester.Register(ctx, c.Client(), digester.Options{URL: srv.URL(), CABundle: srv.CABundle()}); err != nil {
		t.Fatal(err)
	}
	if _, err := digester.EnsureNamespace(ctx, client, ns, true); err != nil {
		t.Fatal(err)
	}
}

func hasWebhook(ws []admission.Webhook, name string) bool {
	for _, w := range ws {
		if w.Name == name {
			return true
		}
	}
	return false
}

func hasChange(cs []diff.Change, path, contains string) bool {
	for _, c := range cs {
		if (strings.HasPrefix(c.Path, path) || strings.HasPrefix(path, c.Path)) && strings.Contains(c.New, contains) {
			return true
		}
	}
	return false
}
