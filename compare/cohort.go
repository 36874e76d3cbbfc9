package compare

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

// Cohort is a set of pods (those a selector or an owner shares) grouped by
// how they ended, with a typical member of each group compared with one of
// the group that ended best.
type Cohort struct {
	Selector string `json:"selector,omitempty"`
	// Owner is what the pods share when the cohort is one of a trace's
	// (see Divided): their controller, or their generateName.
	Owner  *Owner  `json:"owner,omitempty"`
	Groups []Group `json:"groups"`
	// Comparisons compare the typical member of the first group (the one
	// that ended best) with that of each other group; in a trace's cohort
	// (Divided), with that of each group that ended badly.
	Comparisons []*Result `json:"comparisons,omitempty"`

	badOnly bool
}

// Group is the pods of a cohort that ended the same way.
type Group struct {
	// Ending is the outcome, with the finalizers that held the pods.
	Ending  string `json:"ending"`
	Members []Pod  `json:"members"`
	// Typical is the member compared: the median by creation time.
	Typical Pod `json:"typical"`

	score int
}

// Member is what grouping reads of one pod: which cohort it belongs to in
// its trace, how it ended and when it was created. It is small: a report
// keeps one for every pod it replays and replays again only the typical
// members of the cohorts it compares.
type Member struct {
	Pod Pod `json:"pod"`
	// Owner is the pod's cohort in the trace; nil if it has none.
	Owner   *Owner    `json:"owner,omitempty"`
	Ending  string    `json:"ending"`
	Created time.Time `json:"created"`

	score int
}

// Owner names the cohort of a pod in a trace: its controller (Job,
// ReplicaSet, StatefulSet, DaemonSet, ...), or without one the
// generateName its name was made from, in its namespace.
type Owner struct {
	Namespace string `json:"namespace"`
	// Kind is the controller's kind, empty for a generateName.
	Kind         string `json:"kind,omitempty"`
	Name         string `json:"name,omitempty"`
	UID          string `json:"uid,omitempty"`
	GenerateName string `json:"generateName,omitempty"`
}

// String names the owner as kubectl would: "ReplicaSet shop/web-7d9f8c6b5d",
// or "generateName ci/runner-".
func (o Owner) String() string {
	if o.Kind == "" {
		return "generateName " + o.Namespace + "/" + o.GenerateName
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// key identifies the owner: by UID (a controller of the same name
// re-created is another one).
func (o Owner) key() string {
	if o.Kind == "" {
		return o.Namespace + "\x00" + o.GenerateName
	}
	return o.Namespace + "\x00" + o.Kind + "\x00" + o.UID + "\x00" + o.Name
}

// MemberOf reads what grouping needs of a lifecycle: its owner, from the
// first revision that names a controller (or the generateName of its
// first), and how it ended.
func MemberOf(lc *explain.Lifecycle) Member {
	p := endingProfile(lc)
	m := Member{Pod: p.pod(), Ending: p.ending(), Created: p.created, score: endingScore(p)}
	m.Owner = ownerOf(lc)
	return m
}

// ownerOf reads the pod's controller, else its generateName, from the
// changes of its revisions.
func ownerOf(lc *explain.Lifecycle) *Owner {
	var generateName string
	for i, s := range lc.Steps {
		for _, c := range s.Changes {
			if c.Op == diff.OpRemove {
				continue
			}
			switch {
			case c.Path == "metadata.generateName" && i == 0:
				generateName = c.New
			case c.Path == "metadata.ownerReferences" || strings.HasPrefix(c.Path, "metadata.ownerReferences["):
				var refs []metav1.OwnerReference
				if c.Path == "metadata.ownerReferences" {
					_ = json.Unmarshal([]byte(c.New), &refs)
				} else {
					var ref metav1.OwnerReference
					if json.Unmarshal([]byte(c.New), &ref) == nil {
						refs = append(refs, ref)
					}
				}
				for _, r := range refs {
					if r.Controller != nil && *r.Controller {
						return &Owner{Namespace: lc.Namespace, Kind: r.Kind, Name: r.Name, UID: string(r.UID)}
					}
				}
			}
		}
	}
	if generateName != "" {
		return &Owner{Namespace: lc.Namespace, GenerateName: generateName}
	}
	return nil
}

// ending is the outcome with the finalizers that held the pod at the end.
func (p *profile) ending() string {
	ending := p.lc.Outcome
	if held := p.heldAtEnd(); len(held) > 0 {
		ending += ", held by finalizer " + strings.Join(held, ", ")
	}
	return ending
}

// Cohorts groups the pods by how they ended and compares a typical member
// of each group with one of the group that ended best.
func Cohorts(selector string, sides []Side) *Cohort {
	members := make([]Member, len(sides))
	byUID := map[string]Side{}
	for i, s := range sides {
		members[i] = MemberOf(s.Lifecycle)
		byUID[s.Lifecycle.UID] = s
	}
	c := &Cohort{Selector: selector, Groups: groups(members)}
	_ = c.CompareTypical(func(p Pod) (Side, error) { return byUID[p.UID], nil })
	return c
}

// groups sorts members into groups by how they ended: the group that ended
// best first, then the larger groups; each group's members by creation
// time, its typical member the median.
func groups(ms []Member) []Group {
	byEnding := map[string][]Member{}
	var order []string
	for _, m := range ms {
		if _, ok := byEnding[m.Ending]; !ok {
			order = append(order, m.Ending)
		}
		byEnding[m.Ending] = append(byEnding[m.Ending], m)
	}
	var out []Group
	for _, ending := range order {
		ms := byEnding[ending]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].Created.Before(ms[j].Created) })
		g := Group{Ending: ending}
		for _, m := range ms {
			g.Members = append(g.Members, m.Pod)
		}
		mid := ms[(len(ms)-1)/2]
		g.Typical, g.score = mid.Pod, mid.score
		out = append(out, g)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return len(out[i].Members) > len(out[j].Members)
	})
	return out
}

// CompareTypical compares the typical member of the group that ended best
// with that of each other group (of a trace's cohort, each group that
// ended badly: running pods beside deleted ones are no question), their
// sides given by side; it stops at the first error side returns.
func (c *Cohort) CompareTypical(side func(Pod) (Side, error)) error {
	c.Comparisons = nil
	pods := c.Typical()
	if len(pods) == 0 {
		return nil
	}
	best, err := side(pods[0])
	if err != nil {
		return err
	}
	for _, p := range pods[1:] {
		s, err := side(p)
		if err != nil {
			return err
		}
		c.Comparisons = append(c.Comparisons, Compare(best, s))
	}
	return nil
}

// Typical returns the pods CompareTypical compares, in its order: the
// typical member of the group that ended best, then those it is compared
// with. None when there is one group.
func (c *Cohort) Typical() []Pod {
	if len(c.Groups) < 2 {
		return nil
	}
	out := []Pod{c.Groups[0].Typical}
	for _, g := range c.Groups[1:] {
		if !c.badOnly || g.score < endedWell {
			out = append(out, g.Typical)
		}
	}
	return out
}

// Divided returns the cohorts of a trace (the pods that share a
// controller, or without one a generateName in a namespace) whose pods
// ended in more than one way, one of them badly: failed, pending or
// terminating at the end, held by a finalizer, or with a critical
// finding. A ReplicaSet scaled down, its pods deleted beside its running
// ones, is not divided. The cohorts come worst first (the lowest
// ending), then the larger, then by owner; their Comparisons are left to
// CompareTypical.
func Divided(ms []Member) []*Cohort {
	byOwner := map[string][]Member{}
	var order []string
	for _, m := range ms {
		if m.Owner == nil {
			continue
		}
		k := m.Owner.key()
		if _, ok := byOwner[k]; !ok {
			order = append(order, k)
		}
		byOwner[k] = append(byOwner[k], m)
	}
	var out []*Cohort
	for _, k := range order {
		ms := byOwner[k]
		gs := groups(ms)
		if len(gs) < 2 || gs[len(gs)-1].score >= endedWell {
			continue
		}
		owner := *ms[0].Owner
		out = append(out, &Cohort{Owner: &owner, Groups: gs, badOnly: true})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if wa, wb := a.Groups[len(a.Groups)-1].score, b.Groups[len(b.Groups)-1].score; wa != wb {
			return wa < wb
		}
		if na, nb := a.Size(), b.Size(); na != nb {
			return na > nb
		}
		return a.Owner.String() < b.Owner.String()
	})
	return out
}

// Size is the number of pods in the cohort.
func (c *Cohort) Size() int {
	n := 0
	for _, g := range c.Groups {
		n += len(g.Members)
	}
	return n
}

// Name is what the cohort is of: its owner, or its selector.
func (c *Cohort) Name() string {
	if c.Owner != nil {
		return c.Owner.String()
	}
	return c.Selector
}

// String sums up the groups: "Deleted (2), Terminating, held by finalizer
// foregroundDeletion (1)".
func (c *Cohort) String() string {
	var parts []string
	for _, g := range c.Groups {
		parts = append(parts, fmt.Sprintf("%s (%d)", g.Ending, len(g.Members)))
	}
	return strings.Join(parts, ", ")
}

// endedWell is the lowest endingScore of a pod that ended well: running,
// or gone or finished without a finalizer holding it, without a critical
// finding.
const endedWell = 2

// endingScore says how well a pod ended: gone or finished without a
// finalizer holding it best, held or failed worst.
func endingScore(p *profile) int {
	score := 0
	switch p.lc.Outcome {
	case "Deleted", "Succeeded", diff.OutcomeGone:
		score = 3
	case "Running":
		score = 2
	case "Pending", "Terminating":
		score = 1
	}
	if len(p.heldAtEnd()) > 0 {
		score--
	}
	for _, f := range p.lc.Findings {
		if f.Severity == explain.Critical {
			score--
			break
		}
	}
	return score
}
