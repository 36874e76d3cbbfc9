package e2e

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestRecordRetention: record --retain prunes, while recording, a pod gone
// longer than the retention with its Events and the Secret it owned,
// keeps the live pods whole, their ReplicaSet and Deployment, and the
// report says what was pruned.
func TestRecordRetention(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := t.Context()
	const ns = "retain"
	createNamespace(t, client, ns, nil)
	rec := startRecorder(t, c, "-n", ns, "--retain", "4s")

	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deployment(ns, "web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stays := createPod(t, client, simplePod(ns, "stays"))
	gone := createPod(t, client, simplePod(ns, "gone"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "gone-pull", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: gone.Name, UID: gone.UID}}}}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, ns, "stays", "ready", podReady)
	waitPod(t, client, ns, "gone", "ready", podReady)
	var web []string
	waitFor(t, "2 web pods ready", time.Minute, func() (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		web = web[:0]
		for i := range l.Items {
			if podReady(&l.Items[i]) {
				web = append(web, l.Items[i].Name)
			}
		}
		return len(web) == 2, nil
	})
	time.Sleep(2 * time.Second) // their events recorded
	if err := client.CoreV1().Pods(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod gone deleted", time.Minute, podGone(client, ns, "gone"))
	waitFor(t, "its Secret collected", time.Minute, func() (bool, error) {
		_, err := client.CoreV1().Secrets(ns).Get(ctx, "gone-pull", metav1.GetOptions{})
		return err != nil, nil
	})
	deleted := time.Now()
	// Another change of the live pod, after the deletion.
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "stays", types.MergePatchType, []byte(`{"metadata":{"labels":{"later":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	// Pruned while recording: read the trace as readers do.
	var objs []store.Object
	waitFor(t, "the gone pod pruned", 30*time.Second, func() (bool, error) {
		db, err := store.Open(rec.db, store.Options{ReadOnly: true})
		if err != nil {
			return false, nil
		}
		defer db.Close()
		objs, err = db.Objects(store.ObjectFilter{})
		if err != nil {
			return false, err
		}
		return !slices.ContainsFunc(objs, func(o store.Object) bool { return o.UID == string(gone.UID) }), nil
	})
	// Pruned at a flush: every second while records come, every 5 s
	// (store.AliveEvery) while the namespace is quiet.
	if d := time.Since(deleted); d > 4*time.Second+store.AliveEvery+2*time.Second {
		t.Errorf("pruned %s after the deletion, want within --retain 4s and a quiet flush's %s", d, store.AliveEvery)
	}
	kinds := map[string][]string{}
	for _, o := range objs {
		kinds[o.Kind] = append(kinds[o.Kind], o.Name)
		for _, ref := range o.Refs {
			if ref == string(gone.UID) {
				t.Errorf("%s %s, about the pruned pod, is still in the trace", o.Kind, o.Name)
			}
		}
		if o.Name == "gone-pull" {
			t.Errorf("the pruned pod's Secret is still in the trace")
		}
	}
	for kind, n := range map[string]int{"Deployment": 1, "ReplicaSet": 1, "Pod": 3, "Namespace": 1} {
		if len(kinds[kind]) != n {
			t.Errorf("%d %s in the trace (%v), want %d", len(kinds[kind]), kind, kinds[kind], n)
		}
	}
	if len(kinds["Event"]) == 0 {
		t.Errorf("no Event left in the trace: those about the live pods and the ReplicaSet stay")
	}
	rec.stop(t)
	tdb, err := store.Open(rec.db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	prunes, err := tdb.Prunes()
	tdb.Close()
	if err != nil || len(prunes) != 1 || prunes[0].Pods != 1 || prunes[0].Reason != store.PruneAge {
		t.Fatalf("Prunes = %+v, %v; want one, of one pod, by age", prunes, err)
	}
	t.Logf("FIGURE retention: the pod's deletion recorded at %s, pruned at %s (%s later)", prunes[0].NewestGone.Format("15:04:05.000"),
		prunes[0].First.Format("15:04:05.000"), prunes[0].First.Sub(prunes[0].NewestGone).Round(10*time.Millisecond))
	if !strings.Contains(rec.stderr.String(), "pruned 1 pod gone longer than 4s") {
		t.Errorf("record's summary does not say what it pruned:\n%s", rec.stderr.String())
	}

	// The live pod is whole: every revision a watch of it would have seen.
	lc := lifecycle(t, rec.db, ns, "stays")
	if lc.UID != string(stays.UID) || lc.Outcome != "Running" || len(lc.Steps) < 3 {
		t.Errorf("live pod: uid %s, outcome %q, %d revisions; want it whole and Running", lc.UID, lc.Outcome, len(lc.Steps))
	}
	out := podtrace(t, "report", "--db", rec.db, "--color", "never")
	if !strings.Contains(out, "Pruned:  by retention: 1 pod gone before ") || !strings.Contains(out, "(--retain 4s)") {
		t.Errorf("report does not say what was pruned:\n%s", out)
	}
	for _, name := range append(web, "stays") {
		if !strings.Contains(out, name) {
			t.Errorf("report lacks the live pod %s", name)
		}
	}
	var stdout, stderr bytes.Buffer
	err = runPodtrace(&stdout, &stderr, "diff", "gone", "-n", ns, "--db", rec.db)
	if err == nil || !strings.Contains(err.Error(), "retention pruned 1 pod gone before") {
		t.Errorf("diff of the pruned pod: %v; want it to say retention may have pruned it", err)
	}
}
