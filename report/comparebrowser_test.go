package report

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/podtrace/podtrace/compare"
)

// hostileComparison is a comparison whose recorded values carry markup: a
// message and a label value are what pod data can put in a page.
func hostileComparison() *compare.Result {
	return &compare.Result{
		A: compare.Pod{Label: "A", Namespace: "ci-off", Name: "runner-job-1", UID: "0badc0de-<b>uid</b>", Outcome: "Deleted"},
		B: compare.Pod{Label: "B", Namespace: "ci", Name: "runner-job-1", UID: "1badc0de", Outcome: "Terminating"},
		Phases: []compare.AlignedPhase{
			{Name: "created", A: &compare.PhaseAt{}, B: &compare.PhaseAt{}},
			{Name: "gone", A: &compare.PhaseAt{After: 3e9}},
		},
		Decisive: []compare.Difference{{Kind: "denied", Rank: 95, Subject: "denied requests: patch",
			A: "none", B: `12 times: <img src="https://example.com/x" onerror="document.title='pwned'"><script>document.title='pwned'</script>`}},
		Other:   []compare.Difference{{Kind: "field", Subject: "add metadata.labels[x]", A: `"><iframe src=https://example.com>`, B: "none"}},
		Verdict: "B's finalizer removal was denied 12 times by webhook <b>x</b>",
		Ignored: 3, IgnoredBy: map[string]int{"names": 3},
	}
}

// TestCompareHTMLInBrowser opens the compare page in Chromium: the
// timelines and differences are there, no request leaves the page, and no
// markup from the recorded values became elements or ran.
func TestCompareHTMLInBrowser(t *testing.T) {
	needChromium(t)
	var buf bytes.Buffer
	if err := CompareHTML(&buf, hostileComparison()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(artifactDir(t), "compare.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	link := (&url.URL{Scheme: "file", Path: file}).String()
	c := startBrowser(t)
	c.navigate(link)
	c.waitFor("the page", `document.readyState === 'complete'`)
	time.Sleep(300 * time.Millisecond)
	if p := c.problems(link); len(p) > 0 {
		t.Errorf("the page made requests or errors:\n%s", strings.Join(p, "\n"))
	}
	if title := string(c.eval(`document.title`)); strings.Contains(title, "pwned") {
		t.Errorf("a script from the recorded values ran: title %s", title)
	}
	doc := dumpDOM(t, link)
	for _, tag := range []string{"script", "img", "iframe", "b"} {
		if n := find(doc, element(tag)); len(n) > 0 {
			t.Errorf("the DOM has %d <%s> elements: recorded values were parsed as markup", len(n), tag)
		}
	}
	walk(doc, func(n *html.Node) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s> has an event handler attribute %s", n.Data, a.Key)
			}
		}
	})
	body := textOf(doc)
	for _, want := range []string{"Timelines, aligned by phase", "Decisive differences (1)", "denied requests: patch", "<script>document.title='pwned'</script>", "Ignored: 3 differences"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := find(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "tr" && hasClass(n, "differs") }); len(n) != 1 {
		t.Errorf("%d phase rows highlighted, want 1 (gone, reached by A only)", len(n))
	}
}
