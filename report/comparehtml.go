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
// script and no outside resource: the two timelines aligned by phase, the
// phases one pod reached and the other did not highlighted, the decisive
// differences, the rest folded.
func CompareHTML(w io.Writer, r *compare.Result) error {
	return compareTemplate.Execute(w, struct {
		CSP string
		R   *compare.Result
	}{compareCSP, r})
}

var compareTemplate = template.Must(template.New("compare").Funcs(template.FuncMap{
	"cell":    phaseCell,
	"outcome": outcomeOf,
	"ignored": ignoredText,
	"differs": func(p compare.AlignedPhase) bool { return (p.A == nil) != (p.B == nil) },
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<title>podtrace compare: {{.R.A.Namespace}}/{{.R.A.Name}} with {{.R.B.Namespace}}/{{.R.B.Name}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
tr.differs td{background:#fff3cd}
.verdict{font-size:1.1em;padding:.6em;border-left:4px solid #c00;background:#fdf0f0}
.none{color:#888}
ol.decisive li{margin:.6em 0}
.why{color:#555;font-style:italic}
code{font-family:ui-monospace,monospace}
</style>
</head>
<body>
<h1>Compare</h1>
<table>
<tr><th></th><th>pod</th><th>uid</th><th>outcome</th></tr>
<tr><td>A</td><td><code>{{.R.A.Namespace}}/{{.R.A.Name}}</code></td><td><code>{{.R.A.UID}}</code></td><td>{{outcome .R.A}}</td></tr>
<tr><td>B</td><td><code>{{.R.B.Namespace}}/{{.R.B.Name}}</code></td><td><code>{{.R.B.UID}}</code></td><td>{{outcome .R.B}}</td></tr>
</table>
<p class="verdict"><strong>Verdict:</strong> {{.R.Verdict}}</p>
<h2>Timelines, aligned by phase</h2>
<table class="phases">
<tr><th>phase</th><th>A</th><th>B</th></tr>
{{range .R.Phases}}<tr{{if differs .}} class="differs"{{end}}><td>{{.Name}}</td><td>{{cell .A}}{{with .A}}{{if .Detail}}<br><small>{{.Detail}}</small>{{end}}{{end}}</td><td>{{cell .B}}{{with .B}}{{if .Detail}}<br><small>{{.Detail}}</small>{{end}}{{end}}</td></tr>
{{end}}</table>
<h2>Decisive differences ({{len .R.Decisive}})</h2>
{{if .R.Decisive}}<ol class="decisive">
{{range .R.Decisive}}<li><strong>{{.Subject}}</strong><br>A: {{.A}}<br>B: {{.B}}{{if .Why}}<br><span class="why">why: {{.Why}}</span>{{end}}</li>
{{end}}</ol>{{else}}<p class="none">None.</p>{{end}}
<details><summary>Other differences ({{len .R.Other}})</summary>
<table>
<tr><th>phase</th><th>what</th><th>A</th><th>B</th></tr>
{{range .R.Other}}<tr><td>{{.Phase}}</td><td>{{.Subject}}</td><td>{{.A}}</td><td>{{.B}}</td></tr>
{{end}}</table>
</details>
<p>Ignored: {{ignored .R}}</p>
</body>
</html>
`))
