package compare

import (
	"fmt"
	"sort"
	"strings"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
)

const none = "none"

// deletionDiffs compares how the deletions were asked for.
func deletionDiffs(a, b *profile) []Difference {
	da, db := a.deletion, b.deletion
	switch {
	case da == nil && db == nil:
		return nil
	case da == nil || db == nil:
		return []Difference{{Kind: "deletion", Rank: rankPropagation, Subject: "deletion", A: deletionText(da), B: deletionText(db)}}
	}
	var out []Difference
	if da.propagation != db.propagation {
		out = append(out, Difference{Kind: "deletion", Rank: rankPropagation, Subject: "deletion propagation",
			A: da.propagation + propagationNote(da.propagation), B: db.propagation + propagationNote(db.propagation),
			Why: "Foreground makes the API server add the foregroundDeletion finalizer, which the garbage collector removes with an UPDATE of the pod once the dependents are gone; Background adds none"})
	}
	if da.grace != db.grace {
		out = append(out, Difference{Kind: "deletion", Rank: rankGrace, Subject: "deletion grace period", A: graceText(da.grace), B: graceText(db.grace)})
	}
	if wa, wb := a.norm.norm(da.who), b.norm.norm(db.who); wa != wb {
		d := Difference{Kind: "deletion", Rank: rankWhoDeleted, Subject: "who asked for the deletion", A: da.who, B: db.who}
		if !da.whoKnown || !db.whoKnown {
			d.Rank, d.Why = rankEvent, "the client of one deletion is not known"
		}
		out = append(out, d)
	}
	return out
}

func deletionText(d *deletion) string {
	if d == nil {
		return "not deleted"
	}
	s := "deleted with propagation " + d.propagation
	if d.grace != "" {
		s += ", grace period " + d.grace + "s"
	}
	return s + ", by " + d.who
}

func propagationNote(p string) string {
	switch p {
	case "Foreground":
		return " (the API server added foregroundDeletion)"
	case "Orphan":
		return " (the API server added orphan)"
	}
	return " (no foregroundDeletion or orphan finalizer added)"
}

func graceText(g string) string {
	if g == "" {
		return "not recorded"
	}
	return g + "s"
}

// deniedWhat keys a group of denied requests without the pod's own names.
func deniedWhat(p *profile, d diff.DeniedRequests) string {
	what := d.Verb
	if d.Subresource != "" {
		what += " " + d.Subresource
	}
	s := what + " by " + d.Identity()
	if d.Webhook != "" {
		s += ", denied by webhook " + d.Webhook
	}
	return p.norm.norm(fmt.Sprintf("%s (%d)", s, d.Code))
}

// deniedDiffs compares the refused requests the audit log recorded.
func deniedDiffs(a, b *profile) []Difference {
	count := func(p *profile) (map[string]diff.DeniedRequests, []string) {
		m := map[string]diff.DeniedRequests{}
		var keys []string
		if p.lc.Audit == nil {
			return m, nil
		}
		for _, d := range p.lc.Audit.Denied {
			k := deniedWhat(p, d)
			if e, ok := m[k]; ok {
				e.Count += d.Count
				m[k] = e
				continue
			}
			m[k] = d
			keys = append(keys, k)
		}
		return m, keys
	}
	ma, ka := count(a)
	mb, kb := count(b)
	var out []Difference
	for _, k := range union(ka, kb) {
		da, inA := ma[k]
		db, inB := mb[k]
		if inA && inB {
			continue // a count is not a difference in kind
		}
		d := Difference{Kind: "denied", Rank: rankDenied, Subject: "denied requests: " + k, A: deniedText(da, inA, a), B: deniedText(db, inB, b)}
		if code := max(da.Code, db.Code); code == 404 || code == 409 {
			// Not found: the object was already gone; conflict: a stale
			// resourceVersion, retried. Neither refuses anything.
			d.Rank, d.Why = rankEvent, "a 404 or 409 is a race with another writer, not a refusal"
		}
		if !a.hasAudit() || !b.hasAudit() {
			// A difference in the evidence, not in the lives.
			d.Rank, d.Why = rankEvent, "only one trace holds the audit log"
		}
		out = append(out, d)
	}
	return out
}

func (p *profile) hasAudit() bool { return p.lc.Audit != nil }

func deniedText(d diff.DeniedRequests, ok bool, p *profile) string {
	if !ok {
		if !p.hasAudit() {
			return "no audit log"
		}
		return none
	}
	times := "times"
	if d.Count == 1 {
		times = "time"
	}
	return fmt.Sprintf("%d %s, first %s after creation: %s", d.Count, times, fine(d.First.Sub(p.created)), d.Message)
}

// webhookDiffs compares the webhooks that intercept each pod's UPDATE, the
// request that removes a finalizer.
func webhookDiffs(a, b *profile) []Difference {
	var out []Difference
	for _, name := range union(keys(a.updateHooks), keys(b.updateHooks)) {
		wa, inA := a.updateHooks[name]
		wb, inB := b.updateHooks[name]
		if inA == inB {
			continue
		}
		d := Difference{Kind: "webhook", Rank: rankUpdateHook, Subject: "webhook " + name + " on pod UPDATE (the request that removes a finalizer)",
			A: hookText(wa, inA, a), B: hookText(wb, inB, b)}
		if inA {
			d.Why = strings.TrimPrefix(b.hookRelation(name, a), "which ")
		} else {
			d.Why = strings.TrimPrefix(a.hookRelation(name, b), "which ")
		}
		out = append(out, d)
	}
	return out
}

func hookText(w admission.Webhook, ok bool, p *profile) string {
	if !ok {
		if !p.hooksKnown {
			return "not among the suspects (webhooks not given)"
		}
		return "does not intercept it"
	}
	s := fmt.Sprintf("intercepts it (%s %s, failurePolicy %s", strings.TrimSuffix(w.Kind, "Configuration"), w.Configuration, w.FailurePolicy)
	if w.NamespaceSelector != "" {
		s += ", namespaceSelector " + w.NamespaceSelector
	}
	return s + ")"
}

// namespaceDiffs compares the namespaces' labels: those a webhook's
// namespaceSelector reads are decisive, the rest are not.
func namespaceDiffs(a, b *profile, r *Result) []Difference {
	if a.nsLabels == nil || b.nsLabels == nil {
		return nil
	}
	read := map[string]bool{}
	for _, hooks := range []map[string]admission.Webhook{a.updateHooks, b.updateHooks} {
		for _, w := range hooks {
			for _, k := range selectorKeys(w.NamespaceSelector) {
				read[k] = true
			}
		}
	}
	if adm := a.lc.Admission; adm != nil {
		for _, w := range adm.Webhooks {
			for _, k := range selectorKeys(w.NamespaceSelector) {
				read[k] = true
			}
		}
	}
	if adm := b.lc.Admission; adm != nil {
		for _, w := range adm.Webhooks {
			for _, k := range selectorKeys(w.NamespaceSelector) {
				read[k] = true
			}
		}
	}
	var out []Difference
	for _, k := range union(keys(a.nsLabels), keys(b.nsLabels)) {
		va, inA := a.nsLabels[k]
		vb, inB := b.nsLabels[k]
		if inA == inB && va == vb {
			continue
		}
		if inA == inB && a.norm.norm(va) == b.norm.norm(vb) {
			ignore(r, a.norm, b.norm, va, vb) // kubernetes.io/metadata.name
			continue
		}
		d := Difference{Kind: "namespace", Rank: rankEvent, Subject: "namespace label " + k, A: labelValue(va, inA, a), B: labelValue(vb, inB, b)}
		if read[k] {
			d.Rank, d.Why = rankNamespace, "a webhook's namespaceSelector reads it"
		}
		out = append(out, d)
	}
	return out
}

func labelValue(v string, ok bool, p *profile) string {
	if !ok {
		return "absent on " + p.lc.Namespace
	}
	return fmt.Sprintf("%q on %s", v, p.lc.Namespace)
}

// selectorKeys are the label keys a selector's text names.
func selectorKeys(sel string) []string {
	var out []string
	for _, part := range splitSelector(sel) {
		part = strings.TrimPrefix(strings.TrimSpace(part), "!")
		if i := strings.IndexAny(part, "=! "); i >= 0 {
			part = part[:i]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// splitSelector splits a selector at the commas outside parentheses.
func splitSelector(sel string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range sel {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, sel[start:i])
				start = i + 1
			}
		}
	}
	return append(out, sel[start:])
}

// finalizerDiffs compares each finalizer's life.
func finalizerDiffs(a, b *profile) []Difference {
	var out []Difference
	for _, f := range union(keys(a.finalizers), keys(b.finalizers)) {
		ta, tb := finalizerText(a, f), finalizerText(b, f)
		if a.norm.norm(ta) == b.norm.norm(tb) {
			continue
		}
		fa, fb := a.finalizers[f], b.finalizers[f]
		held := func(l *finalizerLife) bool { return l != nil && l.held }
		d := Difference{Kind: "finalizer", Rank: rankFinalizer, Subject: "finalizer " + f, A: ta, B: tb}
		if held(fa) == held(fb) && (fa == nil) == (fb == nil) {
			d.Rank = rankField // came and went in both, by other hands or times
		}
		if held(fa) != held(fb) {
			d.Why = "a pod is not removed while it has a finalizer"
		}
		out = append(out, d)
	}
	return out
}

func finalizerText(p *profile, f string) string {
	l := p.finalizers[f]
	if l == nil {
		return "never had it"
	}
	s := "added by " + l.addedBy
	switch {
	case l.gone:
		s += ", removed by " + l.removedBy
	case l.held:
		s += ", never removed"
		if p.lc.Terminating > 0 {
			s += " (terminating for " + p.lc.Terminating.String() + ")"
		}
	}
	return s
}

// admissionDiffs compares admission at CREATE: the webhooks that
// intercepted, the fields changed, the webhooks' patches.
func admissionDiffs(a, b *profile, r *Result) []Difference {
	var out []Difference
	hooks := func(p *profile) map[string]admission.Webhook {
		m := map[string]admission.Webhook{}
		if p.lc.Admission != nil {
			for _, w := range p.lc.Admission.Webhooks {
				m[w.Name] = w
			}
		}
		return m
	}
	ha, hb := hooks(a), hooks(b)
	for _, name := range union(keys(ha), keys(hb)) {
		wa, inA := ha[name]
		wb, inB := hb[name]
		if inA != inB {
			out = append(out, Difference{Kind: "admission", Rank: rankCreateHook, Subject: "webhook " + name + " on pod CREATE",
				A: hookText(wa, inA, &profile{hooksKnown: true}), B: hookText(wb, inB, &profile{hooksKnown: true})})
		}
	}
	changes := func(p *profile) (map[string]string, map[string]string) {
		norm, raw := map[string]string{}, map[string]string{}
		if p.lc.Admission != nil {
			for _, c := range p.lc.Admission.Changes {
				k := p.norm.norm(c.Path)
				v := fmt.Sprintf("%s %s, by %s (%s)", c.Op, shorten(c.New), c.By, c.Certainty)
				norm[k], raw[k] = p.norm.norm(v), v
			}
		}
		return norm, raw
	}
	ca, ra := changes(a)
	cb, rb := changes(b)
	for _, k := range union(keys(ca), keys(cb)) {
		va, inA := ca[k]
		vb, inB := cb[k]
		switch {
		case inA && inB && va == vb:
			if ra[k] != rb[k] {
				ignore(r, a.norm, b.norm, ra[k], rb[k])
			}
			continue
		case !inA:
			va = "unchanged at admission"
		case !inB:
			vb = "unchanged at admission"
		}
		if inA {
			va = ra[k]
		}
		if inB {
			vb = rb[k]
		}
		d := Difference{Kind: "admission", Rank: rankAdmission, Subject: "changed at admission: " + k, A: va, B: vb}
		switch {
		case admissionSource(a) != admissionSource(b):
			d.Rank, d.Why = rankEvent, fmt.Sprintf("A's admission is read from %s, B's from %s: they do not tell as much", admissionSource(a), admissionSource(b))
		case !byWebhook(a, k) && !byWebhook(b, k):
			d.Rank = rankField // a built-in plugin's or defaulting, as for every pod
		}
		out = append(out, d)
	}
	patches := func(p *profile) map[string]string {
		m := map[string]string{}
		if p.lc.Audit != nil {
			for _, wp := range p.lc.Audit.Patches {
				k := wp.Webhook + " on " + wp.Verb
				var ops []string
				for _, op := range wp.Ops {
					ops = append(ops, op.Op+" "+op.Path)
				}
				m[k] = strings.Join(ops, ", ")
			}
		}
		return m
	}
	pa, pb := patches(a), patches(b)
	if a.hasAudit() && b.hasAudit() {
		for _, k := range union(keys(pa), keys(pb)) {
			va, inA := pa[k]
			vb, inB := pb[k]
			if inA == inB && va == vb {
				continue
			}
			out = append(out, Difference{Kind: "admission", Rank: rankPatch, Subject: "patch by webhook " + k, A: orNone(va, inA), B: orNone(vb, inB)})
		}
	}
	return out
}

// admissionSource is what a pod's admission was read from.
func admissionSource(p *profile) string {
	if p.lc.Admission == nil {
		return "nothing"
	}
	return p.lc.Admission.Source
}

// byWebhook reports whether the change at the normalized path k was made,
// or may have been, by a mutating webhook rather than a built-in plugin.
func byWebhook(p *profile, k string) bool {
	if p.lc.Admission == nil {
		return false
	}
	for _, c := range p.lc.Admission.Changes {
		if p.norm.norm(c.Path) == k {
			return strings.Contains(c.By, "webhook")
		}
	}
	return false
}

func orNone(v string, ok bool) string {
	if !ok {
		return none
	}
	return v
}

func shorten(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

// findingDiffs compares the findings by id.
func findingDiffs(a, b *profile) []Difference {
	byID := func(p *profile) map[string]string {
		m := map[string]string{}
		for _, f := range p.lc.Findings {
			if _, ok := m[f.ID]; !ok {
				m[f.ID] = f.Severity.String() + ": " + f.Headline
			}
		}
		return m
	}
	fa, fb := byID(a), byID(b)
	var out []Difference
	for _, id := range union(keys(fa), keys(fb)) {
		va, inA := fa[id]
		vb, inB := fb[id]
		if inA == inB {
			continue
		}
		out = append(out, Difference{Kind: "finding", Rank: rankFinding, Subject: "finding " + id, A: orNone(va, inA), B: orNone(vb, inB)})
	}
	return out
}

// exitDiffs compares how each container last exited.
func exitDiffs(a, b *profile) []Difference {
	var out []Difference
	for _, c := range union(keys(a.exits), keys(b.exits)) {
		va, inA := a.exits[c]
		vb, inB := b.exits[c]
		if inA && inB && va == vb {
			continue
		}
		out = append(out, Difference{Kind: "container", Rank: rankExit, Subject: "container " + c + " exit", A: orText(va, inA, "did not exit"), B: orText(vb, inB, "did not exit")})
	}
	return out
}

func orText(v string, ok bool, otherwise string) string {
	if !ok {
		return otherwise
	}
	return v
}

func nodeDiffs(a, b *profile) []Difference {
	if a.lc.Node == b.lc.Node {
		return nil
	}
	return []Difference{{Kind: "node", Rank: rankNode, Subject: "node", A: orText(a.lc.Node, a.lc.Node != "", "never scheduled"), B: orText(b.lc.Node, b.lc.Node != "", "never scheduled")}}
}

// dependentDiffs compares the dependents, by kind and name made of the
// pod's, and what became of them relative to the deletion.
func dependentDiffs(a, b *profile, r *Result) []Difference {
	fate := func(p *profile) (map[string]string, map[string]string) {
		m, raw := map[string]string{}, map[string]string{}
		for _, d := range p.lc.Dependents {
			k := d.Kind + " " + p.norm.norm(d.Name)
			s := "present at the end"
			switch {
			case !d.Deleted.IsZero() && p.deletion != nil && d.Deleted.After(p.deletion.time):
				s = "deleted after the pod's deletion request"
			case !d.Deleted.IsZero():
				s = "deleted"
			}
			if d.Blocking {
				s += ", blockOwnerDeletion"
			}
			m[k], raw[k] = s, d.Kind+" "+d.Name
		}
		return m, raw
	}
	fa, ra := fate(a)
	fb, rb := fate(b)
	var out []Difference
	for _, k := range union(keys(fa), keys(fb)) {
		va, inA := fa[k]
		vb, inB := fb[k]
		if inA && inB && va == vb {
			if ra[k] != rb[k] {
				ignore(r, a.norm, b.norm, ra[k], rb[k])
			}
			continue
		}
		out = append(out, Difference{Kind: "dependent", Rank: rankDependent, Subject: "dependent " + k, A: orText(va, inA, "no such dependent"), B: orText(vb, inB, "no such dependent")})
	}
	return out
}

// eventDiffs compares the reasons of the Warning events.
func eventDiffs(a, b *profile) []Difference {
	reasons := func(p *profile) map[string]string {
		m := map[string]string{}
		for _, e := range p.lc.Events {
			if e.Type == "Warning" {
				if _, ok := m[e.Reason]; !ok {
					m[e.Reason] = p.norm.norm(e.Message)
				}
			}
		}
		return m
	}
	ra, rb := reasons(a), reasons(b)
	var out []Difference
	for _, k := range union(keys(ra), keys(rb)) {
		va, inA := ra[k]
		vb, inB := rb[k]
		if inA == inB {
			continue
		}
		out = append(out, Difference{Kind: "event", Rank: rankEvent, Subject: "Warning event " + k, A: orNone(shorten(va), inA), B: orNone(shorten(vb), inB)})
	}
	return out
}

// fieldDiffs compares, phase by phase, the fields each pod's revisions
// set, changed or removed; what differs only in noise is counted.
func fieldDiffs(a, b *profile, r *Result) []Difference {
	collect := func(p *profile) map[string]map[string]*entry {
		out := map[string]map[string]*entry{}
		for i, s := range p.lc.Steps {
			seg := p.segment[i]
			if out[seg] == nil {
				out[seg] = map[string]*entry{}
			}
			for _, c := range s.Changes {
				if strings.HasPrefix(c.Path, "metadata.finalizers") {
					continue // finalizerDiffs tells their story
				}
				k := string(c.Op) + " " + p.norm.norm(c.Path)
				e := out[seg][k]
				if e == nil {
					e = &entry{path: c.Path}
					out[seg][k] = e
				}
				v := c.New
				if c.Op == diff.OpRemove {
					v = c.Old
				}
				n := p.norm.norm(v)
				if !contains(e.norm, n) {
					e.norm = append(e.norm, n)
					e.raw = append(e.raw, v)
				}
			}
		}
		return out
	}
	ca, cb := collect(a), collect(b)
	var out []Difference
	for _, seg := range phaseOrder {
		ea, eb := ca[seg], cb[seg]
		for _, k := range union(keys(ea), keys(eb)) {
			va, vb := ea[k], eb[k]
			switch {
			case va != nil && vb != nil && strings.Join(va.raw, "\x00") == strings.Join(vb.raw, "\x00"):
				// The same values: no difference, though normalizing made
				// them look different (pod held's label app=held read as
				// app=<name>, pod released's not).
				continue
			case va != nil && vb != nil && strings.Join(va.norm, "\x00") == strings.Join(vb.norm, "\x00"):
				if ra, rb := va.path+" "+strings.Join(va.raw, " "), vb.path+" "+strings.Join(vb.raw, " "); ra != rb {
					ignore(r, a.norm, b.norm, ra, rb)
				}
				continue
			}
			if onlyTimes(va) && onlyTimes(vb) {
				// A time that moved in one pod and not the other (a
				// condition's lastTransitionTime) is no difference in kind.
				r.IgnoredBy[noiseTime]++
				continue
			}
			d := Difference{Kind: "field", Rank: rankField, Phase: seg, Subject: k, A: entryText(va), B: entryText(vb)}
			out = append(out, d)
		}
	}
	return out
}

// entry is what one pod's revisions did to one field in one phase: the
// values, normalized and as recorded, and the path as recorded.
type entry struct {
	path      string
	norm, raw []string
}

// onlyTimes reports whether every value of e is a timestamp alone; true
// for no entry.
func onlyTimes(e *entry) bool {
	if e == nil {
		return true
	}
	for _, v := range e.norm {
		if strings.Trim(v, `"`) != "<time>" {
			return false
		}
	}
	return true
}

func entryText(e *entry) string {
	if e == nil {
		return "no such change"
	}
	var vs []string
	for _, v := range e.raw {
		vs = append(vs, shorten(v))
	}
	return strings.Join(vs, " | ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// union is the sorted union of two key lists.
func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range [][]string{a, b} {
		for _, k := range l {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
