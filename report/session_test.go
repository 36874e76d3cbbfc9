package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// How the report states each kind of session end, and a trace with no pods
// has a window that makes sense.
func TestSessionEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tr := &Trace{File: "trace.db", Live: 4, Sessions: []store.Session{
		{ID: 1, Server: "https://a", Started: t0, Stopped: t0.Add(time.Minute)},
		{ID: 2, Server: "https://a", Started: t0.Add(2 * time.Minute), Alive: t0.Add(3 * time.Minute)},
		{ID: 3, Server: "https://a", Started: t0.Add(4 * time.Minute)},
		{ID: 4, Server: "https://a", Started: t0.Add(5 * time.Minute), Alive: t0.Add(6 * time.Minute)},
	}}
	var b bytes.Buffer
	if err := Text(&b, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Session 1: https://a (server ), 2026-12-01 09:00:00 UTC to 2026-12-01 09:01:00 UTC\n",
		"Session 2: https://a (server ), 2026-12-01 09:02:00 UTC to 2026-12-01 09:03:00 UTC (interrupted: no stop recorded; its recorder's last sign of life)\n",
		"Session 3: https://a (server ), 2026-12-01 09:04:00 UTC to 2026-12-01 09:04:00 UTC (interrupted: no stop recorded, no sign of life after its start)\n",
		"Session 4: https://a (server ), 2026-12-01 09:05:00 UTC to 2026-12-01 09:06:00 UTC (still recording: its last flush)\n",
		"Trace trace.db: 2026-12-01 09:00:00 to 09:06:00 UTC (6m0s)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0001-01-01") {
		t.Errorf("report shows a zero time:\n%s", out)
	}
}

// A pod's gaps in observation reach the HTML page's data, for its timeline
// to draw, with their times and words.
func TestHTMLGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", UID: "u1", Outcome: diff.OutcomeGone, RecordingEnd: t0.Add(10 * time.Minute),
		Steps: []diff.Step{{Seq: 1, Time: t0, Type: store.Added, ResourceVersion: "1"}},
		Gaps:  []diff.Gap{{Cause: store.GapRecorderDown, Start: t0.Add(time.Minute), End: t0.Add(5 * time.Minute)}}}}
	page := renderHTML(t, &Trace{File: "trace.db", Pods: []*explain.Lifecycle{lc}}, HTMLOptions{})
	_, data := splitPage(t, page)
	for _, want := range []string{`"gaps": [`, "nothing observed for 4m0s: no recorder was running"} {
		if !strings.Contains(data, want) {
			t.Errorf("the page's data lacks %q:\n%s", want, data)
		}
	}
}

// The whole trace's gaps head every report format, after the window: a
// reader of the summary learns that the recording was not continuous
// before reading any pod.
func TestReportShowsGaps(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	tr := &Trace{File: "trace.db",
		Sessions: []store.Session{{ID: 1, Server: "https://a", Started: t0, Stopped: t0.Add(10 * time.Minute)}},
		Gaps: []store.Gap{
			{Session: 1, Cause: store.GapWatch, Resource: "pods", Start: t0.Add(time.Minute), End: t0.Add(time.Minute + 3*time.Second)},
			{Session: 1, Cause: store.GapWatch, Resource: "pods", Start: t0.Add(2 * time.Minute), End: t0.Add(2*time.Minute + time.Second)},
		}}
	want := "the watch was restarted and pods listed again, 2 times, 2026-12-01 09:01:00 UTC to 2026-12-01 09:02:01 UTC (4s in all)"
	var text, md bytes.Buffer
	if err := Text(&text, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, tr, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	html := renderHTML(t, tr, HTMLOptions{})
	for _, c := range []struct{ format, out, line string }{
		{"text", text.String(), "Gaps:    " + want + "\n"},
		{"markdown", md.String(), "**Gaps** " + want + "  \n"},
		{"html", html, "<dt>Gaps</dt><dd><div>" + want + "</div></dd>"},
	} {
		if !strings.Contains(c.out, c.line) {
			t.Errorf("%s report lacks %q:\n%s", c.format, c.line, c.out)
		}
	}
	if i, j := strings.Index(text.String(), "Trace trace.db: 2026-12-01 09:00:00 to 09:10:00 UTC"), strings.Index(text.String(), "Gaps:"); i < 0 || j < i {
		t.Errorf("text report: the gaps do not follow the window:\n%s", text.String())
	}
}
