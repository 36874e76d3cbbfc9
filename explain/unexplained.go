package explain

// The last rule: an unwell stretch (Unwell) that no other finding covers
// gets a finding that names the state, how long, and the evidence, and
// says that podtrace does not know the cause (unexplained). Never silence.
// Check verifies the invariant on explain's output.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// overlapSlack widens a stretch when matching evidence to it: events carry
// times to the second.
const overlapSlack = time.Second

// covers reports whether finding f covers the unwell stretch s: it is a
// warning or critical, and its evidence overlaps the stretch (for a
// Warning event, cites one of its occurrences).
func covers(f *Finding, s *Stretch) bool {
	if f.Severity < Warning {
		return false
	}
	if s.State == StateWarningEvent {
		return citesAny(f, s.Events)
	}
	from, to := s.Start.Add(-overlapSlack), s.End.Add(overlapSlack)
	for _, e := range f.Evidence {
		if !e.Time.IsZero() && !e.Time.Before(from) && !e.Time.After(to) {
			return true
		}
	}
	return false
}

// citesAny reports whether f's evidence points at one of the records seqs.
func citesAny(f *Finding, seqs []uint64) bool {
	for _, e := range f.Evidence {
		if e.Seq != 0 && slices.Contains(seqs, e.Seq) {
			return true
		}
	}
	return false
}

// Check verifies the invariant on an explained lifecycle, as Replay
// returns it (its revisions not dropped): every unwell stretch (Unwell) is
// covered by a warning or critical finding whose evidence overlaps it, and
// every Warning event is in some finding's evidence. It returns what does
// not hold, one line each.
func Check(lc *Lifecycle) []string {
	var out []string
	for _, s := range Unwell(lc.Lifecycle) {
		covered := false
		for i := range lc.Findings {
			if covers(&lc.Findings[i], &s) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, fmt.Sprintf("%s/%s: %s from %s to %s (#%d, %s %s) has no warning or critical finding whose evidence overlaps it; findings: %s",
				lc.Namespace, lc.Name, s.What(), stamp(s.Start), stamp(s.End), s.Seq, s.Reason, s.Message, findingIDs(lc.Findings)))
		}
	}
	for _, g := range warningGroups(lc.Lifecycle) {
		var seqs []uint64
		for _, e := range g.occurrences {
			seqs = append(seqs, e.Seq)
		}
		if !slices.ContainsFunc(lc.Findings, func(f Finding) bool { return citesAny(&f, seqs) }) {
			out = append(out, fmt.Sprintf("%s/%s: Warning event %s (%q, x%d) is in no finding's evidence; findings: %s",
				lc.Namespace, lc.Name, g.reason, g.message, len(g.occurrences), findingIDs(lc.Findings)))
		}
	}
	return out
}

func findingIDs(fs []Finding) string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Severity.String()+" "+f.ID)
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// unexplained gives each unwell stretch that the findings of the other
// rules do not cover a finding of its own, and gathers the Warning events
// no finding cites (probe failures during a healthy start-up, say) into an
// info finding.
func unexplained(lc *diff.Lifecycle, in diff.Input, d *diagnosis) []Finding {
	found := d.found
	var out []Finding
	var events []Stretch
	for _, s := range d.unwell {
		if slices.ContainsFunc(found, func(f Finding) bool { return covers(&f, &s) }) {
			continue
		}
		if s.State == StateWarningEvent {
			events = append(events, s)
			continue
		}
		out = append(out, unexplainedFinding(lc, in, s))
	}
	all := append(slices.Clip(found), out...)
	var uncited []warningGroup
	for _, g := range warningGroups(lc) {
		var seqs []uint64
		for _, e := range g.occurrences {
			seqs = append(seqs, e.Seq)
		}
		if !slices.ContainsFunc(all, func(f Finding) bool { return citesAny(&f, seqs) }) {
			uncited = append(uncited, g)
		}
	}
	if len(uncited) == 0 {
		return out
	}
	f := Finding{ID: "unexplained", Severity: Info}
	var reasons []string
	for _, g := range uncited {
		reasons = append(reasons, g.reason)
		f.Evidence = append(f.Evidence, groupEvidence(g)...)
	}
	reasons = slices.Compact(reasons)
	if len(events) > 0 {
		f.Severity = Warning
		f.Headline = fmt.Sprintf("Warning event %s: the cause is not known to podtrace", strings.Join(reasons, ", "))
		f.Evidence = append(f.Evidence, nodeEvidence(lc, in, events[0].Start)...)
		f.Next = []string{"no rule of podtrace reads these events: their reason and message are what is known; kubectl describe pod -n " + lc.Namespace + " " + lc.Name + " shows the latest"}
	} else {
		f.Headline = fmt.Sprintf("Warning event %s, in a healthy stretch of the pod's life (its start-up within what its probes allow, or its deletion)", strings.Join(reasons, ", "))
	}
	return append(out, f)
}

// groupEvidence is a Warning event group as evidence: its first
// occurrence, and its last when there are more.
func groupEvidence(g warningGroup) []Evidence {
	first := g.occurrences[0]
	out := []Evidence{{Seq: first.Seq, Time: first.Time, Text: eventText(first)}}
	if n := len(g.occurrences); n > 1 {
		last := g.occurrences[n-1]
		out = append(out, Evidence{Seq: last.Seq, Time: last.Time, Text: fmt.Sprintf("%s (the last of %d occurrences recorded)", eventText(last), n)})
	}
	return out
}

func eventText(e *diff.Event) string {
	return fmt.Sprintf("event %s %s (x%d): %s", e.Type, e.Reason, max(e.Count, 1), e.Message)
}

// unexplainedFinding names an unwell stretch that no rule explains: the
// state, how long, what Kubernetes said then, and says the cause is not
// known to podtrace.
func unexplainedFinding(lc *diff.Lifecycle, in diff.Input, s Stretch) Finding {
	how := fmt.Sprintf("for %s", diff.Duration(s.Observed))
	switch s.State {
	case StateTerminating:
		how = fmt.Sprintf("for %s (grace period %s)", diff.Duration(s.Observed), diff.Duration(s.Allowed))
	case StateUnscheduled, StatePending, StateNotReady:
		how = fmt.Sprintf("for %s (up to %s is normal)", diff.Duration(s.Observed), diff.Duration(s.Allowed))
	case StateRestarted, StateWarningEvent:
		how = ""
	}
	f := Finding{ID: "unexplained", Severity: Warning,
		Headline: strings.TrimSpace(fmt.Sprintf("%s %s", s.What(), how)) + ": the cause is not known to podtrace"}
	said := s.Reason
	if s.Message != "" {
		said = strings.TrimSpace(said + ": " + s.Message)
	}
	text := s.What()
	if said != "" && said != s.Reason || s.Container == "" && said != "" {
		text += " (" + said + ")"
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Start, Text: "from here: " + text})
	i := seqIndex(lc, s.Seq)
	pod := lc.Pods()[i]
	for _, c := range pod.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Start, Text: fmt.Sprintf("condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)})
		}
	}
	f.Evidence = append(f.Evidence, containerEvidence(lc.Steps[i], pod)...)
	// And as the stretch ended, if the pod changed since: the kubelet's
	// statuses come after the binding that starts a Pending stretch.
	last := i
	for j := i + 1; j < len(lc.Steps) && !lc.Steps[j].Time.After(s.End); j++ {
		last = j
	}
	if last != i {
		end := lc.Pods()[last]
		for _, c := range end.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				f.Evidence = append(f.Evidence, Evidence{Seq: lc.Steps[last].Seq, Time: lc.Steps[last].Time, Text: fmt.Sprintf("condition %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)})
			}
		}
		f.Evidence = append(f.Evidence, containerEvidence(lc.Steps[last], end)...)
	}
	if s.State == StateUnscheduled && s.Reason == "" && !slices.ContainsFunc(lc.Events, func(e diff.Event) bool { return e.Reason == "FailedScheduling" }) {
		f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Start, Text: fmt.Sprintf("no PodScheduled condition and no FailedScheduling event: the scheduler %q had not tried the pod (its queue, or no scheduler of that name runs)", orDefault(pod.Spec.SchedulerName, "default-scheduler"))})
	}
	for _, g := range warningGroups(lc) {
		for _, e := range g.occurrences {
			if !e.Time.Before(s.Start.Add(-overlapSlack)) && !e.Time.After(s.End.Add(overlapSlack)) {
				f.Evidence = append(f.Evidence, Evidence{Seq: e.Seq, Time: e.Time, Text: eventText(e)})
				break
			}
		}
	}
	f.Evidence = append(f.Evidence, nodeEvidence(lc, in, s.Start)...)
	f.Evidence = append(f.Evidence, gapEvidence(lc, s.Start)...)
	if s.Open {
		f.Evidence = append(f.Evidence, Evidence{Time: s.End, Text: "still so when the recording ended"})
	}
	f.Next = []string{"podtrace has no rule that knows this cause: the evidence is what the recording holds; kubectl describe pod -n " + lc.Namespace + " " + lc.Name + " shows the latest state and events"}
	if lc.Node != "" {
		f.Next = append(f.Next, "the kubelet's log on node "+lc.Node+" around "+s.Start.UTC().Format(time.RFC3339)+" says what it was doing")
	}
	return f
}

// containerEvidence says what each container of a revision was doing,
// for those not running and ready.
func containerEvidence(step diff.Step, pod *corev1.Pod) []Evidence {
	var out []Evidence
	for _, l := range statusLists(pod) {
		for _, s := range l.list {
			var text string
			switch {
			case s.State.Waiting != nil:
				text = fmt.Sprintf("waiting: %s %s", s.State.Waiting.Reason, s.State.Waiting.Message)
			case s.State.Terminated != nil:
				t := s.State.Terminated
				text = fmt.Sprintf("terminated: %s, %s", t.Reason, exitText(t))
			case s.State.Running != nil && !s.Ready && !l.init:
				text = "running, not ready"
			case s.State.Running != nil && l.init && !s.Ready:
				text = "running since " + s.State.Running.StartedAt.UTC().Format(time.RFC3339)
			default:
				continue
			}
			if s.RestartCount > 0 {
				text += fmt.Sprintf(" (%d restarts)", s.RestartCount)
			}
			out = append(out, Evidence{Seq: step.Seq, Time: step.Time, Text: strings.TrimSpace(containerNoun(s.Name, l.init) + " " + text)})
		}
	}
	return out
}

// nodeEvidence says how the pod's node was, as last recorded by t: its
// Ready condition and taints, or that it was not recorded.
func nodeEvidence(lc *diff.Lifecycle, in diff.Input, t time.Time) []Evidence {
	if lc.Node == "" {
		return nil
	}
	recs := in.RelatedNamed("Node", lc.Node)
	var rec *store.Record
	for i := range recs {
		if recs[i].Observed.After(t.Add(overlapSlack)) && rec != nil {
			break
		}
		rec = &recs[i]
	}
	if rec == nil {
		return []Evidence{{Text: "node " + lc.Node + " was not recorded: its state is not known"}}
	}
	if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
		return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: "node " + lc.Node + " deleted"}}
	}
	var node corev1.Node
	if json.Unmarshal(rec.Object, &node) != nil {
		return nil
	}
	text := "node " + lc.Node + " as recorded then: "
	ready := "no Ready condition"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = fmt.Sprintf("Ready=%s %s", c.Status, c.Reason)
		}
	}
	text += ready
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady && c.Status == corev1.ConditionTrue {
			text += fmt.Sprintf(", %s=True", c.Type)
		}
	}
	for _, tn := range node.Spec.Taints {
		text += fmt.Sprintf(", taint %s:%s", tn.Key, tn.Effect)
	}
	if node.Spec.Unschedulable {
		text += ", cordoned"
	}
	return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: text}}
}
