package app

import (
	"os"
	"runtime"
	"sync"
)

// recordProcs is record's GOMAXPROCS unless the user sets one. A recorder's
// work comes a revision at a time, from a dozen watch streams, through
// client-go's informers: each revision wakes a goroutine or two, and with a
// second P idle the runtime wakes a thread to look for that work, finds
// none most of the time, and puts it back to sleep (the scheduler's
// findRunnable was 10.9% of record's CPU profile at 10,000 pods). One P runs
// the same work without those wake-ups. It is also what the manifests'
// limit of one CPU gives in a pod: since Go 1.25 the runtime sets
// GOMAXPROCS from the container's CPU limit. Side by side at 20,000 pods it
// used 0.87-0.88x the CPU it used on two Ps (the scheduler's share fell to
// 5.6%), with the same RSS while watching and 56-71 MiB more at exit, in the
// final compaction (BENCHMARKS.md, "How the figures got here"). A bare informer
// saves about as much on one P: this is the runtime's overhead, not what
// recording adds. What it costs is the ceiling: record does at most one
// core's work (it used 80.6 s of CPU over the 27 minutes of that run).
const recordProcs = 1

var procs struct {
	sync.Mutex
	users int
	prev  int
}

// fewerProcs lowers GOMAXPROCS to n while the returned function is not
// called, unless the user set GOMAXPROCS or it is already n or lower.
// Callers that overlap (tests running recorders in one process) share one
// setting: the last to return puts the previous one back.
func fewerProcs(n int) (restore func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	procs.Lock()
	defer procs.Unlock()
	if procs.users == 0 {
		if runtime.GOMAXPROCS(0) <= n {
			return func() {}
		}
		procs.prev = runtime.GOMAXPROCS(n)
	}
	procs.users++
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.Lock()
			defer procs.Unlock()
			if procs.users--; procs.users == 0 {
				runtime.GOMAXPROCS(procs.prev)
			}
		})
	}
}
