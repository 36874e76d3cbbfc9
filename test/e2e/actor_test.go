package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestActors: the requests that leave no field manager behind. A pod is
// created by server-side apply under the manager "kubectl", with a
// finalizer and a label; a client impersonating "flush-controller"
// removes the finalizer with a JSON patch under its own field manager, and
// another removes the label with a merge patch under the manager
// "relabeler". The API server drops a manager whose field set becomes
// empty, so neither removal leaves an entry: without the audit log both
// are unknown, never "kubectl" (which only lost the fields); with it, the
// request decides, and the impersonation is shown.
func TestActors(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	const ns, name, fin = "actors", "held", "example.com/hold"
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := startRecorder(t, c)

	manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"` + ns + `",` +
		`"labels":{"app":"web","tier":"front"},"finalizers":["` + fin + `"]},` +
		`"spec":{"containers":[{"name":"app","image":"busybox:1.36"}]}}`
	force := true
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.ApplyPatchType, []byte(manifest), metav1.PatchOptions{FieldManager: "kubectl", Force: &force}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod scheduled", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "", err
	})
	time.Sleep(time.Second) // managedFields' times are whole seconds

	cfg := c.RESTConfig()
	cfg.UserAgent = "flush-controller/v1"
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "flush-controller", Groups: []string{"system:masters"}}
	flusher, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	unfinalize := `[{"op":"test","path":"/metadata/finalizers/0","value":"` + fin + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`
	if _, err := flusher.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, []byte(unfinalize), metav1.PatchOptions{FieldManager: "flush-controller"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":null}}}`), metav1.PatchOptions{FieldManager: "relabeler"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // let the watch deliver the last revisions
	rec.stop(t)

	// removal returns the step that removed the field at path (or a path
	// under it) and that change.
	removal := func(t *testing.T, lc *explain.Lifecycle, path string) (diff.Step, diff.Change) {
		t.Helper()
		for _, s := range lc.Steps {
			for _, ch := range s.Changes {
				if ch.Op == diff.OpRemove && strings.HasPrefix(ch.Path, path) {
					return s, ch
				}
			}
		}
		t.Fatalf("no step removes %s; steps %+v", path, lc.Steps)
		return diff.Step{}, diff.Change{}
	}
	t.Run("without the audit log", func(t *testing.T) {
		lc := lifecycle(t, rec.db, ns, name)
		for _, path := range []string{"metadata.finalizers", "metadata.labels[tier]"} {
			step, ch := removal(t, lc, path)
			if ch.Manager == "kubectl" || ch.Basis != diff.BasisUnknown {
				t.Errorf("%s removed by manager %q (%s), want unknown: kubectl only lost the field", path, ch.Manager, ch.Basis)
			}
			for _, a := range step.Actors {
				if a.Basis != diff.BasisUnknown || strings.Contains(a.Who, "kubectl") {
					t.Errorf("%s: actor %+v, want unknown", path, a)
				}
			}
		}
	})
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Run("with the audit log", func(t *testing.T) {
		lc := lifecycle(t, rec.db, ns, name)
		step, ch := removal(t, lc, "metadata.finalizers")
		if len(step.Actors) != 1 || step.Actors[0].Basis != diff.BasisAuditLog || step.Actors[0].User != "flush-controller" ||
			step.Actors[0].Impersonator == "" || !strings.HasPrefix(step.Actors[0].Who, "flush-controller (impersonated by ") {
			t.Errorf("finalizer removal's actors %+v, want flush-controller impersonated, from the audit log", step.Actors)
		}
		if ch.Basis != diff.BasisAuditLog {
			t.Errorf("finalizer removal's basis %q, want audit-log", ch.Basis)
		}
		step, _ = removal(t, lc, "metadata.labels[tier]")
		if len(step.Actors) != 1 || step.Actors[0].Basis != diff.BasisAuditLog || step.Actors[0].UserAgent != "e2e-client" || step.Actors[0].Impersonator != "" {
			t.Errorf("label removal's actors %+v, want the e2e client, from the audit log", step.Actors)
		}
	})
}
