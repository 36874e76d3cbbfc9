package app

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/report"
)

func TestParseRetain(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "2m30s", want: 150 * time.Second},
		{in: "1.5h", want: 90 * time.Minute},
		{in: "0d", err: "it must be more than 0"},
		{in: "0s", err: "it must be more than 0"},
		{in: "", err: "want a duration like 7d"},
		{in: "7", err: "want a duration like 7d, 36h, 1d12h or 90m (units d, h, m, s)"},
		{in: "1w", err: "want a duration like 7d"},
		{in: "-1d", err: "want a duration like 7d"},
		{in: "7 days", err: "want a duration like 7d"},
		{in: "d", err: "want a duration like 7d"},
	} {
		got, err := parseRetain(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseRetain(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseRetain(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, d := range []time.Duration{7 * 24 * time.Hour, 36 * time.Hour, 90 * time.Minute, 2 * time.Minute, 45 * time.Second, 1500 * time.Millisecond} {
		if back, err := parseRetain(report.RetainText(d)); err != nil || back != d {
			t.Errorf("RetainText(%v) = %q, which parses to %v, %v", d, report.RetainText(d), back, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "10GiB", want: 10 << 30},
		{in: "500MiB", want: 500 << 20},
		{in: "1.5TiB", want: 3 << 39},
		{in: "4Gi", want: 4 << 30},
		{in: "2G", want: 2e9},
		{in: "2GB", want: 2e9},
		{in: "64kB", want: 64000},
		{in: "1048576", want: 1 << 20},
		{in: "100 MiB", want: 100 << 20},
		{in: "0", err: "it must be more than 0"},
		{in: "10gib", err: "want a size like 10GiB, 500MiB or 2G (units B, KiB, MiB, GiB, TiB or Ki, Mi, Gi, Ti: powers of 1024; kB, MB, GB, TB or k, M, G, T: powers of 1000)"},
		{in: "GiB", err: "want a size like"},
		{in: "-1GiB", err: "want a size like"},
		{in: "10 giga", err: "want a size like"},
		{in: "99999999999TiB", err: "too large"},
	} {
		got, err := parseSize(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseSize(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// Bad --retain, --max-size and --wait-for-lease values are usage errors
// that say what is accepted, before anything is opened.
func TestRecordRetentionFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "trace.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--retain", "7x"}, `podtrace: error: --retain "7x": want a duration like 7d, 36h, 1d12h or 90m (units d, h, m, s)`},
		{[]string{"--retain", "0d"}, `--retain "0d": it must be more than 0`},
		{[]string{"--max-size", "10gb"}, `podtrace: error: --max-size "10gb": want a size like 10GiB, 500MiB or 2G`},
		{[]string{"--wait-for-lease", "-1s"}, `--wait-for-lease must be positive (or 0 to fail at once), got -1s`},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"podtrace", "record", "--db", out}, tc.args...), Streams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("record %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// A trace that retention pruned says so in every report format, and diff
// of a pruned pod says it may have been pruned.
func TestReportShowsPruned(t *testing.T) {
	path, _ := tracetest.PrunedTrace(t, t.TempDir())

	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"podtrace"}, args...), Streams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})
		return code, stdout.String(), stderr.String()
	}
	for _, format := range []string{"text", "markdown", "html"} {
		code, out, errOut := run("report", "--db", path, "-o", format, "--color", "never")
		if code != 0 {
			t.Fatalf("report --format %s: exit %d: %s", format, code, errOut)
		}
		want := "by retention: 3 pods gone before "
		if !strings.Contains(out, want) || !strings.Contains(out, "(--retain 7d)") || !strings.Contains(out, "Their history is not in the trace") {
			t.Errorf("report --format %s does not say what was pruned (%q, --retain 7d):\n%s", format, want, firstLines(out, 30))
		}
		if strings.Contains(out, "old-0") || !strings.Contains(out, "live") {
			t.Errorf("report --format %s: want the live pod and no pruned one", format)
		}
	}
	code, out, _ := run("report", "--db", path, "--color", "never")
	t.Logf("report:\n%s", firstLines(out, 8))
	if line := lineWith(out, "Pruned:"); code != 0 || !strings.Contains(line, "3 pods gone before ") {
		t.Errorf("text report's Pruned line: %q", line)
	} else if _, err := time.Parse("2006-01-02 15:04:05 UTC", strings.TrimSpace(strings.SplitN(strings.SplitN(line, "gone before ", 2)[1], " (", 2)[0])); err != nil {
		t.Errorf("Pruned line %q: the time: %v", line, err)
	}
	code, _, errOut := run("diff", "old-1", "-n", "ci", "--db", path)
	t.Logf("diff old-1: %s", errOut)
	if code != 1 || !strings.Contains(errOut, `no pod named "old-1" in namespace ci`) || !strings.Contains(errOut, "retention pruned 3 pods gone before") {
		t.Errorf("diff of a pruned pod: exit %d, %q; want 1, saying it may have been pruned", code, errOut)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
