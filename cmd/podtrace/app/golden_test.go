package app

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/explain"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// sampleTrace is the digester case recorded by `make demo` on the local
// control plane (refreshed with `make example-trace`).
const sampleTrace = "../../../examples/trace/digester.db"

// TestGolden runs podtrace's read commands on the sample trace and compares
// their output with the golden files in testdata/.
func TestGolden(t *testing.T) {
	if _, err := os.Stat(sampleTrace); err != nil {
		t.Fatalf("sample trace: %v (make example-trace records it)", err)
	}
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	tests := []struct {
		golden string
		args   []string
	}{
		{"diff.txt", []string{"diff", "runner-job-1", "-n", "ci", "--color", "never"}},
		{"diff-all-fields.txt", []string{"diff", "runner-job-1", "-n", "ci", "--color", "never", "--all-fields"}},
		{"diff.json", []string{"diff", "runner-job-1", "-n", "ci", "-o", "json"}},
		{"explain.txt", []string{"explain", "runner-job-1", "--color", "never"}},
		{"explain.json", []string{"explain", "runner-job-1", "-o", "json"}},
		{"report.txt", []string{"report", "--color", "never"}},
		{"report.md", []string{"report", "-o", "markdown"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"podtrace"}, tc.args...)
			args = append(args, "--db", sampleTrace)
			if err := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errOut.String())
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/podtrace/app -update)", err)
			}
			if diff := cmp.Diff(string(want), out.String()); diff != "" {
				t.Errorf("%s differs (-want +got); if intended, run go test ./cmd/podtrace/app -update:\n%s", path, diff)
			}
		})
	}
}

// TestNoRedactWarns checks that turning redaction off is said loudly.
func TestNoRedactWarns(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"podtrace", "report", "--no-redact", "--db", sampleTrace}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "WARNING: --no-redact") {
		t.Errorf("no warning on stderr: %q", errOut.String())
	}
	if !strings.Contains(out.String(), "Redaction: OFF") {
		t.Errorf("the report does not say redaction is off:\n%s", out.String())
	}
}

// TestUserErrors checks that bad input gets a clear error that says what to
// do next, and the exit code for it.
func TestUserErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a trace "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing trace", []string{"diff", "x", "--db", filepath.Join(dir, "none.db")}, 1, []string{"none.db", "podtrace record"}},
		{"corrupt trace", []string{"report", "--db", garbage}, 1, []string{"garbage.db"}},
		{"unknown pod", []string{"diff", "nosuch", "-n", "ci", "--db", sampleTrace}, 1, []string{`no pod named "nosuch" in namespace ci`, "runner-job-1"}},
		{"pod in another namespace", []string{"diff", "runner-job-1", "-n", "default", "--db", sampleTrace}, 1, []string{"use -n ci"}},
		{"no pod argument", []string{"diff", "--db", sampleTrace}, 2, []string{"exactly one pod name"}},
		{"bad output", []string{"diff", "runner-job-1", "-o", "xml", "--db", sampleTrace}, 2, []string{`--output must be text, json or yaml, not "xml"`}},
		{"bad format", []string{"report", "-o", "pdf", "--db", sampleTrace}, 2, []string{`--output must be text, markdown or html, not "pdf"`}},
		{"-o of a file", []string{"diff", "runner-job-1", "-o", "out.txt", "--db", sampleTrace}, 2, []string{"-o is the output format; to write to a file: --out out.txt"}},
		{"unknown flag", []string{"diff", "x", "--nosuch"}, 2, []string{"nosuch"}},
		{"bad redact pattern", []string{"report", "--redact", "(x", "--db", sampleTrace}, 2, []string{`--redact "(x"`}},
		{"redact and no-redact", []string{"diff", "runner-job-1", "--redact", "X", "--no-redact", "--db", sampleTrace}, 2, []string{"contradict"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(append([]string{"podtrace"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.code, errOut.String())
			}
			msg := errOut.String()
			if !strings.HasPrefix(msg, "podtrace: error: ") {
				t.Errorf("stderr %q does not start with podtrace: error:", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q lacks %q", msg, w)
				}
			}
		})
	}
}

// TestSampleTraceInvariant: on the sample trace, every pod's unwell
// stretches are covered by a warning or critical finding and every Warning
// event is cited (explain.Check).
func TestSampleTraceInvariant(t *testing.T) {
	pods := 0
	err := ExplainEach(sampleTrace, func(lc *explain.Lifecycle) error {
		pods++
		for _, v := range explain.Check(lc) {
			t.Errorf("invariant: %s", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pods == 0 {
		t.Fatal("no pod in the sample trace")
	}
}
