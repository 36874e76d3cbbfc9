package diff

import (
	"fmt"
	"slices"
	"time"

	"github.com/podtrace/podtrace/store"
)

// Gap is a stretch of the pod's recorded life in which the recorder did not
// observe it: the recorder was not running, the API server did not answer,
// a watch was restarted, or records were lost to a failed write. What
// happened meanwhile is known only from what was seen afterwards; gaps are
// kept out of silences and stuck durations.
type Gap struct {
	Cause    store.GapCause `json:"cause"`
	Start    time.Time      `json:"start"`
	End      time.Time      `json:"end"`
	Resource string         `json:"resource,omitempty"`
	Detail   string         `json:"detail,omitempty"`
}

// Duration is how long the gap lasted.
func (g Gap) Duration() Duration { return Duration(g.End.Sub(g.Start)) }

// Text describes the gap in a few words.
func (g Gap) Text() string {
	what := "nothing observed"
	if g.Resource != "" && g.Resource != "pods" {
		what = g.Resource + " not observed"
	}
	s := fmt.Sprintf("%s for %s: %s", what, g.Duration(), GapCauseText(g.Cause, g.Resource))
	if g.Detail != "" {
		s += " (" + g.Detail + ")"
	}
	return s
}

// GapCauseText says why the recorder did not observe resource ("" for
// its kind, whichever it was): "the watch was restarted and pods listed
// again".
func GapCauseText(cause store.GapCause, resource string) string {
	switch cause {
	case store.GapRecorderDown:
		return "no recorder was running"
	case store.GapAPIServer:
		return "the API server did not answer"
	case store.GapWatch:
		return "the watch was restarted and " + orDefault(resource, "its kind") + " listed again"
	case store.GapWriteFailed:
		return "records were lost: the trace could not be written"
	}
	return string(cause)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// unobserved returns the trace's gaps that affect pods, closed and sorted
// by start: the stored gaps (an open one ends with its session) and, for
// traces written before recorder-down gaps were stored, the time between
// consecutive sessions.
func unobserved(in Input) []Gap {
	ends := map[uint32]time.Time{}
	for _, s := range in.Sessions {
		ends[s.ID] = s.End()
	}
	var out []Gap
	for _, g := range in.Gaps {
		if g.Resource != "" && g.Resource != "pods" {
			continue // another kind's watch: the pod was observed
		}
		end := g.End
		if end.IsZero() {
			end = ends[g.Session]
		}
		if end.After(g.Start) {
			out = append(out, Gap{Cause: g.Cause, Start: g.Start, End: end, Resource: g.Resource, Detail: g.Detail})
		}
	}
	ss := slices.Clone(in.Sessions)
	slices.SortFunc(ss, func(a, b store.Session) int { return a.Started.Compare(b.Started) })
	for i := 1; i < len(ss); i++ {
		start, end := ss[i-1].End(), ss[i].Started
		if !end.After(start) || covered(out, start, end) {
			continue
		}
		out = append(out, Gap{Cause: store.GapRecorderDown, Start: start, End: end})
	}
	slices.SortFunc(out, func(a, b Gap) int { return a.Start.Compare(b.Start) })
	return out
}

// covered reports whether a gap of gaps spans [start, end].
func covered(gaps []Gap, start, end time.Time) bool {
	for _, g := range gaps {
		if !g.Start.After(start) && !g.End.Before(end) {
			return true
		}
	}
	return false
}

// GapsWithin returns the gaps that overlap [from, to].
func GapsWithin(gaps []Gap, from, to time.Time) []Gap {
	var out []Gap
	for _, g := range gaps {
		if g.End.After(from) && g.Start.Before(to) {
			out = append(out, g)
		}
	}
	return out
}

// ObservedFor is how much of [from, to] the recorder observed: its length
// less the parts the gaps cover (overlapping gaps counted once).
func ObservedFor(gaps []Gap, from, to time.Time) time.Duration {
	if !to.After(from) {
		return 0
	}
	total := to.Sub(from)
	cur := from              // the part before cur is accounted for
	for _, g := range gaps { // sorted by start
		s, e := maxTime(g.Start, cur), minTime(g.End, to)
		if e.After(s) {
			total -= e.Sub(s)
			cur = e
		}
	}
	return total
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// UnobservedNote says how much of [from, to] the recorder did not see, for
// a duration measured with observedFor; "" when it saw all of it.
func UnobservedNote(gaps []Gap, from, to time.Time) string {
	missing := to.Sub(from) - ObservedFor(gaps, from, to)
	if missing <= 0 {
		return ""
	}
	return fmt.Sprintf(" (observed; %s more not observed)", Duration(missing))
}

// gaps keeps the gaps of the pod's recorded life, from its first revision
// to its deletion or the end of the recording, and marks the revisions
// first seen after one.
func (lc *Lifecycle) gaps(in Input) {
	all := unobserved(in)
	if len(all) == 0 || len(lc.Steps) == 0 {
		return
	}
	end := lc.RecordingEnd
	if last := lc.Steps[len(lc.Steps)-1]; last.Type == store.Deleted || last.Type == store.DeletedUnknown {
		end = last.Time
	}
	lc.Gaps = GapsWithin(all, lc.Steps[0].Time, end)
	for i := 1; i < len(lc.Steps); i++ {
		prev, step := &lc.Steps[i-1], &lc.Steps[i]
		between := GapsWithin(lc.Gaps, prev.Time, step.Time)
		if len(between) == 0 {
			continue
		}
		// Observation stopped when the first gap began: the pod was as
		// its previous revision says until then, at least.
		from := maxTime(prev.Time, between[0].Start)
		span := fmt.Sprintf("between %s and %s", stamp(from), stamp(step.Time))
		switch {
		case step.Type == store.DeletedUnknown:
			step.Unobserved = "deleted while not observed, " + span
		case len(step.Changes) == 0:
			step.Unobserved = "seen again after a gap in observation, unchanged"
		default:
			step.Unobserved = "changed while not observed, " + span
			// The revision may fold several requests into one: a removal
			// is no longer pinned on the one manager that wrote in it.
			for j := range step.Changes {
				c := &step.Changes[j]
				if c.Op == OpRemove && c.Basis == BasisManagedFields {
					c.Candidates, c.Manager, c.Basis = []string{c.Manager}, "", BasisUnknown
				}
			}
		}
	}
}

// stamp formats t for the notes of a replay, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }
