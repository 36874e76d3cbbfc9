package explain

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
)

// Severity orders findings: the most severe first.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	return [...]string{"info", "warning", "critical"}[s]
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	for v := Info; v <= Critical; v++ {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Finding is one diagnosis about a pod: a stable id, a headline, the evidence
// in the recording that supports it and what to check next.
type Finding struct {
	ID       string     `json:"id"`
	Severity Severity   `json:"severity"`
	Headline string     `json:"headline"`
	Evidence []Evidence `json:"evidence"`
	// Suspects are the admission webhooks that intercept the request the
	// finding is about.
	Suspects []admission.Webhook `json:"suspects,omitempty"`
	Next     []string            `json:"next,omitempty"`
	// Mechanism names how the pod ended, for the ended finding (see
	// ended.go): preemption, eviction-api, scale-down, delete...
	Mechanism string `json:"mechanism,omitempty"`
	// Actor is who used the mechanism, and how that is known.
	Actor *diff.Actor `json:"actor,omitempty"`
}

// Evidence points at what in the recording supports a finding. A
// finding's evidence is in time order (sortEvidence), evidence without a
// time last.
type Evidence struct {
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time,omitempty"`
	Text string    `json:"text"`
}

// sortEvidence puts the evidence of each finding in time order, stably.
// Evidence without a time goes last, in the order the rule gave it: it is
// about the recording as a whole or as it ended (the dependents still
// present, no webhook intercepting, no audit log imported), which comes
// after everything that happened.
func sortEvidence(fs []Finding) {
	for i := range fs {
		sort.SliceStable(fs[i].Evidence, func(a, b int) bool {
			ta, tb := fs[i].Evidence[a].Time, fs[i].Evidence[b].Time
			if ta.IsZero() || tb.IsZero() {
				return !ta.IsZero() && tb.IsZero()
			}
			return ta.Before(tb)
		})
	}
}

// silence is the evidence that nothing happened to the pod after its last
// revision.
func silence(lc *diff.Lifecycle) Evidence {
	lastStep := lc.Steps[len(lc.Steps)-1]
	observed := diff.ObservedFor(lc.Gaps, lastStep.Time, lc.RecordingEnd)
	return Evidence{Seq: lastStep.Seq, Time: lastStep.Time,
		Text: fmt.Sprintf("no revision after this one: silence for %s until the recording ended%s",
			diff.Duration(observed), diff.UnobservedNote(lc.Gaps, lastStep.Time, lc.RecordingEnd))}
}

// gapEvidence lists the gaps in observation since from: the durations of a
// finding count only the time around them.
func gapEvidence(lc *diff.Lifecycle, from time.Time) []Evidence {
	var out []Evidence
	for _, g := range diff.GapsWithin(lc.Gaps, from, lc.RecordingEnd) {
		out = append(out, Evidence{Time: g.Start, Text: g.Text()})
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// eventsLike returns the pod's events with one of the given reasons as
// evidence.
//
// An event repeated with the same message (the kubelet retrying, one event
// object counting up) is cited by its first and last occurrences, as
// groupEvidence does.
func eventsLike(lc *diff.Lifecycle, reasons ...string) []Evidence {
	type key struct{ typ, reason, message string }
	last := map[key]int{}  // the index of each message's last occurrence
	count := map[key]int{} // occurrences of each message
	for i := range lc.Events {
		e := &lc.Events[i]
		if slices.Contains(reasons, e.Reason) {
			k := key{e.Type, e.Reason, e.Message}
			last[k] = i
			count[k]++
		}
	}
	var out []Evidence
	seen := map[key]bool{}
	for i := range lc.Events {
		e := &lc.Events[i]
		k := key{e.Type, e.Reason, e.Message}
		if count[k] == 0 {
			continue
		}
		switch {
		case !seen[k]:
			seen[k] = true
			out = append(out, Evidence{Seq: e.Seq, Time: e.Time, Text: eventText(e)})
		case last[k] == i:
			out = append(out, Evidence{Seq: e.Seq, Time: e.Time, Text: fmt.Sprintf("%s (the last of %d occurrences recorded)", eventText(e), count[k])})
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
