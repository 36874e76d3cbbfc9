package report

import (
	"sort"
	"strings"
	"time"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

// Trace is what a report covers: the recording sessions and the replayed
// pods.
type Trace struct {
	// File is the trace file's name, for the reader's benefit.
	File     string               `json:"file"`
	Sessions []store.Session      `json:"sessions"`
	Pods     []*explain.Lifecycle `json:"pods"`
	// Live is the ID of the session a recorder is writing now (a live
	// recorder holds the trace's lease); 0 if none. A session without a
	// stop time that is not Live was interrupted.
	Live uint32 `json:"live,omitempty"`
	// Gaps are the trace's recorded gaps in observation.
	Gaps []store.Gap `json:"gaps,omitempty"`
	// Pruned says what retention removed: the history of pods gone
	// before a time is not in the trace (see PruneLines).
	Pruned []store.Prune `json:"pruned,omitempty"`
	// Generated is when the report was made.
	Generated time.Time `json:"generated"`
	// Unredacted says the values were not redacted (--no-redact).
	Unredacted bool `json:"unredacted,omitempty"`
	// Cohorts are the trace's cohorts whose pods ended in more than one
	// way, one of them badly (compare.Divided), the worst first: those
	// with Comparisons are shown compared, the others named with the
	// command that compares them. Nil for a trace where every cohort ended
	// one way.
	Cohorts []*compare.Cohort `json:"cohorts,omitempty"`
	// Pair is the comparison asked for (report --compare A,B); nil if none.
	Pair *compare.Result `json:"pair,omitempty"`
	// Prepared holds the page data of pods that PrepareHTML encoded
	// ahead of HTML (by the workers that replayed them); HTML encodes the
	// others. Nil for all but HTML.
	Prepared map[*explain.Lifecycle]*HTMLPod `json:"-"`
}

// SessionEnd says when and how session s ended, its times written by
// stamp: its stop or, for a session with none, its last sign of life (where
// it ends for every reader), still recording (live is its ID) or
// interrupted.
func SessionEnd(s store.Session, live uint32, stamp func(time.Time) string) string {
	switch {
	case !s.Stopped.IsZero():
		return stamp(s.Stopped)
	case s.ID == live:
		return stamp(s.End()) + " (still recording: its last flush)"
	case s.Alive.IsZero():
		return stamp(s.End()) + " (interrupted: no stop recorded, no sign of life after its start)"
	}
	return stamp(s.End()) + " (interrupted: no stop recorded; its recorder's last sign of life)"
}

// Redaction says what was redacted in the report, or that nothing was.
func (t *Trace) Redaction() string {
	if t.Unredacted {
		return "OFF (--no-redact): env values, credentials and last-applied configuration are shown as recorded; do not share this report"
	}
	total := map[string]int{}
	for _, p := range t.Pods {
		for k, v := range p.Redacted {
			total[k] += v
		}
	}
	if len(total) == 0 {
		return "on; nothing needed redacting"
	}
	return "on; redacted " + redact.Summary(total) + " (--no-redact shows them)"
}

// Window returns the recording window: the first session's start and the
// last one's stop (or the end of the latest pod recording while recording).
func (t *Trace) Window() (start, end time.Time) {
	for i, s := range t.Sessions {
		if i == 0 || s.Started.Before(start) {
			start = s.Started
		}
		if e := s.End(); e.After(end) {
			end = e
		}
	}
	for _, p := range t.Pods {
		if p.RecordingEnd.After(end) {
			end = p.RecordingEnd
		}
	}
	return start, end
}

// Outcomes counts the pods by outcome.
func (t *Trace) Outcomes() map[string]int {
	out := map[string]int{}
	for _, p := range t.Pods {
		out[p.Outcome]++
	}
	return out
}

// PodFinding is a finding with the pod it is about.
type PodFinding struct {
	Pod *explain.Lifecycle
	explain.Finding
}

// Findings returns every pod's findings, most severe first, then by pod.
func (t *Trace) Findings() []PodFinding {
	var out []PodFinding
	for _, p := range t.Pods {
		for _, f := range p.Findings {
			out = append(out, PodFinding{Pod: p, Finding: f})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

// PhasePath is the pod's phases as one line: "created > scheduled > ...".
func PhasePath(lc *explain.Lifecycle) string {
	names := make([]string, len(lc.Phases))
	for i, p := range lc.Phases {
		names[i] = p.Name
		if p.Name == diff.PhaseStillPresent {
			names[i] = "still present"
		}
	}
	return strings.Join(names, " > ")
}

// SortPods orders pods by namespace, name, then first revision.
func SortPods(pods []*explain.Lifecycle) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Steps[0].Seq < b.Steps[0].Seq
	})
}
