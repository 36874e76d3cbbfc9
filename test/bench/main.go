// Command bench is issue 7's side-by-side recording benchmark: on a local
// control plane (test/cluster, kwok nodes) it runs a bare informer
// (test/bench/baseline) and `podtrace record` on the same cluster, drives a
// workload of Deployments and Jobs through creation, label and annotation
// patches, a rollout and deletion, then stops both with SIGINT and compares
// their CPU time, peak RSS and notifications, and podtrace's bytes on disk
// against the JSON of the revisions it kept. All of them run with the same
// GOMAXPROCS, 1 unless -gomaxprocs says otherwise: record's own and the
// manifests' CPU limit's, and like for like (the runtime's default of two Ps
// here costs a bare informer a tenth of its CPU more than one).
//
//	go run ./test/bench -pods 2000 -podtrace _output/podtrace -out _output/bench
//
// With -soak it runs the retention soak instead (soak.go, make bench-soak):
//
//	go run ./test/bench -soak 7m -retain 2m -podtrace _output/podtrace -out _output/soak
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/bench/revision"
	"github.com/podtrace/podtrace/test/cluster"
	// The recorder's transcoder of the pods it keeps as protobuf
	// (store.RegisterPodJSON): the trace's revisions are read back faster.
	_ "github.com/podtrace/podtrace/tracer"
)

const namespace = "bench"

type options struct {
	pods     int
	nodes    int
	podtrace string
	out      string
	timeout  time.Duration
	profile  string
	compare  string
	// procs is the GOMAXPROCS of the baseline and the recorders; 0 leaves
	// each its own.
	procs int
	// baseGzip: the baseline asks for gzip, as client-go does by default.
	baseGzip bool
	// workload is "mixed" (Deployments, Jobs, patches, a rollout) or
	// "rollout" (one Deployment of pods/2 replicas, rolled once, deleted).
	workload string
	// audit: the API server writes an audit log (cluster.PodAuditPolicy),
	// kept as OUT/audit.log, and imported into a copy of the trace,
	// OUT/trace-audit.db.
	audit bool

	// The soak (soak.go).
	soak       time.Duration
	retain     string
	maxSize    string
	churnEvery time.Duration
	eventTTL   time.Duration
}

// interrupted is done once the run is interrupted (main).
var interrupted = context.Background()

func main() {
	var o options
	flag.IntVar(&o.pods, "pods", 2000, "pods the workload creates (100 to 20000)")
	flag.IntVar(&o.nodes, "nodes", 4, "kwok nodes")
	flag.StringVar(&o.podtrace, "podtrace", "_output/podtrace", "podtrace binary")
	flag.StringVar(&o.out, "out", "_output/bench", "directory for the trace, logs and results.txt")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "bound on the whole run")
	flag.StringVar(&o.profile, "profile", "", "a pprof profile of podtrace record to write to OUT/podtrace.PROFILE.pprof (cpu, heap, allocs...)")
	flag.IntVar(&o.procs, "gomaxprocs", 1, "GOMAXPROCS of the baseline and of both recorders, the same for all: like for like (1: what podtrace record sets itself, and what the manifests' CPU limit gives; 0: each its own, the runtime's default of the machine's cores for the baseline)")
	flag.BoolVar(&o.baseGzip, "baseline-compression", true, "the baseline asks for gzip, as client-go does by default (false: no compression, as podtrace record by default: like for like on the transport)")
	flag.StringVar(&o.workload, "workload", "mixed", "mixed: Deployments, Jobs, patches, a rollout, delete; rollout: one Deployment of pods/2 two-container replicas, rolled once, then deleted")
	flag.BoolVar(&o.audit, "audit", false, "the API server writes an audit log (the pod audit policy), kept as OUT/audit*.log and imported into OUT/trace-audit.db, a copy of the trace")
	flag.StringVar(&o.compare, "compare", "", "another podtrace binary (an earlier version) to run beside the first, for a before/after in one run")
	flag.DurationVar(&o.soak, "soak", 0, "run the soak instead: churn of short-lived pods for this long under record --retain (see soak.go)")
	flag.StringVar(&o.retain, "retain", "2m", "the soak's record --retain")
	flag.StringVar(&o.maxSize, "max-size", "", "the soak's record --max-size (none by default)")
	flag.DurationVar(&o.churnEvery, "churn-every", 250*time.Millisecond, "the soak creates a short-lived pod this often")
	flag.DurationVar(&o.eventTTL, "event-ttl", time.Minute, "the soak's kube-apiserver --event-ttl")
	flag.Parse()
	// Ctrl-C or SIGTERM ends the run through its deferred clean-up: the
	// recorders, the baseline and the control plane are stopped, never
	// left running.
	var stop context.CancelFunc
	interrupted, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.soak > 0 {
		if err := runSoak(o); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if o.pods < 100 || o.pods > 20000 {
		fmt.Fprintln(os.Stderr, "bench: -pods must be between 100 and 20000")
		os.Exit(2)
	}
	if o.workload != "mixed" && o.workload != "rollout" {
		fmt.Fprintln(os.Stderr, "bench: -workload must be mixed or rollout")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// proc is one measured process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout *os.File
	stderr string // path of its stderr log
	done   chan struct{}
	err    error

	cpuAtSignal time.Duration // user+sys from /proc just before SIGINT
	cpu         time.Duration // user+sys at exit
	maxRSSKiB   int64         // peak RSS over the whole life (rusage)

	mu           sync.Mutex
	curve        []rssSample // every VmRSS sample until SIGINT, in time order
	stopSampling chan struct{}
}

// watchPeak is the highest VmRSS sampled until SIGINT: while watching.
func (p *proc) watchPeak() rssSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	var peak rssSample
	for _, s := range p.curve {
		if s.kib > peak.kib {
			peak = s
		}
	}
	return peak
}

// rssSample is one reading of a process's VmRSS.
type rssSample struct {
	at  time.Time
	kib int64
}

// sample reads the process's VmRSS twice a second until SIGINT, keeping
// every reading (the memory curve, and the peak while watching: rusage's
// peak also covers the work done after SIGINT, podtrace's last flush and
// compaction).
func (p *proc) sample() {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stopSampling:
			return
		case <-p.done:
			return
		case <-tick.C:
		}
		kib, err := procRSS(p.cmd.Process.Pid)
		if err != nil {
			continue
		}
		p.mu.Lock()
		p.curve = append(p.curve, rssSample{time.Now(), kib})
		p.mu.Unlock()
	}
}

// procRSS reads VmRSS (KiB) of pid from /proc/PID/status.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

func start(name, outDir string, args ...string) (*proc, error) {
	return startEnv(name, outDir, nil, args...)
}

// startEnv is start with env added to the process's environment.
func startEnv(name, outDir string, env []string, args ...string) (*proc, error) {
	stdout, err := os.Create(filepath.Join(outDir, name+".stdout"))
	if err != nil {
		return nil, err
	}
	stderrPath := filepath.Join(outDir, name+".log")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		stdout.Close()
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		stdout.Close()
		stderr.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stdout: stdout, stderr: stderrPath, done: make(chan struct{}), stopSampling: make(chan struct{})}
	go p.sample()
	go func() {
		p.err = cmd.Wait()
		stderr.Close()
		close(p.done)
	}()
	return p, nil
}

// waitLog waits until the process's stderr holds want.
func (p *proc) waitLog(ctx context.Context, want string) error {
	for {
		b, _ := os.ReadFile(p.stderr)
		if strings.Contains(string(b), want) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before %q: %v; see %s", p.name, want, p.err, p.stderr)
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for %q: %w", p.name, want, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// procCPU reads user+sys time of pid from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(3) ... utime(14) stime(15), 1-based fields.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, nil
}

// stop sends SIGINT and waits; after grace it kills the process.
func (p *proc) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return fmt.Errorf("%s had already exited: %v; see %s", p.name, p.err, p.stderr)
	default:
	}
	p.cpuAtSignal, _ = procCPU(p.cmd.Process.Pid)
	close(p.stopSampling)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGINT; killed", p.name, grace)
	}
	st := p.cmd.ProcessState
	p.cpu = st.UserTime() + st.SystemTime()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		p.maxRSSKiB = ru.Maxrss
	}
	if p.err != nil {
		return fmt.Errorf("%s: %v; see %s", p.name, p.err, p.stderr)
	}
	return nil
}

// kill ends the process if it still runs (for the error paths).
func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
		<-p.done
	}
	p.stdout.Close()
}

func run(o options) (err error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(interrupted, o.timeout)
	defer cancel()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	trace := filepath.Join(o.out, "trace.db")
	for _, f := range []string{trace, trace + ".lock"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	podtraceBin, err := filepath.Abs(o.podtrace)
	if err != nil {
		return err
	}
	if _, err := os.Stat(podtraceBin); err != nil {
		return fmt.Errorf("podtrace binary: %w (run make build)", err)
	}
	baselineBin := filepath.Join(o.out, "baseline")
	logf("building %s", baselineBin)
	build := exec.CommandContext(ctx, "go", "build", "-o", baselineBin, "./test/bench/baseline")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build baseline (run from the repository root): %w", err)
	}

	logf("starting the control plane (%d kwok nodes)", o.nodes)
	var auditPolicy string
	if o.audit {
		auditPolicy = cluster.PodAuditPolicy
	}
	c, err := cluster.Start(ctx, cluster.Options{
		AuditPolicy:     auditPolicy,
		Nodes:           o.nodes,
		NoSignalHandler: true,
		Timeout:         3 * time.Minute,
		NodeAllocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("1000"),
			corev1.ResourceMemory: resource.MustParse("4Ti"),
			corev1.ResourcePods:   resource.MustParse("10000"),
		},
		ControllerManagerFlags: []string{"--kube-api-qps=300", "--kube-api-burst=600"},
	})
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer func() {
		if serr := c.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	logf("control plane ready in %s (%s)", c.Ready.Round(time.Millisecond), c.Dir)

	var procsEnv []string
	if o.procs > 0 {
		procsEnv = []string{fmt.Sprintf("GOMAXPROCS=%d", o.procs)}
	}
	baseArgs := []string{"-kubeconfig", c.Kubeconfig}
	if !o.baseGzip {
		baseArgs = append(baseArgs, "-disable-compression")
	}
	base, err := startEnv("baseline", o.out, procsEnv, append([]string{baselineBin}, baseArgs...)...)
	if err != nil {
		return err
	}
	defer base.kill()
	var recArgs []string
	if o.profile != "" {
		recArgs = append(recArgs, "--profile", o.profile, "--profile-output", filepath.Join(o.out, "podtrace."+o.profile+".pprof"))
	}
	recArgs = append(recArgs, "record", "--kubeconfig", c.Kubeconfig, "-o", trace)
	rec, err := startEnv("podtrace", o.out, procsEnv, append([]string{podtraceBin}, recArgs...)...)
	if err != nil {
		return err
	}
	defer rec.kill()
	procs := []*proc{base, rec}
	var cmp *proc
	compareTrace := filepath.Join(o.out, "trace-compare.db")
	if o.compare != "" {
		for _, f := range []string{compareTrace, compareTrace + ".lock"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		var args []string
		if o.profile != "" {
			args = append(args, "--profile", o.profile, "--profile-output", filepath.Join(o.out, "podtrace-compare."+o.profile+".pprof"))
		}
		args = append(args, "record", "--kubeconfig", c.Kubeconfig, "-o", compareTrace)
		cmp, err = startEnv("podtrace-compare", o.out, procsEnv, append([]string{o.compare}, args...)...)
		if err != nil {
			return err
		}
		defer cmp.kill()
		procs = append(procs, cmp)
	}
	if err := base.waitLog(ctx, "informers synced"); err != nil {
		return err
	}
	for _, p := range procs[1:] {
		if err := p.waitLog(ctx, "initial lists synced"); err != nil {
			return err
		}
	}
	logf("baseline (pid %d) and podtrace record (pid %d) synced", base.cmd.Process.Pid, rec.cmd.Process.Pid)

	rc := c.RESTConfig()
	rc.QPS, rc.Burst = 300, 600
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	wl := time.Now()
	run := workload
	if o.workload == "rollout" {
		run = rolloutWorkload
	}
	stats, err := run(ctx, client, o.pods)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	wlTime := time.Since(wl)
	logf("workload done in %s; letting the watchers drain", wlTime.Round(time.Second))
	time.Sleep(5 * time.Second)

	var (
		stopErrs []error
		mu       sync.Mutex
		wg       sync.WaitGroup
	)
	for _, p := range procs {
		wg.Go(func() {
			if err := p.stop(2 * time.Minute); err != nil {
				mu.Lock()
				stopErrs = append(stopErrs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(stopErrs...); err != nil {
		return err
	}
	var auditNote string
	if o.audit {
		if auditNote, err = importAudit(ctx, c.AuditLog, podtraceBin, o.out, trace); err != nil {
			return err
		}
	}

	var counts struct {
		Resources    map[string]map[string]int64 `json:"resources"`
		Total        int64                       `json:"total"`
		PodRevisions []uint64                    `json:"podRevisions"`
	}
	b, err := os.ReadFile(filepath.Join(o.out, "baseline.stdout"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &counts); err != nil {
		return fmt.Errorf("baseline output %q: %w", b, err)
	}
	summary, err := podtraceSummary(rec.stderr)
	if err != nil {
		return err
	}
	ts, err := traceStats(trace)
	if err != nil {
		return err
	}
	podNotes := counts.Resources["pods"]["add"] + counts.Resources["pods"]["update"] + counts.Resources["pods"]["delete"]
	evNotes := counts.Resources["events"]["add"] + counts.Resources["events"]["update"] + counts.Resources["events"]["delete"]

	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("workload: %d pods (%s), %d nodes, %s; load average at end: %s\n",
		o.pods, stats, o.nodes, wlTime.Round(time.Second), loadavg())
	if o.procs > 0 {
		w("GOMAXPROCS: %d for the baseline and the recorders alike (-gomaxprocs)\n", o.procs)
	} else {
		w("GOMAXPROCS: each its own (-gomaxprocs 0): the baseline %d (the machine's cores), podtrace record's own choice\n", runtime.NumCPU())
	}
	if o.baseGzip {
		w("transport: the baseline asks for gzip (client-go's default); podtrace record does not, by default (a -compare binary older than 397a28f does)\n")
	} else {
		w("transport: neither the baseline nor podtrace record asks for gzip (-baseline-compression=false)\n")
	}
	bp, rp := base.watchPeak(), rec.watchPeak()
	w("\n| process | CPU s (at SIGINT) | CPU s (at exit) | peak RSS MiB (at exit) | peak RSS MiB sampled while watching | notifications / revisions |\n|---|---|---|---|---|---|\n")
	w("| baseline informers | %.2f | %.2f | %.1f | %.1f (%s) | %d (pods %d, events %d) |\n",
		base.cpuAtSignal.Seconds(), base.cpu.Seconds(), float64(base.maxRSSKiB)/1024, float64(bp.kib)/1024, bp.at.Sub(began).Round(time.Second), counts.Total, podNotes, evNotes)
	w("| podtrace record | %.2f | %.2f | %.1f | %.1f (%s) | %d (pods %d, events %d) |\n",
		rec.cpuAtSignal.Seconds(), rec.cpu.Seconds(), float64(rec.maxRSSKiB)/1024, float64(rp.kib)/1024, rp.at.Sub(began).Round(time.Second), ts.records, ts.podRecords, ts.eventRecords)
	var compared string
	if cmp != nil {
		cs, err := traceStats(compareTrace)
		if err != nil {
			return err
		}
		cp := cmp.watchPeak()
		w("| %s (-compare) | %.2f | %.2f | %.1f | %.1f (%s) | %d (pods %d, events %d) |\n",
			o.compare, cmp.cpuAtSignal.Seconds(), cmp.cpu.Seconds(), float64(cmp.maxRSSKiB)/1024, float64(cp.kib)/1024, cp.at.Sub(began).Round(time.Second), cs.records, cs.podRecords, cs.eventRecords)
		compared = fmt.Sprintf("compared binary %s: CPU %.2fx the baseline's at exit, peak RSS %.1f MiB, trace %.1f%% of its JSON\n",
			o.compare, cmp.cpu.Seconds()/base.cpu.Seconds(), float64(cmp.maxRSSKiB)/1024, 100*float64(cs.size)/float64(cs.jsonBytes))
	}
	w("(the time after a sampled peak is from the start of the run)\n")
	curve, err := memoryCurve(filepath.Join(o.out, "memory.tsv"), began, procs)
	if err != nil {
		return err
	}
	w("\n%s", curve)
	w("\npodtrace summary: %s\n", summary)
	cpuRatio := rec.cpu.Seconds() / base.cpu.Seconds()
	rssBudget := 1.2*float64(base.maxRSSKiB)/1024 + 30
	w("\nCPU podtrace/baseline: %.2fx at exit, %.2fx at SIGINT (target <= 1.25x: %s; at scale, 10,000 pods and more, <= 1.1x: %s)\n",
		cpuRatio, rec.cpuAtSignal.Seconds()/base.cpuAtSignal.Seconds(), verdict(cpuRatio <= 1.25), verdict(cpuRatio <= 1.1))
	w("peak RSS: podtrace %.1f MiB vs budget 1.2 x %.1f + 30 = %.1f MiB (%.2fx baseline): %s\n",
		float64(rec.maxRSSKiB)/1024, float64(base.maxRSSKiB)/1024, rssBudget,
		float64(rec.maxRSSKiB)/float64(base.maxRSSKiB), verdict(float64(rec.maxRSSKiB)/1024 <= rssBudget))
	w("%s", compared)
	w("trace: %d bytes on disk, %d revisions: %.1f B/revision; JSON as recorded (managedFields kept) %d bytes, %.0f B/revision (pods %.0f B/revision): on disk = %.1f%% of JSON (target <= 10%%): %s\n",
		ts.size, ts.records, float64(ts.size)/float64(ts.records), ts.jsonBytes, float64(ts.jsonBytes)/float64(ts.records),
		float64(ts.podJSONBytes)/float64(max(ts.podRecords, 1)), 100*float64(ts.size)/float64(ts.jsonBytes),
		verdict(float64(ts.size) <= 0.1*float64(ts.jsonBytes)))
	// A notification is not always a revision: after a relist the informer
	// notifies an update of every pod, changed or not, and podtrace records
	// only the changed. So revisions are compared by identity.
	lost := 0
	for _, h := range counts.PodRevisions {
		if _, ok := ts.podRevisions[h]; !ok {
			lost++
		}
	}
	w("pod revisions: podtrace %d records vs baseline pod notifications %d (add %d, update %d, delete %d), %d distinct revisions\n",
		ts.podRecords, podNotes, counts.Resources["pods"]["add"], counts.Resources["pods"]["update"], counts.Resources["pods"]["delete"], len(counts.PodRevisions))
	w("pod revisions the baseline saw that podtrace did not record: %d (target 0): %s\n", lost, verdict(lost == 0 && len(counts.PodRevisions) > 0))
	// A revision lost to a relist is declared by its gap; one lost with no
	// gap of pods in the trace is lost silently, a defect in itself.
	w("gaps the trace declares: %s\n", ts.gapText())
	w("events: podtrace %d records vs baseline %d notifications\n", ts.eventRecords, evNotes)
	if auditNote != "" {
		w("%s\n", auditNote)
	}
	w("wall time: %s\n", time.Since(began).Round(time.Second))
	fmt.Print(sb.String())
	return os.WriteFile(filepath.Join(o.out, "results.txt"), []byte(sb.String()), 0o644)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

var summaryRE = regexp.MustCompile(`recorded \d+ revisions? of \d+ objects? .*`)

func podtraceSummary(logPath string) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := summaryRE.FindString(sc.Text()); m != "" {
			last = m
		}
	}
	if last == "" {
		return "", fmt.Errorf("no summary line in %s", logPath)
	}
	return last, nil
}

type trStats struct {
	size                              int64
	records, podRecords, eventRecords int
	jsonBytes, podJSONBytes           int64
	podRevisions                      map[uint64]struct{} // revision.Hash of each pod record
	gaps                              []store.Gap
}

// gapText says what gaps the trace declares, by kind.
func (s trStats) gapText() string {
	if len(s.gaps) == 0 {
		return "none"
	}
	n := map[string]int{}
	var kinds []string
	for _, g := range s.gaps {
		k := string(g.Cause) + " " + cmp.Or(g.Resource, "(all kinds)")
		if n[k] == 0 {
			kinds = append(kinds, k)
		}
		n[k]++
	}
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}

func traceStats(path string) (trStats, error) {
	s := trStats{podRevisions: map[uint64]struct{}{}}
	fi, err := os.Stat(path)
	if err != nil {
		return s, err
	}
	s.size = fi.Size()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		return s, err
	}
	defer db.Close()
	err = db.Scan(func(r store.Record) error {
		s.records++
		s.jsonBytes += int64(len(r.Object))
		switch r.Kind {
		case "Pod":
			s.podRecords++
			s.podJSONBytes += int64(len(r.Object))
			deleted := r.Type == store.Deleted || r.Type == store.DeletedUnknown
			s.podRevisions[revision.Hash(r.UID, r.ResourceVersion, deleted)] = struct{}{}
		case "Event":
			s.eventRecords++
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	s.gaps, err = db.Gaps()
	return s, err
}

// curvePoints is how many points of the memory curve results.txt shows.
const curvePoints = 10

// memoryCurve writes every RSS sample of procs to path (seconds from began,
// process, MiB) and returns a markdown table of the curve: each process's
// peak RSS in each tenth of the time it was watched.
func memoryCurve(path string, began time.Time, procs []*proc) (string, error) {
	var tsv strings.Builder
	tsv.WriteString("seconds\tprocess\trss_mib\n")
	var end time.Time
	for _, p := range procs {
		p.mu.Lock()
		for _, s := range p.curve {
			fmt.Fprintf(&tsv, "%.1f\t%s\t%.1f\n", s.at.Sub(began).Seconds(), p.name, float64(s.kib)/1024)
			if s.at.After(end) {
				end = s.at
			}
		}
		p.mu.Unlock()
	}
	if err := os.WriteFile(path, []byte(tsv.String()), 0o644); err != nil {
		return "", err
	}
	span := end.Sub(began)
	if span <= 0 {
		return "memory curve: no samples\n", nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "memory curve (peak RSS MiB in each tenth of the run until SIGINT; every sample in %s):\n\n| until |", path)
	for _, p := range procs {
		fmt.Fprintf(&sb, " %s |", p.name)
	}
	sb.WriteString("\n|---|")
	for range procs {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	for i := 1; i <= curvePoints; i++ {
		from, to := began.Add(span*time.Duration(i-1)/curvePoints), began.Add(span*time.Duration(i)/curvePoints)
		fmt.Fprintf(&sb, "| %s |", to.Sub(began).Round(time.Second))
		for _, p := range procs {
			p.mu.Lock()
			var peak int64
			for _, s := range p.curve {
				if s.at.After(from) && !s.at.After(to) {
					peak = max(peak, s.kib)
				}
			}
			p.mu.Unlock()
			if peak == 0 {
				sb.WriteString(" - |")
			} else {
				fmt.Fprintf(&sb, " %.1f |", float64(peak)/1024)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String(), nil
}

// importAudit keeps the API server's audit log as OUT/audit.log and imports
// it into OUT/trace-audit.db, a copy of the trace: the same recording, with
// and without the audit log, for the read benchmarks and the tests.
func importAudit(ctx context.Context, log, podtraceBin, out, trace string) (string, error) {
	// The API server rotates its log at 100 MB (audit-TIME.log beside
	// it): every file is kept, the rotated ones first.
	rotated, err := filepath.Glob(filepath.Join(filepath.Dir(log), "audit-*.log"))
	if err != nil {
		return "", err
	}
	sort.Strings(rotated)
	args := []string{"import"}
	var size int64
	for i, f := range append(rotated, log) {
		kept := filepath.Join(out, "audit.log")
		if f != log {
			kept = filepath.Join(out, fmt.Sprintf("audit.%d.log", i+1))
		}
		if err := copyFile(f, kept); err != nil {
			return "", fmt.Errorf("keep the audit log: %w", err)
		}
		st, err := os.Stat(kept)
		if err != nil {
			return "", err
		}
		size += st.Size()
		args = append(args, "--audit-log", kept)
	}
	audited := filepath.Join(out, "trace-audit.db")
	if err := copyFile(trace, audited); err != nil {
		return "", fmt.Errorf("copy the trace: %w", err)
	}
	cmd := exec.CommandContext(ctx, podtraceBin, append(args, "--db", audited)...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("podtrace import: %w\n%s", err, b)
	}
	return fmt.Sprintf("audit log: %d files (%d bytes) kept in %s, imported into %s: %s", len(rotated)+1, size, out, audited, strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])), nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
