// Package e2e proves podtrace end to end on the local control plane
// (test/cluster): `podtrace record` records real pods through the real API
// server, scheduler, controllers and kwok, and `diff`, `explain` and `report`
// are asserted on that recording.
//
// TestRealNodeCorpus does the same on a real node (kubelet, containerd,
// runc): graceful deletions, OOM kills, a crash loop, a failed image pull, a
// failed init container, a readiness probe that never passes, a deletion no
// kubelet confirms and a healthy group, recorded with and without the audit
// log. With PODTRACE_CORPUS_OUT=DIR it copies both traces to DIR.
//
// The tests need the control-plane binaries (make cluster-binaries), and the
// real node's (make node-binaries, root); with -short they are skipped, and
// the real-node test is skipped, saying why, on a machine that cannot run a
// real node.
package e2e
