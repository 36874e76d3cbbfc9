package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestDigesterCaseWithAuditLog plays the digester case on a control plane
// that writes an audit log, imports the log into the trace, and checks that
// the failed requests an informer never sees now tell the cause: the
// webhook that denied the garbage collector's UPDATE, how often, with its
// message, and the webhook's own patch at CREATE.
func TestDigesterCaseWithAuditLog(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	const ns, job = "ci", "runner-job-1"
	startDigester(t, c, client, ns)
	rec := startRecorder(t, c)
	t.Cleanup(func() {
		// On failure, keep the trace beside the cluster's logs (kept with
		// PODTRACE_KEEP_CLUSTER=1) so the audit log and the trace can be
		// read together.
		if t.Failed() {
			if b, err := os.ReadFile(rec.db); err == nil {
				_ = os.WriteFile(filepath.Join(c.LogDir, "trace.db"), b, 0o644)
			}
		}
	})
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	playStuckJob(t, client, ns, job, 20*time.Second) // several of the garbage collector's retries
	rec.stop(t)

	out := podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	t.Logf("podtrace import:\n%s", out)
	if m := regexp.MustCompile(`(\d+) events? kept`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Fatalf("import kept no audit event:\n%s", out)
	}
	// A second import of the same log adds nothing.
	if again := podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db); !strings.Contains(again, " 0 events kept") {
		t.Errorf("second import of the same log kept events again:\n%s", again)
	}

	checkAuditExplain(t, podtrace(t, "explain", job, "-n", ns, "--db", rec.db, "--color", "never"), job)

	lc := lifecycle(t, rec.db, ns, job)
	if lc.Audit == nil {
		t.Fatalf("diff -o json has no audit section")
	}
	if lc.Admission == nil || lc.Admission.Source != "audit log" {
		t.Fatalf("admission not compared against the audit log: %+v", lc.Admission)
	}
	var rewrite *diff.AdmissionChange
	for i, ch := range lc.Admission.Changes {
		if strings.HasPrefix(ch.Path, "spec.containers[build]") && strings.Contains(ch.New, "@sha256:") {
			rewrite = &lc.Admission.Changes[i]
		}
	}
	if rewrite == nil {
		t.Fatalf("no image rewrite at admission: %+v", lc.Admission.Changes)
	}
	if rewrite.By != "mutating webhook "+digester.WebhookName || rewrite.Certainty != "certain" {
		t.Errorf("image rewrite attributed to %q (%s), want mutating webhook %s (certain)", rewrite.By, rewrite.Certainty, digester.WebhookName)
	}
	var patched bool
	// The garbage collector removes the finalizer with a PATCH, an UPDATE
	// to admission.
	for _, p := range lc.Audit.Patches {
		if p.Webhook != digester.WebhookName {
			continue
		}
		for _, op := range p.Ops {
			if op.Op == "replace" && op.Path == "/spec/containers/0/image" && strings.Contains(string(op.Value), "@sha256:") {
				patched = true
			}
		}
	}
	if !patched {
		b, _ := json.MarshalIndent(lc.Audit.Patches, "", "  ")
		t.Errorf("no patch of %s replacing /spec/containers/0/image with a digest; patches:\n%s", digester.WebhookName, b)
	}
	diffText := podtrace(t, "diff", job, "-n", ns, "--db", rec.db, "--color", "never")
	if !strings.Contains(diffText, "Audit") || !strings.Contains(diffText, "generic-garbage-collector") {
		t.Errorf("diff has no Audit section naming the garbage collector:\n%s", diffText)
	}
}

// checkAuditExplain checks what explain says of the digester case with the
// audit log: the denial quoted, the webhook and the Secret named, the
// garbage collector's denied updates counted, the finding confirmed.
func checkAuditExplain(t *testing.T, explain, job string) {
	t.Helper()
	t.Logf("explain:\n%s", explain)
	for _, s := range []string{
		"stuck-finalizer",
		"system:serviceaccount:kube-system:generic-garbage-collector",
		`admission webhook "` + digester.WebhookName + `" denied the request`,
		"failed to create keychain",
		digester.SecretName(job),
		"confirmed by the audit log",
	} {
		if !strings.Contains(explain, s) {
			t.Errorf("explain lacks %q", s)
		}
	}
	m := regexp.MustCompile(`(\d+) (?:update|patch) attempts? by system:serviceaccount:kube-system:generic-garbage-collector denied`).FindStringSubmatch(explain)
	if m == nil {
		t.Errorf("explain does not count the garbage collector's denied updates")
	} else if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("explain counts %d denied updates, want at least 2 (the garbage collector retries)", n)
	}
}
