// Package e2e proves podtrace end to end on the local control plane
// (test/cluster): `podtrace record` records real pods through the real API
// server, scheduler, controllers and kwok, and `diff`, `explain` and `report`
// are asserted on that recording.
//
// The tests need the control-plane binaries (make cluster-binaries); with
// -short they are skipped.
package e2e
