package e2e

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
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
// Two more jobs of one generateName (as the runner names its pods), one
// deleted with Foreground, one with Background, are the trace's one cohort
// that ended two ways: report --html compares them by itself, and the
// label comparison when asked (--compare).
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
	job := func(ns, name string) digester.JobOptions { return digester.JobOptions{Namespace: ns, Name: name} }
	const generated = "runner-gen-"
	gen := digester.JobOptions{Namespace: on, GenerateName: generated}
	runAndDelete(t, client, job(on, "runner-job-1"), fg)  // sticks
	runAndDelete(t, client, job(off, "runner-job-1"), fg) // label off: gone
	runAndDelete(t, client, job(on, "runner-job-2"), bg)  // Background: gone
	runAndDelete(t, client, job(off, "runner-job-3"), bg) // healthy
	runAndDelete(t, client, job(off, "runner-job-4"), bg) // healthy, the same
	runAndDelete(t, client, job(on, "runner-job-5"), fg)  // sticks, as runner-job-1
	genStuck := runAndDelete(t, client, gen, fg)          // sticks
	genGone := runAndDelete(t, client, gen, bg)           // gone
	time.Sleep(20 * time.Second)                          // several of the garbage collector's retries
	ctx := context.Background()
	for _, job := range []string{"runner-job-1", "runner-job-5", genStuck} {
		if p, err := client.CoreV1().Pods(on).Get(ctx, job, metav1.GetOptions{}); err != nil || len(p.Finalizers) == 0 {
			t.Fatalf("ci/%s is not stuck on its finalizer: the case did not reproduce (%v)", job, err)
		}
	}
	for _, p := range [][2]string{{off, "runner-job-1"}, {on, "runner-job-2"}, {off, "runner-job-3"}, {off, "runner-job-4"}, {on, genGone}} {
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
	t.Run("report", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "report.html")
		podtrace(t, "report", "--db", rec.db, "--html", "-o", file, "--compare", off+"/runner-job-1,"+on+"/runner-job-1")
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		page := html.UnescapeString(string(raw))
		if dir := os.Getenv("PODTRACE_ARTIFACTS"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, "e2e-digester-report.html"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The cohort, found by report itself: the one that ended two ways.
		cohort := section(t, page, "<h3>generateName "+on+"/"+generated+": 2 pods, 2 ways of ending</h3>", "</article>")
		if !strings.Contains(cohort, `<ol class="cmp-decisive">`+"\n<li><strong>deletion propagation</strong>") {
			t.Errorf("the report's comparison of the cohort does not name the deletion propagation first:\n%s", cohort)
		}
		words := tags.ReplaceAllString(cohort, "")
		for _, want := range []string{
			"Deleted: 1 pod, typical " + on + "/" + genGone,
			"Terminating, held by finalizer foregroundDeletion: 1 pod, typical " + on + "/" + genStuck,
			"Verdict: B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
			"B's finalizer removal was denied",
			"by webhook " + digester.WebhookName,
			"Timelines, aligned by phase",
			"Ignored: ",
		} {
			if !strings.Contains(words, want) {
				t.Errorf("the report's comparison of the cohort lacks %q:\n%s", want, cohort)
			}
		}
		if strings.Contains(words, "dependent Secret") {
			t.Errorf("the pods' Secrets, named from the generateName, differ in more than noise:\n%s", cohort)
		}
		// The pair asked for: the label on vs off.
		pair := tags.ReplaceAllString(section(t, page, "<h3>"+off+"/runner-job-1 beside "+on+"/runner-job-1, as asked (--compare)</h3>", "</article>"), "")
		for _, want := range []string{"B's finalizer removal was denied", "which does not match A's namespace", "namespace label " + digester.NamespaceLabel} {
			if !strings.Contains(pair, want) {
				t.Errorf("the report's comparison of the pair lacks %q:\n%s", want, pair)
			}
		}
		if n := strings.Count(page, `<article class="cohort">`); n != 2 {
			t.Errorf("%d comparisons in the report, want the cohort's and the pair's", n)
		}
		if strings.Contains(page, "<link") || strings.Contains(page, " src=") {
			t.Errorf("the report loads something")
		}
		text := podtrace(t, "report", "--db", rec.db, "--color", "never")
		t.Logf("podtrace report, its Compare section:\n%s", section(t, text, "\nCompare\n", "\nPods\n"))
		for _, want := range []string{"generateName " + on + "/" + generated + ": 2 pods, 2 ways of ending", "Verdict: B got foregroundDeletion because its deletion asked for Foreground propagation"} {
			if !strings.Contains(text, want) {
				t.Errorf("the text report lacks %q", want)
			}
		}
	})
}

// tags matches an HTML tag, to read a page's text.
var tags = regexp.MustCompile(`<[^>]*>`)

// section returns the part of s from open to close, or fails.
func section(t *testing.T, s, open, close string) string {
	t.Helper()
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", open, s)
	}
	s = s[i:]
	if j := strings.Index(s, close); j >= 0 {
		s = s[:j]
	}
	return s
}

// runAndDelete runs the runner's job, waits for it to succeed and deletes
// it with the propagation given. It returns the pod's name.
func runAndDelete(t *testing.T, client kubernetes.Interface, opts digester.JobOptions, prop metav1.DeletionPropagation) string {
	t.Helper()
	ctx := context.Background()
	pod, err := digester.RunJob(ctx, client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ns, job := pod.Namespace, pod.Name
	waitFor(t, ns+"/"+job+" Succeeded", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	if err := digester.DeleteJob(ctx, client, pod, prop); err != nil {
		t.Fatal(err)
	}
	return job
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
