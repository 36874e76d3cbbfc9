//go:build !linux

package cluster

import (
	"fmt"
	"runtime"
)

// nodeRecord is a real node in the machine-wide registry (Linux only).
type nodeRecord struct {
	Network, Bridge, Subnet, CgroupRoot, Address string
}

func hostSupport() error {
	return fmt.Errorf("%w: it needs Linux (cgroups, mounts, network namespaces); this is %s", ErrNoRealNode, runtime.GOOS)
}

func hostIP() (string, error)                          { return "", hostSupport() }
func cgroupV1() bool                                   { return false }
func createCgroupRoot(string) error                    { return hostSupport() }
func registerNode(string, string) (nodeRecord, error)  { return nodeRecord{}, hostSupport() }
func (r *nodeRecord) setPid(string, int, string) error { return hostSupport() }
func cleanNode(nodeRecord, func(string, ...any)) error { return nil }

// CleanStaleNodes cleans up after real nodes left by a killed run; there are
// none off Linux.
func CleanStaleNodes(func(string, ...any)) error { return nil }

// HostState is what a real node may change on the machine (Linux only).
type HostState struct{}

// SnapshotHost returns the machine's state as a real node may change it.
func SnapshotHost() HostState { return HostState{} }

// Changes lists how the machine differs from s now.
func (s HostState) Changes() []string { return nil }

// OtherRealNodes reports whether real nodes are registered on the machine.
func OtherRealNodes() bool { return false }

// Leftovers lists what the node left on the machine.
func (n *RealNode) Leftovers() []string { return nil }
