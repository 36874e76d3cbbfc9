package diff

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Actor is a writer of one revision, read from its managedFields entry.
type Actor struct {
	Manager     string    `json:"manager"`
	Operation   string    `json:"operation,omitempty"` // Update or Apply
	Subresource string    `json:"subresource,omitempty"`
	Time        time.Time `json:"time,omitempty"`
	// Who says in plain words what the manager is.
	Who string `json:"who"`
}

// APIServer is the actor of a change that no field manager owns: a deletion,
// defaulting, or an admission plugin or webhook.
var APIServer = Actor{Manager: "", Who: "the API server"}

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
	a := Actor{Manager: m.Manager, Operation: string(m.Operation), Subresource: m.Subresource, Who: describe(m)}
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

// writers returns the managedFields entries of cur that are new or changed
// since prev: the writers of cur.
func writers(prev, cur []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for i := range cur {
		m := &cur[i]
		if p := entryOf(prev, keyOf(*m), i); p != nil && timeEqual(p.Time, m.Time) && fieldsEqual(p.FieldsV1, m.FieldsV1) {
			continue
		}
		out = append(out, *m)
	}
	return out
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
		s = parseFields(f)
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

// attribute sets the Manager of each change to the writer that owns its
// field: after the change for additions and changes, before it for removals.
// It returns the actors of the step: the writers, or the API server when no
// manager wrote.
func attribute(changes []Change, prev, cur []metav1.ManagedFieldsEntry) []Actor {
	var sets fieldSets
	return sets.attribute(changes, prev, cur)
}

// attribute is attribute with the field sets parsed so far.
func (sets *fieldSets) attribute(changes []Change, prev, cur []metav1.ManagedFieldsEntry) []Actor {
	ws := writers(prev, cur)
	if len(ws) == 0 {
		return []Actor{APIServer}
	}
	var buf [2 * 4]fieldSet
	setsBuf := buf[:0]
	if len(ws) > len(buf)/2 {
		setsBuf = make([]fieldSet, 0, 2*len(ws))
	}
	after, before := setsBuf[:len(ws)], setsBuf[len(ws):2*len(ws)]
	for i, w := range ws {
		after[i] = sets.parse(w.FieldsV1)
		if p := entryOf(prev, keyOf(w), -1); p != nil {
			before[i] = sets.parse(p.FieldsV1)
		} else {
			before[i] = nil
		}
	}
	for i := range changes {
		c := &changes[i]
		for j, w := range ws {
			set := after[j]
			if c.Op == OpRemove {
				set = before[j]
			}
			if set.owns(c.fields) {
				c.Manager = w.Manager
				break
			}
		}
		if c.Manager == "" && len(ws) == 1 && c.Op == OpRemove {
			// A writer that removed a field it owned no longer lists it,
			// and one that never owned it removed it all the same.
			c.Manager = ws[0].Manager
		}
	}
	actors := make([]Actor, len(ws))
	for i, w := range ws {
		actors[i] = actorOf(w)
	}
	return actors
}
