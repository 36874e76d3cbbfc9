package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// Lifecycle is the replayed life of one pod incarnation.
type Lifecycle struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Node      string `json:"node,omitempty"`
	// Outcome is where the pod ended: Pending, Running, Succeeded, Failed,
	// Terminating (deletion requested, still present) or Deleted.
	Outcome string `json:"outcome"`
	// RecordingEnd is when the recording ended: the last session's stop,
	// or its recorder's last sign of life if it has not stopped (recording
	// still, or killed). Never the reader's clock.
	RecordingEnd time.Time `json:"recordingEnd"`
	// Terminating is how long the pod had been observed terminating when
	// the recording ended, gaps in observation left out; zero unless
	// Outcome is Terminating.
	Terminating Duration `json:"terminating,omitempty"`
	// Gaps are the stretches of the pod's recorded life that the recorder
	// did not observe.
	Gaps []Gap `json:"gaps,omitempty"`

	Phases     []Phase     `json:"phases"`
	Steps      []Step      `json:"steps"`
	Events     []Event     `json:"events"`
	Dependents []Dependent `json:"dependents,omitempty"`
	// Admission compares the pod as asked for with the pod as stored.
	Admission *Admission `json:"admission,omitempty"`
	// Audit is what the API server's audit log says about the pod, when
	// one was imported into the trace (podtrace import --audit-log).
	Audit *Audit `json:"audit,omitempty"`
	// Redacted counts the values a redact.Redactor replaced, by rule: filled
	// by the caller that redacts (diff itself never does).
	Redacted map[string]int `json:"redacted,omitempty"`

	// pods are the decoded revisions, parallel to Steps (Pods).
	pods []*corev1.Pod
}

// Pods returns the decoded revisions, parallel to Steps. They share the
// parts they have in common (see decoder): read only.
func (lc *Lifecycle) Pods() []*corev1.Pod { return lc.pods }

// Duration is a time.Duration that marshals as text ("4m10s").
type Duration time.Duration

func (d Duration) String() string { return time.Duration(d).Round(time.Second).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// Phase names a milestone of the pod's life.
type Phase struct {
	Name   string    `json:"name"`
	Time   time.Time `json:"time"`
	Seq    uint64    `json:"seq,omitempty"`
	Detail string    `json:"detail,omitempty"`
	// Actor says who brought the pod to this phase, when known.
	Actor string `json:"actor,omitempty"`
}

// OutcomeGone is the outcome of a pod found deleted after a gap in
// observation (a recorder restart, a relist): it was deleted at some time
// in between, by a request no one saw.
const OutcomeGone = "Gone (not observed)"

// The phase names, in the order a pod usually reaches them.
const (
	PhaseCreated           = "created"
	PhaseAlreadyPresent    = "already present"
	PhaseScheduled         = "scheduled"
	PhaseStarted           = "containers started"
	PhaseReady             = "ready"
	PhaseSucceeded         = "completed"
	PhaseFailed            = "failed"
	PhaseDeletionRequested = "deletion requested"
	PhaseDeleted           = "deleted"
	PhaseStillPresent      = "still present when the recording ended"
)

// Step is one recorded revision of the pod and what changed in it.
type Step struct {
	Seq             uint64          `json:"seq"`
	Time            time.Time       `json:"time"`
	Type            store.EventType `json:"type"`
	ResourceVersion string          `json:"resourceVersion"`
	Actors          []Actor         `json:"actors"`
	Changes         []Change        `json:"changes"`
	// Unobserved says the revision came after a gap in observation: what
	// changed happened somewhere in between, not at Time.
	Unobserved string `json:"unobserved,omitempty"`
	// Phases names the phases this revision reached.
	Phases []string `json:"phases,omitempty"`
}

// Event is one occurrence of a Kubernetes Event about the pod.
type Event struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Type    string    `json:"type"` // Normal or Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Source  string    `json:"source,omitempty"`
	Count   int32     `json:"count,omitempty"`
}

// Dependent is an object whose ownerReferences named the pod.
type Dependent struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	UID  string `json:"uid"`
	// Since is when it was first seen owned by the pod.
	Since time.Time `json:"since"`
	// Deleted is when its deletion was seen; zero if it still existed.
	Deleted time.Time `json:"deleted,omitempty"`
	// Blocking says whether the owner reference had blockOwnerDeletion set.
	Blocking bool `json:"blockOwnerDeletion,omitempty"`
}

// Options control a replay.
type Options struct {
	Admission AdmissionOptions
}

// Replay turns a pod's recorded history into its Lifecycle.
func Replay(in Input, opts Options) (*Lifecycle, error) {
	if len(in.Pod) == 0 {
		return nil, fmt.Errorf("no revisions to replay")
	}
	first := in.Pod[0]
	lc := &Lifecycle{Namespace: first.Namespace, Name: first.Name, UID: first.UID,
		Steps: make([]Step, 0, len(in.Pod)), pods: make([]*corev1.Pod, 0, len(in.Pod))}
	var prev *corev1.Pod
	var dec decoder
	var w walker
	sets := fieldSets{shared: in.Histories}
	for _, rec := range in.Pod {
		pod, err := dec.decode(rec)
		if err != nil {
			return nil, err
		}
		step := Step{Seq: rec.Seq, Time: rec.Observed, Type: rec.Type, ResourceVersion: rec.ResourceVersion}
		// The last state of a deletion: what changed since the revision
		// before it is still worth showing (a final status update, or the
		// finalizer whose removal let the pod go, can ride along).
		step.Changes = w.nextChanges(prev, pod)
		step.Actors = sets.attribute(step.Changes, managed(prev), pod.ManagedFields)
		deleted := rec.Type == store.Deleted || rec.Type == store.DeletedUnknown
		if prev == nil && !deleted && rec.Type != store.Initial {
			step.Actors = creators(pod)
		}
		if len(step.Actors) == 0 || deleted && len(step.Changes) == 0 {
			step.Actors = []Actor{serverActor(step, prev, pod)}
		}
		lc.Steps = append(lc.Steps, step)
		lc.pods = append(lc.pods, pod)
		prev = pod
	}
	lc.RecordingEnd = recordingEnd(in)
	lc.gaps(in)
	lc.Events = ReplayEvents(in.Events)
	lc.Dependents = replayDependents(lc.UID, in.Related, in.Histories)
	lc.phases()
	lc.Admission = replayAdmission(lc, in, opts.Admission)
	applyAudit(lc, in, opts.Admission)
	return lc, nil
}

// serverActor names, from the Kubernetes semantics of the fields that
// changed, the request behind a revision that no field manager wrote:
// bindings and deletions do not touch managedFields. Anything else is
// unknown: a request that only removed fields leaves no entry, and the
// managers that lost them did not write.
func serverActor(step Step, prev, pod *corev1.Pod) Actor {
	has := func(path string, op Op) bool {
		for _, c := range step.Changes {
			if c.Path == path && c.Op == op {
				return true
			}
		}
		return false
	}
	switch {
	case step.Type == store.Initial && prev != nil && len(step.Changes) == 0:
		// A list after a restart or a relist showed it again as it was.
		return Actor{Who: "no one", Basis: BasisFieldSemantics, Detail: "unchanged; the recorder listed it again"}
	case step.Type == store.DeletedUnknown:
		// Found gone by a list after a gap: neither the request nor the
		// removal was seen.
		return Actor{Who: "unknown", Basis: BasisUnknown, Detail: "the deletion was not observed, the pod was found gone; the audit log names the client"}
	case step.Type == store.Deleted:
		// The watch says the object is gone from storage: the API server
		// removes it when no finalizer is left and the grace period is
		// over, whoever's request brought it there.
		return Actor{Who: "the API server", Basis: BasisFieldSemantics, Detail: "removing the pod: no finalizer left, grace period over"}
	case has("spec.nodeName", OpAdd):
		// spec.nodeName is set once, through the pods/binding subresource,
		// by the scheduler the pod names.
		return Actor{Subresource: "binding", Who: "the scheduler " + pod.Spec.SchedulerName, Basis: BasisFieldSemantics, Detail: "binding"}
	case has("metadata.deletionTimestamp", OpAdd):
		return Actor{Operation: deleteOperation, Who: "a DELETE request", Basis: BasisFieldSemantics, Detail: "deletionTimestamp set; the audit log names the client"}
	case has("metadata.deletionTimestamp", OpChange) && (pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds == 0):
		return Actor{Operation: deleteOperation, Who: "a DELETE with grace period 0", Basis: BasisFieldSemantics, Detail: "the kubelet confirming the containers stopped, or a forced delete"}
	}
	return UnknownActor(step)
}

func managed(p *corev1.Pod) []metav1.ManagedFieldsEntry {
	if p == nil {
		return nil
	}
	return p.ManagedFields
}

// creators returns the actor of a pod's first revision: the manager whose
// entry is the Update or Apply at creation.
func creators(p *corev1.Pod) []Actor {
	var out []Actor
	for _, m := range p.ManagedFields {
		if m.Subresource == "" {
			a := actorOf(m)
			a.Detail = "entry at creation"
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return []Actor{{Who: "unknown", Basis: BasisUnknown, Detail: "no managedFields entry at creation; the audit log names the client"}}
	}
	return out
}

// recordingEnd is when the recording of this history ended: the last
// session's stop, the caller's End, or the last record seen.
func recordingEnd(in Input) time.Time {
	if !in.End.IsZero() {
		return in.End
	}
	var end time.Time
	for _, s := range in.Sessions {
		if e := s.End(); e.After(end) {
			end = e
		}
	}
	last := in.Pod[len(in.Pod)-1].Observed
	for _, recs := range [][]store.Record{in.Events} {
		if n := len(recs); n > 0 && recs[n-1].Observed.After(last) {
			last = recs[n-1].Observed
		}
	}
	if last.After(end) {
		end = last
	}
	return end
}

// phases derives the named phases and the outcome from the revisions.
func (lc *Lifecycle) phases() {
	reached := map[string]bool{}
	add := func(i int, name, detail, actor string, t time.Time) {
		if reached[name] {
			return
		}
		reached[name] = true
		step := &lc.Steps[i]
		if t.IsZero() || step.Type != store.Initial {
			t = step.Time
		}
		lc.Phases = append(lc.Phases, Phase{Name: name, Time: t, Seq: step.Seq, Detail: detail, Actor: actor})
		step.Phases = append(step.Phases, name)
	}
	for i, pod := range lc.pods {
		step := lc.Steps[i]
		if i == 0 {
			if step.Type == store.Initial {
				add(i, PhaseAlreadyPresent, "created "+pod.CreationTimestamp.UTC().Format(time.RFC3339)+", before the recording began", "", pod.CreationTimestamp.Time)
			} else {
				add(i, PhaseCreated, ownerDetail(pod), WhoOf(step.Actors), pod.CreationTimestamp.Time)
			}
		}
		if pod.Spec.NodeName != "" {
			lc.Node = pod.Spec.NodeName
			add(i, PhaseScheduled, "to node "+pod.Spec.NodeName, WhoOf(ActorsFor(step, "spec.nodeName")), conditionTime(pod, corev1.PodScheduled))
		}
		if t, ok := started(pod); ok {
			add(i, PhaseStarted, "", "", t)
		}
		if cond(pod, corev1.PodReady) == corev1.ConditionTrue {
			add(i, PhaseReady, "", "", conditionTime(pod, corev1.PodReady))
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			add(i, PhaseSucceeded, exitDetail(pod), WhoOf(ActorsFor(step, "status.phase")), time.Time{})
		case corev1.PodFailed:
			add(i, PhaseFailed, strings.TrimSpace(pod.Status.Reason+" "+exitDetail(pod)), WhoOf(ActorsFor(step, "status.phase")), time.Time{})
		}
		if pod.DeletionTimestamp != nil {
			var requested time.Time
			if pod.DeletionGracePeriodSeconds != nil {
				requested = pod.DeletionTimestamp.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
			}
			add(i, PhaseDeletionRequested, deletionDetail(pod), "", requested)
		}
		if step.Type == store.Deleted || step.Type == store.DeletedUnknown {
			detail := ""
			if step.Type == store.DeletedUnknown {
				detail = "gone while not observed; the last state seen is shown"
				if step.Unobserved != "" {
					detail = step.Unobserved + "; the last state seen is shown"
				}
			}
			add(i, PhaseDeleted, detail, "", time.Time{})
		}
	}
	last := lc.pods[len(lc.pods)-1]
	lastStep := lc.Steps[len(lc.Steps)-1]
	switch {
	case lastStep.Type == store.DeletedUnknown:
		lc.Outcome = OutcomeGone
	case reached[PhaseDeleted]:
		lc.Outcome = "Deleted"
	case last.DeletionTimestamp != nil:
		lc.Outcome = "Terminating"
		if req, ok := lc.Phase(PhaseDeletionRequested); ok && lc.RecordingEnd.After(req.Time) {
			lc.Terminating = Duration(ObservedFor(lc.Gaps, req.Time, lc.RecordingEnd))
		}
	default:
		lc.Outcome = string(last.Status.Phase)
		if lc.Outcome == "" {
			lc.Outcome = "Pending"
		}
	}
	if !reached[PhaseDeleted] {
		detail := "phase " + string(last.Status.Phase)
		if lc.Outcome == "Terminating" {
			detail = "terminating for " + lc.Terminating.String()
			if len(last.Finalizers) > 0 {
				detail += ", finalizers [" + strings.Join(last.Finalizers, ", ") + "]"
			}
		}
		lc.Phases = append(lc.Phases, Phase{Name: PhaseStillPresent, Time: lc.RecordingEnd, Seq: lastStep.Seq, Detail: detail})
	}
}

// Phase returns the named phase if it was reached.
func (lc *Lifecycle) Phase(name string) (Phase, bool) {
	for _, p := range lc.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// Pod returns the decoded revision of step i. Revisions share the parts
// they have in common: do not modify it. It panics after DropRevisions.
func (lc *Lifecycle) Pod(i int) *corev1.Pod { return lc.pods[i] }

// DropRevisions lets go of what Replay keeps for its own rules: the
// decoded revisions (see Pod) and each change's path in managedFields
// notation (for attribution). Nothing that renders a lifecycle reads them:
// a caller that holds many lifecycles, as a report does, keeps only what is
// rendered (a thousand pods of a hundred revisions, revisions dropped: a
// peak live heap of 275 MB, 350 with the paths kept).
func (lc *Lifecycle) DropRevisions() {
	lc.pods = nil
	for i := range lc.Steps {
		for j := range lc.Steps[i].Changes {
			lc.Steps[i].Changes[j].fields = nil
		}
	}
}

// ActorsFor returns the actors of a step that own the change at path, or all
// of the step's actors when none does.
func ActorsFor(step Step, path string) []Actor {
	for _, c := range step.Changes {
		if c.Path == path && c.Manager != "" {
			for _, a := range step.Actors {
				if a.Manager == c.Manager {
					return []Actor{a}
				}
			}
		}
	}
	return step.Actors
}

func WhoOf(actors []Actor) string {
	var names []string
	for _, a := range actors {
		names = append(names, a.Label())
	}
	return strings.Join(names, "; ")
}

func ownerDetail(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return "owned by " + o.Kind + " " + o.Name
		}
	}
	return ""
}

func cond(p *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func conditionTime(p *corev1.Pod, t corev1.PodConditionType) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// started reports whether any container has started, and the earliest start.
func started(p *corev1.Pod) (time.Time, bool) {
	var t time.Time
	ok := false
	for _, s := range p.Status.ContainerStatuses {
		var at time.Time
		switch {
		case s.State.Running != nil:
			at = s.State.Running.StartedAt.Time
		case s.State.Terminated != nil && !s.State.Terminated.StartedAt.IsZero():
			at = s.State.Terminated.StartedAt.Time
		default:
			continue
		}
		if !ok || at.Before(t) {
			t = at
		}
		ok = true
	}
	return t, ok
}

func exitDetail(p *corev1.Pod) string {
	var parts []string
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("%s exited %d (%s)", s.Name, t.ExitCode, t.Reason))
		}
	}
	return strings.Join(parts, ", ")
}

// deletionDetail says what the deletion request asked for: the grace period,
// the finalizers then present, and the propagation policy they reveal.
func deletionDetail(p *corev1.Pod) string {
	var parts []string
	if g := p.DeletionGracePeriodSeconds; g != nil {
		parts = append(parts, fmt.Sprintf("grace period %ds", *g))
	}
	if len(p.Finalizers) > 0 {
		parts = append(parts, "finalizers ["+strings.Join(p.Finalizers, ", ")+"]")
	}
	parts = append(parts, "propagation "+Propagation(p))
	return strings.Join(parts, ", ")
}

// Propagation infers the deletion propagation policy from the finalizers the
// API server adds on delete: foregroundDeletion for Foreground, orphan for
// Orphan, neither for Background (the default for pods).
func Propagation(p *corev1.Pod) string {
	for _, f := range p.Finalizers {
		switch f {
		case metav1.FinalizerDeleteDependents:
			return string(metav1.DeletePropagationForeground)
		case metav1.FinalizerOrphanDependents:
			return string(metav1.DeletePropagationOrphan)
		}
	}
	return string(metav1.DeletePropagationBackground) + " (no foregroundDeletion or orphan finalizer)"
}

// ReplayEvents turns Event revisions into occurrences: a new Event, or a
// higher count on a known one, is one occurrence.
func ReplayEvents(recs []store.Record) []Event {
	var out []Event
	var dec eventDecoder
	for i, rec := range recs {
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			continue // events expire; that is not news about the pod
		}
		// The count first: a revision whose count did not grow is dropped,
		// and the rest of it is not decoded.
		r := dec.revision(rec.UID)
		if dec.start(r, rec.Object) != nil {
			continue
		}
		count := r.f.count()
		if r.counted && count <= r.seen {
			continue
		}
		if dec.finish(r) != nil {
			continue
		}
		r.counted, r.seen = true, count
		// Events carry second-precision times; one seen while recording is
		// placed when it was seen, so it sorts right among the revisions.
		t := r.f.time(rec)
		if rec.Type != store.Initial && rec.Observed.After(t) {
			t = rec.Observed
		}
		if out == nil {
			// Room for all that are left: most revisions of an Event count.
			out = make([]Event, 0, len(recs)-i)
		}
		out = append(out, Event{
			Seq: rec.Seq, Time: t, Type: r.f.Type, Reason: r.f.Reason,
			Message: r.f.Message, Source: r.f.source(), Count: count,
		})
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out
}

// eventFields are the fields of a core/v1 Event that replayEvents reads,
// with the Event's JSON names: decoding them alone skips the metadata,
// managedFields and involvedObject that make most of an Event's bytes.
type eventFields struct {
	Type                string              `json:"type"`
	Reason              string              `json:"reason"`
	Message             string              `json:"message"`
	Count               int32               `json:"count"`
	Series              *corev1.EventSeries `json:"series"`
	Source              corev1.EventSource  `json:"source"`
	ReportingController string              `json:"reportingComponent"`
	FirstTimestamp      metav1.Time         `json:"firstTimestamp"`
	LastTimestamp       metav1.Time         `json:"lastTimestamp"`
	EventTime           metav1.MicroTime    `json:"eventTime"`
}

// eventKeys are the JSON names of eventFields, at the index of their
// eventKey constant.
var eventKeys = [numEventKeys]string{"type", "reason", "message", "count", "series", "source", "reportingComponent", "firstTimestamp", "lastTimestamp", "eventTime"}

// The fields of eventFields, by their index in eventKeys.
const (
	evType = iota
	evReason
	evMessage
	evCount
	evSeries
	evSource
	evReportingComponent
	evFirstTimestamp
	evLastTimestamp
	evEventTime
	numEventKeys
)

// eventKeyTypes are the decodeTypes of the fields of eventFields, by key.
var eventKeyTypes = func() (dts [numEventKeys]*decodeType) {
	var f eventFields
	for k := range dts {
		dts[k] = decodeTypeOf(reflect.TypeOf(f.ptr(k)).Elem())
	}
	return dts
}()

// eventKey returns the index in eventKeys of key, or -1.
func eventKey(key []byte) int {
	switch string(key) {
	case "type":
		return evType
	case "reason":
		return evReason
	case "message":
		return evMessage
	case "count":
		return evCount
	case "series":
		return evSeries
	case "source":
		return evSource
	case "reportingComponent":
		return evReportingComponent
	case "firstTimestamp":
		return evFirstTimestamp
	case "lastTimestamp":
		return evLastTimestamp
	case "eventTime":
		return evEventTime
	}
	return -1
}

// foldsToEventKey reports whether key, not one of eventKeys, differs from
// one only in case, as encoding/json matches names (bytes.EqualFold): it
// would decode that member into the field.
func foldsToEventKey(key []byte) bool {
	ascii := true
	for _, c := range key {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	for _, k := range eventKeys {
		// ASCII folds to ASCII of the same length, and an ASCII letter to
		// itself or its other case; only other bytes (ſ for s, the Kelvin
		// sign for k) fold to a name of another length.
		if ascii && (len(k) != len(key) || key[0]|0x20 != k[0]) {
			continue
		}
		if strings.EqualFold(k, string(key)) {
			return true
		}
	}
	return false
}

// ptr returns a pointer to the field of f at index k of eventKeys.
func (f *eventFields) ptr(k int) any {
	switch k {
	case evType:
		return &f.Type
	case evReason:
		return &f.Reason
	case evMessage:
		return &f.Message
	case evCount:
		return &f.Count
	case evSeries:
		return &f.Series
	case evSource:
		return &f.Source
	case evReportingComponent:
		return &f.ReportingController
	case evFirstTimestamp:
		return &f.FirstTimestamp
	case evLastTimestamp:
		return &f.LastTimestamp
	case evEventTime:
		return &f.EventTime
	}
	panic("no Event field " + fmt.Sprint(k))
}

// set sets the field of f at index k of eventKeys to that of g.
func (f *eventFields) set(k int, g *eventFields) {
	switch k {
	case evType:
		f.Type = g.Type
	case evReason:
		f.Reason = g.Reason
	case evMessage:
		f.Message = g.Message
	case evCount:
		f.Count = g.Count
	case evSeries:
		f.Series = g.Series
	case evSource:
		f.Source = g.Source
	case evReportingComponent:
		f.ReportingController = g.ReportingController
	case evFirstTimestamp:
		f.FirstTimestamp = g.FirstTimestamp
	case evLastTimestamp:
		f.LastTimestamp = g.LastTimestamp
	case evEventTime:
		f.EventTime = g.EventTime
	}
}

var noEventFields eventFields

// count is the Event's count: its series' when it has one.
func (f *eventFields) count() int32 {
	if f.Series != nil {
		return f.Series.Count
	}
	return f.Count
}

// eventDecoder decodes what replayEvents needs of the revisions of Events,
// in order: the members of eventKeys, without parsing the metadata and
// managedFields that make most of an Event's bytes. Each
// Event (by UID) keeps the bytes each of its fields was last decoded from:
// a member whose bytes are those again is not decoded again, and a member
// that starts with those bytes and is an object, a list or a string is
// known to end where they end without being scanned. A revision is
// decoded in two steps: start, its count and series; finish, the rest.
// Nothing is allocated for a revision once its Event is known, unless a
// member changed and decodes to new memory (a message, a series).
type eventDecoder struct {
	revs    map[string]*eventRevision // by UID
	strings interner
}

// eventRevision is what an eventDecoder keeps of an Event: the revision
// being decoded, and what was decoded of the earlier ones.
type eventRevision struct {
	// f is the revision's fields, as far as decoded.
	f eventFields
	// at holds the revision's member of each key of eventKeys, nil if
	// absent.
	at [numEventKeys][]byte
	// b is the revision's JSON.
	b []byte
	// whole says that f was decoded by encoding/json from b, whole.
	whole bool
	// last holds, for each key of eventKeys, the field last decoded, and
	// raw the bytes it was decoded from (nil: none).
	last eventFields
	raw  [numEventKeys][]byte
	// seen is the count of the last occurrence replayEvents took, if
	// counted.
	seen    int32
	counted bool
}

// revision returns what d keeps of the Event uid.
func (d *eventDecoder) revision(uid string) *eventRevision {
	if r := d.revs[uid]; r != nil {
		return r
	}
	if d.revs == nil {
		d.revs = map[string]*eventRevision{}
	}
	r := &eventRevision{}
	d.revs[uid] = r
	return r
}

// start makes b the revision of r and decodes its count and series into
// r.f (all of it, when b goes to encoding/json whole).
func (d *eventDecoder) start(r *eventRevision, b []byte) error {
	r.f, r.b, r.whole = eventFields{}, b, false
	if r.split(b) && d.decodeMember(r, evCount) && d.decodeMember(r, evSeries) {
		return nil
	}
	return r.decodeWhole()
}

// finish decodes the rest of the revision that start began.
func (d *eventDecoder) finish(r *eventRevision) error {
	if r.whole {
		return nil
	}
	for k := range numEventKeys {
		if k != evCount && k != evSeries && !d.decodeMember(r, k) {
			return r.decodeWhole()
		}
	}
	return nil
}

// decodeWhole decodes r's revision by encoding/json, whole, for its
// verdict on what the split does not take plainly.
func (r *eventRevision) decodeWhole() error {
	r.f, r.whole = eventFields{}, true
	return json.Unmarshal(r.b, &r.f)
}

// decodeMember decodes the member k of r's revision into r.f, or copies it
// from r.last when its bytes are those last decoded; false if it does not
// decode.
func (d *eventDecoder) decodeMember(r *eventRevision, k int) bool {
	raw := r.at[k]
	if raw == nil {
		return true // absent: zero
	}
	if last := r.raw[k]; !(len(last) == len(raw) && (&last[0] == &raw[0] || bytes.Equal(last, raw))) {
		r.raw[k] = nil
		r.last.set(k, &noEventFields)
		p := r.last.ptr(k)
		// null leaves each field zero (the times' UnmarshalJSON makes them
		// zero): no need for encoding/json to say so.
		if string(raw) != "null" && !d.strings.decodeLeaf(reflect.ValueOf(p).Elem(), eventKeyTypes[k], raw) && json.Unmarshal(raw, p) != nil {
			r.last.set(k, &noEventFields)
			return false
		}
		r.raw[k] = raw
	}
	r.f.set(k, &r.last)
	return true
}

// split finds the members of b named in eventKeys, into r.at; false if b
// is not an object that splits plainly: one with escaped or repeated
// names of eventKeys, a name that differs from one of them only in case
// (encoding/json would take it), or bytes after it. A member that starts
// with the bytes last decoded for its key, an object, a list or a string,
// ends where they end; the others are scanned to their end (skipValue), not
// validated: encoding/json validates a member when it is decoded.
func (r *eventRevision) split(b []byte) bool {
	r.at = [numEventKeys][]byte{}
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return false
		}
		n := bytes.IndexByte(b[i+1:], '"')
		if n < 0 {
			return false
		}
		key := b[i+1 : i+1+n]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i = skipSpace(b, i+n+2)
		if i == len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		k := eventKey(key)
		if k < 0 && foldsToEventKey(key) {
			return false
		}
		end := 0
		if k >= 0 {
			if r.at[k] != nil {
				return false // repeated: encoding/json decodes the second into the first
			}
			if last := r.raw[k]; len(last) >= 2 && (last[0] == '{' || last[0] == '[' || last[0] == '"') &&
				len(b)-i >= len(last) && bytes.Equal(b[i:i+len(last)], last) {
				// The bytes last decoded: at holds those, so decodeMember
				// needs no second look.
				end, r.at[k] = i+len(last), last
			}
		}
		if end == 0 {
			var ok bool
			if end, ok = skipValue(b, i); !ok {
				return false
			}
			if k >= 0 {
				r.at[k] = b[i:end]
			}
		}
		i = skipSpace(b, end)
		if i == len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

// time is when the Event last happened, or rec's time if it carries none.
func (f *eventFields) time(rec store.Record) time.Time {
	switch {
	case f.Series != nil && !f.Series.LastObservedTime.IsZero():
		return f.Series.LastObservedTime.Time
	case !f.LastTimestamp.IsZero():
		return f.LastTimestamp.Time
	case !f.EventTime.IsZero():
		return f.EventTime.Time
	case !f.FirstTimestamp.IsZero():
		return f.FirstTimestamp.Time
	}
	return rec.Observed
}

// source is who reported the Event.
func (f *eventFields) source() string {
	if f.ReportingController != "" {
		return f.ReportingController
	}
	if f.Source.Host != "" {
		return f.Source.Component + " on " + f.Source.Host
	}
	return f.Source.Component
}

// namedRefs is the set of UIDs that some record of a history refers to.
type namedRefs map[string]bool

func refsOf(recs []store.Record) namedRefs {
	out := namedRefs{}
	for _, r := range recs {
		for _, ref := range r.Refs {
			out[ref] = true
		}
	}
	return out
}

// replayDependents finds the related objects whose ownerReferences named the
// pod, when each was first seen so, and when it was deleted.
func replayDependents(podUID string, related map[string][]store.Record, h *Histories) []Dependent {
	var out []Dependent
	for uid, recs := range related {
		// Most of the related objects are the pod's owners, whose long
		// histories the pods of a command share: whether any of their
		// records names the pod is asked of the set of UIDs they name,
		// made once per command, not of each record for each pod.
		if len(recs) > 0 && !Memo(h, recs, func() namedRefs { return refsOf(recs) })[podUID] {
			continue
		}
		var d *Dependent
		for _, rec := range recs {
			// A record's Refs hold the UIDs of its owners: only a revision
			// that names the pod is worth decoding (a Node's or a
			// Namespace's hundreds of revisions never are).
			if d == nil && slices.Contains(rec.Refs, podUID) {
				var m metav1.PartialObjectMetadata
				if err := json.Unmarshal(rec.Object, &m); err != nil {
					continue
				}
				for _, o := range m.OwnerReferences {
					if string(o.UID) == podUID && d == nil {
						d = &Dependent{Kind: rec.Kind, Name: rec.Name, UID: uid, Since: rec.Observed,
							Blocking: o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion}
					}
				}
			}
			if d != nil && (rec.Type == store.Deleted || rec.Type == store.DeletedUnknown) {
				d.Deleted = rec.Observed
			}
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Since.Equal(out[j].Since) {
			return out[i].Since.Before(out[j].Since)
		}
		return out[i].Kind+"/"+out[i].Name < out[j].Kind+"/"+out[j].Name
	})
	return out
}
