package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestEndedRolloutAtScale rolls a Deployment of enough replicas that
// client-go's event correlator aggregates the ReplicaSet controller's
// SuccessfulDelete events (past ten alike about one object: "(combined
// from similar events): ...") and its spam filter drops the rest: most
// pods have no event naming them. Every pod of the old ReplicaSet still
// reads as deleted by the rollout, and every pod deleted with the
// Deployment as garbage-collected, from the owners' recorded history;
// then, with the audit log imported, from the requests that asked. No
// pod's ending has an unknown actor.
func TestEndedRolloutAtScale(t *testing.T) {
	const ns, name, replicas = "rollout-scale", "web", 200
	c, client := newCluster(t, cluster.Options{Nodes: 2, AuditPolicy: cluster.PodAuditPolicy,
		NodeAllocatable:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"), corev1.ResourcePods: resource.MustParse("1000")},
		ControllerManagerFlags: []string{"--kube-api-qps=100", "--kube-api-burst=200"}})
	rec := startRecorder(t, c)
	ctx := t.Context()
	createNamespace(t, client, ns, nil)
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, name, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeployment(t, client, ns, name)
	old := podNames(t, client, ns, "app="+name)
	updateDeployment(t, client, ns, name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitDeployment(t, client, ns, name)
	// Every old pod gone, not only the count back at replicas: mid-way a
	// rollout can hold as many pods, old ones among them.
	waitFor(t, "the old pods gone", 3*time.Minute, func() (bool, error) {
		now := podNames(t, client, ns, "app="+name)
		for _, p := range old {
			if slices.Contains(now, p) {
				return false, nil
			}
		}
		return len(now) == replicas, nil
	})
	rolled := podNames(t, client, ns, "app="+name)
	bg := metav1.DeletePropagationBackground
	if err := client.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every pod gone", 3*time.Minute, func() (bool, error) { return len(podNames(t, client, ns, "")) == 0, nil })
	time.Sleep(2 * time.Second) // let the watches deliver the last revisions
	rec.stop(t)
	if len(old) != replicas || len(rolled) != replicas {
		t.Fatalf("%d pods before the rollout and %d after, want %d each", len(old), len(rolled), replicas)
	}

	// The correlator aggregated the ReplicaSet controller's events (its
	// SuccessfulCreate past the tenth) and its spam filter dropped most:
	// fewer SuccessfulDelete events than pods it deleted, none at all when
	// the creations used up the budget. One event per pod cannot be
	// relied on.
	combined, deletes := controllerEvents(t, rec.db, ns)
	t.Logf("the ReplicaSet controller's events: %d combined; %d SuccessfulDelete for the %d pods the rollout deleted", combined, deletes, replicas)
	if combined == 0 {
		t.Fatalf("no \"(combined from similar events)\" event of the ReplicaSet controller in the trace: the correlator's aggregation was not reached")
	}
	if deletes >= replicas {
		t.Fatalf("%d SuccessfulDelete events for %d pods: no event was dropped, the test does not show what it should", deletes, replicas)
	}
	check := func(t *testing.T, pods []string, mechanism string, audited bool) {
		shown := false
		for _, p := range pods {
			ex := explainPod(t, rec.db, ns, p)
			var f *explain.Finding
			for i := range ex.Findings {
				if ex.Findings[i].ID == "ended" {
					f = &ex.Findings[i]
				}
				if s := ex.Findings[i].Severity; s > explain.Info {
					t.Errorf("%s: %s finding %s: %s", p, s, ex.Findings[i].ID, ex.Findings[i].Headline)
				}
			}
			switch {
			case f == nil:
				t.Errorf("%s: no ended finding", p)
			case f.Mechanism != mechanism:
				t.Errorf("%s: mechanism %q, want %q (%s)", p, f.Mechanism, mechanism, f.Headline)
				if !shown { // the first pod that reads wrong, whole
					shown = true
					t.Logf("podtrace explain %s --show-info:\n%s", p, podtrace(t, "explain", p, "-n", ns, "--db", rec.db, "--show-info", "--color", "never"))
				}
			case f.Actor == nil || f.Actor.Basis == diff.BasisUnknown || strings.Contains(f.Actor.Who, "unknown"):
				t.Errorf("%s: actor %+v, want one known", p, f.Actor)
			case audited && f.Actor.Basis != diff.BasisAuditLog:
				t.Errorf("%s: actor %q known by %s, want the audit log's", p, f.Actor.Who, f.Actor.Basis)
			}
		}
		if !t.Failed() {
			explainText(t, rec.db, ns, pods[0])
		}
	}
	t.Run("recording alone", func(t *testing.T) {
		check(t, old, explain.MechanismRollout, false)
		check(t, rolled, explain.MechanismGarbageCollection, false)
	})
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Run("with audit log", func(t *testing.T) {
		check(t, old, explain.MechanismRollout, true)
		check(t, rolled, explain.MechanismGarbageCollection, true)
	})
}

// waitDeployment waits until the Deployment has rolled out its template:
// every replica updated, ready and available.
func waitDeployment(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	waitFor(t, "deployment "+ns+"/"+name+" rolled out", 4*time.Minute, func() (bool, error) {
		d, err := client.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want, s := *d.Spec.Replicas, d.Status
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
			s.AvailableReplicas == want && s.ReadyReplicas == want, nil
	})
}

// controllerEvents counts the ReplicaSet controller's events about the
// ReplicaSets of namespace ns recorded in the trace that the correlator
// combined, and the SuccessfulDelete events.
func controllerEvents(t *testing.T, path, ns string) (combined, deletes int) {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	objs, err := db.Objects(store.ObjectFilter{Kind: "Event", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	defer func() { t.Logf("events recorded in %s by reason: %v", ns, reasons) }()
	for _, o := range objs {
		if o.APIVersion != "v1" {
			continue // an imported audit event
		}
		recs, err := db.History(o.UID)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range diff.ReplayEvents(recs) {
			reasons[ev.Reason]++
			if ev.Reason != "SuccessfulCreate" && ev.Reason != "SuccessfulDelete" {
				continue
			}
			if ev.Reason == "SuccessfulDelete" {
				deletes++
			}
			if strings.HasPrefix(ev.Message, "(combined from similar events): ") {
				combined++
			}
		}
	}
	return combined, deletes
}
