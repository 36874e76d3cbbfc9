package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/podtrace/podtrace/compare"
)

// Compare writes the comparison of two pods as text: who is compared, the
// verdict, the phases aligned, the decisive differences in full, the rest
// one line each, and what was ignored.
func Compare(w io.Writer, r *compare.Result, opts TextOptions) error {
	t := newTextWriter(w, opts)
	t.printf("%s\n", t.paint(cBold, "Compare "+podLine(r.A)))
	t.printf("%s\n", t.paint(cBold, "   with "+podLine(r.B)))
	t.printf("\n%s %s\n", t.paint(cBold, "Verdict:"), r.Verdict)

	t.printf("\n%s\n", t.paint(cBold, "Phases (time since created)"))
	t.printf("  %-26s %-12s %s\n", "", "A", "B")
	for _, p := range r.Phases {
		t.printf("  %-26s %-12s %s\n", p.Name, phaseCell(p.A), phaseCell(p.B))
	}

	t.printf("\n%s\n", t.paint(cBold, fmt.Sprintf("Decisive differences (%d)", len(r.Decisive))))
	if len(r.Decisive) == 0 {
		t.printf("  none\n")
	}
	for i, d := range r.Decisive {
		t.printf("  %d. %s\n", i+1, t.paint(cYellow, d.Subject))
		t.printf("     A: %s\n", d.A)
		t.printf("     B: %s\n", d.B)
		if d.Why != "" {
			t.printf("     %s\n", t.paint(cDim, "why: "+d.Why))
		}
	}
	t.printf("\n%s\n", t.paint(cBold, fmt.Sprintf("Other differences (%d)", len(r.Other))))
	for _, d := range r.Other {
		where := ""
		if d.Phase != "" {
			where = "[" + d.Phase + "] "
		}
		t.printf("  %s%s: A %s; B %s\n", where, d.Subject, shorten(d.A), shorten(d.B))
	}
	t.printf("\nIgnored: %s\n", ignoredText(r))
	return t.done()
}

// CompareMarkdown writes the comparison as Markdown, the rest folded in a
// details element.
func CompareMarkdown(w io.Writer, r *compare.Result, opts TextOptions) error {
	t := &textWriter{w: w, opts: TextOptions{Location: opts.Location}}
	t.printf("## Compare %s with %s\n\n", mdCode(r.A.Namespace+"/"+r.A.Name), mdCode(r.B.Namespace+"/"+r.B.Name))
	t.printf("| | pod | uid | outcome |\n|---|---|---|---|\n")
	for _, p := range []compare.Pod{r.A, r.B} {
		t.printf("| %s | %s | %s | %s |\n", p.Label, mdCode(p.Namespace+"/"+p.Name), mdCode(p.UID), mdText(outcomeOf(p)))
	}
	t.printf("\n**Verdict:** %s\n\n", mdText(r.Verdict))
	t.printf("### Phases (time since created)\n\n| phase | A | B |\n|---|---|---|\n")
	for _, p := range r.Phases {
		t.printf("| %s | %s | %s |\n", mdText(p.Name), mdText(phaseCell(p.A)), mdText(phaseCell(p.B)))
	}
	t.printf("\n### Decisive differences (%d)\n\n", len(r.Decisive))
	if len(r.Decisive) == 0 {
		t.printf("None.\n")
	}
	for i, d := range r.Decisive {
		t.printf("%d. **%s**\n   - A: %s\n   - B: %s\n", i+1, mdText(d.Subject), mdText(d.A), mdText(d.B))
		if d.Why != "" {
			t.printf("   - why: %s\n", mdText(d.Why))
		}
	}
	t.printf("\n<details><summary>Other differences (%d)</summary>\n\n", len(r.Other))
	if len(r.Other) > 0 {
		t.printf("| phase | what | A | B |\n|---|---|---|---|\n")
		for _, d := range r.Other {
			t.printf("| %s | %s | %s | %s |\n", mdText(d.Phase), mdText(d.Subject), mdText(shorten(d.A)), mdText(shorten(d.B)))
		}
	}
	t.printf("\n</details>\n\nIgnored: %s\n", mdText(ignoredText(r)))
	return t.err
}

func podLine(p compare.Pod) string {
	uid := p.UID
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return fmt.Sprintf("%s %s/%s (uid %s): %s", p.Label, p.Namespace, p.Name, uid, outcomeOf(p))
}

func outcomeOf(p compare.Pod) string {
	if p.Outcome == "Terminating" && p.Terminating > 0 {
		return "Terminating for " + p.Terminating.String()
	}
	return p.Outcome
}

func phaseCell(p *compare.PhaseAt) string {
	if p == nil {
		return "-"
	}
	d := time.Duration(p.After)
	if d < time.Minute {
		// Most of a job's life is within seconds: a tenth tells them apart.
		return "+" + d.Round(100*time.Millisecond).String()
	}
	return "+" + p.After.String()
}

// ignoredText says how many differences were ignored, and of what kinds.
func ignoredText(r *compare.Result) string {
	if r.Ignored == 0 {
		return "0 differences in names, UIDs, IPs, timestamps and the like"
	}
	kinds := make([]string, 0, len(r.IgnoredBy))
	for k := range r.IgnoredBy {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.IgnoredBy[kinds[i]] != r.IgnoredBy[kinds[j]] {
			return r.IgnoredBy[kinds[i]] > r.IgnoredBy[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.IgnoredBy[k]))
	}
	return fmt.Sprintf("%d differences in what always differs (%s)", r.Ignored, strings.Join(parts, ", "))
}

// Cohort writes a cohort as text: its groups, then each comparison of a
// typical member with one of the group that ended best.
func Cohort(w io.Writer, c *compare.Cohort, opts TextOptions) error {
	t := newTextWriter(w, opts)
	n := 0
	for _, g := range c.Groups {
		n += len(g.Members)
	}
	t.printf("%s\n", t.paint(cBold, fmt.Sprintf("Cohort %s: %d pods, %d ways of ending", c.Selector, n, len(c.Groups))))
	for i, g := range c.Groups {
		t.printf("  %d. %s: %d pods, typical %s/%s\n", i+1, g.Ending, len(g.Members), g.Typical.Namespace, g.Typical.Name)
		var names []string
		for _, m := range g.Members {
			names = append(names, m.Namespace+"/"+m.Name)
		}
		t.printf("     %s\n", strings.Join(names, ", "))
	}
	if t.done() != nil {
		return t.err
	}
	for _, r := range c.Comparisons {
		t.printf("\n")
		if err := Compare(w, r, opts); err != nil {
			return err
		}
	}
	return t.err
}

// CohortMarkdown writes a cohort as Markdown.
func CohortMarkdown(w io.Writer, c *compare.Cohort, opts TextOptions) error {
	t := &textWriter{w: w}
	t.printf("## Cohort %s\n\n| group | ending | pods | typical |\n|---|---|---|---|\n", mdCode(c.Selector))
	for i, g := range c.Groups {
		t.printf("| %d | %s | %d | %s |\n", i+1, mdText(g.Ending), len(g.Members), mdCode(g.Typical.Namespace+"/"+g.Typical.Name))
	}
	if t.err != nil {
		return t.err
	}
	for _, r := range c.Comparisons {
		t.printf("\n")
		if err := CompareMarkdown(w, r, opts); err != nil {
			return err
		}
	}
	return t.err
}

// compareSection is what a report shows of its comparisons: the trace's
// divided cohorts and the pair asked for, each comparison by its typical
// pods' names.
type compareSection struct {
	file  string
	items []compareItem
}

// compareItem is a cohort of the trace, or the pair asked for (cohort
// nil).
type compareItem struct {
	cohort *compare.Cohort
	// results are the comparisons shown: the cohort's, or the pair.
	results []*compare.Result
}

func newCompareSection(tr *Trace) *compareSection {
	if len(tr.Cohorts) == 0 && tr.Pair == nil {
		return nil
	}
	s := &compareSection{file: tr.File}
	for _, c := range tr.Cohorts {
		s.items = append(s.items, compareItem{cohort: c, results: c.Comparisons})
	}
	if tr.Pair != nil {
		s.items = append(s.items, compareItem{results: []*compare.Result{tr.Pair}})
	}
	return s
}

// title names the item: the cohort's owner with its size and ways of
// ending, or the pair.
func (it compareItem) title() string {
	if it.cohort == nil {
		r := it.results[0]
		return fmt.Sprintf("%s/%s beside %s/%s, as asked (--compare)", r.A.Namespace, r.A.Name, r.B.Namespace, r.B.Name)
	}
	c := it.cohort
	return fmt.Sprintf("%s: %s, %s", c.Name(), Plural(c.Size(), "pod"), Plural(len(c.Groups), "way")+" of ending")
}

// command is the podtrace compare that shows a comparison in full.
func (s *compareSection) command(r *compare.Result) string {
	cmd := "podtrace compare " + r.A.Namespace + "/" + r.A.Name + " " + r.B.Namespace + "/" + r.B.Name
	if s.file != "" {
		cmd += " --db " + s.file
	}
	return cmd
}

// notCompared is the comparison a cohort left uncompared would show: its
// best group's typical member with its worst's.
func notCompared(c *compare.Cohort) *compare.Result {
	first, last := c.Groups[0].Typical, c.Groups[len(c.Groups)-1].Typical
	first.Label, last.Label = "A", "B"
	return &compare.Result{A: first, B: last}
}

// compareIntro says what the section holds.
const compareIntro = "pods that share an owner (a controller, or a generateName) but ended differently: " +
	"the typical pod of each way of ending (B) beside that of the way that ended best (A)"

// textCompare writes the report's Compare section as text: per cohort,
// its groups, and per comparison the pods, the verdict and the first
// decisive difference, with the command that shows the rest.
func (t *textWriter) textCompare(s *compareSection) {
	if s == nil {
		return
	}
	t.printf("\n%s\n", t.paint(cBold, "Compare"))
	if len(s.items) > 0 && s.items[0].cohort != nil {
		t.printf("  %s\n", t.paint(cDim, compareIntro))
	}
	for _, it := range s.items {
		t.printf("  %s\n", t.paint(cBold, it.title()))
		if it.cohort != nil {
			t.printf("    %s\n", it.cohort.String())
			if len(it.results) == 0 {
				t.printf("    not compared here (too many cohorts): %s\n", s.command(notCompared(it.cohort)))
			}
		}
		for _, r := range it.results {
			t.printf("    %s beside %s\n", podLine(r.B), podLine(r.A))
			t.printf("    %s %s\n", t.paint(cBold, "Verdict:"), r.Verdict)
			if first, ok := firstDecisive(r); ok {
				t.printf("    First decisive difference: %s\n", t.paint(cYellow, first))
			}
			t.printf("    %s\n", t.paint(cDim, differencesLine(r)+"; in full: "+s.command(r)))
		}
	}
}

// mdCompare writes the report's Compare section as Markdown, as
// textCompare does.
func (t *textWriter) mdCompare(s *compareSection) {
	if s == nil {
		return
	}
	t.printf("\n### Compare\n\n")
	if len(s.items) > 0 && s.items[0].cohort != nil {
		t.printf("%s.\n", mdText(strings.ToUpper(compareIntro[:1])+compareIntro[1:]))
	}
	for _, it := range s.items {
		t.printf("\n**%s**", mdText(it.title()))
		if it.cohort != nil {
			t.printf(": %s", mdText(it.cohort.String()))
		}
		t.printf("\n\n")
		if it.cohort != nil && len(it.results) == 0 {
			t.printf("- not compared here (too many cohorts): %s\n", mdCode(s.command(notCompared(it.cohort))))
		}
		for _, r := range it.results {
			t.printf("- B %s (%s) beside A %s (%s)\n", mdCode(r.B.Namespace+"/"+r.B.Name), mdText(outcomeOf(r.B)),
				mdCode(r.A.Namespace+"/"+r.A.Name), mdText(outcomeOf(r.A)))
			t.printf("- **Verdict:** %s\n", mdText(r.Verdict))
			if first, ok := firstDecisive(r); ok {
				t.printf("- First decisive difference: %s\n", mdText(first))
			}
			t.printf("- %s; in full: %s\n", differencesLine(r), mdCode(s.command(r)))
		}
	}
}

// firstDecisive is the first decisive difference, without its why; not
// ok when there is none or the verdict already names it.
func firstDecisive(r *compare.Result) (string, bool) {
	if len(r.Decisive) == 0 || strings.Contains(r.Verdict, r.Decisive[0].Subject) {
		return "", false
	}
	d := r.Decisive[0]
	return fmt.Sprintf("%s: A %s; B %s", d.Subject, d.A, d.B), true
}

// differencesLine counts the differences: "5 differences, 2 decisive;
// 19 ignored as noise".
func differencesLine(r *compare.Result) string {
	return fmt.Sprintf("%s, %d decisive; %d ignored as noise", Plural(len(r.Decisive)+len(r.Other), "difference"), len(r.Decisive), r.Ignored)
}
