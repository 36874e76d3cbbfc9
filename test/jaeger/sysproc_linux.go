package jaeger

import "syscall"

// sysProcAttr puts Jaeger in a process group of its own and kills it when
// the test process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
