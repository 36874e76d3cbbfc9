package report

import (
	"sort"
	"strings"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// Trace is what a report covers: the recording sessions and the replayed
// pods.
type Trace struct {
	// File is the trace file's name, for the reader's benefit.
	File     string            `json:"file"`
	Sessions []store.Session   `json:"sessions"`
	Pods     []*diff.Lifecycle `json:"pods"`
	// Generated is when the report was made.
	Generated time.Time `json:"generated"`
	// Unredacted says the values were not redacted (--no-redact).
	Unredacted bool `json:"unredacted,omitempty"`
	// Prepared holds the page data of pods that PrepareHTML encoded
	// ahead of HTML (by the workers that replayed them); HTML encodes the
	// others. Nil for all but HTML.
	Prepared map[*diff.Lifecycle]*HTMLPod `json:"-"`
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
	return "on; redacted " + diff.Summary(total) + " (--no-redact shows them)"
}

// Window returns the recording window: the first session's start and the
// last one's stop (or the end of the latest pod recording while recording).
func (t *Trace) Window() (start, end time.Time) {
	for i, s := range t.Sessions {
		if i == 0 || s.Started.Before(start) {
			start = s.Started
		}
		if s.Stopped.After(end) {
			end = s.Stopped
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
	Pod *diff.Lifecycle
	diff.Finding
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
func PhasePath(lc *diff.Lifecycle) string {
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
func SortPods(pods []*diff.Lifecycle) {
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
