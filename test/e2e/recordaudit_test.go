package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/test/cluster"
)

// TestDigesterCaseRecordAuditLog plays the digester case while `podtrace
// record --audit-log` follows the API server's live audit log, which the
// API server rotates every megabyte; with no import step, explain counts
// the garbage collector's denied finalizer removals and quotes the
// webhook's message. Importing the same log afterwards finds every event
// the recording kept already in the trace.
func TestDigesterCaseRecordAuditLog(t *testing.T) {
	c, client := newCluster(t, cluster.Options{
		Nodes:       1,
		AuditPolicy: cluster.PodAuditPolicy,
		// kube-apiserver's own rotation: audit.log is renamed to
		// audit-TIME.log and a new one created, each megabyte.
		APIServerFlags: []string{"--audit-log-maxsize", "1", "--audit-log-maxbackup", "0"},
	})
	const ns, job = "ci", "runner-job-1"
	startDigester(t, c, client, ns)
	waitFor(t, "the audit log to exist", 30*time.Second, func() (bool, error) {
		_, err := os.Stat(c.AuditLog)
		return err == nil, nil
	})
	rec := startRecorder(t, c, "--audit-log", c.AuditLog)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(rec.db); err == nil {
				_ = os.WriteFile(filepath.Join(c.LogDir, "trace.db"), b, 0o644)
			}
		}
	})
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	// About a megabyte of audit events about no recorded pod: a rotation
	// while the case plays.
	fill(t, c, 2000)
	playStuckJob(t, client, ns, job, 20*time.Second) // several of the garbage collector's retries
	rec.stop(t)

	stderr := rec.stderr.String()
	t.Logf("podtrace record:\n%s", stderr)
	m := regexp.MustCompile(`audit log \S+: \d+ lines? \([^)]*\), followed (\d+) rotations? and \d+ truncations?: (\d+) events? kept`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("record's summary does not say it followed a rotation and kept audit events:\n%s", stderr)
	}
	kept, _ := strconv.Atoi(m[2])
	if m[1] == "0" || kept == 0 {
		t.Fatalf("record followed %s rotations and kept %d events, want at least one of each", m[1], kept)
	}
	rotated, _ := filepath.Glob(filepath.Join(filepath.Dir(c.AuditLog), "audit-*.log"))
	if len(rotated) == 0 {
		t.Fatalf("the API server did not rotate its audit log; the test proves nothing about rotation")
	}

	checkAuditExplain(t, podtrace(t, "explain", job, "-n", ns, "--db", rec.db, "--color", "never"), job)
	lc := lifecycle(t, rec.db, ns, job)
	if lc.Admission == nil || lc.Admission.Source != "audit log" {
		t.Errorf("admission not compared against the audit log: %+v", lc.Admission)
	}

	// Import reads the same lines (the rotated file and the current one)
	// with the same parser: every event the recording kept is in the trace
	// already. It may add events written after the recording stopped.
	args := []string{"import", "--db", rec.db}
	for _, f := range append(rotated, c.AuditLog) {
		args = append(args, "--audit-log", f)
	}
	out := podtrace(t, args...)
	t.Logf("podtrace import:\n%s", out)
	am := regexp.MustCompile(`skipped (\d+): already in the trace`).FindStringSubmatch(out)
	if am == nil || am[1] != strconv.Itoa(kept) {
		t.Errorf("import found %v of the events already in the trace, want the %d the recording kept:\n%s", am, kept, out)
	}
}

// fill makes n audit events of half a kilobyte or more each, about no pod.
func fill(t *testing.T, c *cluster.Cluster, n int) {
	t.Helper()
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = 2000, 2000
	cfg.UserAgent = "e2e-filler"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Deletions of ConfigMaps that do not exist: writes, which the policy
	// logs (at Metadata level), about no pod; they leave nothing behind.
	for i := range n {
		_ = client.CoreV1().ConfigMaps("default").Delete(ctx, fmt.Sprintf("filler-%d", i), metav1.DeleteOptions{})
	}
}
