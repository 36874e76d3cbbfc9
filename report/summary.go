package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/podtrace/podtrace/explain"
)

// Text writes the summary of a whole trace: the recording, every finding
// most severe first, the comparisons of the cohorts that ended differently
// (and of the pair asked for), and every pod with its phase path and
// counts.
func Text(w io.Writer, tr *Trace, opts TextOptions) error {
	t := newTextWriter(w, opts)
	start, end := tr.Window()
	// The trace, its window and its cluster on one line; a line a session
	// when there are several.
	head := t.paint(cBold, "Trace") + " " + tr.File
	if !start.IsZero() {
		head += ": " + t.span(start, end) + " (" + end.Sub(start).Round(1e9).String() + ")"
	}
	if len(tr.Sessions) == 1 {
		s := tr.Sessions[0]
		head += ", from " + s.Server + " (server " + s.ServerVersion + ")"
		if s.Stopped.IsZero() {
			head += ", " + SessionEnd(s, tr.Live, t.stamp)
		}
	}
	t.printf("%s\n", head)
	if len(tr.Sessions) > 1 {
		for _, s := range tr.Sessions {
			stop := SessionEnd(s, tr.Live, t.stamp)
			t.printf("Session %d: %s (server %s), %s to %s\n", s.ID, s.Server, s.ServerVersion, t.stamp(s.Started), stop)
		}
	}
	for _, l := range PruneLines(tr.Pruned, t.stamp) {
		t.printf("Pruned:  %s\n", l)
	}
	for _, l := range GapLines(tr.Gaps, tr.Sessions, t.stamp) {
		t.printf("Gaps:    %s\n", l)
	}
	t.printf("Pods:    %d (%s)\n", len(tr.Pods), outcomeLine(tr.Outcomes()))
	t.printf("Redaction: %s\n", tr.Redaction())

	fs := tr.Findings()
	if len(fs) > 0 {
		t.printf("\n%s\n", t.paint(cBold, "Findings"))
		info := map[string]int{} // folded info findings by id
		var infoIDs []string
		for _, f := range fs {
			if f.Severity == explain.Info && !t.opts.ShowInfo {
				if info[f.ID] == 0 {
					infoIDs = append(infoIDs, f.ID)
				}
				info[f.ID]++
				continue
			}
			t.printf("  %s %s/%s %s: %s\n", t.paint(severityColor(f.Severity), strings.ToUpper(f.Severity.String())),
				f.Pod.Namespace, f.Pod.Name, f.ID, f.Headline)
		}
		if len(infoIDs) > 0 {
			var parts []string
			for _, id := range infoIDs {
				parts = append(parts, fmt.Sprintf("%s: %s", id, Plural(info[id], "pod")))
			}
			t.printf("  %s %s %s\n", t.paint(severityColor(explain.Info), "INFO"), strings.Join(parts, ", "),
				t.paint(cDim, "(folded: --show-info lists them)"))
		}
	} else {
		t.printf("\n%s\n", t.paint(cGreen, "No findings: nothing abnormal in the recorded pods."))
	}
	t.textCompare(newCompareSection(tr))
	t.printf("\n%s\n", t.paint(cBold, "Pods"))
	if t.done() != nil {
		return t.err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAMESPACE\tNAME\tOUTCOME\tREVISIONS\tEVENTS\tFINDINGS\tPHASES")
	for _, p := range tr.Pods {
		var ids []string
		for _, f := range p.Findings {
			ids = append(ids, f.ID)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%s\t%s\n", p.Namespace, p.Name, p.Outcome, len(p.Steps), len(p.Events), orDash(strings.Join(ids, ",")), PhasePath(p))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func outcomeLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
