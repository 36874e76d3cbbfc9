package app

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/otlp/otlptest"
)

// TestExportOTLPGolden sends the sample trace's pod over OTLP/HTTP to a
// receiver and compares what it received, span by span, attribute by
// attribute, with testdata/otlp-digester.txt.
func TestExportOTLPGolden(t *testing.T) {
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	_, errOut, err := runPodtrace(t, "export", "--db", sampleTrace, "--otlp", srv.URL, "--otlp-protocol", "http", "--cluster-name", "ci-cluster", "--otlp-header", "Authorization=Bearer t0ken")
	if err != nil {
		t.Fatalf("export --otlp: %v\n%s", err, errOut)
	}
	if want := `sent the traces of 1 pod (8 spans in 1 request) from ` + sampleTrace + ` to ` + srv.URL + ` (http/protobuf) as cluster "ci-cluster" in `; !strings.HasPrefix(errOut, want) {
		t.Errorf("summary %q, want it to start %q", errOut, want)
	}
	_, headers, _ := rc.Requests()
	if len(headers) != 1 || headers[0].Get("Authorization") != "Bearer t0ken" {
		t.Errorf("headers %v, want one request with the --otlp-header", headers)
	}
	got := otlptest.Text(rc.Spans())
	path := filepath.Join("testdata", "otlp-digester.txt")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/podtrace/app -update)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got); if intended, run go test ./cmd/podtrace/app -update:\n%s", path, diff)
	}
}

func TestExportOTLPChoosesPods(t *testing.T) {
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	base := []string{"export", "--db", sampleTrace, "--otlp", srv.URL, "--otlp-protocol", "http"}
	tests := []struct {
		name  string
		args  []string
		pods  int
		err   string
		usage bool
	}{
		{name: "the cluster named by the recording's context", pods: 1},
		{name: "by namespace and label", args: []string{"-n", "ci", "-l", "podtrace.dev/job=runner-job-1"}, pods: 1},
		{name: "by pod", args: []string{"--pod", "runner-job-1"}, pods: 1},
		{name: "a window that holds it", args: []string{"--since", "2026-12-01T04:30:30Z", "--until", "2026-12-01T05:00:00Z"}, pods: 1},
		{name: "a label no pod has", args: []string{"-l", "app=payments"}, err: `no recorded pod has labels matching "app=payments"`},
		{name: "a namespace with no pod", args: []string{"-n", "prod"}, err: "no pod in namespace prod recorded"},
		{name: "a window before it", args: []string{"--until", "2026-12-01T04:00:00Z"}, err: "until 2026-12-01T04:00:00Z"},
		{name: "--out too", args: []string{"-o", "x.db"}, err: "--out and --otlp contradict each other", usage: true},
		{name: "a bad selector", args: []string{"-l", "app in"}, err: "--selector", usage: true},
		{name: "a bad header", args: []string{"--otlp-header", "Authorization"}, err: "--otlp-header \"Authorization\": want KEY=VALUE", usage: true},
		{name: "a bad protocol", args: []string{"--otlp-protocol", "thrift"}, err: "--otlp-protocol must be grpc or http", usage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rc.Spans())
			_, errOut, err := runPodtrace(t, append(append([]string{}, base...), tt.args...)...)
			if tt.err != "" {
				var usage *UsageError
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q\n%s", err, tt.err, errOut)
				}
				if isUsage := errors.As(err, &usage); isUsage != tt.usage {
					t.Errorf("usage error: %v, want %v", isUsage, tt.usage)
				}
				if len(rc.Spans()) != before {
					t.Errorf("spans were sent")
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			if !strings.Contains(errOut, `as cluster "podtrace-local"`) && len(tt.args) == 0 {
				t.Errorf("summary %q: want the recording's kubeconfig context as the cluster", errOut)
			}
			if got := len(rc.Spans()) - before; got != 8*tt.pods {
				t.Errorf("%d spans sent, want %d", got, 8*tt.pods)
			}
		})
	}
}

func TestExportOTLPFails(t *testing.T) {
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	rc.SetFail(http.StatusServiceUnavailable)
	_, errOut, err := runPodtrace(t, "export", "--db", sampleTrace, "--otlp", srv.URL, "--otlp-protocol", "http", "--otlp-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "the traces of 0 pods were sent before it failed") {
		t.Fatalf("export to a failing receiver: %v, want an error that says what was sent\n%s", err, errOut)
	}
	// A gRPC endpoint with nothing listening: what to check.
	_, _, err = runPodtrace(t, "export", "--db", sampleTrace, "--otlp", "127.0.0.1:1", "--otlp-insecure", "--otlp-timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "for OTLP/HTTP, 4318, add --otlp-protocol http") {
		t.Fatalf("export to nothing: %v, want a hint", err)
	}
}

// TestExportOTLPRedacts: the --redact keys reach the spans' labels and
// the changes' values.
func TestExportOTLPRedacts(t *testing.T) {
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	if _, errOut, err := runPodtrace(t, "export", "--db", sampleTrace, "--otlp", srv.URL, "--otlp-protocol", "http", "--redact", "podtrace.dev/job"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	text := otlptest.Text(rc.Spans())
	if !strings.Contains(text, `resource k8s.pod.label.podtrace.dev/job = "[redacted]"`) {
		t.Errorf("the label named by --redact is not redacted:\n%s", text)
	}
	if strings.Contains(text, `"runner-job-1"`) && strings.Contains(text, "k8s.pod.label.podtrace.dev/job = \"runner-job-1\"") {
		t.Errorf("the label's value is sent")
	}
}

// TestExportSelector: -l picks pods for a trace file too.
func TestExportSelector(t *testing.T) {
	dir := t.TempDir()
	_, errOut, err := runPodtrace(t, "export", "--db", sampleTrace, "-o", filepath.Join(dir, "a.db"), "-l", "podtrace.dev/job=runner-job-1")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "exported 1 pod whose labels match podtrace.dev/job=runner-job-1") {
		t.Errorf("summary %q", errOut)
	}
	_, _, err = runPodtrace(t, "export", "--db", sampleTrace, "-o", filepath.Join(dir, "b.db"), "-l", "podtrace.dev/job=other")
	if err == nil || !strings.Contains(err.Error(), `no recorded pod has labels matching "podtrace.dev/job=other"`) {
		t.Errorf("export -l matching nothing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.db")); err == nil {
		t.Errorf("a trace was written for no pod")
	}
}
