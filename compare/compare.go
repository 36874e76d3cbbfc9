package compare

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// Side is one of the pods compared: its lifecycle, and what the trace
// recorded around it that a lifecycle does not carry.
type Side struct {
	Lifecycle *explain.Lifecycle
	// Webhooks are the trace's admission webhook configurations
	// (diff.Input.Webhooks); with them, compare tells whether a webhook
	// that intercepts one pod's requests intercepts the other's.
	Webhooks map[string][]store.Record
	// Namespace holds the revisions of the pod's namespace; nil if not
	// recorded.
	Namespace []store.Record
}

// Result is what Compare finds.
type Result struct {
	A Pod `json:"a"`
	B Pod `json:"b"`
	// Phases are the two lifecycles aligned by phase.
	Phases []AlignedPhase `json:"phases"`
	// Decisive are the differences that bear on the outcome, the most
	// explaining first; Other are the rest.
	Decisive []Difference `json:"decisive"`
	Other    []Difference `json:"other,omitempty"`
	// Ignored counts the differences in what always differs between two
	// pods (names, UIDs, IPs, timestamps, ...), by kind.
	Ignored   int            `json:"ignored"`
	IgnoredBy map[string]int `json:"ignoredBy,omitempty"`
	// Verdict says in a line or two why the outcomes differ, when the
	// evidence allows it; NoDecisiveDifference when nothing differs that
	// matters.
	Verdict string `json:"verdict"`
}

// NoDecisiveDifference is the verdict on two pods whose lives differ in
// nothing that matters.
const NoDecisiveDifference = "no decisive difference"

// Pod names one side.
type Pod struct {
	Label       string        `json:"label"` // A or B
	Namespace   string        `json:"namespace"`
	Name        string        `json:"name"`
	UID         string        `json:"uid"`
	Outcome     string        `json:"outcome"`
	Node        string        `json:"node,omitempty"`
	Terminating diff.Duration `json:"terminating,omitempty"`
}

// AlignedPhase is one phase, as each pod reached it.
type AlignedPhase struct {
	Name string   `json:"name"`
	A    *PhaseAt `json:"a,omitempty"`
	B    *PhaseAt `json:"b,omitempty"`
}

// PhaseAt is when a pod reached a phase: how long after its creation.
type PhaseAt struct {
	After  diff.Duration `json:"after"`
	Seq    uint64        `json:"seq,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// Difference is one thing that differs between the two lives.
type Difference struct {
	// Kind is the mechanism: deletion, denied, webhook, namespace,
	// finalizer, admission, finding, container, node, dependent, timing,
	// event, field.
	Kind string `json:"kind"`
	// Rank orders the differences: higher explains more.
	Rank int `json:"rank"`
	// Subject says what differs ("deletion propagation", "finalizer
	// foregroundDeletion"); A and B how each pod had it; Why, when known,
	// what the difference does.
	Subject string `json:"subject"`
	A       string `json:"a"`
	B       string `json:"b"`
	Why     string `json:"why,omitempty"`
	// Phase is the aligned phase it belongs to, for the field differences.
	Phase string `json:"phase,omitempty"`
}

// Summary is the difference in one line.
func (d Difference) Summary() string {
	s := fmt.Sprintf("%s: A %s; B %s", d.Subject, d.A, d.B)
	if d.Why != "" {
		s += " (" + d.Why + ")"
	}
	return s
}

// Ranks of the kinds of differences, from the most explaining.
const (
	rankPropagation = 100
	rankDenied      = 95
	rankUpdateHook  = 90
	rankNamespace   = 85
	rankFinalizer   = 80
	rankGrace       = 70
	rankWhoDeleted  = 65
	rankCreateHook  = 60
	rankAdmission   = 58
	rankPatch       = 57
	rankFinding     = 55
	rankExit        = 50
	rankNode        = 45
	rankDependent   = 40
	rankTiming      = 30
	// Below rankDecisive a difference goes with the rest.
	rankDecisive = 30
	rankEvent    = 20
	rankField    = 10
)

// Compare compares a with b. Either may be the pod that worked: the verdict
// names the one that did not by its label.
func Compare(a, b Side) *Result {
	pa, pb := newProfile("A", a), newProfile("B", b)
	r := &Result{A: pa.pod(), B: pb.pod(), IgnoredBy: map[string]int{}}
	r.Phases = align(pa, pb)
	var diffs []Difference
	diffs = append(diffs, deletionDiffs(pa, pb)...)
	diffs = append(diffs, deniedDiffs(pa, pb)...)
	diffs = append(diffs, webhookDiffs(pa, pb)...)
	diffs = append(diffs, namespaceDiffs(pa, pb, r)...)
	diffs = append(diffs, finalizerDiffs(pa, pb)...)
	diffs = append(diffs, admissionDiffs(pa, pb, r)...)
	diffs = append(diffs, findingDiffs(pa, pb)...)
	diffs = append(diffs, exitDiffs(pa, pb)...)
	diffs = append(diffs, nodeDiffs(pa, pb)...)
	diffs = append(diffs, dependentDiffs(pa, pb, r)...)
	diffs = append(diffs, timingDiffs(r.Phases)...)
	diffs = append(diffs, eventDiffs(pa, pb)...)
	diffs = append(diffs, fieldDiffs(pa, pb, r)...)
	sort.SliceStable(diffs, func(i, j int) bool { return diffs[i].Rank > diffs[j].Rank })
	for _, d := range diffs {
		if d.A == d.B {
			// What reads the same in both is no difference to show,
			// whatever a comparison of normalized values found.
			continue
		}
		if d.Rank >= rankDecisive {
			r.Decisive = append(r.Decisive, d)
		} else {
			r.Other = append(r.Other, d)
		}
	}
	for _, n := range r.IgnoredBy {
		r.Ignored += n
	}
	if len(r.IgnoredBy) == 0 {
		r.IgnoredBy = nil
	}
	r.Verdict = verdict(pa, pb, r)
	return r
}

func (p *profile) pod() Pod {
	lc := p.lc
	return Pod{Label: p.label, Namespace: lc.Namespace, Name: lc.Name, UID: lc.UID, Outcome: lc.Outcome, Node: lc.Node, Terminating: lc.Terminating}
}

// The aligned phases, in the order a pod reaches them.
const (
	phaseCreated           = "created"
	phaseAdmitted          = "admitted"
	phaseScheduled         = "scheduled"
	phaseStarted           = "containers started"
	phaseReady             = "ready"
	phaseFinished          = "completed or failed"
	phaseDeletionRequested = "deletion requested"
	phaseFinalizersRemoved = "finalizers removed"
	phaseGone              = "gone"
	phaseStillPresent      = "still present at the end"
)

var phaseOrder = []string{phaseCreated, phaseAdmitted, phaseScheduled, phaseStarted, phaseReady, phaseFinished,
	phaseDeletionRequested, phaseFinalizersRemoved, phaseGone, phaseStillPresent}

// align puts the phases of the two pods side by side.
func align(a, b *profile) []AlignedPhase {
	var out []AlignedPhase
	for _, name := range phaseOrder {
		pa, pb := a.phases[name], b.phases[name]
		if pa == nil && pb == nil {
			continue
		}
		out = append(out, AlignedPhase{Name: name, A: pa, B: pb})
	}
	return out
}

// timingDiffs names the phases one pod reached and the other did not, and
// the stretches between phases that took many times longer in one.
func timingDiffs(phases []AlignedPhase) []Difference {
	var out []Difference
	var prev *AlignedPhase
	for i := range phases {
		p := &phases[i]
		switch {
		case p.Name == phaseStillPresent:
			// The outcome says it.
		case p.A == nil || p.B == nil:
			out = append(out, Difference{Kind: "timing", Rank: rankTiming, Subject: "phase " + p.Name,
				A: reachedText(p.A), B: reachedText(p.B)})
		case prev != nil && prev.A != nil && prev.B != nil:
			da, db := time.Duration(p.A.After-prev.A.After), time.Duration(p.B.After-prev.B.After)
			lo, hi := min(da, db), max(da, db)
			if hi-lo >= 10*time.Second && hi >= 3*lo {
				out = append(out, Difference{Kind: "timing", Rank: rankTiming, Subject: "time from " + prev.Name + " to " + p.Name,
					A: fine(da), B: fine(db)})
			}
		}
		if p.A != nil && p.B != nil {
			prev = p
		}
	}
	return out
}

func reachedText(p *PhaseAt) string {
	if p == nil {
		return "never reached it"
	}
	s := "reached it after " + fine(time.Duration(p.After))
	if p.Detail != "" {
		s += " (" + p.Detail + ")"
	}
	return s
}

// verdict says why the outcomes differ, when the evidence allows it.
func verdict(a, b *profile, r *Result) string {
	if len(r.Decisive) == 0 {
		if a.lc.Outcome == b.lc.Outcome {
			return NoDecisiveDifference
		}
		return fmt.Sprintf("A ended %s, B %s, but nothing recorded differs that explains it", a.lc.Outcome, b.lc.Outcome)
	}
	// The pod held by a finalizer the other lost.
	bad, good := b, a
	if len(a.heldAtEnd()) > 0 && len(b.heldAtEnd()) == 0 {
		bad, good = a, b
	}
	var parts []string
	for _, f := range bad.heldAtEnd() {
		if good.finalizers[f] != nil && good.finalizers[f].held {
			continue
		}
		parts = append(parts, finalizerVerdict(f, bad, good)...)
	}
	if len(parts) > 0 {
		return strings.Join(parts, " ")
	}
	if a.lc.Outcome == b.lc.Outcome {
		return fmt.Sprintf("both ended %s; the first decisive difference is %s", a.lc.Outcome, r.Decisive[0].Subject)
	}
	return fmt.Sprintf("A ended %s, B %s; the first decisive difference is %s", a.lc.Outcome, b.lc.Outcome, r.Decisive[0].Summary())
}

// finalizerVerdict explains why bad holds finalizer f and good does not.
func finalizerVerdict(f string, bad, good *profile) []string {
	var out []string
	if want := propagationOf(f); want != "" && bad.deletion != nil {
		switch {
		case good.deletion == nil:
			out = append(out, fmt.Sprintf("%s got %s because its deletion asked for %s propagation; %s was not deleted.", bad.label, f, bad.deletion.propagation, good.label))
		case good.deletion.propagation != bad.deletion.propagation:
			out = append(out, fmt.Sprintf("%s got %s because its deletion asked for %s propagation; %s's asked for %s.", bad.label, f, bad.deletion.propagation, good.label, good.deletion.propagation))
		default:
			g := good.finalizers[f]
			removed := "removed"
			if g != nil && g.removedBy != "" {
				removed = "removed by " + g.removedBy
			}
			out = append(out, fmt.Sprintf("Both deletions asked for %s propagation and got %s; %s's was %s, %s's never was.", bad.deletion.propagation, f, good.label, removed, bad.label))
		}
	} else {
		out = append(out, fmt.Sprintf("%s still holds finalizer %s, which %s %s.", bad.label, f, good.label, good.finalizerFate(f)))
	}
	// What stands in the way of the removal: a finalizer is removed by an
	// UPDATE of the pod.
	blocked := false
	for _, d := range bad.deniedWrites() {
		blocked = true
		if d.Webhook == "" {
			out = append(out, fmt.Sprintf("%s's finalizer removal was denied %d times (%d: %s).", bad.label, d.Count, d.Code, d.Message))
			continue
		}
		out = append(out, fmt.Sprintf("%s's finalizer removal was denied %d times by webhook %s, %s.", bad.label, d.Count, d.Webhook, good.hookRelation(d.Webhook, bad)))
	}
	if !blocked {
		for _, w := range bad.updateHooks {
			if _, ok := good.updateHooks[w.Name]; ok && good.removedAll() && len(good.finalizers) > 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s's finalizer removal is an UPDATE of the pod that webhook %s intercepts, %s (no denial recorded: import the audit log to see them).", bad.label, w.Name, good.hookRelation(w.Name, bad)))
		}
	}
	return out
}

// hookRelation says how the webhook named stands to p's requests.
func (p *profile) hookRelation(name string, other *profile) string {
	if _, ok := p.updateHooks[name]; ok {
		if len(p.heldAtEnd()) == 0 && len(p.finalizers) == 0 {
			return fmt.Sprintf("which intercepts %s's pod UPDATEs too, but %s's deletion left no finalizer to remove", p.label, p.label)
		}
		return fmt.Sprintf("which intercepts %s's pod UPDATEs too", p.label)
	}
	if w, ok := other.updateHooks[name]; ok && w.NamespaceSelector != "" && p.nsLabels != nil && !selectorMatches(w.NamespaceSelector, p.nsLabels) {
		return fmt.Sprintf("which does not match %s's namespace (namespaceSelector %s; %s has %s)", p.label, w.NamespaceSelector, p.lc.Namespace, labelsText(p.nsLabels))
	}
	if p.hooksKnown {
		return fmt.Sprintf("which does not intercept %s's pod UPDATE", p.label)
	}
	return fmt.Sprintf("which may not intercept %s's (its webhooks were not recorded)", p.label)
}

// fine formats a duration to the tenth of a second under a minute (most
// of a job's life is within seconds), to the second above.
func fine(d time.Duration) string {
	if d < time.Minute && d > -time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return diff.Duration(d).String()
}
