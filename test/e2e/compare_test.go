package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestCompareDigesterCase plays the seed's two comparisons on one control
// plane, with the audit log: (1) the runner's job in a namespace the
// digester webhook selects beside the same job in one it does not, both
// deleted with Foreground propagation; (2) the same job in the selected
// namespace deleted with Foreground beside one deleted with Background.
// And two identical healthy jobs, which differ in nothing that matters.
func TestCompareDigesterCase(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	const on, off = "ci", "ci-off"
	startDigester(t, c, client, on)
	if _, err := digester.EnsureNamespace(context.Background(), client, off, false); err != nil {
		t.Fatal(err)
	}
	rec := startRecorder(t, c)
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	fg, bg := metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	runAndDelete(t, client, on, "runner-job-1", fg)  // sticks
	runAndDelete(t, client, off, "runner-job-1", fg) // label off: gone
	runAndDelete(t, client, on, "runner-job-2", bg)  // Background: gone
	runAndDelete(t, client, off, "runner-job-3", bg) // healthy
	runAndDelete(t, client, off, "runner-job-4", bg) // healthy, the same
	runAndDelete(t, client, on, "runner-job-5", fg)  // sticks, as runner-job-1
	time.Sleep(20 * time.Second)                     // several of the garbage collector's retries
	ctx := context.Background()
	for _, job := range []string{"runner-job-1", "runner-job-5"} {
		if p, err := client.CoreV1().Pods(on).Get(ctx, job, metav1.GetOptions{}); err != nil || len(p.Finalizers) == 0 {
			t.Fatalf("ci/%s is not stuck on its finalizer: the case did not reproduce (%v)", job, err)
		}
	}
	for _, p := range [][2]string{{off, "runner-job-1"}, {on, "runner-job-2"}, {off, "runner-job-3"}, {off, "runner-job-4"}} {
		waitFor(t, p[0]+"/"+p[1]+" gone", 30*time.Second, podGone(client, p[0], p[1]))
	}
	time.Sleep(2 * time.Second) // let the watch deliver the deletions
	rec.stop(t)
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)

	t.Run("namespace label on vs off", func(t *testing.T) {
		r, text := compareRun(t, rec.db, off+"/runner-job-1", on+"/runner-job-1")
		first := r.Decisive[0]
		if !strings.Contains(first.Subject, digester.WebhookName) || (first.Kind != "denied" && first.Kind != "webhook") {
			t.Errorf("first decisive difference %+v, want the webhook %s that denied B's UPDATE", first, digester.WebhookName)
		}
		for _, s := range []string{
			"Both deletions asked for Foreground propagation and got foregroundDeletion",
			"B's finalizer removal was denied",
			"by webhook " + digester.WebhookName,
			"which does not match A's namespace",
		} {
			if !strings.Contains(r.Verdict, s) {
				t.Errorf("verdict lacks %q: %s", s, r.Verdict)
			}
		}
		if !hasDecisive(r, "namespace", digester.NamespaceLabel) {
			t.Errorf("the namespace label %s is not a decisive difference:\n%s", digester.NamespaceLabel, text)
		}
		checkIgnored(t, r, text)
	})
	t.Run("Foreground vs Background", func(t *testing.T) {
		r, text := compareRun(t, rec.db, on+"/runner-job-2", on+"/runner-job-1")
		if first := r.Decisive[0]; first.Subject != "deletion propagation" || !strings.HasPrefix(first.A, "Background") || !strings.HasPrefix(first.B, "Foreground") {
			t.Errorf("first decisive difference %+v, want the deletion propagation, Background in A, Foreground in B", first)
		}
		for _, s := range []string{
			"B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
			"B's finalizer removal was denied",
			"by webhook " + digester.WebhookName,
		} {
			if !strings.Contains(r.Verdict, s) {
				t.Errorf("verdict lacks %q: %s", s, r.Verdict)
			}
		}
		checkIgnored(t, r, text)
	})
	t.Run("identical healthy pods", func(t *testing.T) {
		r, text := compareRun(t, rec.db, off+"/runner-job-3", off+"/runner-job-4")
		if r.Verdict != compare.NoDecisiveDifference || len(r.Decisive) != 0 {
			t.Errorf("verdict %q with %d decisive differences, want %q:\n%s", r.Verdict, len(r.Decisive), compare.NoDecisiveDifference, text)
		}
		checkIgnored(t, r, text)
	})
	t.Run("cohort", func(t *testing.T) {
		sel := digester.JobLabel + " in (runner-job-1,runner-job-2,runner-job-5)"
		var c compare.Cohort
		out := podtrace(t, "compare", "--selector", sel, "-n", on, "--db", rec.db, "-o", "json")
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("decode compare --selector -o json: %v\n%s", err, out)
		}
		t.Logf("podtrace compare --selector:\n%s", podtrace(t, "compare", "--selector", sel, "-n", on, "--db", rec.db, "--color", "never"))
		var got []string
		for _, g := range c.Groups {
			var names []string
			for _, m := range g.Members {
				names = append(names, m.Name)
			}
			got = append(got, g.Ending+": "+strings.Join(names, ","))
		}
		want := []string{"Deleted: runner-job-2", "Terminating, held by finalizer foregroundDeletion: runner-job-1,runner-job-5"}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("groups %q, want %q", got, want)
		}
		if len(c.Comparisons) != 1 || c.Comparisons[0].Decisive[0].Subject != "deletion propagation" {
			t.Errorf("the groups' comparison does not name the deletion propagation first: %+v", c.Comparisons)
		}
	})
}

// runAndDelete runs the runner's job in ns, waits for it to succeed and
// deletes it with the propagation given.
func runAndDelete(t *testing.T, client kubernetes.Interface, ns, job string, prop metav1.DeletionPropagation) {
	t.Helper()
	ctx := context.Background()
	pod, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: job})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns+"/"+job+" Succeeded", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	if err := digester.DeleteJob(ctx, client, pod, prop); err != nil {
		t.Fatal(err)
	}
}

// compareRun runs podtrace compare A B as JSON and as text.
func compareRun(t *testing.T, db, a, b string) (*compare.Result, string) {
	t.Helper()
	var r compare.Result
	out := podtrace(t, "compare", a, b, "--db", db, "-o", "json")
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decode compare -o json: %v\n%s", err, out)
	}
	text := podtrace(t, "compare", a, b, "--db", db, "--color", "never")
	t.Logf("podtrace compare %s %s:\n%s", a, b, text)
	if len(r.Decisive) == 0 && r.Verdict != compare.NoDecisiveDifference {
		t.Fatalf("no decisive difference, verdict %q", r.Verdict)
	}
	return &r, text
}

func hasDecisive(r *compare.Result, kind, subject string) bool {
	for _, d := range r.Decisive {
		if d.Kind == kind && strings.Contains(d.Subject, subject) {
			return true
		}
	}
	return false
}

// checkIgnored checks that the noise was counted and the count shown.
func checkIgnored(t *testing.T, r *compare.Result, text string) {
	t.Helper()
	if r.Ignored == 0 || r.IgnoredBy["names"] == 0 {
		t.Errorf("ignored %d (%v), want the names counted", r.Ignored, r.IgnoredBy)
	}
	m := regexp.MustCompile(`Ignored: (\d+) differences`).FindStringSubmatch(text)
	if m == nil || m[1] == "0" {
		t.Errorf("text does not show the ignored count")
	}
}
