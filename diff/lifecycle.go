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
	// RecordingEnd is when the recording ended (or now, while recording).
	RecordingEnd time.Time `json:"recordingEnd"`
	// Terminating is how long the pod had been terminating when the
	// recording ended; zero unless Outcome is Terminating.
	Terminating Duration `json:"terminating,omitempty"`

	Phases     []Phase     `json:"phases"`
	Steps      []Step      `json:"steps"`
	Events     []Event     `json:"events"`
	Dependents []Dependent `json:"dependents,omitempty"`
	Findings   []Finding   `json:"findings,omitempty"`
	// Admission compares the pod as asked for with the pod as stored.
	Admission *Admission `json:"admission,omitempty"`
	// Audit is what the API server's audit log says about the pod, when
	// one was imported into the trace (podtrace import --audit-log).
	Audit *Audit `json:"audit,omitempty"`
	// Redacted counts the values a Redactor replaced, by rule.
	Redacted map[string]int `json:"redacted,omitempty"`

	// pods are the decoded revisions, parallel to Steps, for the rules.
	// They share the parts they have in common (see decoder): read only.
	pods []*corev1.Pod
}

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
	sets := fieldSets{}
	for _, rec := range in.Pod {
		pod, err := dec.decode(rec)
		if err != nil {
			return nil, err
		}
		step := Step{Seq: rec.Seq, Time: rec.Observed, Type: rec.Type, ResourceVersion: rec.ResourceVersion}
		switch rec.Type {
		case store.Deleted, store.DeletedUnknown:
			// The last state: what changed since the revision before it is
			// still worth showing (a final status update can ride along).
			step.Changes = w.nextChanges(prev, pod)
			step.Actors = sets.attribute(step.Changes, managed(prev), pod.ManagedFields)
			if len(step.Changes) == 0 {
				step.Actors = []Actor{APIServer}
			}
		default:
			step.Changes = w.nextChanges(prev, pod)
			step.Actors = sets.attribute(step.Changes, managed(prev), pod.ManagedFields)
			if prev == nil && rec.Type != store.Initial {
				step.Actors = creators(pod)
			}
		}
		if len(step.Actors) == 1 && step.Actors[0] == APIServer {
			step.Actors = []Actor{serverActor(step, prev, pod)}
		}
		lc.Steps = append(lc.Steps, step)
		lc.pods = append(lc.pods, pod)
		prev = pod
	}
	lc.RecordingEnd = recordingEnd(in)
	lc.Events = replayEvents(in.Events)
	lc.Dependents = replayDependents(lc.UID, in.Related)
	lc.phases()
	lc.Admission = replayAdmission(lc, in, opts.Admission)
	lc.Findings = diagnose(lc, in)
	applyAudit(lc, in, opts.Admission)
	return lc, nil
}

// serverActor names, from the Kubernetes semantics of the fields that
// changed, the request behind a revision that no field manager wrote:
// bindings, deletions and the kubelet's final delete do not touch
// managedFields.
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
	case step.Type == store.Deleted || step.Type == store.DeletedUnknown:
		return Actor{Who: "the API server, removing the pod (no finalizer left, grace period over)"}
	case has("spec.nodeName", OpAdd):
		// spec.nodeName is set once, through the pods/binding subresource,
		// by the scheduler the pod names.
		return Actor{Subresource: "binding", Who: fmt.Sprintf("the scheduler (%s), binding", pod.Spec.SchedulerName)}
	case has("metadata.deletionTimestamp", OpAdd):
		return Actor{Operation: deleteOperation, Who: "a DELETE request (the client is named only in the audit log)"}
	case has("metadata.deletionTimestamp", OpChange) && (pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds == 0):
		return Actor{Who: "a DELETE with grace period 0 (the kubelet confirming the containers stopped, or a forced delete)"}
	}
	return APIServer
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
			out = append(out, actorOf(m))
		}
	}
	if len(out) == 0 {
		return []Actor{APIServer}
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
		if s.Stopped.After(end) {
			end = s.Stopped
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
				add(i, PhaseCreated, ownerDetail(pod), whoOf(step.Actors), pod.CreationTimestamp.Time)
			}
		}
		if pod.Spec.NodeName != "" {
			lc.Node = pod.Spec.NodeName
			add(i, PhaseScheduled, "to node "+pod.Spec.NodeName, whoOf(actorsFor(step, "spec.nodeName")), conditionTime(pod, corev1.PodScheduled))
		}
		if t, ok := started(pod); ok {
			add(i, PhaseStarted, "", "", t)
		}
		if cond(pod, corev1.PodReady) == corev1.ConditionTrue {
			add(i, PhaseReady, "", "", conditionTime(pod, corev1.PodReady))
		}
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			add(i, PhaseSucceeded, exitDetail(pod), whoOf(actorsFor(step, "status.phase")), time.Time{})
		case corev1.PodFailed:
			add(i, PhaseFailed, strings.TrimSpace(pod.Status.Reason+" "+exitDetail(pod)), whoOf(actorsFor(step, "status.phase")), time.Time{})
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
				detail = "the watch missed the deletion; the last state seen is shown"
			}
			add(i, PhaseDeleted, detail, "", time.Time{})
		}
	}
	last := lc.pods[len(lc.pods)-1]
	lastStep := lc.Steps[len(lc.Steps)-1]
	switch {
	case reached[PhaseDeleted]:
		lc.Outcome = "Deleted"
	case last.DeletionTimestamp != nil:
		lc.Outcome = "Terminating"
		if req, ok := lc.phase(PhaseDeletionRequested); ok && lc.RecordingEnd.After(req.Time) {
			lc.Terminating = Duration(lc.RecordingEnd.Sub(req.Time))
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

// phase returns the named phase if it was reached.
func (lc *Lifecycle) phase(name string) (Phase, bool) {
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

// actorsFor returns the actors of a step that own the change at path, or all
// of the step's actors when none does.
func actorsFor(step Step, path string) []Actor {
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

func whoOf(actors []Actor) string {
	var names []string
	for _, a := range actors {
		names = append(names, a.Who)
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

// replayEvents turns Event revisions into occurrences: a new Event, or a
// higher count on a known one, is one occurrence.
func replayEvents(recs []store.Record) []Event {
	var out []Event
	counts := map[string]int32{}
	var dec eventDecoder
	for _, rec := range recs {
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			continue // events expire; that is not news about the pod
		}
		ev, err := dec.decode(rec.UID, rec.Object)
		if err != nil {
			continue
		}
		count := ev.Count
		if ev.Series != nil {
			count = ev.Series.Count
		}
		if seen, ok := counts[rec.UID]; ok && count <= seen {
			continue
		}
		counts[rec.UID] = count
		// Events carry second-precision times; one seen while recording is
		// placed when it was seen, so it sorts right among the revisions.
		t := eventTime(ev, rec)
		if rec.Type != store.Initial && rec.Observed.After(t) {
			t = rec.Observed
		}
		out = append(out, Event{
			Seq: rec.Seq, Time: t, Type: ev.Type, Reason: ev.Reason,
			Message: ev.Message, Source: eventSource(ev), Count: count,
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
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

// eventKeys are the JSON names of eventFields.
var eventKeys = []string{"type", "reason", "message", "count", "series", "source", "reportingComponent", "firstTimestamp", "lastTimestamp", "eventTime"}

// decodeEvent decodes what replayEvents needs of an Event's JSON. It splits
// the object first (decode.go) and decodes only those members, so the
// metadata and managedFields are skipped, not parsed; JSON the split does
// not take plainly goes through encoding/json whole.
func decodeEvent(b []byte) (*corev1.Event, error) {
	var d eventDecoder
	return d.decode("", b)
}

// eventDecoder is decodeEvent for the revisions of Events in order: an
// Event's revision is split against its previous one (decode.go), and
// the members whose bytes did not change are not decoded again.
type eventDecoder struct {
	prev    map[string]*eventRevision // by UID
	split   splitter
	strings interner
}

// eventRevision is an Event's revision, split, and what was decoded of it.
type eventRevision struct {
	obj object
	f   eventFields
}

func (d *eventDecoder) decode(uid string, b []byte) (*corev1.Event, error) {
	var prev *eventRevision
	if uid != "" {
		prev = d.prev[uid]
	}
	cur := &eventRevision{}
	f := &cur.f
	if !cur.decodeMembers(d, b, prev) {
		cur = nil
		f = &eventFields{}
		if err := json.Unmarshal(b, f); err != nil {
			return nil, err
		}
	}
	if uid != "" {
		if d.prev == nil {
			d.prev = map[string]*eventRevision{}
		}
		if cur != nil {
			d.prev[uid] = cur
		} else {
			delete(d.prev, uid)
		}
	}
	if d.split.blocks >= compactBlocks {
		// Free the blocks the kept revisions were split into (see splitter).
		for _, r := range d.prev {
			r.obj = d.split.compact(r.obj)
		}
	}
	return &corev1.Event{Type: f.Type, Reason: f.Reason, Message: f.Message, Count: f.Count, Series: f.Series,
		Source: f.Source, ReportingController: f.ReportingController,
		FirstTimestamp: f.FirstTimestamp, LastTimestamp: f.LastTimestamp, EventTime: f.EventTime}, nil
}

// field returns a pointer to the field of f whose JSON name is key, or nil.
func (f *eventFields) field(key []byte) any {
	switch string(key) {
	case "type":
		return &f.Type
	case "reason":
		return &f.Reason
	case "message":
		return &f.Message
	case "count":
		return &f.Count
	case "series":
		return &f.Series
	case "source":
		return &f.Source
	case "reportingComponent":
		return &f.ReportingController
	case "firstTimestamp":
		return &f.FirstTimestamp
	case "lastTimestamp":
		return &f.LastTimestamp
	case "eventTime":
		return &f.EventTime
	}
	return nil
}

// decodeMembers fills r.f from the members of b named in eventKeys, and
// keeps b split in r.obj; false if b does not split plainly, a member
// fails to decode, or a key differs from one of eventKeys only in case
// (encoding/json would take it). A member whose bytes are those of the
// previous revision prev (or nil) is copied from it.
func (r *eventRevision) decodeMembers(d *eventDecoder, b []byte, prev *eventRevision) bool {
	var prevObj object
	if prev != nil {
		prevObj = prev.obj
	}
	obj, ok := d.split.objectAgainst(b, prevObj)
	if !ok {
		return false
	}
	r.obj = obj
	for i, m := range obj {
		dst := r.f.field(m.key)
		if dst == nil {
			for _, k := range eventKeys {
				if strings.EqualFold(k, string(m.key)) {
					return false
				}
			}
			continue
		}
		v := reflect.ValueOf(dst).Elem()
		if prev != nil {
			if pm := prevObj.find(m.key, i); pm != nil && (m.same || bytes.Equal(pm.value, m.value)) {
				v.Set(reflect.ValueOf(prev.f.field(m.key)).Elem())
				continue
			}
		}
		if d.strings.decodeLeaf(v, decodeTypeOf(v.Type()), m.value) {
			continue
		}
		if json.Unmarshal(m.value, dst) != nil {
			return false
		}
	}
	return true
}

func eventTime(ev *corev1.Event, rec store.Record) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return rec.Observed
}

func eventSource(ev *corev1.Event) string {
	if ev.ReportingController != "" {
		return ev.ReportingController
	}
	if ev.Source.Host != "" {
		return ev.Source.Component + " on " + ev.Source.Host
	}
	return ev.Source.Component
}

// replayDependents finds the related objects whose ownerReferences named the
// pod, when each was first seen so, and when it was deleted.
func replayDependents(podUID string, related map[string][]store.Record) []Dependent {
	var out []Dependent
	for uid, recs := range related {
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
