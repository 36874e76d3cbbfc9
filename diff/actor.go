package diff

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Basis says how an actor is known: a closed set.
type Basis string

const (
	// BasisManagedFields: a manager's managedFields entry is new at this
	// revision, gained fields in it, or its time moved to it.
	BasisManagedFields Basis = "managedFields"
	// BasisFieldSemantics: what changed can only have been made one way
	// (the pods/binding subresource sets spec.nodeName, a DELETE sets
	// metadata.deletionTimestamp), and that way names the actor.
	BasisFieldSemantics Basis = "field-semantics"
	// BasisAuditLog: the API server's audit log holds the request that
	// produced the revision, with its user and user agent.
	BasisAuditLog Basis = "audit-log"
	// BasisEvent: the component's own Event says it did it (the ReplicaSet
	// controller's SuccessfulDelete on the ReplicaSet, "Deleted pod: NAME").
	BasisEvent Basis = "event"
	// BasisUnknown: the evidence does not decide who it was.
	BasisUnknown Basis = "unknown"
)

// Actor is a writer of one revision, and how it is known.
type Actor struct {
	Manager     string    `json:"manager"`
	Operation   string    `json:"operation,omitempty"` // Update or Apply
	Subresource string    `json:"subresource,omitempty"`
	Time        time.Time `json:"time,omitempty"`
	// Who says in plain words what the manager is; "unknown" when the
	// evidence does not decide.
	Who string `json:"who"`
	// Basis says how Who is known, Detail what of it shows it ("entry
	// gained fields at this revision", "binding", "a request that left no
	// field manager; the audit log names the client").
	Basis  Basis  `json:"basis"`
	Detail string `json:"detail,omitempty"`
	// User is the identity the request was authorized as, from the audit
	// log: the impersonated user when Impersonator made the request as
	// someone else (kubectl --as, a proxy). UserAgent is the client's.
	User         string `json:"user,omitempty"`
	Impersonator string `json:"impersonator,omitempty"`
	UserAgent    string `json:"userAgent,omitempty"`
}

// Label is Who with how it is known, for one line of text: "kubectl apply
// (managedFields)", "the scheduler default-scheduler (binding)",
// "unknown (a request that left no field manager; the audit log names the
// client)".
func (a *Actor) Label() string { return string(a.AppendLabel(nil)) }

// AppendLabel appends what Label returns.
func (a *Actor) AppendLabel(b []byte) []byte {
	b = append(b, a.Who...)
	switch {
	case a.Basis == BasisManagedFields:
		return append(b, " (managedFields)"...)
	case a.Basis == BasisAuditLog && a.Detail == "":
		return append(b, " (audit log)"...)
	case a.Basis == BasisAuditLog:
		return append(append(append(b, " (audit log: "...), a.Detail...), ')')
	case a.Detail != "":
		return append(append(append(b, " ("...), a.Detail...), ')')
	}
	return b
}

// noManager is the Detail of an unknown actor: a request that only removes
// fields leaves no managedFields entry (its manager gains no field, and
// the API server drops an entry whose set becomes empty), and a manager
// that lost the field did not write.
const noManager = "a request that left no field manager; the audit log names the client"

// UnknownActor is the actor of a revision that no field manager's entry
// and no field's semantics account for.
func UnknownActor(step Step) Actor {
	for _, c := range step.Changes {
		if c.Op == OpRemove {
			return Actor{Who: "unknown", Basis: BasisUnknown, Detail: noManager}
		}
	}
	return Actor{Who: "unknown", Basis: BasisUnknown, Detail: "no managedFields entry changed at this revision; the audit log names the client"}
}

// wellKnown maps the field managers of Kubernetes components to plain words.
// A manager is the user agent's first word unless a client sets its own.
var wellKnown = map[string]string{
	"kube-scheduler":            "the scheduler",
	"kubelet":                   "the kubelet",
	"kwok":                      "the kubelet (kwok)",
	"kube-controller-manager":   "a controller in kube-controller-manager",
	"kube-apiserver":            "the API server",
	"kubectl":                   "kubectl",
	"kubectl-client-side-apply": "kubectl apply",
	"kubectl-create":            "kubectl create",
	"kubectl-edit":              "kubectl edit",
	"kubectl-patch":             "kubectl patch",
	"kubectl-label":             "kubectl label",
	"kubectl-annotate":          "kubectl annotate",
	"kubectl-rollout":           "kubectl rollout",
}

// describe returns a manager's plain description, qualified by what the
// subresource says it did.
func describe(m metav1.ManagedFieldsEntry) string {
	who, ok := wellKnown[m.Manager]
	if !ok {
		who = m.Manager
		if strings.HasPrefix(who, "kubectl") {
			who = "kubectl (" + who + ")"
		}
	}
	switch m.Subresource {
	case "status":
		who += ", status update"
	case "binding":
		who += ", binding"
	case "":
	default:
		who += ", " + m.Subresource
	}
	return who
}

func actorOf(m metav1.ManagedFieldsEntry) Actor {
	a := Actor{Manager: m.Manager, Operation: string(m.Operation), Subresource: m.Subresource, Who: describe(m), Basis: BasisManagedFields}
	if m.Time != nil {
		a.Time = m.Time.Time
	}
	return a
}

// managerKey identifies a managedFields entry.
type managerKey struct{ manager, operation, subresource string }

func keyOf(m metav1.ManagedFieldsEntry) managerKey {
	return managerKey{m.Manager, string(m.Operation), m.Subresource}
}

// writer is a managedFields entry of cur whose manager wrote at this
// revision, and why it is taken for one.
type writer struct {
	entry metav1.ManagedFieldsEntry
	// after and before are its field sets at this revision and at the one
	// before (nil if it had no entry).
	after, before fieldSet
	detail        string
}

// writers returns the managedFields entries of cur whose manager wrote at
// this revision: an entry that is new, or whose time moved, or that gained
// a field. An entry that only lost fields, its time unchanged, was not
// written: the API server takes a field out of every manager's set when a
// request removes it or another manager takes it over, and moves only the
// time of the request's own manager (and only when that request set or
// changed a field: one that only removes leaves no trace in managedFields).
func (sets *fieldSets) writers(prev, cur []metav1.ManagedFieldsEntry) []writer {
	var out []writer
	for i := range cur {
		m := &cur[i]
		p := entryOf(prev, keyOf(*m), i)
		if p != nil && timeEqual(p.Time, m.Time) && fieldsEqual(p.FieldsV1, m.FieldsV1) {
			continue
		}
		w := writer{entry: *m, after: sets.parse(m.FieldsV1)}
		switch {
		case p == nil:
			w.detail = "new entry at this revision"
		case !timeEqual(p.Time, m.Time):
			w.before = sets.parse(p.FieldsV1)
			w.detail = "entry updated at this revision"
		default:
			w.before = sets.parse(p.FieldsV1)
			if !gained(w.after, w.before) {
				continue // it only lost fields
			}
			w.detail = "entry gained fields at this revision"
		}
		out = append(out, w)
	}
	return out
}

// gained reports whether after holds a field that before does not: a
// member of the set (a leaf, or a node marked ".") missing from before.
func gained(after, before map[string]any) bool {
	for k, av := range after {
		bv, ok := before[k]
		if !ok {
			return true
		}
		am, _ := av.(map[string]any)
		bm, _ := bv.(map[string]any)
		if len(am) == 0 {
			// k itself is a member: before holds it as a leaf, or marks it.
			if _, marked := bm["."]; len(bm) != 0 && !marked {
				return true
			}
			continue
		}
		if len(bm) == 0 {
			// before held k whole (a leaf): what after lists under it
			// beyond k itself is new.
			for ck := range am {
				if ck != "." {
					return true
				}
			}
			continue
		}
		if gained(am, bm) {
			return true
		}
	}
	return false
}

// entryOf returns the entry of entries whose key is k, or nil; i is where
// to look first (entries keep their order from one revision to the next).
// A pod has a few field managers: a search costs less than a map.
func entryOf(entries []metav1.ManagedFieldsEntry, k managerKey, i int) *metav1.ManagedFieldsEntry {
	if 0 <= i && i < len(entries) && keyOf(entries[i]) == k {
		return &entries[i]
	}
	for j := len(entries) - 1; j >= 0; j-- { // the last, as a map of them kept
		if keyOf(entries[j]) == k {
			return &entries[j]
		}
	}
	return nil
}

func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

func fieldsEqual(a, b *metav1.FieldsV1) bool {
	if a == nil || b == nil {
		return a == b
	}
	return string(a.Raw) == string(b.Raw)
}

// fieldSet is a parsed fieldsV1 tree.
type fieldSet map[string]any

func parseFields(f *metav1.FieldsV1) fieldSet {
	if f == nil {
		return nil
	}
	var s fieldSet
	if err := json.Unmarshal(f.Raw, &s); err != nil {
		return nil
	}
	return s
}

// fieldSets keeps parsed fieldsV1 trees by their JSON: a manager's entry
// often lists the same fields revision after revision. The decoder shares
// an unchanged entry's FieldsV1 between revisions, so a tree is found by
// that pointer first, without hashing the JSON; the pointers are those of
// the revisions being replayed, alive as long as the fieldSets.
type fieldSets struct {
	byRaw map[string]fieldSet
	byPtr map[*metav1.FieldsV1]fieldSet
	// shared, when set, holds the trees parsed by the other replays of
	// the command: the pods of one template have the same managers' field
	// lists.
	shared *Histories
}

func (sets *fieldSets) parse(f *metav1.FieldsV1) fieldSet {
	if f == nil {
		return nil
	}
	if s, ok := sets.byPtr[f]; ok {
		return s
	}
	s, ok := sets.byRaw[string(f.Raw)]
	if !ok {
		s = sets.shared.fieldSet(f)
		if sets.byRaw == nil {
			sets.byRaw = map[string]fieldSet{}
		}
		sets.byRaw[string(f.Raw)] = s
	}
	if sets.byPtr == nil {
		sets.byPtr = map[*metav1.FieldsV1]fieldSet{}
	}
	sets.byPtr[f] = s
	return s
}

// owns reports whether the field set covers path p: p is in the tree, or a
// leaf of the tree is a prefix of p (an atomic field owned whole), or p is a
// prefix of owned fields (an element added whole).
func (s fieldSet) owns(p fieldPath) bool {
	if s == nil {
		return false
	}
	node := map[string]any(s)
	for _, step := range p {
		child, ok := node[step]
		if !ok {
			return false
		}
		m, _ := child.(map[string]any)
		if len(m) == 0 {
			return true // a leaf: the whole field is owned
		}
		node = m
	}
	return true
}

// attribute sets the Manager and Basis of each change from managedFields,
// and returns the actors of the step: the writers (see writers), none when
// no manager wrote. A field set or changed is the writer's whose entry owns
// it after the change. A field removed is owned by no one after, and the
// manager that owned it before is the one that lost it, not the one that
// removed it: a removal is the writer's when exactly one manager wrote at
// this revision, and unknown (Basis unknown, Manager empty) otherwise.
// A change left without a Manager and Basis is one managedFields does not
// track (metadata.generation, metadata.deletionTimestamp): the step's
// actors stand for it.
func attribute(changes []Change, prev, cur []metav1.ManagedFieldsEntry) []Actor {
	var sets fieldSets
	return sets.attribute(changes, prev, cur)
}

// attribute is attribute with the field sets parsed so far.
func (sets *fieldSets) attribute(changes []Change, prev, cur []metav1.ManagedFieldsEntry) []Actor {
	ws := sets.writers(prev, cur)
	for i := range changes {
		c := &changes[i]
		if c.Op == OpRemove {
			if len(ws) == 1 {
				c.Manager, c.Basis = ws[0].entry.Manager, BasisManagedFields
			} else {
				c.Basis = BasisUnknown
				for _, w := range ws {
					c.Candidates = append(c.Candidates, w.entry.Manager)
				}
			}
			continue
		}
		for _, w := range ws {
			if w.after.owns(c.fields) {
				c.Manager, c.Basis = w.entry.Manager, BasisManagedFields
				break
			}
		}
	}
	if len(ws) == 0 {
		return nil
	}
	actors := make([]Actor, len(ws))
	for i, w := range ws {
		actors[i] = actorOf(w.entry)
		actors[i].Detail = w.detail
	}
	return actors
}

// FieldWriter returns the actor whose managedFields entry wrote at this
// revision (cur, prev the revision before it; see writers) and owns the
// field at the path, in managedFields (fieldsV1) notation ("f:spec",
// "f:replicas"), or nil.
func FieldWriter(prev, cur []metav1.ManagedFieldsEntry, path ...string) *Actor {
	var sets fieldSets
	for _, w := range sets.writers(prev, cur) {
		if w.after.owns(fieldPath(path)) {
			a := actorOf(w.entry)
			a.Detail = w.detail
			return &a
		}
	}
	return nil
}
