package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/podtrace/podtrace/explain"
)

// scaleTrace is pods pods of revs revisions each, the shape of a recorded
// rollout or the scale benchmark's workload (a few revisions a pod): 40
// crash-looping pods replayed (a tenth of them stuck Terminating, the others
// still running), each cloned under other names, uids and namespaces; every
// fourth clone is deleted, with the info finding that says how it ended.
func scaleTrace(tb testing.TB, pods, revs int) *Trace {
	seed := syntheticTrace(tb, 40, revs)
	tr := &Trace{File: "scale.db", Sessions: seed.Sessions, Generated: seed.Generated}
	for i := range pods {
		p := seed.Pods[i%len(seed.Pods)].Copy()
		p.Namespace = fmt.Sprintf("team-%02d", i%20)
		p.Name = fmt.Sprintf("worker-%05d-5d9c7", i)
		p.UID = fmt.Sprintf("%08x-1c2d-4e5f-8a9b-%012x", i, i*7919)
		if i%4 == 1 && p.Outcome == "Running" {
			p.Outcome = "Deleted"
			p.Findings = append(append([]explain.Finding(nil), p.Findings...), explain.Finding{ID: "ended", Severity: explain.Info,
				Headline: "deleted by a rollout", Mechanism: "rollout",
				Evidence: []explain.Evidence{{Time: p.RecordingEnd, Text: "its ReplicaSet's replicas went down"}}})
		}
		tr.Pods = append(tr.Pods, p)
	}
	SortPods(tr.Pods)
	return tr
}

// firstScreenJS is run before the page's own script (CDP
// Page.addScriptToEvaluateOnNewDocument): it notes when the first pod row
// is in the page.
const firstScreenJS = `(function () {
  window.__firstRow = 0;
  new MutationObserver(function (ms, obs) {
    if (document.querySelector('.podlist .pod')) { window.__firstRow = performance.now(); obs.disconnect(); }
  }).observe(document, { childList: true, subtree: true });
})()`

// BenchmarkHTMLFirstScreen opens reports of 4,000 and 20,000 pods (ten
// revisions each) in headless Chromium and measures, from navigation, when
// the first screen is painted (first contentful paint: the summary and the
// findings, at the top of the page), when the first pod rows are in it,
// and the load event; it reports the page's size. Run with -benchtime 1x
// -count N: each iteration is one fresh load in a fresh tab.
//
//	go test ./report/ -run '^$' -bench HTMLFirstScreen -benchtime 1x -count 3
func BenchmarkHTMLFirstScreen(b *testing.B) {
	needChromium(b)
	for _, pods := range []int{4000, 20000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			tr := scaleTrace(b, pods, 10)
			var buf bytes.Buffer
			start := time.Now()
			if err := HTML(&buf, tr, HTMLOptions{}); err != nil {
				b.Fatal(err)
			}
			b.Logf("HTML of %d pods: %d bytes in %s", pods, buf.Len(), time.Since(start).Round(time.Millisecond))
			file := filepath.Join(b.TempDir(), "report.html")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			link := (&url.URL{Scheme: "file", Path: file}).String()
			c := startBrowser(b)
			c.must(c.session, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": firstScreenJS}, nil)
			var fcp, rows, load []float64
			b.ResetTimer()
			for b.Loop() {
				c.navigate("about:blank")
				c.navigate(link)
				c.waitFor("the first pod rows", `window.__firstRow > 0`)
				c.waitFor("the first paint", `performance.getEntriesByName('first-contentful-paint').length > 0`)
				var m struct {
					FCP, Row, Load float64
				}
				if err := json.Unmarshal(c.eval(`(function () {
				  var p = performance.getEntriesByName('first-contentful-paint')[0];
				  var n = performance.getEntriesByType('navigation')[0];
				  return { FCP: p ? p.startTime : -1, Row: window.__firstRow, Load: n.loadEventEnd };
				})()`), &m); err != nil {
					b.Fatal(err)
				}
				fcp, rows, load = append(fcp, m.FCP), append(rows, m.Row), append(load, m.Load)
			}
			b.StopTimer()
			if dir := os.Getenv("PODTRACE_ARTIFACTS"); dir != "" {
				c.screenshot(filepath.Join(dir, fmt.Sprintf("report-first-screen-%d.png", pods)))
			}
			b.ReportMetric(median(fcp), "ms-first-paint")
			b.ReportMetric(median(rows), "ms-first-rows")
			b.ReportMetric(median(load), "ms-load")
			b.ReportMetric(float64(buf.Len()), "page-bytes")
			if p := c.problems(link); len(p) > 0 {
				b.Errorf("the page made requests or errors: %v", p)
			}
		})
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
