package compare

import (
	"regexp"
	"strings"

	"github.com/podtrace/podtrace/explain"
)

// normalizer rewrites what always differs between two pods into the same
// placeholders, and says which kinds it rewrote.
type normalizer struct {
	rules []noiseRule
	// done holds what apply returned for each string: a pod's revisions
	// repeat the same values (a crash loop's statuses) many times.
	done map[string]normalized
}

type normalized struct {
	s     string
	kinds []string
}

type noiseRule struct {
	kind string
	re   *regexp.Regexp
	repl string
	// may reports whether s can match at all, cheaply: most strings
	// cannot match most rules.
	may func(s string) bool
}

// Noise kinds, as counted in Result.IgnoredBy.
const (
	noiseName        = "names"
	noiseUID         = "UIDs"
	noiseSuffix      = "generated suffixes"
	noiseIP          = "IPs"
	noiseTime        = "timestamps"
	noiseContainerID = "container IDs"
	noiseToken       = "token volume names"
)

var (
	uidRE         = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE        = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})`)
	ipv4RE        = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	containerIDRE = regexp.MustCompile(`[a-z]+://[0-9a-f]{16,}`)
	tokenRE       = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}\b`)
)

// newNormalizer builds the rules for one pod: its own name, namespace and
// UID (and the names made of them), its generated suffix, then the shapes
// of UIDs, timestamps, IPs, container IDs and API token volumes.
func newNormalizer(lc *explain.Lifecycle) *normalizer {
	n := &normalizer{}
	word := func(s string) *regexp.Regexp {
		// A name inside another name counts (runner-job-1 in
		// runner-job-1-pull), not inside a longer word (ci in circle).
		return regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(s) + `($|[^a-z0-9])`)
	}
	has := func(sub string) func(string) bool { return func(s string) bool { return strings.Contains(s, sub) } }
	if lc.UID != "" {
		n.rules = append(n.rules, noiseRule{noiseUID, regexp.MustCompile(regexp.QuoteMeta(lc.UID)), "<uid>", has(lc.UID)})
	}
	gen := generateName(lc)
	if gen != "" && strings.HasPrefix(lc.Name, gen) && len(lc.Name) > len(gen) {
		n.rules = append(n.rules, noiseRule{noiseSuffix, word(lc.Name), "${1}" + gen + "<suffix>${2}", has(lc.Name)})
	}
	if gen != "" {
		// The other objects named from the same generateName, as a
		// runner names its pods' Secrets: the API server's suffix is
		// five of these characters.
		re := regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(gen) + `[bcdfghjklmnpqrstvwxz2456789]{5}($|[^a-z0-9])`)
		n.rules = append(n.rules, noiseRule{noiseSuffix, re, "${1}" + gen + "<suffix>${2}", has(gen)})
	}
	if lc.Name != "" {
		n.rules = append(n.rules, noiseRule{noiseName, word(lc.Name), "${1}<name>${2}", has(lc.Name)})
	}
	if lc.Namespace != "" {
		n.rules = append(n.rules, noiseRule{noiseName, word(lc.Namespace), "${1}<namespace>${2}", has(lc.Namespace)})
	}
	n.rules = append(n.rules,
		noiseRule{noiseUID, uidRE, "<uid>", func(s string) bool { return strings.Count(s, "-") >= 4 }},
		noiseRule{noiseTime, timeRE, "<time>", func(s string) bool { return strings.Contains(s, ":") && strings.Contains(s, "T") }},
		noiseRule{noiseContainerID, containerIDRE, "<container-id>", has("://")},
		noiseRule{noiseIP, ipv4RE, "<ip>", func(s string) bool { return strings.Count(s, ".") >= 3 }},
		noiseRule{noiseToken, tokenRE, "kube-api-access-<suffix>", has("kube-api-access-")},
	)
	n.done = map[string]normalized{}
	return n
}

// generateName is the pod's metadata.generateName, from its first
// revision's changes.
func generateName(lc *explain.Lifecycle) string {
	if len(lc.Steps) == 0 {
		return ""
	}
	for _, c := range lc.Steps[0].Changes {
		if c.Path == "metadata.generateName" {
			return c.New
		}
	}
	return ""
}

// apply rewrites s and returns the kinds of noise it rewrote.
func (n *normalizer) apply(s string) (string, []string) {
	if d, ok := n.done[s]; ok {
		return d.s, d.kinds
	}
	in := s
	var kinds []string
	for _, r := range n.rules {
		if !r.may(s) {
			continue
		}
		// Twice: a match's boundary character can be the next one's.
		for range 2 {
			t := r.re.ReplaceAllString(s, r.repl)
			if t != s {
				if len(kinds) == 0 || kinds[len(kinds)-1] != r.kind {
					kinds = append(kinds, r.kind)
				}
				s = t
			}
		}
	}
	if len(n.done) < maxNormalized {
		n.done[in] = normalized{s, kinds}
	}
	return s, kinds
}

// maxNormalized bounds what a normalizer keeps.
const maxNormalized = 1 << 16

// norm is apply without the kinds.
func (n *normalizer) norm(s string) string {
	out, _ := n.apply(s)
	return out
}

// ignore counts, in r, one difference between a and b that normalizes
// away: the kind of the first rule that rewrote either.
func ignore(r *Result, na, nb *normalizer, a, b string) {
	_, ka := na.apply(a)
	_, kb := nb.apply(b)
	kind := noiseName
	switch {
	case len(ka) > 0:
		kind = ka[0]
	case len(kb) > 0:
		kind = kb[0]
	}
	r.IgnoredBy[kind]++
}
