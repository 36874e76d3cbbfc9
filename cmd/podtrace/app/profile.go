package app

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"

	"github.com/urfave/cli/v2"
)

// profileFlags are kubectl's --profile and --profile-output: a pprof profile
// of the whole command, for whoever measures podtrace (test/bench does).
func profileFlags(p *profiler) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "profile", Value: "none", Destination: &p.name,
			Usage: "profile to write: none, cpu, heap, allocs, goroutine, threadcreate, block or mutex"},
		&cli.StringFlag{Name: "profile-output", Value: "profile.pprof", Destination: &p.output, TakesFile: true,
			Usage: "file to write the profile to"},
	}
}

// profiler writes the profile --profile names: start begins it before the
// command runs, stop writes it when the command returns. A heap profile is
// written at the largest live heap seen (checked every few seconds, and at
// the end), not at the end only, when a recorder has let go of everything.
type profiler struct {
	name, output string
	cpu          *os.File

	stopHeap chan struct{}
	heapDone chan error
	peakLive uint64
}

func (p *profiler) start(*cli.Context) error {
	switch p.name {
	case "none", "":
		return nil
	case "cpu":
		f, err := os.Create(p.output)
		if err != nil {
			return fmt.Errorf("--profile-output: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("start the cpu profile: %w", err)
		}
		p.cpu = f
		return nil
	case "block":
		runtime.SetBlockProfileRate(1)
	case "mutex":
		runtime.SetMutexProfileFraction(1)
	}
	if pprof.Lookup(p.name) == nil {
		return usagef("--profile %q: want none, cpu, heap, allocs, goroutine, threadcreate, block or mutex", p.name)
	}
	if p.name == "heap" {
		p.stopHeap, p.heapDone = make(chan struct{}), make(chan error, 1)
		go func() { p.heapDone <- p.watchHeap(5 * time.Second) }()
	}
	return nil
}

// watchHeap writes the heap profile whenever the live heap (as of the last
// GC) is the largest yet, until stopHeap is closed.
func (p *profiler) watchHeap(every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.stopHeap:
			return nil
		case <-tick.C:
		}
		if err := p.heapIfPeak(); err != nil {
			return err
		}
	}
}

func (p *profiler) heapIfPeak() error {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[0].Value.Uint64() <= p.peakLive {
		return nil
	}
	p.peakLive = sample[0].Value.Uint64()
	return p.write()
}

func (p *profiler) write() error {
	f, err := os.Create(p.output)
	if err != nil {
		return fmt.Errorf("--profile-output: %w", err)
	}
	if err := pprof.Lookup(p.name).WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write the %s profile: %w", p.name, err)
	}
	return f.Close()
}

func (p *profiler) stop(*cli.Context) error {
	switch p.name {
	case "none", "":
		return nil
	case "cpu":
		if p.cpu == nil {
			return nil
		}
		pprof.StopCPUProfile()
		return p.cpu.Close()
	case "heap":
		close(p.stopHeap)
		if err := <-p.heapDone; err != nil {
			return err
		}
		return p.heapIfPeak()
	}
	return p.write()
}
