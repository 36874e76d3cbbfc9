package compare

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// profile is what compare reads of one lifecycle, by Kubernetes
// semantics: the deletion as asked for, each finalizer's life, the
// webhooks in the way, the phases aligned.
type profile struct {
	label string
	lc    *explain.Lifecycle
	norm  *normalizer

	created    time.Time
	phases     map[string]*PhaseAt
	deletion   *deletion
	finalizers map[string]*finalizerLife
	// segment is the aligned phase each step falls in, by step index.
	segment []string

	podLabels   map[string]string
	nsLabels    map[string]string // nil: namespace not recorded
	updateHooks map[string]admission.Webhook
	hooksKnown  bool // the trace's webhooks were given
	exits       map[string]string
}

// deletion is how the pod's deletion was asked for.
type deletion struct {
	seq         uint64
	time        time.Time
	propagation string // Foreground, Orphan or Background
	grace       string
	who         string
	// whoKnown says that who is the client, from managedFields or the
	// audit log, not a placeholder.
	whoKnown bool
}

// finalizerLife is when a finalizer came and went, and who did it.
type finalizerLife struct {
	added, removed     time.Time
	addedBy, removedBy string
	held               bool // still there when the recording ended
	gone               bool // removed
}

func newProfile(label string, s Side) *profile {
	p := startProfile(s.Lifecycle)
	p.label, p.norm = label, newNormalizer(s.Lifecycle)
	p.replaySteps(true)
	p.deleter()
	p.readPhases()
	p.readHooks(s)
	return p
}

// endingProfile reads only how the pod ended: the finalizers that held
// it, when it was created. It is what grouping a cohort needs, made for
// every pod of a report.
func endingProfile(lc *explain.Lifecycle) *profile {
	p := startProfile(lc)
	p.replaySteps(false)
	return p
}

func startProfile(lc *explain.Lifecycle) *profile {
	p := &profile{lc: lc, phases: map[string]*PhaseAt{},
		finalizers: map[string]*finalizerLife{}, podLabels: map[string]string{}, updateHooks: map[string]admission.Webhook{},
		exits: map[string]string{}}
	for _, ph := range lc.Phases {
		if ph.Name == diff.PhaseCreated || ph.Name == diff.PhaseAlreadyPresent {
			p.created = ph.Time
			break
		}
	}
	if p.created.IsZero() && len(lc.Steps) > 0 {
		p.created = lc.Steps[0].Time
	}
	return p
}

// at is a phase reached at time t, seq.
func (p *profile) at(t time.Time, seq uint64, detail string) *PhaseAt {
	return &PhaseAt{After: diff.Duration(t.Sub(p.created)), Seq: seq, Detail: detail}
}

// alignedName maps the phases of diff to the aligned ones.
func alignedName(name string) string {
	switch name {
	case diff.PhaseCreated, diff.PhaseAlreadyPresent:
		return phaseCreated
	case diff.PhaseScheduled:
		return phaseScheduled
	case diff.PhaseStarted:
		return phaseStarted
	case diff.PhaseReady:
		return phaseReady
	case diff.PhaseSucceeded, diff.PhaseFailed:
		return phaseFinished
	case diff.PhaseDeletionRequested:
		return phaseDeletionRequested
	case diff.PhaseDeleted:
		return phaseGone
	case diff.PhaseStillPresent:
		return phaseStillPresent
	}
	return ""
}

func (p *profile) readPhases() {
	for _, ph := range p.lc.Phases {
		name := alignedName(ph.Name)
		if name == "" || p.phases[name] != nil {
			continue
		}
		detail := ph.Detail
		switch name {
		case phaseFinished:
			detail = strings.TrimSpace(ph.Name + ": " + ph.Detail)
		case phaseScheduled, phaseCreated:
			detail = "" // the node and owner are differences of their own
		case phaseDeletionRequested:
			if d := p.deletion; d != nil {
				detail = "propagation " + d.propagation
				if d.grace != "" {
					detail += ", grace period " + d.grace + "s"
				}
			}
		}
		p.phases[name] = p.at(ph.Time, ph.Seq, detail)
		if name == phaseCreated {
			detail := ""
			if adm := p.lc.Admission; adm != nil {
				detail = fmt.Sprintf("%s intercepted the CREATE, %s changed", count(len(adm.Webhooks), "webhook"), count(len(adm.Changes), "field"))
			}
			p.phases[phaseAdmitted] = p.at(ph.Time, ph.Seq, detail)
		}
	}
}

// replaySteps reads the deletion and the finalizers from the changes,
// with full the labels and the container exits too, and places each step
// in its phase.
func (p *profile) replaySteps(full bool) {
	present := map[string]bool{}
	segment := phaseCreated
	p.segment = make([]string, len(p.lc.Steps))
	for i, s := range p.lc.Steps {
		for _, ph := range s.Phases {
			if n := alignedName(ph); n != "" {
				segment = n
			}
		}
		who := actorsText(s.Actors)
		deleted := s.Type == store.Deleted || s.Type == store.DeletedUnknown
		hadFinalizers := len(present) > 0
		for _, c := range s.Changes {
			for _, f := range finalizersAdded(c) {
				present[f] = true
				if p.finalizers[f] == nil {
					p.finalizers[f] = &finalizerLife{added: s.Time, addedBy: who}
				}
			}
			for _, f := range finalizersRemoved(c) {
				delete(present, f)
				if fl := p.finalizers[f]; fl != nil && !fl.gone {
					fl.gone, fl.removed, fl.removedBy = true, s.Time, who
				}
			}
			if full {
				p.readLabel(c)
				p.readExit(c)
			}
		}
		if deleted && len(present) > 0 {
			// The API server removes a pod once its last finalizer is
			// gone: the request that removed it left no revision of its
			// own, and only the audit log names it.
			by := p.lastWriter(s.Time)
			for f := range present {
				if fl := p.finalizers[f]; fl != nil && !fl.gone {
					fl.gone, fl.removed, fl.removedBy = true, s.Time, by
				}
				delete(present, f)
			}
			who = by
		}
		if hadFinalizers && len(present) == 0 && p.deletion != nil && p.phases[phaseFinalizersRemoved] == nil {
			p.phases[phaseFinalizersRemoved] = p.at(s.Time, s.Seq, "by "+who)
			segment = phaseFinalizersRemoved
		}
		if p.deletion == nil {
			for _, c := range s.Changes {
				if c.Path == "metadata.deletionTimestamp" && c.Op == diff.OpAdd {
					p.deletion = &deletion{seq: s.Seq, time: s.Time, who: who, propagation: propagation(present), whoKnown: clientKnown(s.Actors)}
				}
			}
			if p.deletion != nil {
				for _, c := range s.Changes {
					if c.Path == "metadata.deletionGracePeriodSeconds" {
						p.deletion.grace = c.New
					}
				}
			}
		}
		if deleted {
			segment = phaseGone
		}
		p.segment[i] = segment
	}
	if p.lc.Outcome == "Terminating" || p.lc.Outcome != "Deleted" && p.lc.Outcome != diff.OutcomeGone {
		for f := range present {
			p.finalizers[f].held = true
		}
	}
}

// deleter names who asked for the deletion from the audit log when the
// revisions do not: a DELETE leaves no managedFields entry, and a pod with
// no finalizer goes at once, in a revision the log cannot be tied to.
func (p *profile) deleter() {
	d, a := p.deletion, p.lc.Audit
	if d == nil || d.whoKnown || a == nil {
		return
	}
	// The request that set the deletionTimestamp asked; the kubelet's
	// DELETE (grace period 0) after it only confirmed.
	if r, _ := p.lc.Deletion(); r != nil {
		d.who, d.whoKnown = r.Identity()+" ("+string(diff.BasisAuditLog)+")", true
	}
}

// lastWriter names the last successful update or patch of the pod, not of
// a subresource, at or before t, from the audit log.
func (p *profile) lastWriter(t time.Time) string {
	if a := p.lc.Audit; a != nil {
		for i := len(a.Requests) - 1; i >= 0; i-- {
			r := a.Requests[i]
			if (r.Verb == "update" || r.Verb == "patch") && r.Subresource == "" && r.Code < 400 && !r.Time.After(t.Add(time.Second)) {
				return r.Identity() + " (" + string(diff.BasisAuditLog) + ")"
			}
		}
	}
	return "unknown (the pod went with the request that removed it; the audit log names it)"
}

// propagation is the policy a DELETE asked for, told by the finalizer the
// API server added for it.
func propagation(finalizers map[string]bool) string {
	switch {
	case finalizers[metav1.FinalizerDeleteDependents]:
		return string(metav1.DeletePropagationForeground)
	case finalizers[metav1.FinalizerOrphanDependents]:
		return string(metav1.DeletePropagationOrphan)
	}
	return string(metav1.DeletePropagationBackground)
}

// propagationOf is the propagation policy that makes the API server add
// finalizer f on DELETE, or "".
func propagationOf(f string) string {
	switch f {
	case metav1.FinalizerDeleteDependents:
		return string(metav1.DeletePropagationForeground)
	case metav1.FinalizerOrphanDependents:
		return string(metav1.DeletePropagationOrphan)
	}
	return ""
}

// finalizersAdded and finalizersRemoved read a change of
// metadata.finalizers: one element (metadata.finalizers[x]) or the list.
func finalizersAdded(c diff.Change) []string {
	if name, ok := element(c.Path, "metadata.finalizers"); ok {
		if c.Op == diff.OpAdd {
			return []string{name}
		}
		return nil
	}
	if c.Path == "metadata.finalizers" && c.Op != diff.OpRemove {
		return minus(jsonList(c.New), jsonList(c.Old))
	}
	return nil
}

func finalizersRemoved(c diff.Change) []string {
	if name, ok := element(c.Path, "metadata.finalizers"); ok {
		if c.Op == diff.OpRemove {
			return []string{name}
		}
		return nil
	}
	if c.Path == "metadata.finalizers" && c.Op != diff.OpAdd {
		return minus(jsonList(c.Old), jsonList(c.New))
	}
	return nil
}

// element returns x of a path "prefix[x]".
func element(path, prefix string) (string, bool) {
	if !strings.HasPrefix(path, prefix+"[") || !strings.HasSuffix(path, "]") {
		return "", false
	}
	return path[len(prefix)+1 : len(path)-1], true
}

func jsonList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

func (p *profile) readLabel(c diff.Change) {
	if c.Path == "metadata.labels" {
		var m map[string]string
		if c.Op == diff.OpRemove || json.Unmarshal([]byte(c.New), &m) != nil {
			m = nil
		}
		p.podLabels = map[string]string{}
		for k, v := range m {
			p.podLabels[k] = v
		}
		return
	}
	if k, ok := element(c.Path, "metadata.labels"); ok {
		if c.Op == diff.OpRemove {
			delete(p.podLabels, k)
		} else {
			p.podLabels[k] = c.New
		}
	}
}

// readExit keeps the last termination of each container from the changes
// of status.containerStatuses and status.initContainerStatuses.
func (p *profile) readExit(c diff.Change) {
	for _, list := range []string{"status.containerStatuses", "status.initContainerStatuses"} {
		if !strings.HasPrefix(c.Path, list+"[") || c.Op == diff.OpRemove {
			continue
		}
		end := strings.Index(c.Path, "]")
		name, rest := c.Path[len(list)+1:end], c.Path[end+1:]
		if list == "status.initContainerStatuses" {
			name = "init " + name
		}
		var t struct {
			ExitCode *int32 `json:"exitCode"`
			Reason   string `json:"reason"`
		}
		var raw string
		switch rest {
		case "":
			var st struct {
				State struct {
					Terminated json.RawMessage `json:"terminated"`
				} `json:"state"`
			}
			if json.Unmarshal([]byte(c.New), &st) != nil {
				return
			}
			raw = string(st.State.Terminated)
		case ".state":
			var st struct {
				Terminated json.RawMessage `json:"terminated"`
			}
			if json.Unmarshal([]byte(c.New), &st) != nil {
				return
			}
			raw = string(st.Terminated)
		case ".state.terminated":
			raw = c.New
		case ".state.terminated.exitCode":
			p.exits[name] = "exit " + c.New
			return
		default:
			return
		}
		if raw == "" || raw == "null" || json.Unmarshal([]byte(raw), &t) != nil || t.ExitCode == nil {
			return
		}
		p.exits[name] = fmt.Sprintf("exit %d (%s)", *t.ExitCode, t.Reason)
	}
}

// readHooks finds the webhooks that intercept the pod's UPDATE, the
// request that removes a finalizer: from the trace's configurations when
// given, as they stood when the deletion was requested (or at the end),
// and from the findings' suspects.
func (p *profile) readHooks(s Side) {
	t := p.lc.RecordingEnd
	if p.deletion != nil {
		t = p.deletion.time
	}
	if s.Namespace != nil {
		p.nsLabels = namespaceLabelsAt(s.Namespace, t)
	}
	if s.Webhooks != nil {
		p.hooksKnown = true
		req := admission.Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: p.lc.Namespace,
			NamespaceLabels: p.nsLabels, ObjectLabels: p.podLabels, OldObjectLabels: p.podLabels}
		for _, w := range admission.MatchWebhooks(s.Webhooks, t, req) {
			p.updateHooks[w.Name] = w
		}
	}
	for _, f := range p.lc.Findings {
		for _, w := range f.Suspects {
			if _, ok := p.updateHooks[w.Name]; !ok {
				p.updateHooks[w.Name] = w
			}
		}
	}
}

// namespaceLabelsAt returns the labels of the namespace's revision in
// force at t (the first one if it was recorded later), empty if it has
// none; nil if no revision decodes.
func namespaceLabelsAt(recs []store.Record, t time.Time) map[string]string {
	var cur *store.Record
	for i := range recs {
		r := &recs[i]
		if cur != nil && r.Observed.After(t) {
			break
		}
		if r.Type != store.Deleted && r.Type != store.DeletedUnknown {
			cur = r
		}
	}
	if cur == nil {
		return nil
	}
	var ns metav1.PartialObjectMetadata
	if json.Unmarshal(cur.Object, &ns) != nil {
		return nil
	}
	if ns.Labels == nil {
		return map[string]string{}
	}
	return ns.Labels
}

// heldAtEnd lists the finalizers the pod still had when the recording
// ended, sorted.
func (p *profile) heldAtEnd() []string {
	var out []string
	for f, l := range p.finalizers {
		if l.held {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// removedAll reports whether every finalizer the pod had was removed.
func (p *profile) removedAll() bool { return len(p.heldAtEnd()) == 0 }

// finalizerFate says what happened to finalizer f on p.
func (p *profile) finalizerFate(f string) string {
	l := p.finalizers[f]
	switch {
	case l == nil:
		return "never had"
	case l.gone:
		return fmt.Sprintf("had removed by %s %s after its creation", l.removedBy, diff.Duration(l.removed.Sub(p.created)))
	}
	return "still holds"
}

// deniedWrites are the denied updates and patches of the pod: the requests
// that remove finalizers.
func (p *profile) deniedWrites() []diff.DeniedRequests {
	if p.lc.Audit == nil {
		return nil
	}
	var out []diff.DeniedRequests
	for _, d := range p.lc.Audit.Denied {
		if d.Verb == "update" || d.Verb == "patch" {
			out = append(out, d)
		}
	}
	return out
}

// clientKnown reports whether the actors name a client: by its
// managedFields entry or the audit log.
func clientKnown(as []diff.Actor) bool {
	for _, a := range as {
		if a.Basis == diff.BasisManagedFields || a.Basis == diff.BasisAuditLog {
			return true
		}
	}
	return false
}

func actorsText(as []diff.Actor) string {
	var names []string
	for _, a := range as {
		s := a.Who
		if a.Basis != "" {
			s += " (" + string(a.Basis) + ")"
		}
		names = append(names, s)
	}
	if len(names) == 0 {
		return "unknown"
	}
	return strings.Join(names, "; ")
}

func selectorMatches(selector string, set map[string]string) bool {
	sel, err := labels.Parse(selector)
	if err != nil {
		return true // cannot tell: do not claim it does not match
	}
	return sel.Matches(labels.Set(set))
}

func labelsText(m map[string]string) string {
	if len(m) == 0 {
		return "no labels"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return "labels " + strings.Join(parts, ",")
}

// count writes n things, the noun in the singular for one ("1 webhook",
// "2 fields"): the nouns here take an s.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
