package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

func runApp(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), append([]string{"podtrace"}, args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatalf("podtrace %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}

// TestExportKeepsFindings: explain on an export says what it says on the
// original trace.
func TestExportKeepsFindings(t *testing.T) {
	out := filepath.Join(t.TempDir(), "export.db")
	_, summary := runApp(t, "export", "--db", sampleTrace, "--out", out, "-n", "ci", "--pod", "runner-job-1")
	if !strings.Contains(summary, "exported 1 pod named ci/runner-job-1,") {
		t.Errorf("export summary %q", summary)
	}
	var orig, exported struct{ Findings []explain.Finding }
	a, _ := runApp(t, "explain", "runner-job-1", "--db", sampleTrace, "-o", "json")
	b, _ := runApp(t, "explain", "runner-job-1", "--db", out, "-o", "json")
	if err := json.Unmarshal([]byte(a), &orig); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &exported); err != nil {
		t.Fatal(err)
	}
	if len(orig.Findings) == 0 {
		t.Fatal("the sample trace has no finding: this test proves nothing")
	}
	// Records are renumbered in the export; everything else must match.
	if d := cmp.Diff(orig.Findings, exported.Findings, cmpopts.IgnoreFields(explain.Evidence{}, "Seq")); d != "" {
		t.Errorf("findings on the export differ (-original +export):\n%s", d)
	}
}

// TestExportRedacts: no redacted value is left in the exported file, in
// its bytes or in its decoded records, and the structure stays.
func TestExportRedacts(t *testing.T) {
	p := pod("ci", "job", "000000000009")
	p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{"containers":[{"env":[{"name":"DB_PASSWORD","value":"lastappliedsecret"}]}]}}`}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2hunter2"}, {Name: "REGION", Value: "eu-west-9"}}
	p.Spec.Containers[0].Args = []string{"--api-token", "tokentokentoken", "--verbose"}
	src := writeTrace(t, p)
	out := filepath.Join(t.TempDir(), "export.db")
	_, summary := runApp(t, "export", "--db", src, "--out", out, "--redact", "REGION")
	if !strings.Contains(summary, "env values") {
		t.Errorf("export summary does not say what was redacted: %q", summary)
	}
	secrets := []string{"hunter2hunter2", "lastappliedsecret", "tokentokentoken", "eu-west-9"}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(out, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var decoded strings.Builder
	if err := db.Scan(func(r store.Record) error { decoded.Write(r.Object); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) || strings.Contains(decoded.String(), s) {
			t.Errorf("the export still carries %q", s)
		}
	}
	for _, kept := range []string{"DB_PASSWORD", "REGION", "--verbose", redact.Redacted} {
		if !strings.Contains(decoded.String(), kept) {
			t.Errorf("the export lost %q: structure must stay", kept)
		}
	}
	// The original is untouched: the secret is still there to be redacted.
	if !strings.Contains(mustScan(t, src), "hunter2hunter2") {
		t.Error("the source trace lost its data: this test proves nothing")
	}
}

func mustScan(t *testing.T, path string) string {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	if err := db.Scan(func(r store.Record) error { b.Write(r.Object); return nil }); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestExportRefusesToOverwrite(t *testing.T) {
	out := filepath.Join(t.TempDir(), "exists.db")
	if err := os.WriteFile(out, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	code := Main([]string{"podtrace", "export", "--db", sampleTrace, "--out", out}, Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "never overwrites") {
		t.Errorf("exit %d, stderr %q; want 2 and a refusal", code, errOut.String())
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Error("export overwrote an existing file")
	}
}

// TestExportCountsRedactionAsReport: export and report of the same trace
// state the same redaction, in the same words; export says it exported
// every pod when no --pod or -n picked some.
func TestExportCountsRedactionAsReport(t *testing.T) {
	a, b := pod("ci", "job", "000000000009"), pod("ci", "web", "000000000010")
	for _, p := range []*corev1.Pod{a, b} {
		p.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2hunter2"}, {Name: "REGION", Value: "eu-west-9"}}
		p.Spec.Containers[0].Args = []string{"--api-token", "tokentokentoken"}
	}
	src := writeTrace(t, a, b)
	rep, _ := runApp(t, "report", "--db", src)
	_, redaction, ok := strings.Cut(rep, "Redaction: ")
	if !ok {
		t.Fatalf("the report states no redaction:\n%s", rep)
	}
	redaction, _, _ = strings.Cut(redaction, "\n")
	if !strings.Contains(redaction, "env values") {
		t.Fatalf("the report redacted no env value (%q): this test proves nothing", redaction)
	}
	for _, tc := range []struct {
		args  []string
		which string
	}{
		{nil, "exported every pod of the trace (2 pods; --pod and -n pick some), "},
		{[]string{"-n", "ci"}, "exported every pod in namespace ci (2 pods; --pod picks one), "},
		{[]string{"-n", "ci", "--pod", "web"}, "exported 1 pod named ci/web, "},
	} {
		_, summary := runApp(t, append([]string{"export", "--db", src, "--out", filepath.Join(t.TempDir(), "export.db")}, tc.args...)...)
		if !strings.HasPrefix(summary, tc.which) {
			t.Errorf("export %v summary %q, want it to start %q", tc.args, summary, tc.which)
		}
		if len(tc.args) < 4 && !strings.HasSuffix(summary, "; redaction "+redaction+"\n") {
			t.Errorf("export %v summary %q, want the report's redaction %q", tc.args, summary, redaction)
		}
	}
}

// TestExportToStandardOutput: export -o - and report -o - write to
// standard output (kubectl exec ... -- podtrace export -o - > ticket.db),
// the export a trace that opens and explains as the file export does, and
// no temporary file left behind.
func TestExportToStandardOutput(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, summary := runApp(t, "export", "--db", sampleTrace, "--out", "-", "-n", "ci", "--pod", "runner-job-1")
	if !strings.Contains(summary, "to standard output") {
		t.Errorf("export summary %q, want it to say standard output", summary)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	got := filepath.Join(t.TempDir(), "ticket.db")
	if err := os.WriteFile(got, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := runApp(t, "explain", "runner-job-1", "--db", sampleTrace, "--color", "never")
	b, _ := runApp(t, "explain", "runner-job-1", "--db", got, "--color", "never")
	if !strings.Contains(b, "stuck-finalizer") || strings.Count(a, "\n") != strings.Count(b, "\n") {
		t.Errorf("explain of the exported trace:\n%s\nwant as on the original:\n%s", b, a)
	}
	page, _ := runApp(t, "report", "--db", sampleTrace, "-o", "html", "--out", "-")
	if !strings.HasPrefix(page, "<!DOCTYPE html>") {
		t.Errorf("report --html -o - wrote %.80q, want the page on standard output", page)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error("report -o - wrote a file named -")
	}
}

// TestExportKeepsGapsAndPrunes: what the recorder did not see and what
// retention took away go with the export, so that a ticket's reader does
// not take the exported history for all of it.
func TestExportKeepsGapsAndPrunes(t *testing.T) {
	path, gone := tracetest.PrunedTrace(t, t.TempDir())
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	outage := store.Gap{Session: 1, Cause: store.GapAPIServer, Start: gone.Add(time.Hour), End: gone.Add(2 * time.Hour), Detail: "connection refused"}
	if err := db.AddGap(outage); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "export.db")
	runApp(t, "export", "--db", path, "--out", out)
	exp, err := store.Open(out, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Close()
	gaps, err := exp.Gaps()
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || gaps[0].Cause != store.GapAPIServer || !gaps[0].Start.Equal(outage.Start) {
		t.Errorf("gaps of the export %+v, want the API server's", gaps)
	}
	prunes, err := exp.Prunes()
	if err != nil {
		t.Fatal(err)
	}
	if len(prunes) != 1 || prunes[0].Pods != 3 || prunes[0].Reason != store.PruneAge {
		t.Errorf("prunes of the export %+v, want the 3 pods retention pruned", prunes)
	}
	report, _ := runApp(t, "report", "--db", out, "--color", "never")
	if !strings.Contains(report, "by retention: 3 pods gone before ") {
		t.Errorf("report of the export does not say what was pruned:\n%s", report)
	}
}
