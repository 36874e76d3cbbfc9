package compare

import (
	"sort"
	"strings"

	"github.com/podtrace/podtrace/explain"
)

// Cohort is a set of pods (those a selector or an owner shares) grouped by
// how they ended, with a typical member of each group compared with one of
// the group that ended best.
type Cohort struct {
	Selector string  `json:"selector,omitempty"`
	Groups   []Group `json:"groups"`
	// Comparisons compare the typical member of the first group (the one
	// that ended best) with that of each other group.
	Comparisons []*Result `json:"comparisons,omitempty"`
}

// Group is the pods of a cohort that ended the same way.
type Group struct {
	// Ending is the outcome, with the finalizers that held the pods.
	Ending  string `json:"ending"`
	Members []Pod  `json:"members"`
	// Typical is the member compared: the median by creation time.
	Typical Pod `json:"typical"`

	typical Side
	score   int
}

// Cohorts groups the pods by how they ended and compares a typical member
// of each group with one of the group that ended best.
func Cohorts(selector string, sides []Side) *Cohort {
	type member struct {
		side Side
		p    *profile
	}
	byEnding := map[string][]member{}
	var order []string
	for _, s := range sides {
		p := newProfile("", s)
		ending := p.lc.Outcome
		if held := p.heldAtEnd(); len(held) > 0 {
			ending += ", held by finalizer " + strings.Join(held, ", ")
		}
		if _, ok := byEnding[ending]; !ok {
			order = append(order, ending)
		}
		byEnding[ending] = append(byEnding[ending], member{s, p})
	}
	c := &Cohort{Selector: selector}
	for _, ending := range order {
		ms := byEnding[ending]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].p.created.Before(ms[j].p.created) })
		g := Group{Ending: ending}
		for _, m := range ms {
			g.Members = append(g.Members, m.p.pod())
		}
		mid := ms[(len(ms)-1)/2]
		g.Typical, g.typical, g.score = mid.p.pod(), mid.side, endingScore(mid.p)
		c.Groups = append(c.Groups, g)
	}
	// The group that ended best first, then the larger groups.
	sort.SliceStable(c.Groups, func(i, j int) bool {
		if c.Groups[i].score != c.Groups[j].score {
			return c.Groups[i].score > c.Groups[j].score
		}
		return len(c.Groups[i].Members) > len(c.Groups[j].Members)
	})
	for _, g := range c.Groups[min(1, len(c.Groups)):] {
		c.Comparisons = append(c.Comparisons, Compare(c.Groups[0].typical, g.typical))
	}
	return c
}

// endingScore says how well a pod ended: gone or finished without a
// finalizer holding it best, held or failed worst.
func endingScore(p *profile) int {
	score := 0
	switch p.lc.Outcome {
	case "Deleted", "Succeeded":
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
