package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/redact"
)

func TestMarkdownGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Markdown(&buf, fixtureTrace(t), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.md.golden", buf.String())
}

func TestMarkdownLocation(t *testing.T) {
	var buf bytes.Buffer
	if err := Markdown(&buf, fixtureTrace(t), TextOptions{Location: time.FixedZone("CET", 3600)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-03-14 10:15:00 CET", "`10:03:20.500 #13`"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("times are not shown in the zone asked for: no %q", want)
		}
	}
}

// unescapedPipes counts the | of a table row that separate cells.
func unescapedPipes(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n
}

// TestMarkdownTablesHold checks that every row of every table has as many
// cells as its header, whatever the cluster strings held, and that the
// fenced blocks are closed by their own fence.
func TestMarkdownTablesHold(t *testing.T) {
	tr := fixtureTrace(t)
	// Pipes, backticks and line breaks where the tables show cluster
	// strings.
	tr.Sessions[0].Server = "https://a|b`c\nd"
	tr.Sessions[0].ServerVersion = "v1|2"
	fixturePod(t, tr, "hostile").Outcome = "Odd|`outcome`\n| x | y |"
	fixturePod(t, tr, "hostile").Findings[0].ID = "id|with|pipes"
	var buf bytes.Buffer
	if err := Markdown(&buf, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	checkTables(t, buf.String())
	if !strings.Contains(buf.String(), `Odd\|\`+"`"+`outcome\`+"`"+` \| x \| y \|`) {
		t.Errorf("the odd outcome is not escaped as expected:\n%s", buf.String())
	}
}

// checkTables fails if a table row has another number of cells than its
// header, or a fenced block is not closed by its own fence.
func checkTables(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	header := 0
	fence := ""
	for i, line := range lines {
		if fence != "" {
			if line == fence {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(line, "```") {
			fence = strings.TrimRight(line, "abcdefghijklmnopqrstuvwxyz")
			continue
		}
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		if header == 0 {
			header = unescapedPipes(line)
			continue
		}
		if got := unescapedPipes(line); got != header {
			t.Errorf("line %d has %d cell separators, its table's header %d:\n%s", i+1, got, header, line)
		}
	}
	if fence != "" {
		t.Errorf("a fenced block (%s) is never closed", fence)
	}
}

// TestMarkdownAudit renders the trace with the digester story's audit log,
// redacted as the reports are by default: the denials counted with their
// webhook, the requests by user and user agent, the webhook's patch with
// its env value redacted, all escaped.
func TestMarkdownAudit(t *testing.T) {
	render := func(redacted bool) string {
		tr := auditTrace(t)
		if redacted {
			r, err := redact.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tr.Pods {
				r.Redact(p)
			}
		}
		var buf bytes.Buffer
		if err := Markdown(&buf, tr, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	out := render(true)
	golden(t, "report-audit.md.golden", out)
	checkTables(t, out)
	for _, want := range []string{
		"Audit, requests about the pod from the API server's audit log:",
		"- **3 patch attempts denied** (500) by system:serviceaccount:kube-system:generic-garbage-collector (kube-controller-manager/v1.37.2 " + mdText(hostileScript) + ")",
		"by webhook " + mdText(digesterWebhookName) + ", first `09:03:21.500`, last `09:06:21.500`: admission webhook",
		"| 09:00:01.000 | create binding | 201 | system:kube-scheduler | kube-scheduler/v1.37.2 | `#6` |",
		"| 09:03:20.500 | delete | 200 | system:serviceaccount:gitlab:gitlab-runner | gitlab-runner 17.0.0 " + mdText(hostileMD) + " | `#13` rv 1013 |",
		"patch by webhook " + mdText(digesterWebhookName) + " (create, configuration digester-mutating-webhook-configuration): `add /spec/containers/0/env/0/value  \"[redacted]\"`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the audit section lacks %q", want)
		}
	}
	if strings.Contains(out, auditSecret) {
		t.Errorf("the redacted report shows the patch's env value %q", auditSecret)
	}
	section, _, _ := strings.Cut(out[strings.Index(out, "Audit, requests"):], "Decisive changes")
	for _, bad := range []string{hostileScript, hostileBreak, hostileMD} {
		if strings.Contains(section, bad) {
			t.Errorf("the audit section holds %q as it is:\n%s", bad, section)
		}
	}
	// The secret is there to redact: without redaction it is shown.
	if !strings.Contains(render(false), auditSecret) {
		t.Errorf("the unredacted report lacks the patch's env value %q", auditSecret)
	}
}

func TestMarkdownEscaping(t *testing.T) {
	tests := []struct {
		name, in, text, code string
	}{
		{"plain", "runner-x7k2p-project-42", "runner-x7k2p-project-42", "`runner-x7k2p-project-42`"},
		{"pipe and backticks", "a|b `c` ```d", "a\\|b \\`c\\` \\`\\`\\`d", "````a|b `c` ```d````"},
		{"markup", "<script>alert(1)</script>", `\<script>alert(1)\</script>`, "`<script>alert(1)</script>`"},
		{"link", "[click](javascript:alert(1))", `\[click\](javascript:alert(1))`, "`[click](javascript:alert(1))`"},
		{"emphasis and issue refs", "*bold* _it_ #12 ~~x~~ &amp;", `\*bold\* \_it\_ \#12 \~\~x\~\~ \&amp;`, "`*bold* _it_ #12 ~~x~~ &amp;`"},
		{"line breaks", "a\nb\r\nc", "a b c", "`a b c`"},
		{"backslash", `a\|b`, `a\\\|b`, "`a\\|b`"},
		{"backtick at the edge", "`x", "\\`x", "`` `x ``"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mdText(tc.in); got != tc.text {
				t.Errorf("mdText(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := mdCode(tc.in); got != tc.code {
				t.Errorf("mdCode(%q) = %q, want %q", tc.in, got, tc.code)
			}
		})
	}
	for body, want := range map[string]string{"plain": "```", "has ``` inside": "````", "has ````` inside": "``````"} {
		if got := codeFence(body); got != want {
			t.Errorf("codeFence(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestMarkdownNoFindings(t *testing.T) {
	tr := fixtureTrace(t)
	for _, p := range tr.Pods {
		p.Findings = nil
	}
	var buf bytes.Buffer
	if err := Markdown(&buf, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "No findings") || strings.Contains(out, "Decisive changes") {
		t.Errorf("with no findings, want the all-clear and no pod sections:\n%s", out)
	}
}
