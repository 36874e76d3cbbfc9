package cluster

import "syscall"

// sysProcAttr puts a component in its own process group (so that it can be
// stopped with its children, and a Ctrl-C in the terminal reaches only the
// test binary) and kills it when the process that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
