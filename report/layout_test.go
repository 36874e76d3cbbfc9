package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/diff"
)

// layoutJS measures the open pod's details as laid out: every timeline
// label whole (a phase label is a whole phase name), inside the timeline
// and big enough to read, no two labels on each other, the "recording ended" label off
// the dependents' rows, and the admission table's value column, when its
// content wraps, at least as wide as the path column (and as the path
// column's content needs, up to half the table): a wrapping value never
// beside a path column with room to spare.
const layoutJS = `(function (wantAdmission) {
  var out = { problems: [], uid: '', labels: [] };
  var pod = document.querySelector('.pod.open');
  if (!pod) { out.problems.push('no pod open'); return out; }
  var uid = pod.querySelector('.dfacts .mono');
  out.uid = uid ? uid.textContent : '';
  var key = location.hash;
  var svg = pod.querySelector('svg.timeline');
  var box = svg.getBoundingClientRect();
  var names = {};
  podtraceReport.pods().forEach(function (x) { x.d.phases.forEach(function (ph) { names[ph.name] = true; }); });
  var texts = Array.prototype.slice.call(svg.querySelectorAll('text'));
  var rects = texts.map(function (t) { return t.getBoundingClientRect(); });
  function overlap(a, b) { return a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5; }
  texts.forEach(function (t, i) {
    var r = rects[i], label = t.textContent;
    out.labels.push(label);
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) {
      out.problems.push('label "' + label + '" clipped: ' + [r.left, r.right, r.top, r.bottom].map(Math.round) + ' outside ' + [box.left, box.right, box.top, box.bottom].map(Math.round));
    }
    // A timeline scaled down to fit a phone is whole but unreadable.
    if (r.height < 9) out.problems.push('label "' + label + '" is ' + r.height.toFixed(1) + ' px high: too small to read');
    if (t.classList.contains('ph-label') && !names[label]) out.problems.push('phase label "' + label + '" is not a whole phase name');
    for (var j = 0; j < i; j++) {
      if (overlap(r, rects[j])) out.problems.push('label "' + label + '" overlaps "' + texts[j].textContent + '"');
    }
  });
  var end = svg.querySelector('text.end-label:not(.term)');
  texts.filter(function (t) { return t.textContent === 'recording ended'; }).forEach(function (t) {
    var r = t.getBoundingClientRect();
    svg.querySelectorAll('line.dep, text.dep-label').forEach(function (d) {
      if (overlap(r, d.getBoundingClientRect())) out.problems.push('"recording ended" overlaps the dependents row of ' + (d.textContent || 'a line'));
    });
  });
  // The widths the admission table's cells' content needs on one line.
  var table = pod.querySelector('.admission table.changes');
  if (!table) { if (wantAdmission) out.problems.push('no admission table'); return out; }
  function need(td) {
    var probe = document.createElement('span');
    probe.style.whiteSpace = 'nowrap';
    probe.style.position = 'absolute';
    probe.style.visibility = 'hidden';
    probe.style.font = getComputedStyle(td).font;
    probe.textContent = td.textContent;
    document.body.appendChild(probe);
    var w = probe.getBoundingClientRect().width;
    probe.remove();
    return w;
  }
  function inner(td) { var cs = getComputedStyle(td); return td.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight); }
  var pathNeed = 0, valNeed = 0, valWidth = Infinity, pathWidth = 0;
  table.querySelectorAll('tr').forEach(function (tr) {
    var p = tr.querySelector('td.path'), v = tr.querySelector('td.val');
    if (!p || !v) return;
    pathNeed = Math.max(pathNeed, need(p));
    valNeed = Math.max(valNeed, need(v));
    valWidth = Math.min(valWidth, inner(v));
    pathWidth = Math.max(pathWidth, inner(p));
  });
  var tw = table.getBoundingClientRect().width;
  out.admission = { pathNeed: Math.round(pathNeed), pathWidth: Math.round(pathWidth), valNeed: Math.round(valNeed), valWidth: Math.round(valWidth), table: Math.round(tw) };
  if (valNeed > valWidth + 1 && (valWidth + 1 < pathWidth || valWidth + 1 < Math.min(pathNeed, tw / 2))) {
    out.problems.push('the value column is ' + Math.round(valWidth) + ' px wide and wraps (its content needs ' + Math.round(valNeed) + ') beside a path column of ' + Math.round(pathWidth) + ' (its content needs ' + Math.round(pathNeed) + '); the table is ' + Math.round(tw));
  }
  return out;
})`

// TestHTMLInBrowserLayout opens the digester pod by a deep link by name
// (#pod=NS/NAME: the newest of its two incarnations) at 1400 and 420 px and
// checks the layout of its timeline and admission table (layoutJS), with
// screenshots of both.
func TestHTMLInBrowserLayout(t *testing.T) {
	needChromium(t)
	tr := auditTrace(t)
	digester := fixturePod(t, tr, "runner-x7k2p-project-42-concurrent-0")
	if len(digester.Dependents) == 0 {
		t.Fatal("the digester pod has no dependents: this test proves nothing")
	}
	// The admission section of the digester case as recorded on the local
	// control plane (examples/trace): digests and a volume mount, long
	// values beside long paths.
	digester.Admission = &diff.Admission{Source: "audit log", Defaults: 2, Changes: []diff.AdmissionChange{
		{Change: diff.Change{Path: "spec.containers[build].image", Op: diff.OpChange, Old: "alpine:3.20",
			New: "alpine@sha256:d3dfed77bb64d7d29a735783a2a90e9a1979dacbe1b8dead996d9ebc78544336"}, By: "mutating webhook " + digesterWebhookName, Certainty: "certain"},
		{Change: diff.Change{Path: "spec.containers[build].volumeMounts[/var/run/secrets/kubernetes.io/serviceaccount]", Op: diff.OpAdd,
			New: `{"name":"kube-api-access-jtqcx","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}`}, By: "the ServiceAccount admission plugin (API token volume)", Certainty: "likely"},
		{Change: diff.Change{Path: "spec.priority", Op: diff.OpAdd, New: "0"}, By: "the Priority admission plugin", Certainty: "likely"},
		{Change: diff.Change{Path: `spec.tolerations[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}]`, Op: diff.OpAdd},
			By: "the DefaultTolerationSeconds admission plugin", Certainty: "likely"},
	}}
	// An older incarnation of the same name, an hour before.
	older := digester.Copy()
	older.UID = "00000000-0000-0000-0000-0000000older"
	older.Steps = append([]diff.Step(nil), digester.Steps...)
	for i := range older.Steps {
		older.Steps[i].Time = older.Steps[i].Time.Add(-time.Hour)
	}
	tr.Pods = append(tr.Pods, older)
	SortPods(tr.Pods)
	var buf bytes.Buffer
	if err := HTML(&buf, tr, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := artifactDir(t)
	file := filepath.Join(dir, "report-layout.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	link := podLink(file, digester.Namespace, digester.Name, "")
	link = strings.TrimSuffix(link, "/")

	c := startBrowser(t)
	for _, width := range []int{1400, 420} {
		func() {
			c.must(c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 1600, "deviceScaleFactor": 1, "mobile": false}, nil)
			c.navigate("about:blank")
			c.navigate(link)
			c.waitFor("the deep-linked pod's timeline", `!!document.querySelector('.pod.open svg.timeline')`)
			// The page's default font is the system's: on another system
			// than this Debian it is wider (the labels "created" and
			// "scheduled" overlapped on one). Wider letters stand for it.
			for _, spacing := range []string{"0.8px", "1.6px"} {
				for _, w := range []int{width, width * 5 / 7, width * 6 / 5} {
					if w < 420 {
						continue // the 420 px layout is the narrowest checked
					}
					c.must(c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": w, "height": 1600, "deviceScaleFactor": 1, "mobile": false}, nil)
					for _, p := range tr.Pods {
						// The font is there before the pod opens, as a
						// system's is.
						c.navigate("about:blank")
						c.navigate(strings.Split(podLink(file, p.Namespace, p.Name, p.UID), "#")[0])
						c.waitFor("the page", `!!document.getElementById('app')`)
						c.eval(`(function () { var st = document.createElement('style'); st.textContent = '.timeline text { letter-spacing: ` + spacing + `; }'; document.head.appendChild(st); location.hash = '` + strings.SplitN(podLink(file, p.Namespace, p.Name, p.UID), "#", 2)[1] + `'; return true; })()`)
						c.waitFor("the pod's timeline", `!!document.querySelector('.pod.open svg.timeline')`)
						var got struct{ Problems []string }
						if err := json.Unmarshal(c.eval(layoutJS+"(false)"), &got); err != nil {
							t.Fatal(err)
						}
						for _, pr := range got.Problems {
							t.Errorf("%d px, letters %s wider, pod %s/%s %s: %s", w, spacing, p.Namespace, p.Name, p.UID, pr)
						}
					}
				}
			}
			c.must(c.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": 1600, "deviceScaleFactor": 1, "mobile": false}, nil)
			c.navigate("about:blank")
			c.navigate(link)
			c.waitFor("the deep-linked pod's timeline", `!!document.querySelector('.pod.open svg.timeline')`)
			time.Sleep(300 * time.Millisecond)
			var got struct {
				Problems  []string
				UID       string
				Labels    []string
				Admission map[string]float64
			}
			if err := json.Unmarshal(c.eval(layoutJS+"(true)"), &got); err != nil {
				t.Fatal(err)
			}
			t.Logf("timeline labels %q; admission %v", got.Labels, got.Admission)
			if got.UID != digester.UID {
				t.Errorf("#pod=%s/%s opened uid %q, want the newest incarnation, %s", digester.Namespace, digester.Name, got.UID, digester.UID)
			}
			for _, p := range got.Problems {
				t.Errorf("%d px: %s", width, p)
			}
			c.eval(`document.querySelector('.pod.open svg.timeline').scrollIntoView({block: 'start'}), true`)
			time.Sleep(200 * time.Millisecond)
			c.screenshot(filepath.Join(dir, fmt.Sprintf("report-timeline-%d.png", width)))
			c.eval(`document.querySelector('.pod.open .admission').scrollIntoView({block: 'start'}), true`)
			time.Sleep(200 * time.Millisecond)
			c.screenshot(filepath.Join(dir, fmt.Sprintf("report-admission-%d.png", width)))

			// Every pod's timeline, at this width.
			for _, p := range tr.Pods {
				c.navigate("about:blank")
				c.navigate(podLink(file, p.Namespace, p.Name, p.UID))
				c.waitFor("the pod's timeline", `!!document.querySelector('.pod.open svg.timeline')`)
				var got struct{ Problems, Labels []string }
				if err := json.Unmarshal(c.eval(layoutJS+"(false)"), &got); err != nil {
					t.Fatal(err)
				}
				for _, pr := range got.Problems {
					t.Errorf("%d px, pod %s/%s %s: %s", width, p.Namespace, p.Name, p.UID, pr)
				}
			}
		}()
	}
}
