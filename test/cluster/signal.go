package cluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// running holds the clusters started with a signal handler, so that a SIGINT
// (Ctrl-C during go test) or SIGTERM stops them before the process dies.
// The handler is installed only while such a cluster runs; otherwise the
// signals keep their default behaviour.
var running struct {
	sync.Mutex
	clusters map[*Cluster]struct{}
	signals  chan os.Signal
}

func track(c *Cluster) {
	running.Lock()
	defer running.Unlock()
	if running.clusters == nil {
		running.clusters = map[*Cluster]struct{}{}
	}
	running.clusters[c] = struct{}{}
	if running.signals == nil {
		ch := make(chan os.Signal, 1)
		running.signals = ch
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		go stopOnSignal(ch)
	}
}

func untrack(c *Cluster) {
	running.Lock()
	defer running.Unlock()
	delete(running.clusters, c)
	if len(running.clusters) == 0 && running.signals != nil {
		signal.Stop(running.signals)
		close(running.signals)
		running.signals = nil
	}
}

// stopOnSignal stops the running clusters when a signal comes, then dies of
// that signal as the process would have without the handler.
func stopOnSignal(ch chan os.Signal) {
	sig, ok := <-ch
	if !ok {
		return // no cluster left: the handler was removed
	}
	running.Lock()
	var clusters []*Cluster
	for c := range running.clusters {
		clusters = append(clusters, c)
	}
	running.Unlock()
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(func() { _ = c.Stop() })
	}
	wg.Wait()
	signal.Reset(sig)
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), s)
	}
	os.Exit(1) // not reached unless the signal is ignored
}
