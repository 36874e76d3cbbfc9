package report

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/podtrace/podtrace/diff"
)

// HTMLOptions control the HTML report.
type HTMLOptions struct {
	// Title is the page's title; empty means "podtrace report: " and the
	// trace file's name.
	Title string
}

// The page is one file with no outside resource: the template renders the
// overview and the findings (readable without JavaScript and in print), and
// embeds the trace once as compact JSON (see htmlData) that the inline
// script turns into the pod list and, when a pod is opened, its details.
//
//go:embed html/report.html.tmpl html/report.css html/report.js
var htmlAssets embed.FS

var (
	htmlTemplate = template.Must(template.New("report.html.tmpl").ParseFS(htmlAssets, "html/report.html.tmpl"))
	htmlCSS      = template.CSS(mustAsset("html/report.css"))
	htmlJS       = template.JS(mustAsset("html/report.js"))
)

func mustAsset(name string) string {
	b, err := htmlAssets.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// contentSecurityPolicy forbids every fetch: the page may run its inline
// script and style and show data: images, nothing else.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// HTML writes the whole trace as one self-contained HTML page: an overview
// of the recording and every finding, then a searchable list of the pods
// whose details (timeline, findings, revisions, events, dependents) open on
// click or from a link to #pod=NAMESPACE/NAME/UID.
func HTML(w io.Writer, tr *Trace, opts HTMLOptions) error {
	data, err := htmlData{tr}.MarshalJSON()
	if err != nil {
		return fmt.Errorf("encode the report's data: %w", err)
	}
	p := newHTMLPage(tr, opts)
	p.Data = json.RawMessage(data)
	return htmlTemplate.Execute(w, p)
}

// htmlPage is what the template renders.
type htmlPage struct {
	Title        string
	CSP          string
	File         string
	Generated    string
	Sessions     []htmlSession
	Window       string
	Redaction    string
	PodCount     int
	Outcomes     []htmlCount
	Severities   []htmlCount
	Findings     []htmlFinding
	OpenFindings bool
	// Groups folds many findings by severity and id; nil when there are
	// few enough to list one by one.
	Groups        []htmlFindingGroup
	GroupEvidence bool
	CSS           template.CSS
	JS            template.JS
	// Data is the trace in the form htmlData describes. html/template
	// writes it through encoding/json, which escapes <, > and &.
	Data json.RawMessage
}

type htmlSession struct {
	ID                                                            uint32
	Server, ServerVersion, Context, Scope, Started, Stopped, Tool string
}

type htmlCount struct {
	Name  string
	Count int
	Class string
}

type htmlFinding struct {
	Severity, ID, Headline string
	Namespace, Name, UID   string
	Evidence               []htmlEvidence
	Suspects               []diff.Webhook
	Next                   []string
}

type htmlFindingGroup struct {
	Severity, ID string
	Count        int
	Findings     []htmlFinding
}

type htmlEvidence struct {
	Time, Seq, Text string
}

// The overview shows up to openFindingsUpTo findings unfolded, one by one;
// more are grouped by severity and id, with each finding's evidence while
// there are no more than evidenceUpTo (the pod's details have it anyway).
const (
	openFindingsUpTo = 12
	evidenceUpTo     = 100
)

func newHTMLPage(tr *Trace, opts HTMLOptions) *htmlPage {
	p := &htmlPage{
		Title: opts.Title, CSP: contentSecurityPolicy, File: tr.File, PodCount: len(tr.Pods),
		CSS: htmlCSS, JS: htmlJS,
	}
	if p.Title == "" {
		p.Title = "podtrace report: " + tr.File
	}
	if !tr.Generated.IsZero() {
		p.Generated = stampUTC(tr.Generated)
	}
	for _, s := range tr.Sessions {
		hs := htmlSession{ID: s.ID, Server: s.Server, ServerVersion: s.ServerVersion, Context: s.Context,
			Started: stampUTC(s.Started), Stopped: "still recording, or interrupted", Tool: s.Version}
		if !s.Stopped.IsZero() {
			hs.Stopped = stampUTC(s.Stopped)
		}
		var scope []string
		if s.Namespace != "" {
			scope = append(scope, "namespace "+s.Namespace)
		}
		if s.Selector != "" {
			scope = append(scope, "selector "+s.Selector)
		}
		hs.Scope = strings.Join(scope, ", ")
		p.Sessions = append(p.Sessions, hs)
	}
	if start, end := tr.Window(); !start.IsZero() {
		p.Window = fmt.Sprintf("%s to %s (%s)", stampUTC(start), stampUTC(end), end.Sub(start).Round(time.Second))
	}
	p.Redaction = tr.Redaction()
	outcomes := tr.Outcomes()
	names := make([]string, 0, len(outcomes))
	for k := range outcomes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p.Outcomes = append(p.Outcomes, htmlCount{Name: k, Count: outcomes[k], Class: cssClass(k)})
	}
	bySeverity := map[diff.Severity]int{}
	for _, f := range tr.Findings() {
		bySeverity[f.Severity]++
		hf := htmlFinding{Severity: f.Severity.String(), ID: f.ID, Headline: f.Headline,
			Namespace: f.Pod.Namespace, Name: f.Pod.Name, UID: f.Pod.UID, Suspects: f.Suspects, Next: f.Next}
		for _, e := range f.Evidence {
			he := htmlEvidence{Text: e.Text}
			if !e.Time.IsZero() {
				he.Time = e.Time.UTC().Format("15:04:05.000")
			}
			if e.Seq != 0 {
				he.Seq = fmt.Sprintf("#%d", e.Seq)
			}
			hf.Evidence = append(hf.Evidence, he)
		}
		p.Findings = append(p.Findings, hf)
	}
	for s := diff.Critical; s >= diff.Info; s-- {
		if n := bySeverity[s]; n > 0 {
			p.Severities = append(p.Severities, htmlCount{Name: s.String(), Count: n, Class: s.String()})
		}
	}
	p.OpenFindings = len(p.Findings) <= openFindingsUpTo
	if !p.OpenFindings {
		p.GroupEvidence = len(p.Findings) <= evidenceUpTo
		at := map[string]int{}
		for _, f := range p.Findings {
			key := f.Severity + "/" + f.ID
			i, ok := at[key]
			if !ok {
				i = len(p.Groups)
				at[key] = i
				p.Groups = append(p.Groups, htmlFindingGroup{Severity: f.Severity, ID: f.ID})
			}
			p.Groups[i].Count++
			p.Groups[i].Findings = append(p.Groups[i].Findings, f)
		}
	}
	return p
}

func stampUTC(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// cssClass keeps the letters of s, for a class name built from cluster data.
func cssClass(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
