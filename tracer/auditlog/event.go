package auditlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/podtrace/podtrace/store"
)

// Kept audit events are stored as records of this apiVersion and kind; the
// kind is also core/v1's Event, so the apiVersion tells them apart.
const (
	APIVersion = "audit.k8s.io/v1"
	Kind       = "Event"
)

// MaxLine bounds one line of an audit log: a RequestResponse event holds two
// copies of a pod, rarely more than a few hundred KiB.
const MaxLine = 64 << 20

// readVerbs are the requests about pods that podtrace does not keep:
// reads. Every other verb, on a pod or any of its subresources, is kept:
// the writes that shape a pod's life (create, update, patch, delete,
// deletecollection; binding, status, eviction, ephemeralcontainers,
// resize), and who connected to it (exec, attach, portforward).
var readVerbs = map[string]bool{"get": true, "list": true, "watch": true}

// verbDeleteCollection deletes a collection of pods: a namespace's, or
// those its selectors match (the namespace controller's, kubectl delete
// pods --all). Its objectRef names no pod.
const verbDeleteCollection = "deletecollection"

// kept reports whether podtrace keeps a request with verb about ref.
func kept(verb string, ref *objectRef) bool {
	return !readVerbs[verb] && ref.Resource == "pods" && ref.APIGroup == "" && (ref.Name != "" || verb == verbDeleteCollection && ref.Subresource == "")
}

// Event is what podtrace reads of a kept audit event.
type Event struct {
	AuditID     string
	Verb        string
	Subresource string
	Namespace   string
	Name        string
	// UID is the pod's UID as the event names it: objectRef.uid, else the
	// responseObject's, else the requestObject's; empty when it names none
	// (a denied PATCH, a CREATE that failed).
	UID string
	// ResourceVersion is the pod's as stored (the responseObject's), empty
	// when the request stored nothing.
	ResourceVersion string
	// Time is the stageTimestamp: when the response completed.
	Time time.Time

	// Collection says the request was a deletecollection of the pods of
	// Namespace (Name is empty): Selector holds its label and field
	// selectors, as its request URI gave them, and Listed the pods its
	// response listed (a RequestResponse audit level), each as deleted.
	Collection bool
	Selector   Selector
	Listed     []ListedPod
}

// Selector is a collection request's selectors.
type Selector struct {
	Labels, Fields string
}

// ListedPod is a pod a deletecollection's response listed.
type ListedPod struct {
	Name, UID, ResourceVersion string
}

// Skip is why a line is not kept.
type Skip struct {
	// Reason is counted in summaries, e.g. "not about a pod".
	Reason string
	// Warning, when set, is worth telling the user (damage in the log);
	// callers prefix it with the file and line number, and limit the
	// warnings they print per Reason.
	Warning string
}

// auditEvent is the part of an audit.k8s.io/v1 Event that Parse reads.
type auditEvent struct {
	Kind           string          `json:"kind"`
	APIVersion     string          `json:"apiVersion"`
	AuditID        string          `json:"auditID"`
	Stage          string          `json:"stage"`
	Verb           string          `json:"verb"`
	ObjectRef      *objectRef      `json:"objectRef"`
	StageTimestamp time.Time       `json:"stageTimestamp"`
	RequestURI     string          `json:"requestURI"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
}

// objectRef is the part of an event's objectRef that Parse reads.
type objectRef struct {
	Resource    string `json:"resource"`
	Subresource string `json:"subresource"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	UID         string `json:"uid"`
	APIGroup    string `json:"apiGroup"`
}

// objectMeta is the part of a request or response object Parse reads.
type objectMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// Want says whether the caller wants the events about the pod
// namespace/name (name empty: a deletecollection of the namespace's pods):
// "" if it does, else why not, a Skip's Reason. Parse asks before
// decoding the line in full.
type Want func(namespace, name string) (skipReason string)

// Parse reads one line of an audit log. It returns the event if podtrace
// keeps it (and want, when not nil, wants it), else why not.
func Parse(line []byte, want Want) (Event, *Skip) {
	b := bytes.TrimSpace(line)
	if len(b) == 0 {
		return Event{}, &Skip{Reason: "empty line"}
	}
	if skip := headerSkip(b, want); skip != nil {
		return Event{}, skip
	}
	return parseFull(b, want)
}

// parseFull decodes the whole line, trimmed and not empty.
func parseFull(b []byte, want Want) (Event, *Skip) {
	var ev auditEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		return Event{}, &Skip{Reason: "malformed JSON", Warning: fmt.Sprintf("not a JSON audit event (%v); skipped", err)}
	}
	if ev.Kind != Kind || ev.APIVersion != APIVersion {
		return Event{}, &Skip{Reason: "not an audit.k8s.io/v1 Event", Warning: describe(ev.APIVersion, ev.Kind) + ": only audit.k8s.io/v1 Events are read; skipped"}
	}
	if ev.AuditID == "" || ev.StageTimestamp.IsZero() {
		return Event{}, &Skip{Reason: "no auditID or stageTimestamp", Warning: "audit event without auditID or stageTimestamp; skipped"}
	}
	if ev.Stage != "ResponseComplete" {
		return Event{}, &Skip{Reason: "stage " + ev.Stage + " (only ResponseComplete is kept)"}
	}
	ref := ev.ObjectRef
	if skip := skipRef(ev.Verb, ref); skip != nil {
		return Event{}, skip
	}
	if want != nil {
		if reason := want(ref.Namespace, ref.Name); reason != "" {
			return Event{}, &Skip{Reason: reason}
		}
	}
	var req, resp objectMeta
	_ = json.Unmarshal(ev.RequestObject, &req)
	_ = json.Unmarshal(ev.ResponseObject, &resp)
	out := Event{
		AuditID:     ev.AuditID,
		Verb:        ev.Verb,
		Subresource: ref.Subresource,
		Namespace:   ref.Namespace,
		Name:        ref.Name,
		UID:         ref.UID,
		Time:        ev.StageTimestamp,
	}
	if out.UID == "" && resp.Kind == "Pod" {
		out.UID = resp.Metadata.UID
	}
	if out.UID == "" && req.Kind == "Pod" {
		out.UID = req.Metadata.UID
	}
	if resp.Kind == "Pod" {
		out.ResourceVersion = resp.Metadata.ResourceVersion
	}
	if ev.Verb == verbDeleteCollection {
		out.Collection = true
		out.Selector = selectorOf(ev.RequestURI)
		out.Listed = listed(ev.ResponseObject)
	}
	return out, nil
}

// skipRef says why a request with verb about ref is not kept, or nil.
func skipRef(verb string, ref *objectRef) *Skip {
	switch {
	case ref == nil || ref.Resource != "pods" || ref.APIGroup != "":
		return &Skip{Reason: "not about a pod"}
	case readVerbs[verb]:
		return &Skip{Reason: "pod request not kept (reads: get, list, watch)"}
	case !kept(verb, ref):
		return &Skip{Reason: "not about a pod"}
	}
	return nil
}

// selectorOf reads the label and field selectors of a request URI.
func selectorOf(uri string) Selector {
	u, err := url.Parse(uri)
	if err != nil {
		return Selector{}
	}
	q := u.Query()
	return Selector{Labels: q.Get("labelSelector"), Fields: q.Get("fieldSelector")}
}

// listed reads the pods of a list in a response: a PodList, or the
// PartialObjectMetadataList a metadata client asks for (the namespace
// controller's).
func listed(raw json.RawMessage) []ListedPod {
	if len(raw) == 0 {
		return nil
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name            string `json:"name"`
				UID             string `json:"uid"`
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	out := make([]ListedPod, 0, len(list.Items))
	for _, it := range list.Items {
		out = append(out, ListedPod{Name: it.Metadata.Name, UID: it.Metadata.UID, ResourceVersion: it.Metadata.ResourceVersion})
	}
	return out
}

// describe names what a JSON object of apiVersion and kind is, for a
// warning: "apiVersion audit.k8s.io/v1beta1, kind Event".
func describe(apiVersion, kind string) string {
	switch {
	case apiVersion == "" && kind == "":
		return "a JSON object without apiVersion or kind"
	case apiVersion == "":
		return fmt.Sprintf("no apiVersion, kind %s", kind)
	case kind == "":
		return fmt.Sprintf("apiVersion %s, no kind", apiVersion)
	}
	return fmt.Sprintf("apiVersion %s, kind %s", apiVersion, kind)
}

// IsEvent reports whether line is an audit event of any audit.k8s.io
// version (a JSON object of kind Event): kept or not, it is a line of an
// audit log. A file none of whose lines is one is not an audit log.
func IsEvent(line []byte) bool {
	b := bytes.TrimSpace(line)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var kind, apiVersion string
	if h, ok := scanHeader(b); ok {
		kind, apiVersion = string(h.kind), string(h.apiVersion)
	} else {
		var tm struct{ Kind, APIVersion string }
		if json.Unmarshal(b, &tm) != nil {
			return false
		}
		kind, apiVersion = tm.Kind, tm.APIVersion
	}
	return kind == Kind && strings.HasPrefix(apiVersion, "audit.k8s.io/")
}

// Record returns the record of ev, read from line, about the pod with
// podUID. It copies line: the caller may reuse it.
func (ev *Event) Record(line []byte, podUID string) store.Record {
	return ev.RecordOf(bytes.Clone(bytes.TrimSpace(line)), podUID)
}

// RecordOf is Record without the copy: the record's object is line, trimmed,
// which the caller leaves alone until the record is written (an importer
// that gathers a batch of lines in one buffer it reuses).
func (ev *Event) RecordOf(line []byte, podUID string) store.Record {
	return ev.RecordFor(line, []string{podUID})
}

// RecordFor is RecordOf for an event about several pods (a
// deletecollection): the record refers to each of them.
func (ev *Event) RecordFor(line []byte, podUIDs []string) store.Record {
	return store.Record{
		Observed:        ev.Time,
		Type:            store.Added,
		APIVersion:      APIVersion,
		Kind:            Kind,
		Namespace:       ev.Namespace,
		Name:            ev.AuditID,
		UID:             ev.AuditID,
		ResourceVersion: ev.ResourceVersion,
		Refs:            podUIDs,
		Object:          bytes.TrimSpace(line),
	}
}

// IsRecord reports whether a record's apiVersion and kind are a kept audit
// event's.
func IsRecord(apiVersion, kind string) bool { return apiVersion == APIVersion && kind == Kind }
