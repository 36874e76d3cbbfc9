package report

import (
	"html/template"
	"io"

	"github.com/podtrace/podtrace/compare"
)

// compareCSP allows no script at all: the compare page is rendered whole
// by the template, and nothing recorded (a label, a message) can run.
const compareCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

// CompareHTML writes a comparison as one self-contained HTML page, with no
// script and no outside resource: the verdict, the decisive differences,
// the two timelines aligned by phase (the phases one pod reached and the
// other did not highlighted), the rest folded. The report's Compare
// section shows the same view (html/compare.html.tmpl).
func CompareHTML(w io.Writer, r *compare.Result) error {
	return compareTemplate.Execute(w, struct {
		CSP  string
		CSS  template.CSS
		View compareView
	}{compareCSP, compareCSS, newCompareView(r, false)})
}

// compareView is what the compare-view template renders: a comparison,
// with links to the pods' details when the page has them (the report).
type compareView struct {
	R     *compare.Result
	Pods  []compare.Pod
	Links bool
}

func newCompareView(r *compare.Result, links bool) compareView {
	return compareView{R: r, Pods: []compare.Pod{r.A, r.B}, Links: links}
}

// compareFuncs are the functions of the compare-view template.
var compareFuncs = template.FuncMap{
	"cell":    phaseCell,
	"outcome": outcomeOf,
	"ignored": ignoredText,
	"differs": func(p compare.AlignedPhase) bool { return (p.A == nil) != (p.B == nil) },
	"cells":   phaseCells,
}

// phaseCellView is one pod's cell of an aligned phase: when it reached it, and
// whether its detail (the propagation asked for, the exit codes...)
// differs from the other pod's.
type phaseCellView struct {
	At      *compare.PhaseAt
	Changed bool
}

func phaseCells(p compare.AlignedPhase) [2]phaseCellView {
	changed := p.A != nil && p.B != nil && p.A.Detail != p.B.Detail
	return [2]phaseCellView{{p.A, changed}, {p.B, changed}}
}

// compareCSS styles the compare view; the page's own style adds the body.
var compareCSS = template.CSS(mustAsset("html/compare.css"))

var compareTemplate = template.Must(template.Must(template.New("compare").Funcs(compareFuncs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>podtrace compare: {{.View.R.A.Namespace}}/{{.View.R.A.Name}} with {{.View.R.B.Namespace}}/{{.View.R.B.Name}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:1em 20px 2em;max-width:70em;color:#1d2430}
h1{font-size:20px;margin:.4em 0}
h4{font-size:12px;text-transform:uppercase;letter-spacing:.06em;color:#5d6778;margin:18px 0 6px}
code{font-family:ui-monospace,monospace;font-size:12.5px}
{{.CSS}}</style>
</head>
<body>
<h1>Compare</h1>
{{template "compare-view" .View}}
</body>
</html>
`)).ParseFS(htmlAssets, "html/compare.html.tmpl"))
