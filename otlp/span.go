package otlp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

// ServiceName is the service.name of every pod's trace: one service to
// search in, whatever the cluster (k8s.cluster.name tells them apart).
const ServiceName = "podtrace"

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/podtrace/podtrace/otlp"

// Options say what every pod's trace carries besides the pod's own story.
type Options struct {
	// Cluster is k8s.cluster.name; "" leaves it out.
	Cluster string
	// Version is podtrace's version: the instrumentation scope's.
	Version string
}

// The stages of a pod's life, each a child span of the root, named as
// spans are: in the order a pod goes through them.
const (
	StageAdmission   = "admission"
	StageScheduling  = "scheduling"
	StageStarting    = "image pull and start"
	StageRunning     = "running"
	StageCompleted   = "completed"
	StageFailed      = "failed"
	StageTerminating = "terminating"
	// StageStuck is a child of the terminating span: from the end of the
	// deletion's grace period to the end of the recording, for a pod still
	// there when the recording ended.
	StageStuck = "stuck"
)

// rootKey is the key of the root span's id (SpanID).
const rootKey = "pod"

// Spans returns the trace of one pod incarnation, root span first: a root
// span for its recorded life, a child span for each stage it went through,
// and span events for its revisions, its Kubernetes events, its
// dependents, its gaps in observation and its findings. It reads p alone:
// the same pod gives the same spans, ids and all.
func Spans(p Pod, opts Options) tracetest.SpanStubs {
	lc := p.Lifecycle
	b := &builder{p: p, lc: lc, tid: TraceID(lc.UID)}
	b.res = resource.NewWithAttributes(semconv.SchemaURL, b.resourceAttrs(opts)...)
	b.scope = instrumentation.Scope{Name: ScopeName, Version: opts.Version, SchemaURL: semconv.SchemaURL}
	b.stages()
	b.steps()
	b.events()
	b.dependents()
	b.gaps()
	b.phaseEvents()
	b.findings()
	out := make(tracetest.SpanStubs, 0, len(b.spans)+1)
	out = append(out, b.root)
	for _, s := range b.spans {
		out = append(out, *s.stub)
	}
	for i := range out {
		canonical(&out[i])
	}
	return out
}

// builder makes one pod's spans.
type builder struct {
	p     Pod
	lc    *explain.Lifecycle
	tid   trace.TraceID
	res   *resource.Resource
	scope instrumentation.Scope
	root  tracetest.SpanStub
	// spans are the stages' spans, in time order.
	spans []*stageSpan
}

// stageSpan is one stage's span and the time it covers.
type stageSpan struct {
	key   string
	stub  *tracetest.SpanStub
	start time.Time
	end   time.Time
	// holds says the span takes the events of its time (not admission,
	// which takes the admission comparison's).
	holds bool
}

func (b *builder) resourceAttrs(opts Options) []attribute.KeyValue {
	lc := b.lc
	attrs := []attribute.KeyValue{semconv.ServiceName(ServiceName)}
	if opts.Cluster != "" {
		attrs = append(attrs, semconv.K8SClusterName(opts.Cluster))
	}
	attrs = append(attrs,
		semconv.K8SNamespaceName(lc.Namespace),
		semconv.K8SPodName(lc.Name),
		semconv.K8SPodUID(lc.UID),
	)
	if lc.Node != "" {
		attrs = append(attrs, semconv.K8SNodeName(lc.Node))
	}
	for _, o := range b.p.Owners {
		attrs = append(attrs, ownerAttrs(o)...)
	}
	for _, k := range sortedKeys(b.p.Labels) {
		attrs = append(attrs, semconv.K8SPodLabel(k, b.p.Labels[k]))
	}
	return attrs
}

// ownerAttrs are the semantic conventions' attributes of an owner of a
// kind they name; podtrace.owner.* for any other kind.
func ownerAttrs(o Owner) []attribute.KeyValue {
	switch o.Kind {
	case "ReplicaSet":
		return []attribute.KeyValue{semconv.K8SReplicaSetName(o.Name), semconv.K8SReplicaSetUID(o.UID)}
	case "Deployment":
		return []attribute.KeyValue{semconv.K8SDeploymentName(o.Name), semconv.K8SDeploymentUID(o.UID)}
	case "StatefulSet":
		return []attribute.KeyValue{semconv.K8SStatefulSetName(o.Name), semconv.K8SStatefulSetUID(o.UID)}
	case "DaemonSet":
		return []attribute.KeyValue{semconv.K8SDaemonSetName(o.Name), semconv.K8SDaemonSetUID(o.UID)}
	case "Job":
		return []attribute.KeyValue{semconv.K8SJobName(o.Name), semconv.K8SJobUID(o.UID)}
	case "CronJob":
		return []attribute.KeyValue{semconv.K8SCronJobName(o.Name), semconv.K8SCronJobUID(o.UID)}
	case "ReplicationController":
		return []attribute.KeyValue{semconv.K8SReplicationControllerName(o.Name), semconv.K8SReplicationControllerUID(o.UID)}
	}
	return []attribute.KeyValue{attribute.String("podtrace.owner", o.Kind+"/"+o.Name), attribute.String("podtrace.owner.uid", o.UID)}
}

// lifeEnd is when the pod's recorded life ends: its deletion, else the end
// of the recording (never before its last revision).
func (b *builder) lifeEnd() time.Time {
	lc := b.lc
	end := lc.RecordingEnd
	if d, ok := lc.Phase(diff.PhaseDeleted); ok {
		end = d.Time
	}
	if n := len(lc.Steps); n > 0 && lc.Steps[n-1].Time.After(end) {
		end = lc.Steps[n-1].Time
	}
	return end
}

// lifeStart is when the pod's life began: its creation (before the
// recording began, for a pod already present), or its first revision.
func (b *builder) lifeStart() time.Time {
	lc := b.lc
	start := b.p.Created
	if len(lc.Phases) > 0 && (start.IsZero() || lc.Phases[0].Time.Before(start)) {
		start = lc.Phases[0].Time
	}
	if len(lc.Steps) > 0 && (start.IsZero() || lc.Steps[0].Time.Before(start)) {
		start = lc.Steps[0].Time
	}
	return start
}

func (b *builder) newSpan(key, name string, parent trace.SpanID, start, end time.Time) *tracetest.SpanStub {
	if end.Before(start) {
		end = start
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: b.tid, SpanID: SpanID(b.lc.UID, key), TraceFlags: trace.FlagsSampled})
	s := &tracetest.SpanStub{
		Name:                 name,
		SpanContext:          sc,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            start,
		EndTime:              end,
		Resource:             b.res,
		InstrumentationScope: b.scope,
	}
	if parent.IsValid() {
		s.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: b.tid, SpanID: parent, TraceFlags: trace.FlagsSampled})
	}
	return s
}

// stages makes the root span and one span per stage the pod reached, each
// from the phase that opened it to the one that opened the next.
func (b *builder) stages() {
	lc := b.lc
	start, end := b.lifeStart(), b.lifeEnd()
	b.root = *b.newSpan(rootKey, "pod "+lc.Namespace+"/"+lc.Name, trace.SpanID{}, start, end)
	b.root.Attributes = b.rootAttrs()
	b.root.Status = b.rootStatus()
	rootID := b.root.SpanContext.SpanID()

	phase := func(name string) (diff.Phase, bool) { return lc.Phase(name) }
	created, ok := phase(diff.PhaseCreated)
	if !ok {
		created, _ = phase(diff.PhaseAlreadyPresent)
	}
	if _, observed := phase(diff.PhaseCreated); observed && lc.Admission != nil {
		// Admission ends before the API server stamps the pod's
		// creation, in whole seconds, which is as early as the record
		// tells: the span runs from then to the first revision seen.
		s := b.newSpan(StageAdmission, StageAdmission, rootID, start, created.Time)
		s.Attributes = admissionAttrs(lc.Admission)
		b.spans = append(b.spans, &stageSpan{key: StageAdmission, stub: s, start: s.StartTime, end: s.EndTime})
	}

	// The stages reached, each opened by a phase, in the order a pod goes
	// through them; a stage runs to the next one's start.
	type opened struct {
		key string
		ph  diff.Phase
	}
	var reached []opened
	if created.Name != "" {
		reached = append(reached, opened{StageScheduling, created})
	}
	for _, st := range []struct{ key, phase string }{
		{StageStarting, diff.PhaseScheduled},
		{StageRunning, diff.PhaseStarted},
		{StageCompleted, diff.PhaseSucceeded},
		{StageFailed, diff.PhaseFailed},
		{StageTerminating, diff.PhaseDeletionRequested},
	} {
		if ph, ok := phase(st.phase); ok {
			reached = append(reached, opened{st.key, ph})
		}
	}
	sort.SliceStable(reached, func(i, j int) bool { return reached[i].ph.Time.Before(reached[j].ph.Time) })
	for i, o := range reached {
		from := o.ph.Time
		if from.Before(start) {
			from = start
		}
		to := end
		if i+1 < len(reached) {
			to = reached[i+1].ph.Time
		}
		s := b.newSpan(o.key, o.key, rootID, from, to)
		s.Attributes = phaseAttrs(o.ph)
		if i+1 == len(reached) {
			if _, deleted := phase(diff.PhaseDeleted); !deleted {
				s.Attributes = append(s.Attributes, attribute.Bool("podtrace.open", true))
			}
		}
		b.spans = append(b.spans, &stageSpan{key: o.key, stub: s, start: s.StartTime, end: s.EndTime, holds: true})
	}

	// Stuck: still terminating when the recording ended, past the end of
	// the deletion's grace period.
	if lc.Outcome == "Terminating" && !b.p.GraceEnd.IsZero() && end.After(b.p.GraceEnd) {
		var term *stageSpan
		for _, s := range b.spans {
			if s.key == StageTerminating {
				term = s
			}
		}
		if term != nil {
			from := b.p.GraceEnd
			if from.Before(term.start) {
				from = term.start
			}
			s := b.newSpan(StageStuck, StageStuck, term.stub.SpanContext.SpanID(), from, end)
			s.Attributes = []attribute.KeyValue{
				attribute.String("podtrace.grace_period_end", stamp(b.p.GraceEnd)),
				attribute.String("podtrace.terminating", lc.Terminating.String()),
			}
			if len(b.p.Finalizers) > 0 {
				s.Attributes = append(s.Attributes, attribute.StringSlice("podtrace.finalizers", b.p.Finalizers))
			}
			for _, f := range lc.Findings {
				if f.Severity >= explain.Warning {
					s.Attributes = append(s.Attributes, attribute.String("podtrace.finding", f.ID))
					s.Status = sdktrace.Status{Code: codes.Error, Description: f.Headline}
					break
				}
			}
			b.spans = append(b.spans, &stageSpan{key: StageStuck, stub: s, start: from, end: end, holds: true})
		}
	}
}

func (b *builder) rootAttrs() []attribute.KeyValue {
	lc := b.lc
	attrs := []attribute.KeyValue{attribute.String("podtrace.outcome", lc.Outcome)}
	if len(lc.Findings) > 0 {
		// Most severe first: the one a search by podtrace.finding finds.
		f := lc.Findings[0]
		attrs = append(attrs,
			attribute.String("podtrace.finding", f.ID),
			attribute.String("podtrace.severity", f.Severity.String()))
		ids := make([]string, len(lc.Findings))
		for i, f := range lc.Findings {
			ids[i] = f.ID
		}
		attrs = append(attrs, attribute.StringSlice("podtrace.findings", ids))
	}
	if b.p.Phase != "" {
		attrs = append(attrs, semconv.K8SPodStatusPhaseKey.String(b.p.Phase))
	}
	if b.p.Reason != "" {
		attrs = append(attrs, semconv.K8SPodStatusReasonKey.String(b.p.Reason))
	}
	if lc.Outcome == "Terminating" {
		attrs = append(attrs, attribute.String("podtrace.terminating", lc.Terminating.String()))
	}
	names := make([]string, len(lc.Phases))
	for i, ph := range lc.Phases {
		names[i] = ph.Name
		if ph.Name == diff.PhaseStillPresent {
			names[i] = "still present"
		}
	}
	attrs = append(attrs,
		attribute.String("podtrace.phases", strings.Join(names, " > ")),
		attribute.Int("podtrace.revisions", len(lc.Steps)),
		attribute.Int("podtrace.events", len(lc.Events)))
	if _, deleted := lc.Phase(diff.PhaseDeleted); !deleted {
		// Where the story stops. A deleted pod's stops at its deletion,
		// whenever it is sent: its spans are the same from a recorder
		// and from an export of its trace, and a backend keeps one copy.
		attrs = append(attrs, attribute.String("podtrace.recording_end", stamp(lc.RecordingEnd)))
	}
	if len(lc.Gaps) > 0 {
		attrs = append(attrs, attribute.Int("podtrace.gaps", len(lc.Gaps)))
	}
	if len(lc.Redacted) > 0 {
		attrs = append(attrs, attribute.String("podtrace.redacted", redact.Summary(lc.Redacted)))
	}
	return attrs
}

// rootStatus is Error when a finding is critical, its headline the
// description; unset otherwise.
func (b *builder) rootStatus() sdktrace.Status {
	var crit []string
	for _, f := range b.lc.Findings {
		if f.Severity == explain.Critical {
			crit = append(crit, f.ID+": "+f.Headline)
		}
	}
	if len(crit) == 0 {
		return sdktrace.Status{}
	}
	return sdktrace.Status{Code: codes.Error, Description: strings.Join(crit, "; ")}
}

func phaseAttrs(ph diff.Phase) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("podtrace.phase", ph.Name)}
	if ph.Detail != "" {
		attrs = append(attrs, attribute.String("podtrace.phase.detail", ph.Detail))
	}
	if ph.Actor != "" {
		attrs = append(attrs, attribute.String("podtrace.phase.actor", ph.Actor))
	}
	return attrs
}

func admissionAttrs(a *diff.Admission) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("podtrace.admission.source", a.Source),
		attribute.Int("podtrace.admission.changed", len(a.Changes)),
	}
	if a.Defaults > 0 {
		attrs = append(attrs, attribute.Int("podtrace.admission.defaults_hidden", a.Defaults))
	}
	if len(a.Changes) > 0 {
		changes := make([]string, len(a.Changes))
		for i, c := range a.Changes {
			changes[i] = changeText(c.Change, false, false) + "  (by " + c.By + ", " + c.Certainty + ")"
		}
		attrs = append(attrs, attribute.StringSlice("podtrace.admission.changes", changes))
	}
	if len(a.Webhooks) > 0 {
		attrs = append(attrs, attribute.StringSlice("podtrace.admission.webhooks", webhookTexts(a.Webhooks)))
	}
	if len(a.Notes) > 0 {
		attrs = append(attrs, attribute.StringSlice("podtrace.admission.notes", a.Notes))
	}
	return attrs
}

// spanAt returns the span whose time holds t: the last stage started by
// then, the root before any. What happens as the stuck span starts (the
// deletion request, with a grace period of 0) is the terminating span's.
func (b *builder) spanAt(t time.Time) *tracetest.SpanStub {
	var at *tracetest.SpanStub
	for _, s := range b.spans {
		if s.holds && !s.start.After(t) && !(s.key == StageStuck && s.start.Equal(t)) {
			at = s.stub
		}
	}
	if at == nil {
		return &b.root
	}
	return at
}

func (b *builder) add(t time.Time, name string, attrs ...attribute.KeyValue) {
	s := b.spanAt(t)
	s.Events = append(s.Events, sdktrace.Event{Name: name, Time: t, Attributes: attrs})
}

// maxChanges bounds the changes one revision's event lists.
const maxChanges = 64

// steps adds an event per revision: what changed, who changed it and how
// that is known.
func (b *builder) steps() {
	for i, s := range b.lc.Steps {
		attrs := []attribute.KeyValue{
			attribute.Int64("podtrace.seq", int64(s.Seq)),
			attribute.String("podtrace.resource_version", s.ResourceVersion),
			attribute.String("podtrace.actor", actorsText(s.Actors)),
		}
		var bases, managers, users []string
		for _, a := range s.Actors {
			bases = append(bases, string(a.Basis))
			if a.Manager != "" {
				managers = append(managers, a.Manager)
			}
			if a.User != "" {
				users = append(users, a.User)
			}
		}
		attrs = append(attrs, attribute.StringSlice("podtrace.actor.basis", uniq(bases)))
		if len(managers) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.actor.manager", managers))
		}
		if len(users) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.actor.user", users))
		}
		var changes []string
		hidden := 0
		for _, c := range s.Changes {
			if i == 0 && !storyField(c.Path) {
				hidden++
				continue
			}
			if len(changes) == maxChanges {
				hidden++
				continue
			}
			if i == 0 {
				c = containerImage(c)
			}
			changes = append(changes, changeText(c, len(s.Actors) > 1, len(s.Actors) == 1 && s.Actors[0].Basis == diff.BasisUnknown))
		}
		if hidden > 0 {
			changes = append(changes, fmt.Sprintf("(%d more fields changed; podtrace diff --all-fields shows them)", hidden))
		}
		attrs = append(attrs, attribute.Int("podtrace.changes.count", len(s.Changes)))
		if len(changes) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.changes", changes))
		}
		if len(s.Phases) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.phases", s.Phases))
		}
		if s.Unobserved != "" {
			attrs = append(attrs, attribute.String("podtrace.unobserved", s.Unobserved))
		}
		b.add(s.Time, "pod "+stepWhat(i, s)+" #"+strconv.FormatUint(s.Seq, 10), attrs...)
	}
}

// events adds the pod's Kubernetes events.
func (b *builder) events() {
	for _, e := range b.lc.Events {
		attrs := []attribute.KeyValue{
			attribute.Int64("podtrace.seq", int64(e.Seq)),
			attribute.String("podtrace.event.type", e.Type),
			attribute.String("podtrace.event.reason", e.Reason),
			attribute.String("podtrace.event.message", shorten(e.Message)),
		}
		if e.Source != "" {
			attrs = append(attrs, attribute.String("podtrace.event.source", e.Source))
		}
		if e.Count > 1 {
			attrs = append(attrs, attribute.Int("podtrace.event.count", int(e.Count)))
		}
		b.add(e.Time, "event "+e.Type+" "+e.Reason+" #"+strconv.FormatUint(e.Seq, 10), attrs...)
	}
}

// dependents adds when each object the pod owned was first seen so, and
// when it was deleted.
func (b *builder) dependents() {
	for _, d := range b.lc.Dependents {
		attrs := []attribute.KeyValue{
			attribute.String("podtrace.dependent.kind", d.Kind),
			attribute.String("podtrace.dependent.name", d.Name),
			attribute.String("podtrace.dependent.uid", d.UID),
			attribute.Bool("podtrace.dependent.block_owner_deletion", d.Blocking),
		}
		b.add(d.Since, "dependent "+d.Kind+" "+d.Name+" owned by the pod", attrs...)
		if !d.Deleted.IsZero() {
			b.add(d.Deleted, "dependent "+d.Kind+" "+d.Name+" deleted", attrs...)
		}
	}
}

// gaps adds the stretches the recorder did not observe.
func (b *builder) gaps() {
	for _, g := range b.lc.Gaps {
		attrs := []attribute.KeyValue{
			attribute.String("podtrace.gap.cause", string(g.Cause)),
			attribute.String("podtrace.gap.end", stamp(g.End)),
			attribute.String("podtrace.gap", g.Text()),
		}
		b.add(g.Start, "gap in observation from "+stamp(g.Start), attrs...)
	}
}

// phaseEvents adds an event for each phase reached: the stages' spans
// start at some, the others (ready, still present) are only events.
func (b *builder) phaseEvents() {
	for _, ph := range b.lc.Phases {
		b.add(ph.Time, "phase "+ph.Name, phaseAttrs(ph)...)
	}
}

// findings adds each finding to the root span, at its end: what the
// recording shows, as of then.
func (b *builder) findings() {
	at := b.root.EndTime
	for _, f := range b.lc.Findings {
		attrs := []attribute.KeyValue{
			attribute.String("podtrace.finding", f.ID),
			attribute.String("podtrace.finding.severity", f.Severity.String()),
			attribute.String("podtrace.finding.headline", f.Headline),
		}
		if len(f.Evidence) > 0 {
			ev := make([]string, len(f.Evidence))
			for i, e := range f.Evidence {
				ev[i] = evidenceText(e)
			}
			attrs = append(attrs, attribute.StringSlice("podtrace.finding.evidence", ev))
		}
		if len(f.Suspects) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.finding.suspects", webhookTexts(f.Suspects)))
		}
		if len(f.Next) > 0 {
			attrs = append(attrs, attribute.StringSlice("podtrace.finding.next", f.Next))
		}
		if f.Mechanism != "" {
			attrs = append(attrs, attribute.String("podtrace.finding.mechanism", f.Mechanism))
		}
		if f.Actor != nil {
			attrs = append(attrs, attribute.String("podtrace.finding.actor", f.Actor.Label()))
		}
		b.root.Events = append(b.root.Events, sdktrace.Event{Name: "finding " + f.ID + " (" + f.Severity.String() + ")", Time: at, Attributes: attrs})
	}
}

// canonical puts a span's attributes in key order, and its events in
// name order, each name made unique within the span, their attributes in
// key order: the order Jaeger's query service sorts a stored trace into,
// in place. A span sent again is then the same, byte for byte, as the one
// stored, and a query's deduplication (by a hash of the span) drops it.
// Backends show events in time order whatever their order on the wire.
func canonical(s *tracetest.SpanStub) {
	sortAttrs(s.Attributes)
	// A repeated name is numbered in time order.
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].Time.Before(s.Events[j].Time) })
	seen := map[string]int{}
	for i := range s.Events {
		e := &s.Events[i]
		if n := seen[e.Name]; n > 0 {
			seen[e.Name] = n + 1
			e.Name += " (" + strconv.Itoa(n+1) + ")"
		} else {
			seen[e.Name] = 1
		}
		sortAttrs(e.Attributes)
	}
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].Name < s.Events[j].Name })
}

func sortAttrs(attrs []attribute.KeyValue) {
	sort.SliceStable(attrs, func(i, j int) bool { return attrs[i].Key < attrs[j].Key })
}

// stepWhat names how the i-th revision was seen.
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

// storyField reports whether a field set at creation is listed in the
// creation's event: what tells the pod's story (its owners, finalizers,
// images, node, pull secrets), not every default.
func storyField(path string) bool {
	for _, f := range []string{"metadata.labels", "metadata.ownerReferences", "metadata.finalizers",
		"spec.imagePullSecrets", "spec.nodeName", "spec.serviceAccountName", "status.phase"} {
		if rest, ok := strings.CutPrefix(path, f); ok && (rest == "" || rest[0] == '[' || rest[0] == '.') {
			return true
		}
	}
	for _, f := range []string{"spec.containers[", "spec.initContainers["} {
		if strings.HasPrefix(path, f) && (strings.HasSuffix(path, "].image") || strings.HasSuffix(path, "]")) {
			return true
		}
	}
	return false
}

// containerImage shows a container added whole at creation by its image,
// the part of it that tells the story.
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

// changeText writes a change on one line: "+ PATH  NEW", "- PATH  OLD",
// "~ PATH  OLD -> NEW", with its manager when the revision had several
// actors, and why it is unknown when it is (and the revision's actor does
// not already say so).
func changeText(c diff.Change, showManager, stepUnknown bool) string {
	var s string
	switch c.Op {
	case diff.OpAdd:
		s = "+ " + c.Path
		if c.New != "" {
			s += "  " + shorten(c.New)
		}
	case diff.OpRemove:
		s = "- " + c.Path
		if c.Old != "" {
			s += "  " + shorten(c.Old)
		}
	default:
		s = "~ " + c.Path + "  " + shorten(c.Old) + " -> " + shorten(c.New)
	}
	switch {
	case c.Basis == diff.BasisUnknown && !stepUnknown:
		if len(c.Candidates) > 1 {
			s += "  (unknown: one of " + strings.Join(c.Candidates, ", ") + ")"
		} else {
			s += "  (unknown: removed by a request that left no field manager)"
		}
	case showManager && c.Manager != "":
		s += "  (" + c.Manager + ")"
	}
	return s
}

func actorsText(as []diff.Actor) string {
	if len(as) == 0 {
		return "unknown"
	}
	labels := make([]string, len(as))
	for i := range as {
		labels[i] = as[i].Label()
	}
	return strings.Join(labels, " and ")
}

// webhookTexts describes admission webhooks and policies, one line each.
func webhookTexts(ws []admission.Webhook) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		var s string
		if w.IsPolicy() {
			s = fmt.Sprintf("%s %q (binding %s): failurePolicy %s, %s", w.Kind, w.Name, w.Configuration, w.FailurePolicy, w.Rules)
		} else {
			s = fmt.Sprintf("%s %q (configuration %s): failurePolicy %s, %s",
				strings.TrimSuffix(w.Kind, "Configuration"), w.Name, w.Configuration, w.FailurePolicy, w.Rules)
		}
		if w.NamespaceSelector != "" {
			s += ", namespaceSelector " + w.NamespaceSelector
		}
		if w.ObjectSelector != "" {
			s += ", objectSelector " + w.ObjectSelector
		}
		out[i] = s
	}
	return out
}

func evidenceText(e explain.Evidence) string {
	var parts []string
	if !e.Time.IsZero() {
		parts = append(parts, stamp(e.Time))
	}
	if e.Seq != 0 {
		parts = append(parts, "#"+strconv.FormatUint(e.Seq, 10))
	}
	return strings.Join(append(parts, e.Text), " ")
}

// maxValue bounds a value shown in an attribute: a change's value or an
// event's message.
const maxValue = 256

func shorten(s string) string {
	if len(s) <= maxValue {
		return s
	}
	cut := maxValue
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	return s[:cut] + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func uniq(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
