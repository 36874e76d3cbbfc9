package store

import (
	"encoding/json"
	"time"
)

// EventType says how the recorder came to see one revision of an object.
type EventType string

const (
	// Initial marks an object that was already present when recording began:
	// it came from the informer's initial list, so it is not a creation.
	Initial EventType = "Initial"
	// Added is an object created while recording.
	Added EventType = "Added"
	// Updated is a new revision of a recorded object.
	Updated EventType = "Updated"
	// Deleted is the deletion of an object, with its last known state.
	Deleted EventType = "Deleted"
	// DeletedUnknown is a deletion the watch missed (the informer relisted and
	// the object was gone): the object is the last state the recorder saw, not
	// the state at deletion.
	DeletedUnknown EventType = "DeletedFinalStateUnknown"
)

// Record is one observed revision of one Kubernetes object. It is the unit the
// tracer produces, the store keeps and diff replays.
type Record struct {
	// Seq is the record's position in the trace, assigned by the store when it
	// is written; it increases strictly across the whole file.
	Seq uint64 `json:"seq"`
	// Session is the recording session that saw the record (see Session).
	Session uint32 `json:"session"`
	// Observed is when the recorder received the revision.
	Observed time.Time `json:"observed"`
	Type     EventType `json:"type"`

	// APIVersion and Kind name the object's type, e.g. "v1" "Pod",
	// "apps/v1" "ReplicaSet", "admissionregistration.k8s.io/v1"
	// "MutatingWebhookConfiguration".
	APIVersion      string `json:"apiVersion"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	UID             string `json:"uid"`
	ResourceVersion string `json:"resourceVersion"`

	// Refs are the UIDs of the objects this one is about or belongs to: an
	// Event's involvedObject, the owners in ownerReferences. The store indexes
	// them, so the records about a pod (its events, its dependents) are found
	// from the pod's UID.
	Refs []string `json:"refs,omitempty"`

	// Object is the object as JSON, apiVersion and kind set, managedFields
	// kept. For Secrets and other metadata-only kinds it holds the metadata
	// alone; Secret data is never recorded. A DeletedUnknown record may come
	// without one: Write then stores the object's last recorded revision
	// (and sets Object to it), or its identity if it has none.
	Object json.RawMessage `json:"object"`
	// Proto says Object holds the protobuf of a v1 Pod (the bytes
	// k8s.io/api/core/v1.Pod's Marshal writes, without the API server's
	// envelope) instead of its JSON. The recorder hands pods so: it has
	// their protobuf from the watch, and writing JSON was most of what
	// recording added to the informers' own work. The store keeps them so,
	// and every record read from a trace holds JSON (Proto false), the
	// bytes encoding/json writes for the typed pod (see RegisterPodJSON).
	Proto bool `json:"-"`
}

// Session describes one run of `podtrace record` into a trace file.
type Session struct {
	ID            uint32    `json:"id"`
	Server        string    `json:"server"`        // API server URL
	ServerVersion string    `json:"serverVersion"` // e.g. v1.37.2
	Context       string    `json:"context,omitempty"`
	Namespace     string    `json:"namespace,omitempty"` // empty: all namespaces
	Selector      string    `json:"selector,omitempty"`  // pod label selector
	Args          []string  `json:"args,omitempty"`      // the command line, for the record
	Started       time.Time `json:"started"`
	Stopped       time.Time `json:"stopped,omitempty"` // zero while recording or if it crashed
	// Alive is the last time the recorder was known to be alive: its last
	// flush (a Writer stamps it at every flush, and at least every
	// AliveEvery while idle). A session that never stopped ends there.
	Alive   time.Time `json:"alive,omitzero"`
	Version string    `json:"podtraceVersion"`
	// Unrecorded are the kinds the recorder could not watch (not permitted,
	// or not served by the API server), e.g. ValidatingAdmissionPolicy:
	// the trace cannot tell whether any existed.
	Unrecorded []string `json:"unrecorded,omitempty"`
}

// End is when the session's recording ended as far as the trace tells:
// its stop or, for a session that never stopped (one recording now, or one
// that was killed), its last sign of life; never the reader's clock.
func (s Session) End() time.Time {
	switch {
	case !s.Stopped.IsZero():
		return s.Stopped
	case s.Alive.After(s.Started):
		return s.Alive
	}
	return s.Started
}

// Open reports whether the session has no stop time: it is recording now,
// or its recorder was killed (see Recorder to tell which).
func (s Session) Open() bool { return s.Stopped.IsZero() }

// GapCause says why the recorder did not observe the cluster for a while.
type GapCause string

const (
	// GapRecorderDown: no recorder ran, between one session's end and the
	// next one's start.
	GapRecorderDown GapCause = "recorder-down"
	// GapAPIServer: the API server did not answer the recorder's requests.
	GapAPIServer GapCause = "api-server-unreachable"
	// GapWatch: a watch failed or expired and its kind was listed again;
	// what changed meanwhile is known only from the new list.
	GapWatch GapCause = "watch-restarted"
	// GapWriteFailed: records were dropped because the trace could not be
	// written (a full disk) for longer than the recorder could hold them.
	GapWriteFailed GapCause = "write-failed"
)

// Gap is a stretch of recorded time in which the recorder did not observe
// the cluster, or some kinds of it: changes made meanwhile are known only
// from what was listed afterwards. Readers show gaps in timelines and keep
// them out of "silence" and stuck durations.
type Gap struct {
	// Session is the session the gap happened in; for GapRecorderDown,
	// the session that began after it.
	Session uint32    `json:"session"`
	Cause   GapCause  `json:"cause"`
	Start   time.Time `json:"start"`
	// End is when observation resumed; zero if it had not when the
	// session ended (the session's End closes it).
	End time.Time `json:"end,omitzero"`
	// Resource names the kind that was not observed, e.g. "pods"; empty
	// for every kind.
	Resource string `json:"resource,omitempty"`
	// Detail is the cause in the words of whoever reported it: the error,
	// the previous session's state.
	Detail string `json:"detail,omitempty"`
	// Dropped counts the records lost to a GapWriteFailed gap.
	Dropped int `json:"dropped,omitempty"`
}

// Prune says what retention (Options.Retention) removed from a trace: the
// history of objects gone from the cluster, pruned while a session
// recorded. Each session has at most one Prune per reason, updated by each
// of its prune transactions. A pruned object is not in the trace at all:
// readers say that the history of pods gone before Before was pruned.
type Prune struct {
	Session uint32      `json:"session"`
	Reason  PruneReason `json:"reason"`
	// Retain is the session's Retention.Age (for PruneAge), MaxBytes its
	// Retention.MaxBytes (for PruneSize).
	Retain   time.Duration `json:"retain,omitempty"`
	MaxBytes int64         `json:"maxBytes,omitempty"`
	// First and Last are when the first and the last of its transactions
	// ran.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Pods, Objects (pods included), Records and Bytes (of keys and values)
	// count what was pruned.
	Pods    int   `json:"pods"`
	Objects int   `json:"objects"`
	Records int   `json:"records"`
	Bytes   int64 `json:"bytes"`
	// OldestGone and NewestGone are the first and the last deletion of
	// the pods pruned.
	OldestGone time.Time `json:"oldestGone,omitzero"`
	NewestGone time.Time `json:"newestGone,omitzero"`
	// Before: every pod gone before it was pruned. For PruneAge, the
	// last cutoff (the last pruning's time less Retain); for PruneSize,
	// NewestGone (the oldest gone go first).
	Before time.Time `json:"before,omitzero"`
}
