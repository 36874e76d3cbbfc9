package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

// TextOptions control the text renderings.
type TextOptions struct {
	// Color adds ANSI colours; set it only when writing to a terminal.
	Color bool
	// AllFields shows every field of a pod's first revision, not only the
	// ones that tell its story (images, owners, finalizers, labels, ...).
	AllFields bool
	// Location is the time zone times are shown in; nil means UTC.
	Location *time.Location
	// Width wraps the lines of text at this many columns (a terminal's); 0
	// leaves them whole. Tables are not wrapped; markdown ignores it.
	Width int
	// ShowInfo shows the evidence of info findings (how a pod ended),
	// folded by default: each is one line in explain and diff, and a
	// count by kind in a report.
	ShowInfo bool
}

// colours, used only when TextOptions.Color is set.
const (
	cReset  = "\x1b[0m"
	cBold   = "\x1b[1m"
	cDim    = "\x1b[2m"
	cRed    = "\x1b[31m"
	cGreen  = "\x1b[32m"
	cYellow = "\x1b[33m"
	cCyan   = "\x1b[36m"
)

type textWriter struct {
	w    io.Writer
	wrap *wrapWriter // in front of w when opts.Width is set
	opts TextOptions
	err  error
	line []byte // the line being built, for the writers that build one
	// after, when set, is what a follow printed already: the timeline
	// writes only what came after it, without its heading.
	after *FollowPoint
}

// newTextWriter writes text to w, wrapped at opts.Width when it is set.
func newTextWriter(w io.Writer, opts TextOptions) *textWriter {
	t := &textWriter{w: w, opts: opts}
	if opts.Width > 0 {
		t.wrap = &wrapWriter{w: w, width: opts.Width}
		t.w = t.wrap
	}
	return t
}

// done writes what the wrapping holds back and returns the first error.
func (t *textWriter) done() error {
	if t.wrap != nil && t.err == nil {
		t.err = t.wrap.flush()
	}
	return t.err
}

// FollowPoint is how far a follow (diff --follow) has printed a pod's
// timeline: its last revision's and event's sequence numbers, and the
// start of its last gap.
type FollowPoint struct {
	Step, Event uint64
	Gap         time.Time
}

// FollowEnd is the point after everything lc holds.
func FollowEnd(lc *explain.Lifecycle) FollowPoint {
	var p FollowPoint
	for _, s := range lc.Steps {
		p.Step = max(p.Step, s.Seq)
	}
	for _, e := range lc.Events {
		p.Event = max(p.Event, e.Seq)
	}
	for _, g := range lc.Gaps {
		if g.Start.After(p.Gap) {
			p.Gap = g.Start
		}
	}
	return p
}

// Follow writes the entries of lc's timeline after p, as Diff writes
// them (each revision with its actors and changes), and returns the point
// after them.
func Follow(w io.Writer, lc *explain.Lifecycle, opts TextOptions, p FollowPoint) (FollowPoint, error) {
	t := newTextWriter(w, opts)
	t.after = &p
	t.timeline(lc)
	end := FollowEnd(lc)
	end.Step, end.Event = max(end.Step, p.Step), max(end.Event, p.Event)
	if p.Gap.After(end.Gap) {
		end.Gap = p.Gap
	}
	return end, t.done()
}

// writeLine writes the line built in b (t.line's storage), as one printf
// would, and keeps the storage.
func (t *textWriter) writeLine(b []byte) {
	t.line = b[:0]
	if t.err != nil {
		return
	}
	_, t.err = t.w.Write(b)
}

// appendPaint appends what paint returns.
func (t *textWriter) appendPaint(b []byte, color, s string) []byte {
	if !t.opts.Color || s == "" {
		return append(b, s...)
	}
	return append(append(append(b, color...), s...), cReset...)
}

// appendClock appends what clock returns.
func (t *textWriter) appendClock(b []byte, ts time.Time) []byte {
	if ts.IsZero() {
		return append(b, "            "...)
	}
	loc := t.opts.Location
	if loc == nil {
		loc = time.UTC
	}
	return ts.In(loc).AppendFormat(b, "15:04:05.000")
}

func (t *textWriter) printf(format string, args ...any) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.w, format, args...)
}

func (t *textWriter) paint(color, s string) string {
	if !t.opts.Color || s == "" {
		return s
	}
	return string(t.appendPaint(nil, color, s))
}

func (t *textWriter) clock(ts time.Time) string { return string(t.appendClock(nil, ts)) }

func (t *textWriter) stamp(ts time.Time) string {
	loc := t.opts.Location
	if loc == nil {
		loc = time.UTC
	}
	return ts.In(loc).Format("2006-01-02 15:04:05 MST")
}

func severityColor(s explain.Severity) string {
	switch s {
	case explain.Critical:
		return cRed + cBold
	case explain.Warning:
		return cYellow
	}
	return cCyan
}

// Diff writes the text of `podtrace diff`: the pod, its findings, its phases
// and its timeline of revisions and events.
func Diff(w io.Writer, lc *explain.Lifecycle, opts TextOptions) error {
	t := newTextWriter(w, opts)
	t.header(lc)
	t.findings(lc.Findings)
	t.phases(lc)
	t.admission(lc)
	t.audit(lc)
	t.dependents(lc)
	t.timeline(lc)
	return t.done()
}

// Explain writes the text of `podtrace explain`: the pod and its findings,
// or that nothing looks wrong.
func Explain(w io.Writer, lc *explain.Lifecycle, opts TextOptions) error {
	t := newTextWriter(w, opts)
	t.header(lc)
	switch {
	case len(lc.Findings) == 0:
		t.printf("\n%s\n", t.paint(cGreen, "Nothing looks wrong: no finding in this pod's recorded life."))
	case lc.Findings[0].Severity == explain.Info: // most severe first
		t.printf("\n%s\n", t.paint(cGreen, "Nothing looks wrong: no warning in this pod's recorded life."))
	}
	t.findings(lc.Findings)
	return t.done()
}

func (t *textWriter) header(lc *explain.Lifecycle) {
	outcome := lc.Outcome
	if lc.Outcome == "Terminating" {
		outcome += " for " + lc.Terminating.String()
	}
	color := cGreen
	switch lc.Outcome {
	case "Terminating", "Failed":
		color = cRed
	case "Pending":
		color = cYellow
	}
	on := ""
	if lc.Node != "" {
		on = " on " + lc.Node
	}
	t.printf("%s %s/%s%s: %s\n", t.paint(cBold, "Pod"), lc.Namespace, lc.Name, on, t.paint(color, outcome))
	if len(lc.Redacted) > 0 {
		t.printf("Redacted: %s (--no-redact shows them)\n", redact.Summary(lc.Redacted))
	}
	uid := t.paint(cDim, "uid "+lc.UID)
	if len(lc.Steps) > 0 {
		t.printf("Recorded: %s, %s, %s; %s\n", Plural(len(lc.Steps), "revision"), Plural(len(lc.Events), "event"),
			t.span(lc.Steps[0].Time, lc.RecordingEnd), uid)
	} else {
		t.printf("%s\n", uid)
	}
}

// span is "2026-12-01 04:30:04 to 04:30:56 UTC", the date once when both
// times are on the same day.
func (t *textWriter) span(a, b time.Time) string {
	loc := t.opts.Location
	if loc == nil {
		loc = time.UTC
	}
	a, b = a.In(loc), b.In(loc)
	if a.Format("2006-01-02") == b.Format("2006-01-02") {
		return a.Format("2006-01-02 15:04:05") + " to " + b.Format("15:04:05 MST")
	}
	return t.stamp(a) + " to " + t.stamp(b)
}

func (t *textWriter) findings(fs []explain.Finding) {
	if len(fs) == 0 {
		return
	}
	t.printf("\n%s\n", t.paint(cBold, "Findings"))
	folded := 0
	for _, f := range fs {
		t.printf("  %s %s: %s\n", t.paint(severityColor(f.Severity), strings.ToUpper(f.Severity.String())), f.ID, f.Headline)
		if f.Severity == explain.Info && !t.opts.ShowInfo {
			// How the pod ended: who, in one line; the evidence folded.
			if f.Actor != nil {
				t.printf("    actor: %s\n", actorLine(f.Actor))
			}
			if len(f.Evidence)+len(f.Suspects)+len(f.Next) > 0 {
				folded++
			}
			continue
		}
		for _, l := range endedLines(f) {
			t.printf("    %s\n", l)
		}
		for _, e := range f.Evidence {
			seq := ""
			if e.Seq != 0 {
				seq = fmt.Sprintf("#%d", e.Seq)
			}
			t.printf("    %s %-7s %s\n", t.paint(cDim, t.clock(e.Time)), t.paint(cDim, seq), e.Text)
		}
		for _, w := range f.Suspects {
			if w.IsPolicy() {
				t.printf("    %s %s %q (binding %s): ", t.paint(cYellow, "suspect"), w.Kind, w.Name, w.Configuration)
				if len(w.ValidationActions) > 0 {
					t.printf("validationActions %s, ", strings.Join(w.ValidationActions, ", "))
				}
				t.printf("failurePolicy %s, %s", w.FailurePolicy, w.Rules)
			} else {
				t.printf("    %s %s %q (configuration %s): failurePolicy %s, %s", t.paint(cYellow, "suspect"),
					strings.TrimSuffix(w.Kind, "Configuration"), w.Name, w.Configuration, w.FailurePolicy, w.Rules)
			}
			if w.NamespaceSelector != "" {
				t.printf(", namespaceSelector %s", w.NamespaceSelector)
			}
			if w.ObjectSelector != "" {
				t.printf(", objectSelector %s", w.ObjectSelector)
			}
			t.printf("\n")
			for _, c := range w.MatchConditions {
				t.printf("      matchCondition (not evaluated) %s\n", c)
			}
			for _, v := range w.Validations {
				t.printf("      validation (not evaluated) %s\n", v)
			}
			if w.Params != "" {
				t.printf("      params: %s\n", w.Params)
			}
			if w.Uncertain != "" {
				t.printf("      uncertain: %s\n", w.Uncertain)
			}
		}
		for _, n := range f.Next {
			t.printf("    %s %s\n", t.paint(cCyan, "next:"), n)
		}
	}
	if folded > 0 {
		t.printf("  %s\n", t.paint(cDim, fmt.Sprintf("(the evidence of %s folded: --show-info shows it)", Plural(folded, "info finding"))))
	}
}

func (t *textWriter) phases(lc *explain.Lifecycle) {
	t.printf("\n%s\n", t.paint(cBold, "Phases"))
	for _, p := range lc.Phases {
		line := fmt.Sprintf("  %s  %-22s", t.clock(p.Time), p.Name)
		if p.Detail != "" {
			if len(p.Name) >= 22 {
				line += " " // a longer name: still two spaces to its detail
			}
			line += " " + p.Detail
		}
		if p.Actor != "" {
			line += t.paint(cDim, " (by "+p.Actor+")")
		}
		t.printf("%s\n", strings.TrimRight(line, " "))
	}
}

func (t *textWriter) dependents(lc *explain.Lifecycle) {
	if len(lc.Dependents) == 0 {
		return
	}
	t.printf("\n%s\n", t.paint(cBold, "Dependents (objects owned by the pod)"))
	for _, d := range lc.Dependents {
		state := "still present"
		if !d.Deleted.IsZero() {
			state = "deleted " + t.clock(d.Deleted)
		}
		block := ""
		if d.Blocking {
			block = ", blockOwnerDeletion"
		}
		t.printf("  %-10s %-30s owned since %s%s, %s\n", d.Kind, d.Name, t.clock(d.Since), block, state)
	}
}

// storyFields are the fields of a first revision worth showing when not all
// of them are asked for.
var storyFields = []string{
	"metadata.labels", "metadata.ownerReferences", "metadata.finalizers", "metadata.deletionTimestamp",
	"spec.containers", "spec.initContainers", "spec.imagePullSecrets", "spec.nodeName",
	"spec.serviceAccountName", "status.phase",
}

func isStoryField(c diff.Change) bool {
	for _, f := range storyFields {
		if rest, ok := strings.CutPrefix(c.Path, f); ok && (rest == "" || rest[0] == '[' || rest[0] == '.') {
			if strings.HasPrefix(f, "spec.containers") || strings.HasPrefix(f, "spec.initContainers") {
				return strings.HasSuffix(c.Path, ".image") || strings.HasSuffix(c.Path, "]")
			}
			return true
		}
	}
	return false
}

func (t *textWriter) timeline(lc *explain.Lifecycle) {
	if t.after == nil {
		t.printf("\n%s\n", t.paint(cBold, "Timeline"))
	}
	ev := 0
	flushEvents := func(until time.Time, all bool) {
		for ; ev < len(lc.Events) && (all || !lc.Events[ev].Time.After(until)); ev++ {
			e := &lc.Events[ev]
			if t.after != nil && e.Seq <= t.after.Event {
				continue
			}
			color := cDim
			if e.Type == "Warning" {
				color = cYellow
			}
			// "  CLOCK  event TYPE REASON (xCOUNT): MESSAGE [SOURCE]"
			b := append(t.line, "  "...)
			b = t.appendClock(b, e.Time)
			b = append(b, "  "...)
			if t.opts.Color {
				b = append(b, color...)
			}
			b = append(append(b, "event "...), e.Type...)
			if t.opts.Color {
				b = append(b, cReset...)
			}
			b = append(append(b, ' '), e.Reason...)
			if e.Count > 1 {
				b = append(strconv.AppendInt(append(b, " (x"...), int64(e.Count), 10), ')')
			}
			b = append(append(append(b, ": "...), e.Message...), ' ')
			if t.opts.Color {
				b = append(b, cDim...)
			}
			b = append(append(append(b, '['), e.Source...), ']')
			if t.opts.Color {
				b = append(b, cReset...)
			}
			t.writeLine(append(b, '\n'))
		}
	}
	gaps := lc.Gaps
	flushGaps := func(before time.Time, all bool) {
		for len(gaps) > 0 && (all || gaps[0].Start.Before(before)) {
			g := gaps[0]
			gaps = gaps[1:]
			if t.after != nil && !g.Start.After(t.after.Gap) {
				continue
			}
			b := append(t.line, "  "...)
			b = t.appendClock(b, g.Start)
			b = append(b, "  "...)
			b = t.appendPaint(b, cYellow, "gap: "+g.Text())
			t.writeLine(append(b, '\n'))
		}
	}
	for i, s := range lc.Steps {
		flushEvents(s.Time, false)
		flushGaps(s.Time, false)
		if t.after != nil && s.Seq <= t.after.Step {
			continue
		}
		what := stepWhat(i, s)
		// "  CLOCK  WHAT rv RV by ACTORS [PHASES]"
		b := append(t.line, "  "...)
		b = t.appendClock(b, s.Time)
		b = append(b, "  "...)
		b = append(t.appendPaint(b, cBold, what), ' ')
		if t.opts.Color {
			b = append(b, cDim...)
		}
		b = append(append(b, "rv "...), s.ResourceVersion...)
		if t.opts.Color {
			b = append(b, cReset...)
		}
		b = appendActors(append(b, " by "...), s.Actors)
		if len(s.Phases) > 0 {
			b = append(b, ' ')
			if t.opts.Color {
				b = append(b, cGreen...)
			}
			b = append(b, '[')
			for i, ph := range s.Phases {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = append(b, ph...)
			}
			b = append(b, ']')
			if t.opts.Color {
				b = append(b, cReset...)
			}
		}
		t.writeLine(append(b, '\n'))
		if s.Unobserved != "" {
			t.printf("      %s\n", t.paint(cYellow, s.Unobserved))
		}
		hidden := 0
		for _, c := range s.Changes {
			if i == 0 && !t.opts.AllFields {
				if !isStoryField(c) {
					hidden++
					continue
				}
				c = containerImage(c)
			}
			t.change(c, len(s.Actors) > 1, len(s.Actors) == 1 && s.Actors[0].Basis == diff.BasisUnknown)
		}
		if hidden > 0 {
			t.printf("      %s\n", t.paint(cDim, fmt.Sprintf("(%d more %s set at creation; --all-fields or -o json shows them)", hidden, PluralNoun(hidden, "field"))))
		}
	}
	flushEvents(time.Time{}, true)
	flushGaps(time.Time{}, true)
}

// stepWhat names how the i-th revision s was seen.
func stepWhat(i int, s diff.Step) string {
	switch {
	case i == 0 && s.Type == store.Added:
		return "created"
	case i == 0 && s.Type == store.Initial:
		return "already present"
	case s.Type == store.DeletedUnknown:
		return "gone (not observed)"
	case s.Type == store.Initial:
		return "listed again"
	}
	return strings.ToLower(string(s.Type))
}

// containerImage shows a container added whole at creation by its image,
// the part of it that tells the story; -o json and --all-fields show all.
func containerImage(c diff.Change) diff.Change {
	if c.Op != diff.OpAdd || !strings.HasSuffix(c.Path, "]") ||
		!(strings.HasPrefix(c.Path, "spec.containers[") || strings.HasPrefix(c.Path, "spec.initContainers[")) {
		return c
	}
	var ctr struct {
		Image string `json:"image"`
	}
	if json.Unmarshal([]byte(c.New), &ctr) != nil || ctr.Image == "" {
		return c
	}
	c.Path += ".image"
	c.New = ctr.Image
	return c
}

// appendActors appends what actors returns.
func appendActors(b []byte, as []diff.Actor) []byte {
	if len(as) == 0 {
		return append(b, "unknown"...)
	}
	for i := range as {
		if i > 0 {
			b = append(b, " and "...)
		}
		b = as[i].AppendLabel(b)
	}
	return b
}

func actors(as []diff.Actor) string { return string(appendActors(nil, as)) }

const maxValue = 120

func shorten(s string) string {
	if len(s) <= maxValue {
		return s
	}
	return string(appendShortened(nil, s))
}

// appendShortened appends what shorten returns.
func appendShortened(b []byte, s string) []byte {
	if len(s) <= maxValue {
		return append(b, s...)
	}
	b = append(append(b, s[:maxValue]...), "... ("...)
	return append(strconv.AppendInt(b, int64(len(s)), 10), " bytes)"...)
}

// change writes one change; showManager names its manager (a step of
// several actors), and a change whose actor is unknown says so, unless the
// step's one actor, unknown, already does (stepUnknown).
func (t *textWriter) change(c diff.Change, showManager, stepUnknown bool) {
	// "      + PATH  NEW (MANAGER)", "      - PATH  OLD (MANAGER)",
	// "      ~ PATH  OLD -> NEW (MANAGER)",
	// "      - PATH  OLD (unknown: one of A, B)"
	b := append(t.line, "      "...)
	switch c.Op {
	case diff.OpAdd:
		b = append(append(t.appendPaint(b, cGreen, "+"), ' '), c.Path...)
		if c.New != "" {
			b = appendShortened(append(b, "  "...), c.New)
		}
	case diff.OpRemove:
		b = append(append(t.appendPaint(b, cRed, "-"), ' '), c.Path...)
		if c.Old != "" {
			b = appendShortened(append(b, "  "...), c.Old)
		}
	default:
		b = append(append(t.appendPaint(b, cYellow, "~"), ' '), c.Path...)
		b = appendShortened(append(b, "  "...), c.Old)
		b = appendShortened(append(b, " -> "...), c.New)
	}
	by := ""
	switch {
	case c.Basis == diff.BasisUnknown && !stepUnknown:
		by = "unknown: " + unknownChange(c)
	case showManager && c.Manager != "":
		by = c.Manager
	}
	if by != "" {
		if t.opts.Color {
			b = append(b, cDim...)
		}
		b = append(append(append(b, "  ("...), by...), ')')
		if t.opts.Color {
			b = append(b, cReset...)
		}
	}
	t.writeLine(append(b, '\n'))
}

// unknownChange says why a change's actor is unknown: several managers
// wrote at its revision, or none did.
func unknownChange(c diff.Change) string {
	if len(c.Candidates) > 1 {
		return "one of " + strings.Join(c.Candidates, ", ")
	}
	return "removed by a request that left no field manager"
}

func (t *textWriter) admission(lc *explain.Lifecycle) {
	a := lc.Admission
	if a == nil || (len(a.Changes) == 0 && len(a.Webhooks) == 0 && len(a.Notes) == 0) {
		return
	}
	t.printf("\n%s %s\n", t.paint(cBold, "Admission"), t.paint(cDim, "(as asked for vs. as stored; compared with "+a.Source+")"))
	for _, c := range a.Changes {
		t.change(c.Change, false, false)
		t.printf("          %s\n", t.paint(cDim, "by "+c.By+" ("+c.Certainty+")"))
	}
	if len(a.Changes) == 0 {
		t.printf("      no field changed at admission\n") // the webhooks or notes below are why the section is here
	}
	if a.Defaults > 0 {
		t.printf("      %s\n", t.paint(cDim, fmt.Sprintf("(%s by defaulting or the owning controller hidden; --show-defaults shows them)", Plural(a.Defaults, "change"))))
	}
	for _, w := range a.Webhooks {
		t.printf("  %s %s %q (configuration %s): failurePolicy %s", t.paint(cYellow, "webhook"), strings.TrimSuffix(w.Kind, "Configuration"), w.Name, w.Configuration, w.FailurePolicy)
		if w.ReinvocationPolicy != "" {
			t.printf(", reinvocationPolicy %s", w.ReinvocationPolicy)
		}
		t.printf(", sideEffects %s, timeout %ds, %s", w.SideEffects, w.TimeoutSeconds, w.Rules)
		if w.NamespaceSelector != "" {
			t.printf(", namespaceSelector %s", w.NamespaceSelector)
		}
		if w.ObjectSelector != "" {
			t.printf(", objectSelector %s", w.ObjectSelector)
		}
		t.printf("\n")
		if w.Uncertain != "" {
			t.printf("      uncertain: %s\n", w.Uncertain)
		}
	}
	for _, n := range a.Notes {
		t.printf("  %s %s\n", t.paint(cCyan, "note:"), n)
	}
}

// audit writes what the imported audit log says: who made each request
// and the requests that were denied.
func (t *textWriter) audit(lc *explain.Lifecycle) {
	a := lc.Audit
	if a == nil {
		return
	}
	t.printf("\n%s %s\n", t.paint(cBold, "Audit"), t.paint(cDim, "(requests about the pod, from the API server's audit log)"))
	// One list in time order: requests, webhooks' patches and denials
	// interleave (a CREATE's patches come before the DELETE).
	type entry struct {
		at   time.Time
		line string
	}
	var entries []entry
	for _, r := range a.Requests {
		what := r.Verb
		if r.Subresource != "" {
			what += " " + r.Subresource
		}
		rev := ""
		if r.Seq != 0 {
			rev = fmt.Sprintf(" -> #%d", r.Seq)
		}
		if r.ResourceVersion != "" {
			rev += " rv " + r.ResourceVersion
		}
		entries = append(entries, entry{r.Time, fmt.Sprintf("  %s  %-16s %d by %s %s%s\n", t.clock(r.Time), what, r.Code, r.Identity(), t.paint(cDim, "("+r.Agent()+")"), t.paint(cDim, rev))})
	}
	for _, p := range a.Patches {
		for _, op := range p.Ops {
			val := ""
			if len(op.Value) > 0 {
				val = "  " + shorten(string(op.Value))
			}
			entries = append(entries, entry{p.Time, fmt.Sprintf("  %s  %s %s %s %s%s\n", t.clock(p.Time), t.paint(cYellow, "patch"), p.Webhook+" ("+p.Verb+"):", op.Op, op.Path, val)})
		}
	}
	for _, d := range a.Denied {
		entries = append(entries, entry{d.First, fmt.Sprintf("  %s  %s %s\n", t.clock(d.First), t.paint(cRed, "denied"), d.Summary())})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at.Before(entries[j].at) })
	for _, e := range entries {
		t.printf("%s", e.line)
	}
	for _, src := range a.Sources {
		t.printf("  %s from an export: %s\n", t.paint(cCyan, "note:"), src.Summary())
	}
}
