package diff

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/podtrace/podtrace/store"
)

// Input is everything recorded about one pod incarnation, as loaded from a
// trace by the caller.
type Input struct {
	// Pod holds the pod's revisions in Seq order.
	Pod []store.Record
	// Events holds the revisions of core/v1 Events about the pod.
	Events []store.Record
	// Related holds the revisions of the objects in the pod's story, keyed by
	// UID: its dependents (objects whose ownerReferences name the pod), its
	// owners, its node and namespace.
	Related map[string][]store.Record
	// OwnerEvents holds the revisions of core/v1 Events about the pod's
	// owners and their owners (a ReplicaSet's SuccessfulDelete, a
	// Deployment's ScalingReplicaSet), keyed by the owner's UID, in Seq
	// order.
	OwnerEvents map[string][]store.Record
	// Nodes holds the revisions of every node recorded in the trace, keyed
	// by UID, for a pod never bound to one: which of them could have taken
	// it. NodePods holds, for such a pod, revisions of the other pods
	// recorded bound to a node, keyed by UID: at least every revision where
	// a pod's node, requests or phase changed, and its deletion
	// (OccupancyRevisions), to tell what each node had left.
	Nodes    map[string][]store.Record
	NodePods map[string][]store.Record
	// Webhooks holds the revisions of Mutating- and
	// ValidatingWebhookConfigurations recorded in the trace.
	Webhooks map[string][]store.Record
	// Policies holds the revisions of the admission policies and their
	// bindings (PolicyKinds) recorded in the trace, keyed by UID.
	Policies map[string][]store.Record
	// Budgets holds the revisions of the PodDisruptionBudgets recorded in
	// the pod's namespace, keyed by UID: which of them guarded it when it
	// was evicted, or refused its eviction.
	Budgets map[string][]store.Record
	// Claims holds the revisions of the PersistentVolumeClaims the pod's
	// volumes name (persistentVolumeClaim and ephemeral volumes), keyed by
	// UID, and ClaimEvents the revisions of the core/v1 Events about each
	// (the volume controllers say there why a claim is Pending), keyed by
	// the claim's UID. StorageClasses holds the revisions of every
	// StorageClass recorded, keyed by UID, for a pod that names a claim.
	// All nil for a pod that names none.
	Claims, ClaimEvents, StorageClasses map[string][]store.Record
	// Audit holds the audit.k8s.io/v1 Events about the pod imported from the
	// API server's audit log (podtrace import --audit-log), oldest first.
	Audit []store.Record
	// Sessions are the recording sessions of the trace; the last one's end
	// (store.Session.End: its stop, or its last sign of life) is when the
	// recording ended.
	Sessions []store.Session
	// Gaps are the trace's gaps in observation (store.DB.Gaps).
	Gaps []store.Gap
	// End, if not zero, overrides the end of the recording the sessions
	// tell (tests). A reader's clock is never the end of a recording.
	End time.Time
	// Histories, when set, holds the decoded histories that the replays of
	// a command's pods share (DecodeHistory): their owners, their owners'
	// events, their namespace. Nil decodes them for this pod alone.
	Histories *Histories
}

// RelatedNamed returns the recorded revisions of the related object of
// the given kind and name (the pod's Namespace, its Node), or nil.
func (in Input) RelatedNamed(kind, name string) []store.Record {
	for _, recs := range in.Related {
		if len(recs) > 0 && recs[0].Kind == kind && recs[0].Name == name {
			return recs
		}
	}
	return nil
}

// NodeName returns the node the pod of recs (its revisions in order) was
// last bound to: the spec.nodeName of the last revision that has one, as
// json.Unmarshal reads it. It looks at spec.nodeName alone, without
// decoding the rest of each revision.
func NodeName(recs []store.Record) string {
	for i := len(recs) - 1; i >= 0; i-- {
		if n := nodeNameOf(recs[i].Object); n != "" {
			return n
		}
	}
	return ""
}

// nodeNameOf returns the spec.nodeName of a pod's JSON. What the quick
// path does not follow (escaped keys, keys that differ only in case, which
// encoding/json would match too, values of other types, escaped names)
// goes to json.Unmarshal. Unlike it, the quick path does not validate the
// members it skips.
func nodeNameOf(raw []byte) string {
	if spec, ok := memberOf(raw, "spec"); ok {
		if name, ok := memberOf(spec, "nodeName"); ok && simpleString(name) {
			return string(name[1 : len(name)-1])
		}
	}
	var p struct {
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return ""
	}
	return p.Spec.NodeName
}

// memberOf returns the value of the member named key of the JSON object
// raw: the last one, as encoding/json takes. It reports false when raw is
// not an object it can split simply, when no member is named key, or when
// a member's key has an escape or matches key only case-insensitively.
func memberOf(raw []byte, key string) ([]byte, bool) {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, false
	}
	var value []byte
	found := false
	for i = skipSpace(raw, i+1); i < len(raw) && raw[i] != '}'; {
		if raw[i] != '"' {
			return nil, false
		}
		end, ok := stringEnd(raw, i+1)
		if !ok {
			return nil, false
		}
		k := raw[i+1 : end-1]
		if bytes.IndexByte(k, '\\') >= 0 || bytes.EqualFold(k, []byte(key)) && string(k) != key {
			return nil, false
		}
		i = skipSpace(raw, end)
		if i == len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		vend, ok := skipValue(raw, i)
		if !ok {
			return nil, false
		}
		if string(k) == key {
			value, found = raw[i:vend], true
		}
		i = skipSpace(raw, vend)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return value, found && i < len(raw)
}

// OccupancyRevisions returns the revisions of a pod (recs, in order) that
// tell what it held on a node: each revision bound to a node whose node,
// phase or resources differ from the one kept before it, and its deletion
// once it was bound. A pod never bound returns none.
func OccupancyRevisions(recs []store.Record) []store.Record {
	type occupancy struct {
		Spec struct {
			NodeName       string            `json:"nodeName"`
			Containers     []json.RawMessage `json:"containers"`
			InitContainers []json.RawMessage `json:"initContainers"`
			Overhead       json.RawMessage   `json:"overhead"`
			Resources      json.RawMessage   `json:"resources"`
		} `json:"spec"`
		Status struct {
			Phase     string          `json:"phase"`
			Resources json.RawMessage `json:"resources"`
		} `json:"status"`
	}
	var out []store.Record
	var last []byte
	for _, r := range recs {
		deleted := r.Type == store.Deleted || r.Type == store.DeletedUnknown
		if deleted && len(out) > 0 {
			out = append(out, r)
			continue
		}
		if nodeNameOf(r.Object) == "" {
			continue
		}
		var o occupancy
		if json.Unmarshal(r.Object, &o) != nil {
			continue
		}
		key, _ := json.Marshal(o)
		if bytes.Equal(key, last) {
			continue
		}
		last = key
		out = append(out, r)
	}
	return out
}
