package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

// Markdown writes a summary of the trace to paste into a GitHub or GitLab
// issue: the recording, the findings, the comparisons of the cohorts that
// ended differently (and of the pair asked for), a table of the pods, and
// for each pod with findings (or requests denied in the audit log) the
// findings with their evidence, what the audit log says about it and the
// decisive changes of its life.
// Strings from the cluster are escaped so that they stay text: they cannot
// break a table, open a code span, make a link or add markup.
func Markdown(w io.Writer, tr *Trace, opts TextOptions) error {
	opts.Color = false
	t := &textWriter{w: w, opts: opts}
	t.printf("## podtrace report\n\n")
	t.printf("**Trace** %s", mdText(tr.File))
	if !tr.Generated.IsZero() {
		t.printf(" · **Generated** %s", t.stamp(tr.Generated))
	}
	t.printf("\n\n")
	if len(tr.Sessions) > 0 {
		t.printf("| Session | Server | Version | Started | Stopped |\n|---|---|---|---|---|\n")
		for _, s := range tr.Sessions {
			stop := SessionEnd(s, tr.Live, t.stamp)
			server := mdText(s.Server)
			if s.Context != "" {
				server += " (context " + mdText(s.Context) + ")"
			}
			t.printf("| %d | %s | %s | %s | %s |\n", s.ID, server, mdText(s.ServerVersion), t.stamp(s.Started), stop)
		}
		t.printf("\n")
	}
	t.printf("**Redaction** %s  \n", tr.Redaction())
	if start, end := tr.Window(); !start.IsZero() {
		t.printf("**Window** %s to %s (%s)  \n", t.stamp(start), t.stamp(end), end.Sub(start).Round(1e9))
	}
	for _, l := range PruneLines(tr.Pruned, t.stamp) {
		t.printf("**Pruned** %s  \n", mdText(l))
	}
	for _, l := range GapLines(tr.Gaps, tr.Sessions, t.stamp) {
		t.printf("**Gaps** %s  \n", mdText(l))
	}
	t.printf("**Pods** %d: %s  \n", len(tr.Pods), mdText(outcomeLine(tr.Outcomes())))
	fs := tr.Findings()
	t.printf("**Findings** %d\n\n", len(fs))
	var info []PodFinding
	for _, f := range fs {
		if f.Severity == explain.Info && !opts.ShowInfo {
			info = append(info, f)
			continue
		}
		t.printf("- **%s** %s/%s %s: %s\n", strings.ToUpper(f.Severity.String()), mdText(f.Pod.Namespace), mdText(f.Pod.Name), mdCode(f.ID), mdText(f.Headline))
	}
	if len(info) > 0 {
		// Folded: how each pod ended, one line each, in a details element.
		t.printf("\n<details><summary>%s (how pods ended)</summary>\n\n", Plural(len(info), "info finding"))
		for _, f := range info {
			t.printf("- **INFO** %s/%s %s: %s\n", mdText(f.Pod.Namespace), mdText(f.Pod.Name), mdCode(f.ID), mdText(f.Headline))
		}
		t.printf("\n</details>\n")
	}
	if len(fs) == 0 {
		t.printf("No findings: nothing abnormal in the recorded pods.\n")
	}
	t.mdCompare(newCompareSection(tr))

	t.printf("\n### Pods\n\n| Namespace | Name | Outcome | Revisions | Events | Findings |\n|---|---|---|--:|--:|---|\n")
	for _, p := range tr.Pods {
		var ids []string
		for _, f := range p.Findings {
			ids = append(ids, f.ID)
		}
		t.printf("| %s | %s | %s | %d | %d | %s |\n", mdText(p.Namespace), mdText(p.Name), mdText(outcomeText(p)),
			len(p.Steps), len(p.Events), mdText(orDash(strings.Join(ids, ", "))))
	}
	for _, p := range tr.Pods {
		if t.unwell(p) || p.Audit != nil && len(p.Audit.Denied) > 0 {
			t.mdPod(p)
		}
	}
	return t.err
}

// unwell reports whether p has a finding to show in full: a warning or
// worse, or any with ShowInfo.
func (t *textWriter) unwell(p *explain.Lifecycle) bool {
	for _, f := range p.Findings {
		if f.Severity > explain.Info || t.opts.ShowInfo {
			return true
		}
	}
	return false
}

func outcomeText(p *explain.Lifecycle) string {
	if p.Outcome == "Terminating" && p.Terminating != 0 {
		return p.Outcome + " for " + p.Terminating.String()
	}
	return p.Outcome
}

func (t *textWriter) mdPod(p *explain.Lifecycle) {
	t.printf("\n### %s/%s: %s\n\n", mdText(p.Namespace), mdText(p.Name), mdText(outcomeText(p)))
	t.printf("UID %s", mdText(p.UID))
	if p.Node != "" {
		t.printf(" · node %s", mdText(p.Node))
	}
	t.printf(" · %s\n", mdText(PhasePath(p)))
	for _, f := range p.Findings {
		t.printf("\n**%s** %s: %s\n\n", strings.ToUpper(f.Severity.String()), mdCode(f.ID), mdText(f.Headline))
		if f.Severity == explain.Info && !t.opts.ShowInfo {
			if f.Actor != nil {
				t.printf("- actor: %s\n", mdText(actorLine(f.Actor)))
			}
			continue
		}
		for _, l := range endedLines(f) {
			t.printf("- %s\n", mdText(l))
		}
		for _, e := range f.Evidence {
			// The revision goes in code: a bare #13 would link to issue 13.
			var when []string
			if !e.Time.IsZero() {
				when = append(when, t.clock(e.Time))
			}
			if e.Seq != 0 {
				when = append(when, fmt.Sprintf("#%d", e.Seq))
			}
			if len(when) > 0 {
				t.printf("- %s %s\n", mdCode(strings.Join(when, " ")), mdText(e.Text))
			} else {
				t.printf("- %s\n", mdText(e.Text))
			}
		}
		if len(f.Suspects) > 0 {
			t.printf("\nSuspects, admission webhooks and policies that intercept this request:\n\n")
			for _, w := range f.Suspects {
				t.printf("- %s\n", mdWebhook(w))
			}
		}
		if len(f.Next) > 0 {
			t.printf("\nNext:\n\n")
			for _, n := range f.Next {
				t.printf("- %s\n", mdText(n))
			}
		}
	}
	if a := p.Admission; a != nil && (len(a.Changes) > 0 || len(a.Notes) > 0) {
		t.printf("\nAdmission, compared with %s:\n", mdText(a.Source))
		if len(a.Changes) > 0 {
			// A code block: "+ path" and "- path" lines in a list would
			// render as nested bullets.
			var lines []string
			for _, c := range a.Changes {
				lines = append(lines, changeText(c.Change), "    by "+c.By+" ("+c.Certainty+")")
			}
			body := strings.Join(lines, "\n")
			fence := codeFence(body)
			t.printf("\n%stext\n%s\n%s\n", fence, body, fence)
		}
		if len(a.Notes) > 0 {
			t.printf("\n")
		}
		for _, n := range a.Notes {
			t.printf("- %s\n", mdText(n))
		}
	}
	t.mdAudit(p.Audit)
	lines := t.decisive(p)
	if len(lines) > 0 {
		body := strings.Join(lines, "\n")
		fence := codeFence(body)
		t.printf("\nDecisive changes:\n\n%stext\n%s\n%s\n", fence, body, fence)
	}
}

// mdAudit writes what the imported audit log says about the pod, as the
// text report does: the denied requests, grouped, with the webhook that
// denied them; every request by user and user agent, linked to its
// revision; each mutating webhook's patch.
func (t *textWriter) mdAudit(a *diff.Audit) {
	if a == nil {
		return
	}
	t.printf("\nAudit, requests about the pod from the API server's audit log:\n")
	if len(a.Denied) > 0 {
		t.printf("\n")
	}
	for _, d := range a.Denied {
		s := "s"
		if d.Count == 1 {
			s = ""
		}
		t.printf("- **%d %s attempt%s denied** (%d) by %s", d.Count, mdText(request(d.Verb, d.Subresource)), s, d.Code, mdText(d.Identity()))
		if d.UserAgent != "" {
			t.printf(" (%s)", mdText(d.Agent()))
		}
		if d.Webhook != "" {
			t.printf(", by webhook %s", mdText(d.Webhook))
		}
		if d.Policy != "" {
			t.printf(", by ValidatingAdmissionPolicy %s", mdText(d.Policy))
			if d.Binding != "" {
				t.printf(" (binding %s)", mdText(d.Binding))
			}
		}
		t.printf(", first %s, last %s: %s\n", mdCode(t.clock(d.First)), mdCode(t.clock(d.Last)), mdText(d.Message))
	}
	if len(a.Requests) > 0 {
		t.printf("\n| Time | Request | Code | User | User agent | Revision |\n|---|---|--:|---|---|---|\n")
		for _, r := range a.Requests {
			var rev []string
			if r.Seq != 0 {
				rev = append(rev, mdCode(fmt.Sprintf("#%d", r.Seq)))
			}
			if r.ResourceVersion != "" {
				rev = append(rev, "rv "+mdText(r.ResourceVersion))
			}
			t.printf("| %s | %s | %d | %s | %s | %s |\n", t.clock(r.Time), mdText(request(r.Verb, r.Subresource)), r.Code,
				mdText(r.Identity()), mdText(orDash(r.Agent())), orDash(strings.Join(rev, " ")))
		}
	}
	if len(a.Patches) > 0 {
		t.printf("\nPatches by mutating webhooks:\n\n")
		for _, p := range a.Patches {
			by := mdText(p.Webhook) + " (" + mdText(p.Verb)
			if p.Configuration != "" {
				by += ", configuration " + mdText(p.Configuration)
			}
			by += ")"
			for _, op := range p.Ops {
				line := op.Op + " " + op.Path
				if op.From != "" {
					line += " from " + op.From
				}
				if len(op.Value) > 0 {
					line += "  " + shorten(string(op.Value))
				}
				t.printf("- %s patch by webhook %s: %s\n", mdCode(t.clock(p.Time)), by, mdCode(line))
			}
		}
	}
	if len(a.Sources) > 0 {
		t.printf("\n")
	}
	for _, src := range a.Sources {
		t.printf("Note, from an export: %s\n", mdText(src.Summary()))
	}
}

// request names a request: its verb, and its subresource if any.
func request(verb, subresource string) string {
	if subresource != "" {
		return verb + " " + subresource
	}
	return verb
}

func mdWebhook(w admission.Webhook) string {
	s := fmt.Sprintf("%s %s (configuration %s): failurePolicy %s, rules %s", strings.TrimSuffix(w.Kind, "Configuration"),
		mdText(w.Name), mdText(w.Configuration), mdText(w.FailurePolicy), mdText(w.Rules))
	if w.IsPolicy() {
		s = fmt.Sprintf("%s %s (binding %s): ", w.Kind, mdText(w.Name), mdText(w.Configuration))
		if len(w.ValidationActions) > 0 {
			s += "validationActions " + mdText(strings.Join(w.ValidationActions, ", ")) + ", "
		}
		s += fmt.Sprintf("failurePolicy %s, rules %s", mdText(w.FailurePolicy), mdText(w.Rules))
	}
	if w.NamespaceSelector != "" {
		s += ", namespaceSelector " + mdText(w.NamespaceSelector)
	}
	if w.ObjectSelector != "" {
		s += ", objectSelector " + mdText(w.ObjectSelector)
	}
	for _, c := range w.MatchConditions {
		s += "; matchCondition (not evaluated) " + mdText(c)
	}
	for _, v := range w.Validations {
		s += "; validation (not evaluated) " + mdText(v)
	}
	if w.Params != "" {
		s += "; params: " + mdText(w.Params)
	}
	if w.Uncertain != "" {
		s += "; uncertain: " + mdText(w.Uncertain)
	}
	return s
}

// decisive returns the lines of the fenced block of a pod's decisive
// changes: every revision that reached a phase or changed the finalizers,
// the deletion or an image, with those changes.
func (t *textWriter) decisive(p *explain.Lifecycle) []string {
	var out []string
	indent := strings.Repeat(" ", 14)
	for i, s := range p.Steps {
		var changes []string
		stepUnknown := len(s.Actors) == 1 && s.Actors[0].Basis == diff.BasisUnknown
		for _, c := range s.Changes {
			cs := decisiveChanges(c)
			if c.Basis == diff.BasisUnknown && !stepUnknown && len(cs) == 1 {
				cs[0] += "  (unknown: " + unknownChange(c) + ")"
			}
			changes = append(changes, cs...)
		}
		if len(changes) == 0 && len(s.Phases) == 0 {
			continue
		}
		what := stepWhat(i, s)
		line := fmt.Sprintf("%s  #%-5d %s by %s", t.clock(s.Time), s.Seq, what, actors(s.Actors))
		if s.Unobserved != "" {
			line += " (" + s.Unobserved + ")"
		}
		if len(s.Phases) > 0 {
			line += "  [" + strings.Join(s.Phases, ", ") + "]"
		}
		out = append(out, line)
		for _, c := range changes {
			out = append(out, indent+c)
		}
	}
	return out
}

// decisiveChanges renders a change if it is one the story turns on: the
// finalizers, the deletion, the node, the phase, an image. A container added
// or removed whole shows as its image.
func decisiveChanges(c diff.Change) []string {
	p := c.Path
	switch {
	case strings.HasPrefix(p, "metadata.finalizers"), strings.HasPrefix(p, "metadata.deletionTimestamp"),
		strings.HasPrefix(p, "metadata.deletionGracePeriodSeconds"), p == "spec.nodeName", p == "status.phase",
		isContainerList(p) && strings.HasSuffix(p, "].image"):
		return []string{changeText(c)}
	case isContainerList(p) && strings.HasSuffix(p, "]") && strings.Count(p, "[") == 1:
		// spec.containers[build] added or removed whole
		v := c.New
		if c.Op == diff.OpRemove {
			v = c.Old
		}
		var ct struct {
			Image string `json:"image"`
		}
		if json.Unmarshal([]byte(v), &ct) == nil && ct.Image != "" && c.Op != diff.OpChange {
			return []string{changeText(diff.Change{Path: p + ".image", Op: c.Op, New: ct.Image, Old: ct.Image})}
		}
	case p == "spec.containers" || p == "spec.initContainers" || p == "spec.ephemeralContainers":
		v := c.New
		if c.Op == diff.OpRemove {
			v = c.Old
		}
		var cts []struct {
			Name  string `json:"name"`
			Image string `json:"image"`
		}
		if json.Unmarshal([]byte(v), &cts) == nil && c.Op != diff.OpChange {
			var out []string
			for _, ct := range cts {
				out = append(out, changeText(diff.Change{Path: p + "[" + ct.Name + "].image", Op: c.Op, New: ct.Image, Old: ct.Image}))
			}
			return out
		}
	}
	return nil
}

func isContainerList(p string) bool {
	return strings.HasPrefix(p, "spec.containers[") || strings.HasPrefix(p, "spec.initContainers[") || strings.HasPrefix(p, "spec.ephemeralContainers[")
}

// changeText renders a change the way the text report does: + path value,
// - path value, ~ path old -> new.
func changeText(c diff.Change) string {
	switch c.Op {
	case diff.OpAdd:
		if c.New == "" {
			return "+ " + c.Path
		}
		return "+ " + c.Path + "  " + shorten(c.New)
	case diff.OpRemove:
		if c.Old == "" {
			return "- " + c.Path
		}
		return "- " + c.Path + "  " + shorten(c.Old)
	}
	return "~ " + c.Path + "  " + shorten(c.Old) + " -> " + shorten(c.New)
}

// mdEscaper backslash-escapes the characters that make markup in GitHub and
// GitLab markdown, and turns line breaks into spaces, so that a string stays
// one line of text, also inside a table cell.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`,
	`|`, `\|`, `~`, `\~`, `&`, `\&`, `#`, `\#`, "\r\n", " ", "\n", " ", "\r", " ",
)

func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode renders s as an inline code span, delimited by more backticks than
// it holds in a row. Not for table cells, where a | would still split it.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	fence := strings.Repeat("`", backtickRun(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// codeFence returns a fence of backticks longer than any run of backticks in
// body, so that the block cannot be closed from inside.
func codeFence(body string) string {
	return strings.Repeat("`", max(3, backtickRun(body)+1))
}

// backtickRun returns the length of the longest run of backticks in s.
func backtickRun(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
