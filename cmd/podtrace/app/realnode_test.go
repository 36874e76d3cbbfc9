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

// The traces recorded on a real node of the local control plane (a kubelet
// v1.37.2 with containerd and runc).
//
// realnode.db is test/e2e's real-node corpus: graceful deletions, OOM
// kills, a crash loop, a failed image pull, an init container that fails,
// a readiness probe that never passes, a deletion the kubelet never
// confirms, and a healthy group (a Deployment rolled and scaled, a Job, a
// pod deleted gracefully).
//
// realnode-shapes.db holds failures played by hand on make cluster-up
// REAL_NODES=1 that the corpus does not: a ConfigMap key missing from the
// environment, spec.activeDeadlineSeconds, a failing liveness probe, a
// command that does not exist, a hostPath that is not there, a command
// that exits 0 under restartPolicy Always, imagePullPolicy Never with no
// image, a sidecar (restartable init container) crash looping, and the
// kubelet frozen (SIGSTOP) so that the node stops reporting: a running pod
// evicted by its 10 s toleration, left Terminating, and the pods of an
// earlier run deleted with their namespace while the node was down; and a
// healthy pod deleted with a preStop hook.
//
// realnode-held.db holds pods held for minutes, played the same way: an
// init container that never exits, a readiness gate nobody sets,
// runAsNonRoot with an image that runs as root, a postStart hook that
// fails.
const realNodeTrace = "testdata/realnode.db"

// TestRealNodeTrace: on what a real kubelet wrote, every pod's findings
// (testdata/*-findings.txt, -update rewrites them), the invariant
// (explain.Check), and no warning about the healthy ones.
func TestRealNodeTrace(t *testing.T) {
	for _, tc := range []struct {
		trace, findings string
		healthy         func(ns, name string) bool
	}{{
		trace: realNodeTrace, findings: "realnode-findings.txt",
		healthy: func(ns, _ string) bool { return ns == "rn-healthy" || ns == "rn-term" || ns == "rn-kill" },
	}, {
		trace: "testdata/realnode-shapes.db", findings: "realnode-shapes-findings.txt",
		healthy: func(ns, name string) bool { return ns == "rn2" && name == "prestop" },
	}, {
		trace: "testdata/realnode-held.db", findings: "realnode-held-findings.txt",
		healthy: func(string, string) bool { return false },
	}} {
		t.Run(filepath.Base(tc.trace), func(t *testing.T) {
			var b strings.Builder
			err := ExplainEach(tc.trace, func(lc *explain.Lifecycle) error {
				for _, v := range explain.Check(lc) {
					t.Errorf("invariant: %s", v)
				}
				fmt.Fprintf(&b, "%s/%s %s\n", lc.Namespace, lc.Name, lc.Outcome)
				for _, f := range lc.Findings {
					fmt.Fprintf(&b, "  %s %s: %s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Headline)
					if tc.healthy(lc.Namespace, lc.Name) && f.Severity > explain.Info {
						t.Errorf("healthy pod %s/%s: %s %s: %s", lc.Namespace, lc.Name, f.Severity, f.ID, f.Headline)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.findings)
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
		})
	}
}
