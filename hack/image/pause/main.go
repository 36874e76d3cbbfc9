// Command pause is the sandbox ("pause") container of the local cluster's real
// node: it holds a pod's namespaces, reaps the zombies that end up with it as
// their parent, and exits 0 on SIGTERM or SIGINT. Built static
// (CGO_ENABLED=0) and packaged by ../nodeimages.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("podtrace pause")
		return
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: %v, exiting\n", sig)
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
