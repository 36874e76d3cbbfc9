//go:build !linux

package cluster

import "syscall"

// sysProcAttr puts a component in its own process group. Without Linux's
// parent-death signal, components outlive a test binary that is killed.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
