package app

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/compare"
)

// TestCompareCommand compares the sample trace's stuck pod with the one
// recorded for the audit tests, in another trace: two runs of the same
// case, which differ in nothing that matters.
func TestCompareCommand(t *testing.T) {
	const other = "testdata/audit/trace.db"
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"text", []string{"ci/runner-job-1", "runner-job-1", "-n", "ci", "--db", sampleTrace, "--against", other, "--color", "never"},
			[]string{"Compare A ci/runner-job-1", "Verdict: " + compare.NoDecisiveDifference, "Phases (time since created)", "still present at the end", "Ignored: "}},
		{"markdown", []string{"ci/runner-job-1", "ci/runner-job-1", "--db", sampleTrace, "--against", other, "-o", "markdown"},
			[]string{"## Compare `ci/runner-job-1` with `ci/runner-job-1`", "**Verdict:** " + compare.NoDecisiveDifference, "<details>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Main(append([]string{"podtrace", "compare"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"podtrace", "compare", "ci/runner-job-1", "ci/runner-job-1", "--db", sampleTrace, "-o", "json"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var r compare.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != compare.NoDecisiveDifference || r.Ignored != 0 || len(r.Other) != 0 {
		t.Errorf("a pod compared with itself: verdict %q, %d ignored, %d other differences", r.Verdict, r.Ignored, len(r.Other))
	}
}

func TestCompareUserErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one pod", []string{"ci/runner-job-1", "--db", sampleTrace}, 2, "compare takes two pods"},
		{"bad output", []string{"a", "b", "-o", "xml", "--db", sampleTrace}, 2, "--output must be text, markdown, json, yaml or html"},
		{"three uids", []string{"a", "b", "--uid", "1", "--uid", "2", "--uid", "3", "--db", sampleTrace}, 2, "--uid is given once for A and once for B"},
		{"unknown pod", []string{"ci/runner-job-1", "ci/nosuch", "--db", sampleTrace}, 1, `no pod named "nosuch" in namespace ci`},
		{"selector with pods", []string{"a", "--selector", "x=y", "--db", sampleTrace}, 2, "compare --selector takes no pod arguments"},
		{"bad selector", []string{"--selector", "x==(", "--db", sampleTrace}, 2, `--selector "x==("`},
		{"selector matches none", []string{"--selector", "app=none", "--db", sampleTrace}, 1, `no recorded pod in the trace has labels matching "app=none"`},
		{"unknown uid", []string{"ci/runner-job-1", "ci/runner-job-1", "--uid", "78dc", "--uid", "ffff", "--db", sampleTrace}, 1, "has uid ffff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(append([]string{"podtrace", "compare"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tc.code, tc.want)
			}
		})
	}
}
