package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// cohortGenerateName is the generateName of the cohort fixture's runner
// pods.
const cohortGenerateName = "runner-x7k2p-project-42-concurrent-1-"

// cohortTrace is the audit fixture with two more runner pods of one
// generateName: one deleted with Foreground propagation and stuck, its
// finalizer removal denied by the digester webhook; one deleted with
// Background and gone. They are the trace's one cohort that ended two
// ways, compared as podtrace report compares it (Divided, then
// CompareTypical).
func cohortTrace(tb testing.TB) *Trace {
	tb.Helper()
	tr := auditTrace(tb)
	c := &clock{now: fixtureStart.Add(20 * time.Second), seq: 500}
	stuck := runnerRecords(tb, c, runner{name: cohortGenerateName + "q8w2e", uid: "6b2d1f0e-3c4a-4e8b-9f1d-7a6c5b4e3d21", generateName: cohortGenerateName})
	stuck.runnerAudit(3)
	c.now = fixtureStart.Add(30 * time.Second)
	gone := runnerRecords(tb, c, runner{name: cohortGenerateName + "m2p9d", uid: "0c7e4a2b-5d1f-4b3a-8e6c-9f2a1d0b7c54", generateName: cohortGenerateName, background: true})
	gone.runnerAudit(0)
	gone.in.End = stuck.in.End
	sides := map[string]compare.Side{}
	for _, s := range []*story{stuck, gone} {
		lc := s.replay()
		tr.Pods = append(tr.Pods, lc)
		sides[lc.UID] = s.side(lc)
	}
	SortPods(tr.Pods)
	var ms []compare.Member
	for _, p := range tr.Pods {
		ms = append(ms, compare.MemberOf(p))
	}
	tr.Cohorts = compare.Divided(ms)
	for _, co := range tr.Cohorts {
		err := co.CompareTypical(func(p compare.Pod) (compare.Side, error) {
			s, ok := sides[p.UID]
			if !ok {
				return s, fmt.Errorf("no side for %s/%s", p.Namespace, p.Name)
			}
			return s, nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return tr
}

// side is what compare reads of the story's pod: its lifecycle, the
// webhooks and its namespace as recorded.
func (s *story) side(lc *explain.Lifecycle) compare.Side {
	var ns []store.Record
	for _, recs := range s.in.Related {
		if len(recs) > 0 && recs[0].Kind == "Namespace" {
			ns = recs
		}
	}
	return compare.Side{Lifecycle: lc, Webhooks: s.in.Webhooks, Namespace: ns}
}

// renderAll renders the trace as text, markdown and HTML.
func renderAll(t *testing.T, tr *Trace) (text, md, page string) {
	t.Helper()
	var tb, mb bytes.Buffer
	if err := Text(&tb, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&mb, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return tb.String(), mb.String(), renderHTML(t, tr, HTMLOptions{})
}

// section returns the part of s from the line open to the line before
// close (or the end).
func section(t *testing.T, s, open, close string) string {
	t.Helper()
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", open, s)
	}
	rest := s[i:]
	if j := strings.Index(rest[len(open):], close); j >= 0 {
		rest = rest[:len(open)+j]
	}
	return rest
}

// TestCompareSectionGolden renders the cohort fixture's Compare section as
// text, markdown and HTML.
func TestCompareSectionGolden(t *testing.T) {
	tr := cohortTrace(t)
	if len(tr.Cohorts) != 1 || len(tr.Cohorts[0].Comparisons) != 1 {
		t.Fatalf("cohorts %+v, want the runner pods' one, compared once", tr.Cohorts)
	}
	text, md, page := renderAll(t, tr)
	golden(t, "report-compare.txt.golden", section(t, text, "\nCompare\n", "\nPods\n"))
	golden(t, "report-compare.md.golden", section(t, md, "\n### Compare\n", "\n### Pods\n"))
	golden(t, "report-compare.html.golden", section(t, page, `<section id="compare"`, `<section id="pods"`))
	if !strings.Contains(page, `<dt>Compare</dt><dd><a href="#compare">1 cohort of pods that ended differently</a></dd>`) {
		t.Errorf("the overview does not point to the Compare section")
	}
}

// TestCompareSectionNamesTheCause: the section says, in every format,
// what made the runner's pod stick: the Foreground propagation, the
// finalizer it brought, and the webhook that denied its removal.
func TestCompareSectionNamesTheCause(t *testing.T) {
	tr := cohortTrace(t)
	r := tr.Cohorts[0].Comparisons[0]
	if r.A.Name != cohortGenerateName+"m2p9d" || r.B.Name != cohortGenerateName+"q8w2e" {
		t.Fatalf("compared A %s with B %s, want the gone pod (A) beside the stuck one (B)", r.A.Name, r.B.Name)
	}
	if d := r.Decisive[0]; d.Subject != "deletion propagation" {
		t.Errorf("first decisive difference %q, want the deletion propagation", d.Subject)
	}
	text, md, page := renderAll(t, tr)
	for name, out := range map[string]string{"text": text, "markdown": md, "html": strings.ReplaceAll(page, "&#39;", "'")} {
		for _, want := range []string{
			"B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
			"B's finalizer removal was denied 3 times by webhook " + digesterWebhookName,
			"deletion propagation",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the %s report lacks %q", name, want)
			}
		}
	}
}

// TestCompareSectionOnlyWhenDivided: a trace whose cohorts each ended one
// way has no Compare section, in any format; nor a trace with a pair
// asked for removed.
func TestCompareSectionOnlyWhenDivided(t *testing.T) {
	tr := fixtureTrace(t)
	var ms []compare.Member
	for _, p := range tr.Pods {
		ms = append(ms, compare.MemberOf(p))
	}
	tr.Cohorts = compare.Divided(ms)
	if len(tr.Cohorts) != 0 {
		t.Fatalf("the fixture's pods (each alone in its cohort, or in none) make cohorts %+v", tr.Cohorts)
	}
	text, md, page := renderAll(t, tr)
	if strings.Contains(text, "\nCompare\n") || strings.Contains(md, "### Compare") || strings.Contains(page, `id="compare"`) || strings.Contains(page, `class="cmp-verdict`) {
		t.Errorf("a trace with nothing to compare has a Compare section")
	}
}

// TestCompareSectionPair: the pair asked for is shown, after the cohorts,
// as asked.
func TestCompareSectionPair(t *testing.T) {
	tr := cohortTrace(t)
	tr.Pair = tr.Cohorts[0].Comparisons[0]
	tr.Cohorts = nil
	text, _, page := renderAll(t, tr)
	got := section(t, text, "\nCompare\n", "\nPods\n")
	for _, want := range []string{"beside ci/" + cohortGenerateName + "q8w2e, as asked (--compare)", "Verdict: B got foregroundDeletion"} {
		if !strings.Contains(got, want) {
			t.Errorf("the Compare section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "share an owner") {
		t.Errorf("the pair alone is introduced as cohorts:\n%s", got)
	}
	if !strings.Contains(page, `<a href="#compare">the pair asked for</a>`) {
		t.Errorf("the overview does not point to the pair")
	}
}

// TestCompareSectionNotCompared: a cohort left uncompared is named, with
// the command that compares it.
func TestCompareSectionNotCompared(t *testing.T) {
	tr := cohortTrace(t)
	tr.Cohorts[0].Comparisons = nil
	_, md, _ := renderAll(t, tr)
	want := "not compared here (too many cohorts): `podtrace compare ci/" + cohortGenerateName + "m2p9d ci/" + cohortGenerateName + "q8w2e --db"
	if !strings.Contains(md, want) {
		t.Errorf("the markdown lacks %q:\n%s", want, section(t, md, "\n### Compare\n", "\n### Pods\n"))
	}
}
