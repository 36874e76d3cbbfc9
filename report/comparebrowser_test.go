package report

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// compareLayoutJS measures the report's Compare section as laid out, its
// folded parts opened: nothing in it wider than its box (a clipped or
// overflowing label) or sticking out of the section, the page no wider
// than the window, every text at least 11 px, and in the timelines table
// each phase's A and B cells side by side, A left of B, each at least
// 90 px wide.
const compareLayoutJS = `(function () {
  var out = { problems: [], cells: [] };
  var sec = document.getElementById('compare');
  if (!sec) { out.problems.push('no #compare section'); return out; }
  sec.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var vw = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > vw + 1) out.problems.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + vw + ' px window');
  var box = sec.getBoundingClientRect();
  function name(el) { return '<' + el.tagName.toLowerCase() + (el.className ? ' class="' + el.className + '"' : '') + '> "' + el.textContent.trim().slice(0, 40) + '"'; }
  sec.querySelectorAll('*').forEach(function (el) {
    var cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden') return;
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) return;
    if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) out.problems.push(name(el) + ' overflows its box: ' + el.scrollWidth + ' px of content in ' + el.clientWidth);
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5) out.problems.push(name(el) + ' sticks out of the section: ' + [r.left, r.right].map(Math.round) + ' outside ' + [box.left, box.right].map(Math.round));
    var own = Array.prototype.some.call(el.childNodes, function (n) { return n.nodeType === 3 && n.textContent.trim() !== ''; });
    if (own && parseFloat(cs.fontSize) < 11) out.problems.push(name(el) + ' is ' + cs.fontSize + ': too small to read');
  });
  // A word that fits its cell's line is never broken across two lines.
  sec.querySelectorAll('table.cmp-phases th, table.cmp-phases td, table.cmp-pods td').forEach(function (cell) {
    var cs = getComputedStyle(cell);
    var inner = cell.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (var n = walker.nextNode(); n; n = walker.nextNode()) {
      var re = /\S+/g, m;
      while ((m = re.exec(n.textContent))) {
        var r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        var rects = Array.prototype.filter.call(r.getClientRects(), function (x) { return x.width > 0; });
        var lines = {};
        rects.forEach(function (x) { lines[Math.round(x.top)] = true; });
        var width = rects.reduce(function (w, x) { return w + x.width; }, 0);
        if (Object.keys(lines).length > 1 && width < inner - 0.5) out.problems.push('"' + m[0] + '" (' + Math.round(width) + ' px) is broken across lines in a cell of ' + Math.round(inner) + ' px');
      }
    }
  });
  var rows = sec.querySelectorAll('table.cmp-phases tr');
  if (rows.length < 3) out.problems.push('the timelines table has ' + rows.length + ' rows');
  rows.forEach(function (tr, i) {
    var cells = tr.children;
    if (cells.length !== 3) { out.problems.push('timeline row ' + i + ' has ' + cells.length + ' cells'); return; }
    var a = cells[1].getBoundingClientRect(), b = cells[2].getBoundingClientRect();
    if (i === 1) out.cells = [Math.round(cells[0].getBoundingClientRect().width), Math.round(a.width), Math.round(b.width)];
    if (Math.abs(a.top - b.top) > 0.5 || a.right > b.left + 0.5) out.problems.push('timeline row "' + cells[0].textContent + '": A and B are not side by side');
    if (a.width < 90 || b.width < 90) out.problems.push('timeline row "' + cells[0].textContent + '": A is ' + Math.round(a.width) + ' px, B ' + Math.round(b.width) + ': too narrow to read');
  });
  return out;
})()`

// TestReportCompareInBrowser opens the cohort fixture's report in Chromium
// at 1400 and 420 px: the Compare section is laid out whole and readable
// (compareLayoutJS), with screenshots of it; its pod links open the pods'
// details; it makes no request; and without JavaScript it is all there,
// no recorded markup parsed.
func TestReportCompareInBrowser(t *testing.T) {
	needChromium(t)
	tr := cohortTrace(t)
	var buf bytes.Buffer
	if err := HTML(&buf, tr, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := artifactDir(t)
	file := filepath.Join(dir, "report-compare.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	link := (&url.URL{Scheme: "file", Path: file}).String()
	c := startBrowser(t)
	for _, width := range []int{1400, 420} {
		c.must(c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 1600, "deviceScaleFactor": 1, "mobile": false}, nil)
		c.navigate("about:blank")
		c.navigate(link + "#compare")
		time.Sleep(300 * time.Millisecond)
		var got struct {
			Problems []string
			Cells    []int
		}
		if err := json.Unmarshal(c.eval(compareLayoutJS), &got); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d px: timeline columns %v px", width, got.Cells)
		for _, p := range got.Problems {
			t.Errorf("%d px: %s", width, p)
		}
		c.screenshotOf(filepath.Join(dir, fmt.Sprintf("report-compare-%d.png", width)), "#compare", width)
	}
	if p := c.problems(link); len(p) > 0 {
		t.Errorf("the page made requests or errors:\n%s", strings.Join(p, "\n"))
	}

	// B's pod link opens its details.
	r := tr.Cohorts[0].Comparisons[0]
	c.eval(`document.querySelectorAll('#compare .cmp-pods a')[1].click(), true`)
	c.waitFor("B's pod to open", `!!document.querySelector('.pod.open svg.timeline') && location.hash === '#pod=ci/`+r.B.Name+`/`+r.B.UID+`'`)

	c.must(c.session, "Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
	doc := c.loadWithoutScript(link)
	sec := byID(doc, "compare")
	if sec == nil {
		t.Fatal("no Compare section without JavaScript")
	}
	text := textOf(sec)
	for _, want := range []string{
		"Verdict: B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
		"B's finalizer removal was denied 3 times by webhook " + digesterWebhookName,
		"Decisive differences (5)", "deletion propagation", "Timelines, aligned by phase", "still present at the end", "Ignored: 19 differences",
		hostileBreak, // the denial's message, as text
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the Compare section without JavaScript lacks %q:\n%s", want, text)
		}
	}
	checkNoInjection(t, doc)
}

// screenshotOf captures the element selector names, whole: the window is
// made as tall as the page for it (at the width set), then put back.
func (c *cdp) screenshotOf(path, selector string, width int) {
	c.t.Helper()
	var height int
	if err := json.Unmarshal(c.eval(`document.documentElement.scrollHeight`), &height); err != nil {
		c.t.Fatal(err)
	}
	metrics := func(h int) {
		c.must(c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": h, "deviceScaleFactor": 1, "mobile": false}, nil)
	}
	metrics(height)
	defer metrics(1600)
	time.Sleep(200 * time.Millisecond)
	var clip struct{ X, Y, Width, Height float64 }
	if err := json.Unmarshal(c.eval(`(function(){scrollTo(0,0);var r=document.querySelector('`+selector+`').getBoundingClientRect();return {X:r.left,Y:r.top,Width:r.width,Height:r.height}})()`), &clip); err != nil {
		c.t.Fatal(err)
	}
	c.capture(path, map[string]any{"format": "png",
		"clip": map[string]any{"x": clip.X, "y": clip.Y, "width": clip.Width, "height": clip.Height, "scale": 1}})
}
