package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

func renderHTML(t *testing.T, tr *Trace, opts HTMLOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := HTML(&buf, tr, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// cut returns the text between open and close, after from, and where it
// starts.
func cut(t *testing.T, s, open, close string) (string, int) {
	t.Helper()
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatalf("the page has no %q", open)
	}
	i += len(open)
	j := strings.Index(s[i:], close)
	if j < 0 {
		t.Fatalf("the page has no %q after %q", close, open)
	}
	return s[i : i+j], i
}

const dataOpen = `<script type="application/json" id="data">`

// splitPage returns the page with its style, script and data elided, and
// the data, indented. The style and script must be the assets as they are.
func splitPage(t *testing.T, page string) (string, string) {
	t.Helper()
	css, _ := cut(t, page, "<style>", "</style>")
	if css != string(htmlCSS) {
		t.Errorf("the page's style is not report/html/report.css as it is")
	}
	data, _ := cut(t, page, dataOpen, "</script>")
	js, _ := cut(t, page, dataOpen+data+"</script>\n<script>", "</script>")
	if js != string(htmlJS) {
		t.Errorf("the page's script is not report/html/report.js as it is")
	}
	page = strings.Replace(page, css, "/* report/html/report.css */", 1)
	page = strings.Replace(page, data, "<!-- testdata/report-data.json.golden -->", 1)
	page = strings.Replace(page, js, "// report/html/report.js", 1)
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(data), "", "  "); err != nil {
		t.Fatalf("the embedded data is not JSON: %v", err)
	}
	return page, indented.String() + "\n"
}

func TestHTMLGolden(t *testing.T) {
	page, data := splitPage(t, renderHTML(t, fixtureTrace(t), HTMLOptions{}))
	golden(t, "report.html.golden", page)
	golden(t, "report-data.json.golden", data)
}

func TestHTMLTitle(t *testing.T) {
	page := renderHTML(t, fixtureTrace(t), HTMLOptions{Title: "CI-1234: pods stuck <Terminating>"})
	if !strings.Contains(page, "<title>CI-1234: pods stuck &lt;Terminating&gt;</title>") {
		title, _ := cut(t, page, "<title>", "</title>")
		t.Errorf("title %q, want the one asked for, escaped", title)
	}
}

// TestHTMLFetchesNothing checks the page for anything a browser would load:
// elements that load, attributes that point outside the page, CSS that
// imports, script that fetches; and that the policy forbidding it all is
// the first thing in the head.
func TestHTMLFetchesNothing(t *testing.T) {
	page := renderHTML(t, fixtureTrace(t), HTMLOptions{})
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	loaders := map[string]bool{"link": true, "img": true, "iframe": true, "frame": true, "object": true, "embed": true,
		"audio": true, "video": true, "source": true, "track": true, "base": true, "picture": true, "portal": true}
	urlAttrs := map[string]bool{"src": true, "href": true, "xlink:href": true, "action": true, "formaction": true, "poster": true,
		"srcset": true, "data": true, "background": true, "ping": true, "manifest": true, "cite": true, "longdesc": true, "codebase": true}
	fetchURL := regexp.MustCompile(`(?i)(https?:)?//`)
	var csp []string
	walk(doc, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		if loaders[n.Data] {
			t.Errorf("<%s> loads a resource", n.Data)
		}
		if n.Data == "meta" && strings.EqualFold(attr(n, "http-equiv"), "Content-Security-Policy") {
			csp = append(csp, attr(n, "content"))
		}
		for _, a := range n.Attr {
			if urlAttrs[a.Key] && (fetchURL.MatchString(a.Val) || !strings.HasPrefix(a.Val, "#")) {
				t.Errorf("<%s %s=%q> points outside the page", n.Data, a.Key, a.Val)
			}
			if strings.Contains(strings.ToLower(a.Val), "url(") && !strings.Contains(a.Val, "url(#") {
				t.Errorf("<%s %s=%q> may load a resource", n.Data, a.Key, a.Val)
			}
		}
		if n.Data == "script" && attr(n, "src") != "" {
			t.Errorf("<script src=%q>", attr(n, "src"))
		}
	})
	if len(csp) != 1 || csp[0] != contentSecurityPolicy {
		t.Errorf("Content-Security-Policy metas %q, want one: %q", csp, contentSecurityPolicy)
	}
	if head, _ := cut(t, page, "<head>", "<title>"); !strings.Contains(head, "Content-Security-Policy") {
		t.Errorf("the policy must come before anything in the head that could load")
	}

	css := strings.ToLower(string(htmlCSS))
	for _, bad := range []string{"url(", "@import", "@font-face", "image-set("} {
		if strings.Contains(css, bad) {
			t.Errorf("the style uses %s", bad)
		}
	}
	// The script's only URL is the SVG namespace name, which is never
	// fetched; it builds the DOM from text nodes and attribute values.
	js := strings.ReplaceAll(string(htmlJS), "'http://www.w3.org/2000/svg'", "SVGNS")
	if m := regexp.MustCompile(`(?i)https?://|["'(]//[a-z0-9]`).FindString(js); m != "" {
		t.Errorf("the script holds a URL: %q", m)
	}
	for _, bad := range []string{"fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import(", "importScripts",
		"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "createContextualFragment", ".src =", "srcdoc"} {
		if strings.Contains(js, bad) {
			t.Errorf("the script uses %s", bad)
		}
	}
	for _, bad := range []string{"</script", "<!--"} {
		if strings.Contains(strings.ToLower(js), bad) {
			t.Errorf("the script holds %q, which would end or confuse its element", bad)
		}
	}
}

// TestHTMLEscapes checks that the hostile strings of the fixture come out as
// text in the server-rendered part and as data in the JSON, and that nothing
// ends the data's script element early.
func TestHTMLEscapes(t *testing.T) {
	page := renderHTML(t, fixtureTrace(t), HTMLOptions{})
	if n := strings.Count(strings.ToLower(page), "</script"); n != 2 {
		t.Errorf("%d </script in the page, want 2 (the ends of the data and of the script)", n)
	}
	for _, raw := range []string{hostileScript, hostileBreak, "<img", "<b>uid"} {
		if strings.Contains(page, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	checkNoInjection(t, doc)
	if got := textOf(byID(doc, "findings")); !strings.Contains(got, "pull "+hostileScript+" "+hostileMD) {
		t.Errorf("the hostile evidence is not shown as text in the findings:\n%s", got)
	}
	if got := textOf(byID(doc, "overview")); !strings.Contains(got, "digester-"+hostileBreak+".db") {
		t.Errorf("the hostile file name is not shown as text in the overview:\n%s", got)
	}
	var links []string
	walk(doc, func(n *html.Node) {
		if hasClass(n, "podlink") {
			links = append(links, attr(n, "href"))
		}
	})
	if want := "#pod=ci/hostile/0badc0de-%3cb%3euid%3c%2fb%3e"; !contains(links, want) {
		t.Errorf("pod links %q, want %q among them", links, want)
	}

	data := byID(doc, "data")
	var d struct {
		Strings []string `json:"strings"`
		File    string   `json:"file"`
		Pods    []struct {
			Strings []string `json:"strings"`
		} `json:"pods"`
	}
	if err := json.Unmarshal([]byte(data.FirstChild.Data), &d); err != nil {
		t.Fatalf("the data does not parse: %v", err)
	}
	all := d.Strings
	for _, p := range d.Pods {
		all = append(all, p.Strings...)
	}
	for _, want := range []string{hostileScript, hostileBreak} {
		if !contains(all, want) {
			t.Errorf("the data lost %q", want)
		}
	}
	if d.File != "digester-"+hostileBreak+".db" {
		t.Errorf("file %q in the data", d.File)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The page's data, decoded the way report.js decodes it, to check the
// encoder against the lifecycles it encodes.

type decodedChange struct {
	Path, Op, Old, New, Manager string
	Detail                      bool
}

type decodedStep struct {
	Seq     uint64
	Time    int64 // Unix ms
	Type    string
	RV      string
	Actors  []string // who
	Changes []decodedChange
	Phases  []string
}

type decodedEvent struct {
	Seq                           uint64
	Time                          int64
	Type, Reason, Message, Source string
	Count                         int32
}

type decodedPod struct {
	Namespace, Name, UID, Node, Outcome, Terminating string
	End                                              int64
	Steps                                            []decodedStep
	Events                                           []decodedEvent
	Findings                                         []string
}

func decodeData(t *testing.T, raw []byte) []decodedPod {
	t.Helper()
	var d struct {
		Base    int64    `json:"base"`
		Strings []string `json:"strings"`
		Actors  [][2]int `json:"actors"`
		Pods    []struct {
			Strings                        []string
			Namespace, Name, Node, Outcome int
			UID                            string
			End                            int64
			Terminating                    string
			Steps                          [][]json.RawMessage
			CreationDetails                []int
			Events                         [][7]json.RawMessage
			Findings                       []struct{ ID string }
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	S := d.Strings
	num := func(m json.RawMessage) int64 {
		n, err := strconv.ParseInt(string(m), 10, 64)
		if err != nil {
			t.Fatalf("not an integer: %s", m)
		}
		return n
	}
	var out []decodedPod
	for _, p := range d.Pods {
		// n >= 0: the top-level strings[n]; n <= -2: the pod's
		// strings[-n-2]; in the steps, -1: the next of the pod's strings
		// the steps had not used.
		fresh := 0
		str := func(n int64, inSteps bool) string {
			switch {
			case n >= 0:
				return S[n]
			case n == -1 && inSteps:
				fresh++
				return p.Strings[fresh-1]
			case n <= -2:
				return p.Strings[-n-2]
			}
			t.Fatalf("string reference %d outside the steps", n)
			return ""
		}
		dp := decodedPod{Namespace: str(int64(p.Namespace), false), Name: str(int64(p.Name), false), UID: p.UID,
			Node: str(int64(p.Node), false), Outcome: str(int64(p.Outcome), false), Terminating: p.Terminating, End: d.Base + p.End}
		var seq, ms, rv int64
		ms = d.Base
		rvNumber := false
		last := map[string]string{}
		for i, a := range p.Steps {
			seq += num(a[0])
			ms += num(a[1])
			st := decodedStep{Seq: uint64(seq), Time: ms, Type: str(num(a[2]), true)}
			var rvs string
			if json.Unmarshal(a[3], &rvs) == nil {
				st.RV = rvs
				rv, rvNumber = plainNumber(rvs)
			} else {
				if i == 0 || !rvNumber {
					rv = num(a[3])
				} else {
					rv += num(a[3])
				}
				rvNumber = true
				st.RV = strconv.FormatInt(rv, 10)
			}
			var actors []int
			json.Unmarshal(a[4], &actors)
			manager := ""
			for _, x := range actors {
				st.Actors = append(st.Actors, S[d.Actors[x][1]])
			}
			if len(actors) == 1 {
				manager = S[d.Actors[actors[0]][0]]
			}
			var changes [][]int
			json.Unmarshal(a[5], &changes)
			for _, c := range changes {
				dc := decodedChange{Path: S[c[0]/3], Op: []string{"add", "remove", "change"}[c[0]%3], Manager: manager}
				if dc.Op == "remove" {
					dc.Old = str(int64(c[1]), true)
				} else {
					dc.New = str(int64(c[1]), true)
				}
				if len(c) > 2 {
					dc.Manager = str(int64(c[2]), true)
				}
				if dc.Op == "change" {
					dc.Old = last[dc.Path]
					if len(c) > 3 {
						dc.Old = str(int64(c[3]), true)
					}
				}
				last[dc.Path] = dc.New
				st.Changes = append(st.Changes, dc)
			}
			if len(a) > 6 {
				var phases []int
				json.Unmarshal(a[6], &phases)
				for _, x := range phases {
					st.Phases = append(st.Phases, str(int64(x), true))
				}
			}
			dp.Steps = append(dp.Steps, st)
		}
		for _, j := range p.CreationDetails {
			dp.Steps[0].Changes[j].Detail = true
		}
		seq, ms = 0, d.Base
		for _, e := range p.Events {
			seq += num(e[0])
			ms += num(e[1])
			dp.Events = append(dp.Events, decodedEvent{Seq: uint64(seq), Time: ms, Type: str(num(e[2]), false), Reason: str(num(e[3]), false),
				Message: str(num(e[4]), false), Source: str(num(e[5]), false), Count: int32(num(e[6]))})
		}
		for _, f := range p.Findings {
			dp.Findings = append(dp.Findings, f.ID)
		}
		out = append(out, dp)
	}
	return out
}

// expectedPods is what decodeData should give back for tr.
func expectedPods(tr *Trace) []decodedPod {
	var out []decodedPod
	for _, p := range tr.Pods {
		dp := decodedPod{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Node: p.Node, Outcome: p.Outcome, End: p.RecordingEnd.UnixMilli()}
		if p.Terminating != 0 {
			dp.Terminating = p.Terminating.String()
		}
		for i, s := range p.Steps {
			st := decodedStep{Seq: s.Seq, Time: s.Time.UnixMilli(), Type: string(s.Type), RV: s.ResourceVersion, Phases: s.Phases}
			for _, a := range s.Actors {
				st.Actors = append(st.Actors, a.Label()) // who, and how it is known
			}
			for _, c := range s.Changes {
				st.Changes = append(st.Changes, decodedChange{Path: c.Path, Op: string(c.Op), Old: c.Old, New: c.New, Manager: c.Manager,
					Detail: i == 0 && !isStoryField(c)})
			}
			dp.Steps = append(dp.Steps, st)
		}
		for _, e := range p.Events {
			dp.Events = append(dp.Events, decodedEvent{Seq: e.Seq, Time: e.Time.UnixMilli(), Type: e.Type, Reason: e.Reason,
				Message: e.Message, Source: e.Source, Count: e.Count})
		}
		for _, f := range p.Findings {
			dp.Findings = append(dp.Findings, f.ID)
		}
		out = append(out, dp)
	}
	return out
}

func TestHTMLDataRoundTrip(t *testing.T) {
	traces := map[string]*Trace{"fixture": fixtureTrace(t), "crash loops": syntheticTrace(t, 3, 40)}
	// Resource versions that are not plain numbers, and one that goes
	// back, must survive the delta coding.
	odd := fixtureTrace(t)
	steps := fixturePod(t, odd, "hostile").Steps
	steps[1].ResourceVersion = "0017"
	steps[2].ResourceVersion = "999999999999999999999"
	steps[3].ResourceVersion = "12"
	traces["odd resource versions"] = odd
	for name, tr := range traces {
		t.Run(name, func(t *testing.T) {
			raw, err := htmlData{tr}.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(expectedPods(tr), decodeData(t, raw)); d != "" {
				t.Errorf("decoded data differs from the lifecycles (-want +got):\n%s", d)
			}
		})
	}
}

// TestHTMLDataSmallerThanLifecycles keeps the compact form honest: it must
// stay far smaller than the lifecycles' own JSON.
func TestHTMLDataSmallerThanLifecycles(t *testing.T) {
	tr := syntheticTrace(t, 4, 60)
	raw, err := htmlData{tr}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := json.Marshal(tr.Pods)
	if err != nil {
		t.Fatal(err)
	}
	if ratio := float64(len(plain)) / float64(len(raw)); ratio < 5 {
		t.Errorf("compact data %d bytes, lifecycles' JSON %d: only %.1fx smaller, want at least 5x", len(raw), len(plain), ratio)
	}
}

func TestHTMLEmptyTrace(t *testing.T) {
	page := renderHTML(t, &Trace{File: "empty.db", Generated: time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)}, HTMLOptions{})
	for _, want := range []string{"No findings", "nothing recorded", "no recording session"} {
		if !strings.Contains(page, want) {
			t.Errorf("the empty report lacks %q", want)
		}
	}
}

// manyFindings is the fixture with the hostile pod cloned n times.
func manyFindings(t *testing.T, n int) *Trace {
	tr := fixtureTrace(t)
	hostile := fixturePod(t, tr, "hostile")
	for i := range n {
		p := hostile.Copy()
		p.Name = fmt.Sprintf("clone-%03d", i)
		tr.Pods = append(tr.Pods, p)
	}
	return tr
}

// Many findings of one kind are "in 1 kind", not "1 kinds".
func TestHTMLGroupsOneKind(t *testing.T) {
	tr := fixtureTrace(t)
	hostile := fixturePod(t, tr, "hostile")
	tr.Pods = nil
	for i := range 20 {
		p := hostile.Copy()
		p.Name = fmt.Sprintf("clone-%03d", i)
		tr.Pods = append(tr.Pods, p)
	}
	doc, err := html.Parse(strings.NewReader(renderHTML(t, tr, HTMLOptions{})))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := textOf(byID(doc, "findings")), "20 findings in 1 kind; open one"; !strings.Contains(got, want) {
		t.Errorf("the findings do not say %q:\n%.500s", want, got)
	}
}

func TestHTMLGroupsManyFindings(t *testing.T) {
	tests := []struct {
		clones        int
		want          string
		groups        int
		evidenceLists int
		links         int
		more          string
	}{
		// The fixture's findings: the terminating pod's stuck-finalizer,
		// the hostile pod's image-pull, and the info finding ended (how
		// the terminating pod was asked to end), folded apart.
		{clones: 0, want: "1 info finding, how pods ended: ended 1", groups: 0, evidenceLists: 2, links: 3},
		{clones: 13, want: "15 findings in 2 kinds; open one to see its pods and their evidence.", groups: 2, evidenceLists: 15, links: 16},
		// A group lists its first 100 pods, and says where the others are.
		{clones: 120, want: "122 findings in 2 kinds; open one to see its pods (their evidence is in each pod's details).", groups: 2, evidenceLists: 0,
			links: 1 + 100 + 1, more: "and 21 more: see them in the pod list"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.clones, " clones"), func(t *testing.T) {
			doc, err := html.Parse(strings.NewReader(renderHTML(t, manyFindings(t, tc.clones), HTMLOptions{})))
			if err != nil {
				t.Fatal(err)
			}
			findings := byID(doc, "findings")
			if !strings.Contains(textOf(findings), tc.want) {
				t.Errorf("the findings do not say %q:\n%.500s", tc.want, textOf(findings))
			}
			if got := len(find(findings, func(n *html.Node) bool { return hasClass(n, "group") })); got != tc.groups {
				t.Errorf("%d groups, want %d", got, tc.groups)
			}
			if got := len(find(findings, func(n *html.Node) bool { return hasClass(n, "evidence") })); got != tc.evidenceLists {
				t.Errorf("%d evidence lists, want %d", got, tc.evidenceLists)
			}
			if got := len(find(findings, func(n *html.Node) bool { return hasClass(n, "podlink") })); got != tc.links {
				t.Errorf("%d pod links, want %d", got, tc.links)
			}
			if tc.more != "" {
				if !strings.Contains(textOf(findings), tc.more) || len(find(findings, func(n *html.Node) bool { return attr(n, "href") == "#finding=image-pull" })) != 1 {
					t.Errorf("the findings do not say %q with a link to the pod list filtered by image-pull", tc.more)
				}
			}
			// The info findings, folded: a details element, closed.
			folds := find(findings, func(n *html.Node) bool { return hasClass(n, "info-fold") })
			if len(folds) != 1 || attr(folds[0], "open") != "" || hasAttr(folds[0], "open") {
				t.Errorf("%d info folds, want one, closed", len(folds))
			}
		})
	}
	// --show-info: the info finding among the others, no fold.
	doc, err := html.Parse(strings.NewReader(renderHTML(t, manyFindings(t, 0), HTMLOptions{ShowInfo: true})))
	if err != nil {
		t.Fatal(err)
	}
	findings := byID(doc, "findings")
	if n := len(find(findings, func(n *html.Node) bool { return hasClass(n, "info-fold") })); n != 0 || len(find(findings, func(n *html.Node) bool { return hasClass(n, "evidence") })) != 3 {
		t.Errorf("with ShowInfo: %d info folds, want none and the info finding's evidence listed:\n%.600s", n, textOf(findings))
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}
