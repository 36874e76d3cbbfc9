package explain

// Warning events whose reason Kubernetes documents and no mechanism's rule
// reads (event-warning): the vocabulary says what each means and what to
// check (Reason.Means, Reason.Check).

import (
	"fmt"
	"slices"

	"github.com/podtrace/podtrace/diff"
)

// eventWarnings gives a finding to each reason of the pod's Warning events
// that the vocabulary maps to event-warning, unless every occurrence is
// benign in its context (eventBenign).
func eventWarnings(lc *diff.Lifecycle, in diff.Input, d *diagnosis) []Finding {
	var out []Finding
	byReason := map[string]int{}
	for _, g := range warningGroups(lc) {
		v, ok := VocabularyOf(WhereEvent, g.reason)
		if !ok || !slices.Contains(v.Findings, "event-warning") {
			continue
		}
		if !slices.ContainsFunc(g.occurrences, func(e *diff.Event) bool { return !eventBenign(lc, d.unwell, e) }) {
			continue
		}
		i, seen := byReason[g.reason]
		if !seen {
			i = len(out)
			byReason[g.reason] = i
			out = append(out, Finding{ID: "event-warning", Severity: Warning,
				Headline: fmt.Sprintf("%s (%s): %s", v.Means, g.reason, shorten(g.message, 160))})
			check := "check " + v.Check
			if lc.Node != "" {
				check += " (node " + lc.Node + ")"
			}
			out[i].Next = []string{check}
		}
		out[i].Evidence = append(out[i].Evidence, groupEvidence(g)...)
	}
	return out
}
