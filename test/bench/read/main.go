// Command read runs podtrace's read commands on a recorded trace, with two
// binaries side by side: `report`, `report --html`, `explain` of one pod,
// `compare` of two, and `kubectl get pods -A` against `serve`. Each command
// runs -runs times per binary, the binaries alternated, and is measured as
// a user sees it: wall time, CPU time (user and system, from the child's
// rusage) and peak RSS. The traces are those test/bench records (its -out
// directory keeps them: trace.db, trace-audit.db with the audit log
// imported), where the pods share owners with long histories, as on a
// real cluster: a quadratic path shows there, not on the synthetic traces
// of the Go benchmarks.
//
//	go run ./test/bench -workload rollout -pods 4000 -audit -podtrace _output/podtrace -out _output/bench-rollout
//	go run ./test/bench/read -trace _output/bench-rollout/trace.db -podtrace _output/podtrace -compare /tmp/podtrace-main -runs 3
//
// serve is measured twice: its start, until it has replayed every pod for
// the kubeconfig's contexts at findings' moments (it serves meanwhile),
// and then the requests alone.
package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
	// Pods kept as protobuf are read back as JSON (store.RegisterPodJSON).
	_ "github.com/podtrace/podtrace/tracer"
)

type options struct {
	traces   string
	podtrace string
	compare  string
	runs     int
	kubectl  string
	only     string
	gets     int
}

func main() {
	var o options
	flag.StringVar(&o.traces, "trace", "_output/bench/trace.db", "trace file(s) to read, comma-separated")
	flag.StringVar(&o.podtrace, "podtrace", "_output/podtrace", "podtrace binary")
	flag.StringVar(&o.compare, "compare", "", "another podtrace binary to run beside the first (an earlier version)")
	flag.IntVar(&o.runs, "runs", 3, "runs of each command per binary")
	flag.StringVar(&o.kubectl, "kubectl", filepath.Join(cmp.Or(os.Getenv("PODTRACE_CLUSTER_BIN"), "_output/bin"), "kubectl"), "kubectl binary, for serve's get pods -A (none: skipped)")
	flag.StringVar(&o.only, "only", "", "run only the commands whose name contains this (report, html, explain, compare, serve)")
	flag.IntVar(&o.gets, "gets", 5, "kubectl get pods -A requests per serve run")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "read:", err)
		os.Exit(1)
	}
}

// sample is one run of a command.
type sample struct {
	wall, cpu time.Duration
	rssKiB    int64
}

// command is one read command on one trace.
type command struct {
	name string
	args func(bin string) []string
	// serve: run the binary's serve and time kubectl against it, at the
	// moment at.
	serve bool
	at    time.Time
}

func run(o options) error {
	bins := []string{o.podtrace}
	if o.compare != "" {
		bins = append(bins, o.compare)
	}
	for i, b := range bins {
		abs, err := filepath.Abs(b)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("podtrace binary: %w", err)
		}
		bins[i] = abs
	}
	tmp, err := os.MkdirTemp("", "podtrace-read-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var out strings.Builder
	fmt.Fprintf(&out, "machine: %d CPUs, load average %s at start\n", numCPU(), loadavg())
	for _, trace := range strings.Split(o.traces, ",") {
		cmds, about, err := commands(trace, tmp)
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "\ntrace %s: %s\n\n", trace, about)
		fmt.Fprintf(&out, "| command | binary | wall s, median (min-max) | CPU s, median (min-max) | peak RSS MiB (max) |\n|---|---|---|---|---|\n")
		for _, c := range cmds {
			if o.only != "" && !strings.Contains(c.name, o.only) {
				continue
			}
			if c.serve && o.kubectl == "" {
				continue
			}
			// samples[row][binary]: serve gives two rows, its start (the
			// findings' replay) and the requests.
			names := []string{c.name}
			if c.serve {
				names = []string{"serve: start, findings replayed", c.name}
			}
			samples := make([][][]sample, len(names))
			for row := range samples {
				samples[row] = make([][]sample, len(bins))
			}
			for r := 0; r < o.runs; r++ {
				for i, bin := range bins {
					var ss []sample
					if c.serve {
						start, get, err := serveRun(bin, trace, tmp, o.kubectl, o.gets, c.at)
						if err != nil {
							return fmt.Errorf("%s %s: %w", bin, c.name, err)
						}
						ss = []sample{start, get}
					} else {
						s, err := timed(bin, c.args(bin))
						if err != nil {
							return fmt.Errorf("%s %s: %w", bin, c.name, err)
						}
						ss = []sample{s}
					}
					for row, s := range ss {
						samples[row][i] = append(samples[row][i], s)
						fmt.Fprintf(os.Stderr, "%s %s %s: %.3f s wall, %.3f s CPU, %.1f MiB\n", time.Now().Format("15:04:05"), filepath.Base(bin), names[row], s.wall.Seconds(), s.cpu.Seconds(), float64(s.rssKiB)/1024)
					}
				}
			}
			for row, name := range names {
				for i, bin := range bins {
					fmt.Fprintf(&out, "| %s | %s | %s | %s | %.1f |\n", name, bin, spread(samples[row][i], wallOf), spread(samples[row][i], cpuOf), maxRSS(samples[row][i]))
				}
				if len(bins) == 2 {
					a, b := samples[row][0], samples[row][1]
					fmt.Fprintf(&out, "| %s | ratio (median) | %.3fx | %.3fx | %.2fx |\n", name, median(a, wallOf)/median(b, wallOf), median(a, cpuOf)/median(b, cpuOf), maxRSS(a)/maxRSS(b))
				}
			}
		}
	}
	fmt.Fprintf(&out, "\nload average at end: %s\n", loadavg())
	fmt.Print(out.String())
	return nil
}

func wallOf(s sample) float64 { return s.wall.Seconds() }
func cpuOf(s sample) float64  { return s.cpu.Seconds() }

// commands are the read commands on trace: explain and compare on pods
// chosen from it (the one with most revisions; two pods of one owner).
func commands(trace, tmp string) ([]command, string, error) {
	db, err := store.Open(trace, store.Options{ReadOnly: true})
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return nil, "", err
	}
	st, err := db.Stats()
	if err != nil {
		return nil, "", err
	}
	if len(pods) < 2 {
		return nil, "", errors.New("the trace holds fewer than two pods")
	}
	// explain: the pod with most revisions; compare: the first and last
	// pods recorded.
	one := slices.MaxFunc(pods, func(a, b store.Object) int { return cmp.Compare(a.Revisions, b.Revisions) })
	a, b := pods[0], pods[len(pods)-1]
	about := fmt.Sprintf("%d pods, %d records, %.1f MiB; explain %s/%s (%d revisions), compare %s/%s with %s/%s, get pods -A at %s",
		len(pods), st.Records, float64(st.FileBytes)/(1<<20), one.Namespace, one.Name, one.Revisions, a.Namespace, a.Name, b.Namespace, b.Name, tracetest.Busiest(pods).UTC().Format(time.RFC3339Nano))
	page := filepath.Join(tmp, "report.html")
	text := filepath.Join(tmp, "report.txt")
	return []command{
		{name: "report", args: func(bin string) []string { return []string{bin, "report", "--db", trace, "-o", text} }},
		{name: "report --html", args: func(bin string) []string { return []string{bin, "report", "--html", "--db", trace, "-o", page} }},
		{name: "explain", args: func(bin string) []string {
			return []string{bin, "explain", one.Name, "-n", one.Namespace, "--db", trace, "--uid", one.UID, "--color", "never"}
		}},
		{name: "compare", args: func(bin string) []string {
			return []string{bin, "compare", a.Namespace + "/" + a.Name, b.Namespace + "/" + b.Name, "--db", trace, "--color", "never"}
		}},
		{name: "serve: get pods -A", serve: true, at: tracetest.Busiest(pods)},
	}, about, nil
}

// timed runs args and measures it.
func timed(_ string, args []string) (sample, error) {
	cmd := exec.Command(args[0], args[1:]...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &errOut
	began := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%v: %s", err, errOut.String())
	}
	return usage(cmd.ProcessState, time.Since(began)), nil
}

func usage(st *os.ProcessState, wall time.Duration) sample {
	s := sample{wall: wall, cpu: st.UserTime() + st.SystemTime()}
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		s.rssKiB = ru.Maxrss
	}
	return s
}

// serveRun starts bin's serve on trace, waits until it has replayed every
// pod for its findings' contexts (start: the time, CPU and peak RSS until
// then), then runs kubectl get pods -A gets times against it (at the
// moment at) and stops it (get: the requests' mean wall time, the
// server's CPU per request, its peak RSS).
func serveRun(bin, trace, tmp, kubectl string, gets int, at time.Time) (start, get sample, err error) {
	kc := filepath.Join(tmp, "serve.kubeconfig")
	os.Remove(kc)
	cmd := exec.Command(bin, "serve", "--db", trace, "--kubeconfig", kc)
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, sample{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	// An hour: an earlier binary may replay the pods in time quadratic.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var base string
	for {
		text := out.String()
		if _, after, ok := strings.Cut(text, " at http://"); ok && base == "" {
			if addr, _, ok := strings.Cut(after, " "); ok {
				base = "http://" + addr
			}
		}
		// Its line once every pod was replayed for the findings'
		// contexts ("... added at findings' moments", or "no contexts at
		// findings' moments").
		if base != "" && strings.Contains(text, "findings' moments") {
			break
		}
		select {
		case err := <-done:
			return sample{}, sample{}, fmt.Errorf("serve exited: %v: %s", err, errOut.String())
		case <-ctx.Done():
			stop()
			return sample{}, sample{}, fmt.Errorf("serve did not finish its start: %s%s", out.String(), errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	start.wall = time.Since(began)
	start.cpu, _ = procCPU(cmd.Process.Pid)
	start.rssKiB, _ = procPeakRSS(cmd.Process.Pid)
	request := func() (time.Duration, error) {
		c := exec.Command(kubectl, "--kubeconfig", kc, "--server", base+"/at/"+at.UTC().Format(time.RFC3339Nano)+"/", "get", "pods", "-A", "--request-timeout", "60s")
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		began := time.Now()
		err := c.Run()
		if err != nil {
			return 0, fmt.Errorf("kubectl: %v: %s", err, out.String())
		}
		return time.Since(began), nil
	}
	if _, err := request(); err != nil { // warm: the server's first look at the trace
		stop()
		return sample{}, sample{}, err
	}
	before, _ := procCPU(cmd.Process.Pid)
	var wall time.Duration
	for range gets {
		d, err := request()
		if err != nil {
			stop()
			return sample{}, sample{}, err
		}
		wall += d
	}
	after, _ := procCPU(cmd.Process.Pid)
	rss, _ := procPeakRSS(cmd.Process.Pid)
	stop()
	return start, sample{wall: wall / time.Duration(gets), cpu: (after - before) / time.Duration(gets), rssKiB: rss}, nil
}

// procCPU reads user+sys time of pid from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

// procPeakRSS reads VmHWM (KiB) of pid.
func procPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var n int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &n)
			return n, nil
		}
	}
	return 0, errors.New("no VmHWM")
}

func spread(ss []sample, f func(sample) float64) string {
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = f(s)
	}
	sort.Float64s(vs)
	if len(vs) == 1 {
		return fmt.Sprintf("%.3f", vs[0])
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f)", vs[len(vs)/2], vs[0], vs[len(vs)-1])
}

func median(ss []sample, f func(sample) float64) float64 {
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = f(s)
	}
	sort.Float64s(vs)
	return vs[len(vs)/2]
}

func maxRSS(ss []sample) float64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.rssKiB)
	}
	return float64(m) / 1024
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// syncBuffer is a bytes.Buffer a process writes while another goroutine
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
