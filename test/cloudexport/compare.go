package cloudexport

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// PodEvidence is what podtrace says of a pod from the audit events a trace
// holds about it.
type PodEvidence struct {
	// Lifecycle is `podtrace diff POD -o json`: the Audit section and the
	// findings.
	Lifecycle *explain.Lifecycle
	// Requests and Failed are diff.ReadAudit of the pod's audit records:
	// every request, refused or failed ones included (a 429 eviction).
	Requests []diff.AuditRequest
	Failed   []diff.DeniedRequests
}

// Runner runs a podtrace command and returns its standard output.
type Runner func(args ...string) (string, error)

// Collect gathers the evidence about each pod ("namespace/name") of the
// trace at db.
func Collect(db string, pods []string, run Runner) (map[string]*PodEvidence, error) {
	out := map[string]*PodEvidence{}
	for _, key := range pods {
		ns, name, _ := strings.Cut(key, "/")
		js, err := run("diff", name, "-n", ns, "--db", db, "-o", "json")
		if err != nil {
			return nil, fmt.Errorf("diff %s: %w", key, err)
		}
		var lc explain.Lifecycle
		if err := json.Unmarshal([]byte(js), &lc); err != nil {
			return nil, fmt.Errorf("diff %s -o json: %w", key, err)
		}
		out[key] = &PodEvidence{Lifecycle: &lc}
	}
	s, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	uids := map[string]string{} // pod UID -> key
	pods2, err := s.Objects(store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return nil, err
	}
	for _, p := range pods2 {
		if _, ok := out[p.Namespace+"/"+p.Name]; ok {
			uids[p.UID] = p.Namespace + "/" + p.Name
		}
	}
	events, err := s.Objects(store.ObjectFilter{Kind: "Event"})
	if err != nil {
		return nil, err
	}
	recs := map[string][]store.Record{}
	for _, o := range events {
		if o.APIVersion != "audit.k8s.io/v1" {
			continue
		}
		h, err := s.History(o.UID)
		if err != nil {
			return nil, err
		}
		for _, r := range h {
			for _, ref := range r.Refs {
				if key, ok := uids[ref]; ok {
					recs[key] = append(recs[key], r)
				}
			}
		}
	}
	for key, rs := range recs {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Observed.Before(rs[j].Observed) })
		out[key].Requests, out[key].Failed = diff.ReadAudit(rs)
	}
	return out, nil
}

// exportNote starts the evidence explain adds about what an export lacks.
const exportNote = "audit log from an export: "

// actorLacksNote is what an actor's detail says without an impersonated
// user.
const actorLacksNote = " (the export does not say whether the request impersonated another user)"

// Compare returns how the evidence read from an export differs from the
// evidence read from the API server's own log, other than by the fields
// the export says it lacks: a lacked field must be absent (a zero) in
// the export's evidence, and the findings must say what is missing. An
// empty result means the findings are the same.
func Compare(local, export map[string]*PodEvidence) []string {
	var out []string
	keys := make([]string, 0, len(local))
	for k := range local {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		l, e := local[key], export[key]
		if e == nil {
			out = append(out, key+": no evidence from the export")
			continue
		}
		c := &comparison{}
		c.requests(key+": requests", l.Requests, e.Requests)
		c.failed(key+": failed requests", l.Failed, e.Failed)
		la, ea := l.Lifecycle.Audit, e.Lifecycle.Audit
		switch {
		case la == nil && ea == nil:
		case la == nil || ea == nil:
			c.addf("%s: audit section %v from the log, %v from the export", key, la != nil, ea != nil)
		default:
			c.requests(key+": audit requests", la.Requests, ea.Requests)
			c.failed(key+": audit denied", la.Denied, ea.Denied)
			if d := cmp.Diff(la.Patches, ea.Patches); d != "" {
				c.addf("%s: webhook patches (-log +export):\n%s", key, d)
			}
			if len(la.Sources) > 0 {
				c.addf("%s: the log's events say they come from an export: %+v", key, la.Sources)
			}
		}
		if d := cmp.Diff(jsonLines(l.Lifecycle.Admission), jsonLines(e.Lifecycle.Admission)); d != "" {
			c.addf("%s: admission (-log +export):\n%s", key, d)
		}
		c.findings(key, l.Lifecycle, e.Lifecycle)
		out = append(out, c.diffs...)
	}
	return out
}

// comparison gathers differences and the rewrites that turn the log's
// texts into the export's where a field is lacking.
type comparison struct {
	diffs    []string
	rewrites [][2]string // identities
	// codes rewrites response codes: in the evidence of the request's
	// time, and elsewhere when every request agrees.
	timed map[time.Time][][2]string
	codes map[string]map[string]bool
}

// rewriteCode rewrites a code as the export gives it, for a request at t.
func (c *comparison) rewriteCode(t time.Time, from, to string) {
	if c.timed == nil {
		c.timed, c.codes = map[time.Time][][2]string{}, map[string]map[string]bool{}
	}
	if c.codes[from] == nil {
		c.codes[from] = map[string]bool{}
	}
	c.codes[from][to] = true
	if from != to {
		c.timed[t.UTC()] = append(c.timed[t.UTC()], [2]string{from, to})
	}
}

func (c *comparison) addf(format string, args ...any) {
	c.diffs = append(c.diffs, fmt.Sprintf(format, args...))
}

func (c *comparison) rewrite(from, to string) {
	if from == to {
		return
	}
	for _, r := range c.rewrites {
		if r[0] == from {
			return
		}
	}
	c.rewrites = append(c.rewrites, [2]string{from, to})
}

// applyAt rewrites a text of the log's findings about time t as the
// export's must read.
func (c *comparison) applyAt(t time.Time, s string) string {
	for _, r := range c.timed[t.UTC()] {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return c.apply(s)
}

// apply rewrites a text of the log's findings as the export's must read.
func (c *comparison) apply(s string) string {
	rs := append([][2]string(nil), c.rewrites...)
	for from, tos := range c.codes {
		if len(tos) == 1 {
			for to := range tos {
				if from != to {
					rs = append(rs, [2]string{from, to})
				}
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return len(rs[i][0]) > len(rs[j][0]) })
	for _, r := range rs {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

func set(fs []string) map[string]bool {
	m := map[string]bool{}
	for _, f := range fs {
		m[f] = true
	}
	return m
}

// known are the fields an export may lack, by their effect here.
var known = map[string]bool{"responseStatus.code": true, "responseStatus": true, "impersonatedUser": true, "requestObject": true,
	"responseObject": true, "requestReceivedTimestamp": true, "user": true}

func (c *comparison) lacks(where string, lacks []string) map[string]bool {
	for _, f := range lacks {
		if !known[f] {
			c.addf("%s: lacks %q, a field the comparison does not know", where, f)
		}
	}
	return set(lacks)
}

func (c *comparison) requests(where string, l, e []diff.AuditRequest) {
	if len(l) != len(e) {
		c.addf("%s: %d from the log, %d from the export", where, len(l), len(e))
		return
	}
	for i := range l {
		want, got := l[i], e[i]
		lacks := c.lacks(where, got.Lacks)
		if lacks["responseStatus.code"] || lacks["responseStatus"] {
			want.Code = 0
		}
		if lacks["impersonatedUser"] {
			want.ImpersonatedUser = ""
		}
		if lacks["responseObject"] {
			want.ResourceVersion, want.Seq, want.Listed = "", 0, ""
		}
		if lacks["requestObject"] {
			want.GracePeriodSeconds = nil
		}
		if lacks["requestReceivedTimestamp"] {
			want.Received = time.Time{}
		}
		want.Lacks, want.ExportStatus = got.Lacks, got.ExportStatus
		if d := cmp.Diff(want, got); d != "" {
			c.addf("%s[%d] (-log, less what the export lacks, +export):\n%s", where, i, d)
		}
		c.rewrite(l[i].Identity(), got.Identity())
		c.rewriteCode(l[i].Time, "("+strconv.Itoa(l[i].Code)+")", "("+strconv.Itoa(got.Code)+")")
	}
}

func (c *comparison) failed(where string, l, e []diff.DeniedRequests) {
	if len(l) != len(e) {
		c.addf("%s: %d groups from the log, %d from the export", where, len(l), len(e))
		return
	}
	for i := range l {
		want, got := l[i], e[i]
		lacks := c.lacks(where, got.Lacks)
		if lacks["responseStatus.code"] || lacks["responseStatus"] {
			want.Code = 0
		}
		if lacks["impersonatedUser"] {
			want.ImpersonatedUser = ""
		}
		want.Lacks, want.ExportStatus = got.Lacks, got.ExportStatus
		if d := cmp.Diff(want, got); d != "" {
			c.addf("%s[%d] (-log, less what the export lacks, +export):\n%s", where, i, d)
		}
		c.rewrite(l[i].Identity(), got.Identity())
		c.rewriteCode(l[i].First, "("+l[i].CodeText()+")", "("+got.CodeText()+")")
	}
}

// findings compares the findings: the same, once the log's texts are
// rewritten where the export lacks a field, and the export's carry a note
// for each export that lacks any.
func (c *comparison) findings(key string, l, e *explain.Lifecycle) {
	var notes []string
	if e.Audit != nil {
		for _, s := range e.Audit.Sources {
			if len(s.Lacks) > 0 {
				notes = append(notes, exportNote+s.Summary())
			}
		}
	}
	if len(l.Findings) != len(e.Findings) {
		c.addf("%s: %d findings from the log, %d from the export", key, len(l.Findings), len(e.Findings))
		return
	}
	for i := range l.Findings {
		lf, ef := l.Findings[i], e.Findings[i]
		where := fmt.Sprintf("%s: finding %s", key, lf.ID)
		if lf.ID != ef.ID || lf.Severity != ef.Severity || c.apply(lf.Headline) != ef.Headline || lf.Mechanism != ef.Mechanism {
			c.addf("%s: %s %s %q from the log, %s %s %q from the export", where, lf.ID, lf.Severity, lf.Headline, ef.ID, ef.Severity, ef.Headline)
		}
		var lw, ew []string
		for _, w := range lf.Suspects {
			lw = append(lw, w.Kind+"/"+w.Name)
		}
		for _, w := range ef.Suspects {
			ew = append(ew, w.Kind+"/"+w.Name)
		}
		if d := cmp.Diff(lw, ew); d != "" {
			c.addf("%s: suspects (-log +export):\n%s", where, d)
		}
		if (lf.Actor == nil) != (ef.Actor == nil) {
			c.addf("%s: actor %+v from the log, %+v from the export", where, lf.Actor, ef.Actor)
		} else if lf.Actor != nil {
			la, ea := *lf.Actor, *ef.Actor
			la.Who, la.Detail, la.User, la.Impersonator = c.apply(la.Who), c.apply(la.Detail), "", ""
			ea.Detail, ea.User, ea.Impersonator = strings.Replace(ea.Detail, actorLacksNote, "", 1), "", ""
			if d := cmp.Diff(la, ea); d != "" {
				c.addf("%s: actor (-log, rewritten, +export):\n%s", where, d)
			}
		}
		var lt, et []string
		for _, ev := range lf.Evidence {
			lt = append(lt, ev.Time.UTC().Format("15:04:05.000000 ")+c.applyAt(ev.Time, ev.Text))
		}
		var gotNotes []string
		for _, ev := range ef.Evidence {
			if strings.HasPrefix(ev.Text, exportNote) {
				gotNotes = append(gotNotes, strings.TrimSuffix(ev.Text, "; the evidence above claims none of these"))
				continue
			}
			et = append(et, ev.Time.UTC().Format("15:04:05.000000 ")+ev.Text)
		}
		if d := cmp.Diff(lt, et); d != "" {
			c.addf("%s: evidence (-log, rewritten, +export):\n%s", where, d)
		}
		if readsAudit(lf.ID) {
			if d := cmp.Diff(notes, gotNotes); d != "" {
				c.addf("%s: notes on what the export lacks (-want +got):\n%s", where, d)
			}
		}
		var ln []string
		for _, n := range lf.Next {
			ln = append(ln, c.apply(n))
		}
		if d := cmp.Diff(ln, ef.Next); d != "" {
			c.addf("%s: next steps (-log, rewritten, +export):\n%s", where, d)
		}
	}
}

// jsonLines writes v as indented JSON lines, to compare values whose
// types keep unexported fields.
func jsonLines(v any) []string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []string{err.Error()}
	}
	return strings.Split(string(b), "\n")
}

// readsAudit: the findings explain adds export notes to.
func readsAudit(id string) bool {
	return id == "stuck-finalizer" || id == "finalizer-not-removed" || id == "ended"
}
