package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// GapLines says, for a "Gaps" heading, where the recording did not observe
// the cluster: one line per cause and kind, with how many times, from the
// first gap's start to the last one's end, and how long in all, its times
// written by stamp: "the watch was restarted and pods listed again, 8
// times, 2026-12-04 21:16:43 UTC to 2026-12-04 21:16:54 UTC (11s
// in all)". A gap left open ends with its session. Each pod's timeline
// shows the gaps it crosses; this is the whole trace's. None for a trace
// without gaps.
func GapLines(gaps []store.Gap, sessions []store.Session, stamp func(time.Time) string) []string {
	ends := map[uint32]time.Time{}
	for _, s := range sessions {
		ends[s.ID] = s.End()
	}
	type key struct {
		cause    store.GapCause
		resource string
	}
	type sum struct {
		n          int
		start, end time.Time
		total      time.Duration
		dropped    int
	}
	var order []key
	sums := map[key]*sum{}
	for _, g := range gaps {
		end := g.End
		if end.IsZero() {
			end = ends[g.Session]
		}
		k := key{g.Cause, g.Resource}
		s := sums[k]
		if s == nil {
			s = &sum{start: g.Start}
			sums[k] = s
			order = append(order, k)
		}
		s.n++
		s.dropped += g.Dropped
		if g.Start.Before(s.start) {
			s.start = g.Start
		}
		if end.After(s.end) {
			s.end = end
		}
		if end.After(g.Start) {
			s.total += end.Sub(g.Start)
		}
	}
	slices.SortStableFunc(order, func(a, b key) int { return sums[a].start.Compare(sums[b].start) })
	var out []string
	for _, k := range order {
		s := sums[k]
		var b strings.Builder
		b.WriteString(diff.GapCauseText(k.cause, k.resource))
		if s.dropped > 0 {
			fmt.Fprintf(&b, " (%s)", countOf(s.dropped, "record"))
		}
		if s.n > 1 {
			fmt.Fprintf(&b, ", %s", countOf(s.n, "time"))
		}
		if s.end.After(s.start) {
			fmt.Fprintf(&b, ", %s to %s (%s in all)", stamp(s.start), stamp(s.end), s.total.Round(time.Second))
		} else {
			fmt.Fprintf(&b, ", from %s", stamp(s.start))
		}
		out = append(out, b.String())
	}
	return out
}
