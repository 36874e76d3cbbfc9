package app

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

// TestReportWorkers checks that replaying and redacting the pods on several
// workers writes the report one worker writes, byte for byte, and that
// --no-redact still warns once.
func TestReportWorkers(t *testing.T) {
	bt := reportTrace(t, 60, 12)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	run := func(procs int, args ...string) (string, string) {
		t.Helper()
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var out, errOut bytes.Buffer
		args = append([]string{"podtrace", "report", "--db", bt.path}, args...)
		if err := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	for _, args := range [][]string{
		{"--color", "never"},
		{"-o", "markdown", "--redact", "QUEUE"},
		{"--html"},
		{"--color", "never", "--no-redact"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			want, wantErr := run(1, args...)
			got, gotErr := run(4, args...)
			if !strings.Contains(want, "worker-0000-") {
				t.Fatalf("the report does not show pod worker-0000-...:\n%.2000s", want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report on 4 workers differs from 1 (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantErr, gotErr); diff != "" {
				t.Errorf("standard error on 4 workers differs from 1 (-want +got):\n%s", diff)
			}
			if n := strings.Count(gotErr, "WARNING: --no-redact"); n != strings.Count(strings.Join(args, " "), "--no-redact") {
				t.Errorf("standard error has %d --no-redact warnings, want one per --no-redact run:\n%s", n, gotErr)
			}
		})
	}
}

// TestWithoutRevisions checks that a lifecycle whose decoded revisions
// were dropped, as a report keeps it, renders as before in every format.
func TestWithoutRevisions(t *testing.T) {
	bt := reportTrace(t, 20, 12)
	db, err := openTrace(bt.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tc, err := loadContext(db)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	var full, slim []*explain.Lifecycle
	for _, p := range pods[:6] {
		in, err := loadInput(db, tc, p)
		if err != nil {
			t.Fatal(err)
		}
		var lcs [2]*explain.Lifecycle
		for i := range lcs {
			if lcs[i], err = explain.Replay(in, diff.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		lcs[1].DropRevisions()
		full, slim = append(full, lcs[0]), append(slim, lcs[1])
	}
	render := func(pods []*explain.Lifecycle) string {
		var b bytes.Buffer
		tr := &report.Trace{File: bt.path, Generated: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Pods: pods}
		for _, lc := range pods {
			report.Diff(&b, lc, report.TextOptions{AllFields: true})
			report.Explain(&b, lc, report.TextOptions{})
		}
		report.Text(&b, tr, report.TextOptions{})
		report.Markdown(&b, tr, report.TextOptions{})
		report.HTML(&b, tr, report.HTMLOptions{})
		return b.String()
	}
	if d := cmp.Diff(render(full), render(slim)); d != "" {
		t.Errorf("the lifecycles without their revisions render differently (-with +without):\n%s", d)
	}
}

// TestReportHTMLPrepared checks that the page of pods whose data the
// workers prepared, lifecycles trimmed (report.TrimPrepared), is the page of
// the same pods loaded whole.
func TestReportHTMLPrepared(t *testing.T) {
	bt := reportTrace(t, 30, 12)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	db, err := openTrace(bt.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	page := func(html bool) string {
		t.Helper()
		tr, err := loadTrace(db, traceLoad{html: html})
		if err != nil {
			t.Fatal(err)
		}
		if html != (len(tr.Prepared) == len(tr.Pods)) {
			t.Fatalf("html %v: %d of %d pods prepared", html, len(tr.Prepared), len(tr.Pods))
		}
		var b bytes.Buffer
		if err := report.HTML(&b, tr, report.HTMLOptions{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if want, got := page(false), page(true); got != want {
		t.Errorf("the page of prepared pods (%d bytes) differs from the page of whole ones (%d bytes)", len(got), len(want))
	}
}
