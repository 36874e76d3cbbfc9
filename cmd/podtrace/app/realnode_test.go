package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/explain"
)

// realNodeTrace was recorded on a real node of the local control plane (a
// kubelet v1.37.2 with containerd and runc, test/e2e's real-node corpus):
// graceful deletions, OOM kills, a crash loop, a failed image pull, an init
// container that fails, a readiness probe that never passes, a deletion
// the kubelet never confirms, and a healthy group (a Deployment rolled and
// scaled, a Job, a pod deleted gracefully).
const realNodeTrace = "testdata/realnode.db"

// TestRealNodeTrace: on what a real kubelet wrote, every pod's findings
// (testdata/realnode-findings.txt, -update rewrites it), the invariant
// (explain.Check), and no warning about the healthy ones.
func TestRealNodeTrace(t *testing.T) {
	healthy := map[string]bool{"rn-healthy": true, "rn-term": true, "rn-kill": true}
	var b strings.Builder
	err := ExplainEach(realNodeTrace, func(lc *explain.Lifecycle) error {
		for _, v := range explain.Check(lc) {
			t.Errorf("invariant: %s", v)
		}
		fmt.Fprintf(&b, "%s/%s %s\n", lc.Namespace, lc.Name, lc.Outcome)
		for _, f := range lc.Findings {
			fmt.Fprintf(&b, "  %s %s: %s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Headline)
			if healthy[lc.Namespace] && f.Severity > explain.Info {
				t.Errorf("healthy pod %s/%s: %s %s: %s", lc.Namespace, lc.Name, f.Severity, f.ID, f.Headline)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "realnode-findings.txt")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/podtrace/app -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s differs (-want +got); if intended, run go test ./cmd/podtrace/app -update:\n%s", path, diff)
	}
}
