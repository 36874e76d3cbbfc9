package report

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/flate"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/explain"
)

// HTMLOptions control the HTML report.
type HTMLOptions struct {
	// Title is the page's title; empty means "podtrace report: " and the
	// trace file's name.
	Title string
	// ShowInfo opens the info findings (how each pod ended), folded by
	// default.
	ShowInfo bool
}

// The page is one file with no outside resource: the template renders the
// overview and the findings (readable without JavaScript and in print), and
// embeds the trace once as compact JSON (see htmlData; deflated when large,
// see embedData) that the inline script turns into the pod list and, when a
// pod is opened, its details.
//
//go:embed html/report.html.tmpl html/report.css html/report.js html/compare.html.tmpl html/compare.css
var htmlAssets embed.FS

var (
	htmlTemplate = template.Must(template.New("report.html.tmpl").Funcs(compareFuncs).ParseFS(htmlAssets, "html/report.html.tmpl", "html/compare.html.tmpl"))
	// htmlCSS is the report's style and the compare view's.
	htmlCSS = template.CSS(mustAsset("html/report.css") + "\n" + mustAsset("html/compare.css"))
	htmlJS  = template.JS(mustAsset("html/report.js"))
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
	// The data goes to the sink as it is encoded, a pod at a time, and is
	// deflated from there on once it is past plainDataUpTo: the page never
	// holds the whole JSON, tens of megabytes for a large trace.
	sink := &dataSink{}
	if err := (htmlData{tr}).encode(sink); err != nil {
		return fmt.Errorf("encode the report's data: %w", err)
	}
	p := newHTMLPage(tr, opts)
	var err error
	if p.Data, err = sink.close(); err != nil {
		return fmt.Errorf("compress the report's data: %w", err)
	}
	return htmlTemplate.Execute(w, p)
}

// plainDataUpTo is the size up to which the page embeds its data as plain
// JSON, readable and greppable in the file; larger data is deflated.
var plainDataUpTo = 1 << 20

// deflatedFormat names the wrapper of deflated data.
const deflatedFormat = "podtrace-report-deflate/1"

// embedData returns the content of the page's data element. Up to
// plainDataUpTo bytes it is the JSON of htmlData itself. Above, it is
//
//	{"format": "podtrace-report-deflate/1", "deflated": "TEXT"}
//
// where TEXT is the JSON deflated (RFC 1951, raw, no header) and written
// in basE91 (see base91): the script decodes it and inflates it with the
// browser's DecompressionStream("deflate-raw"), or with its own small
// inflate in a browser that has none. A thousand crash-looping pods of a
// hundred revisions make about 18 MB of JSON and 4.7 MB of TEXT, where
// base64 would make 5 MB: most of the deflated bytes are container IDs,
// which no encoding of the data makes smaller.
//
// Either way the content has no '<', so nothing in it can end the script
// element: encoding/json escapes <, > and & in every string of the data,
// and the basE91 alphabet has no '<'.
func embedData(data []byte) (template.JS, error) {
	var s dataSink
	s.write(data)
	return s.close()
}

// dataSink makes the content of the page's data element as embedData
// does, from the data written to it in pieces: it keeps the data plain up
// to plainDataUpTo bytes, and deflates it from the piece that goes past.
type dataSink struct {
	plain []byte
	z     bytes.Buffer
	zw    *flate.Writer
	err   error
}

func (s *dataSink) write(p []byte) {
	if s.err != nil || len(p) == 0 {
		return
	}
	if bytes.IndexByte(p, '<') >= 0 {
		p = bytes.ReplaceAll(p, []byte("<"), []byte(`\u003c`)) // as embedData does
	}
	if s.zw == nil {
		if len(s.plain)+len(p) <= plainDataUpTo {
			s.plain = append(s.plain, p...)
			return
		}
		s.z.Grow(1 << 20)
		if s.zw, s.err = flate.NewWriter(&s.z, deflateLevel); s.err != nil {
			return
		}
		if _, s.err = s.zw.Write(s.plain); s.err != nil {
			return
		}
		s.plain = nil
	}
	_, s.err = s.zw.Write(p)
}

// close returns what embedData returns for the whole data.
func (s *dataSink) close() (template.JS, error) {
	if s.err != nil {
		return "", s.err
	}
	if s.zw == nil {
		return template.JS(s.plain), nil
	}
	if err := s.zw.Close(); err != nil {
		return "", err
	}
	out := make([]byte, 0, 64+s.z.Len()*5/4)
	out = append(out, `{"format":"`+deflatedFormat+`","deflated":"`...)
	out = base91(out, s.z.Bytes())
	out = append(out, `"}`...)
	return template.JS(out), nil
}

// base91Alphabet is printable ASCII but for '"', '<' and '\\': a basE91
// text goes in a JSON string, in a script element, as it is.
const base91Alphabet = "!#$%&'()*+,-./0123456789:;=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// base91 appends src to dst in basE91 (Joachim Henke's encoding, with the
// alphabet above): 13 or 14 bits in two characters, about 23% more bytes
// than the data where base64 makes 33%. report.js has the decoder.
func base91(dst, src []byte) []byte {
	var b uint32
	var n uint
	for _, c := range src {
		b |= uint32(c) << n
		n += 8
		if n > 13 {
			v := b & 8191
			if v > 88 {
				b >>= 13
				n -= 13
			} else {
				v = b & 16383
				b >>= 14
				n -= 14
			}
			dst = append(dst, base91Alphabet[v%91], base91Alphabet[v/91])
		}
	}
	if n > 0 {
		dst = append(dst, base91Alphabet[b%91])
		if n > 7 || b > 90 {
			dst = append(dst, base91Alphabet[b/91])
		}
	}
	return dst
}

// deflateLevel trades the page's size for the time to write it.
const deflateLevel = 6

// htmlPage is what the template renders.
type htmlPage struct {
	Title      string
	CSP        string
	File       string
	Generated  string
	Sessions   []htmlSession
	Window     string
	Pruned     []string
	Gaps       []string
	Redaction  string
	PodCount   int
	Outcomes   []htmlCount
	Severities []htmlCount
	// Findings are the warnings and critical findings (and the info ones
	// with HTMLOptions.ShowInfo), shown open when few.
	Findings     []htmlFinding
	OpenFindings bool
	// Groups folds many findings by severity and id; nil when there are
	// few enough to list one by one.
	Groups        []htmlFindingGroup
	GroupEvidence bool
	// Info folds the info findings (how pods ended); nil when there are
	// none, or with HTMLOptions.ShowInfo (ShowInfo), which also opens them
	// in each pod's details.
	Info     *htmlInfo
	ShowInfo bool
	// Compare is the Compare section; nil when the trace has nothing to
	// compare (every cohort ended one way, no pair asked for).
	Compare *htmlCompare
	CSS     template.CSS
	JS      template.JS
	// Data is the trace in the form htmlData describes, as embedData
	// makes it: JSON with no '<' in it, written as it is.
	Data template.JS
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
	Suspects               []admission.Webhook
	Next                   []string
}

type htmlFindingGroup struct {
	Severity, ID string
	Count        int
	Findings     []htmlFinding // the first groupListUpTo
	More         int           // not listed: the pod list's filter shows them
}

// htmlInfo is the info findings, folded: their kinds, each with its first
// pods.
type htmlInfo struct {
	Count int
	Kinds []htmlFindingGroup
}

// htmlCompare is the Compare section: the cohorts that ended differently
// and the pair asked for, each comparison in the compare view.
type htmlCompare struct {
	Intro   string // when there are cohorts
	Summary string // for the overview
	Items   []htmlCompareItem
}

type htmlCompareItem struct {
	Title  string
	Groups []htmlCompareGroup
	Views  []htmlCompareView
	// NotCompared is the command that compares a cohort left out.
	NotCompared string
}

type htmlCompareGroup struct {
	Ending  string
	Count   int
	Typical compare.Pod
}

type htmlCompareView struct {
	View    compareView
	Command string
}

func newHTMLCompare(tr *Trace) *htmlCompare {
	s := newCompareSection(tr)
	if s == nil {
		return nil
	}
	hc := &htmlCompare{}
	var parts []string
	if n := len(tr.Cohorts); n > 0 {
		hc.Intro = strings.ToUpper(compareIntro[:1]) + compareIntro[1:] + "."
		parts = append(parts, Plural(n, "cohort")+" of pods that ended differently")
	}
	if tr.Pair != nil {
		parts = append(parts, "the pair asked for")
	}
	hc.Summary = strings.Join(parts, "; ")
	for _, it := range s.items {
		hi := htmlCompareItem{Title: it.title()}
		if c := it.cohort; c != nil {
			for _, g := range c.Groups {
				hi.Groups = append(hi.Groups, htmlCompareGroup{Ending: g.Ending, Count: len(g.Members), Typical: g.Typical})
			}
			if len(it.results) == 0 {
				hi.NotCompared = s.command(notCompared(c))
			}
		}
		for _, r := range it.results {
			hi.Views = append(hi.Views, htmlCompareView{View: newCompareView(r, true), Command: s.command(r)})
		}
		hc.Items = append(hc.Items, hi)
	}
	return hc
}

type htmlEvidence struct {
	Time, Seq, Text string
}

// The overview shows up to openFindingsUpTo findings unfolded, one by one;
// more are grouped by severity and id, with each finding's evidence while
// there are no more than evidenceUpTo (the pod's details have it anyway).
// A group lists its first groupListUpTo pods; a link to the pod list,
// filtered by the finding, shows the others (a page of 20,000 pods listed
// every one of them before the pod list).
const (
	openFindingsUpTo = 12
	evidenceUpTo     = 100
	groupListUpTo    = 100
)

func newHTMLPage(tr *Trace, opts HTMLOptions) *htmlPage {
	p := &htmlPage{
		Title: opts.Title, CSP: contentSecurityPolicy, File: tr.File, PodCount: len(tr.Pods),
		CSS: htmlCSS, JS: htmlJS, ShowInfo: opts.ShowInfo,
	}
	if p.Title == "" {
		p.Title = "podtrace report: " + tr.File
	}
	if !tr.Generated.IsZero() {
		p.Generated = stampUTC(tr.Generated)
	}
	for _, s := range tr.Sessions {
		hs := htmlSession{ID: s.ID, Server: s.Server, ServerVersion: s.ServerVersion, Context: s.Context,
			Started: stampUTC(s.Started), Stopped: SessionEnd(s, tr.Live, stampUTC), Tool: s.Version}
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
	p.Pruned = PruneLines(tr.Pruned, stampUTC)
	p.Gaps = GapLines(tr.Gaps, tr.Sessions, stampUTC)
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
	bySeverity := map[explain.Severity]int{}
	var info []htmlFinding
	for _, f := range tr.Findings() {
		bySeverity[f.Severity]++
		if f.Severity == explain.Info && !opts.ShowInfo {
			info = append(info, htmlFinding{Severity: f.Severity.String(), ID: f.ID, Headline: f.Headline,
				Namespace: f.Pod.Namespace, Name: f.Pod.Name, UID: f.Pod.UID})
			continue
		}
		hf := htmlFinding{Severity: f.Severity.String(), ID: f.ID, Headline: f.Headline,
			Namespace: f.Pod.Namespace, Name: f.Pod.Name, UID: f.Pod.UID, Suspects: f.Suspects, Next: f.Next}
		for _, l := range endedLines(f.Finding) {
			hf.Evidence = append(hf.Evidence, htmlEvidence{Text: l})
		}
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
	for s := explain.Critical; s >= explain.Info; s-- {
		if n := bySeverity[s]; n > 0 {
			p.Severities = append(p.Severities, htmlCount{Name: s.String(), Count: n, Class: s.String()})
		}
	}
	p.Compare = newHTMLCompare(tr)
	p.OpenFindings = len(p.Findings) <= openFindingsUpTo
	if !p.OpenFindings {
		p.GroupEvidence = len(p.Findings) <= evidenceUpTo
		p.Groups = groupFindings(p.Findings)
	}
	if len(info) > 0 {
		p.Info = &htmlInfo{Count: len(info), Kinds: groupFindings(info)}
	}
	return p
}

// groupFindings groups fs by severity and id, in the order of their first
// finding, each group listing its first groupListUpTo.
func groupFindings(fs []htmlFinding) []htmlFindingGroup {
	var groups []htmlFindingGroup
	at := map[string]int{}
	for _, f := range fs {
		key := f.Severity + "/" + f.ID
		i, ok := at[key]
		if !ok {
			i = len(groups)
			at[key] = i
			groups = append(groups, htmlFindingGroup{Severity: f.Severity, ID: f.ID})
		}
		g := &groups[i]
		g.Count++
		if len(g.Findings) < groupListUpTo {
			g.Findings = append(g.Findings, f)
		} else {
			g.More++
		}
	}
	return groups
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
