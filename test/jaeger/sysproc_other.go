//go:build !linux

package jaeger

import "syscall"

// sysProcAttr puts Jaeger in a process group of its own.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
