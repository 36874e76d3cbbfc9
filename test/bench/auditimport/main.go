// Command auditimport benchmarks `podtrace import --audit-log` on synthetic
// kube-apiserver audit logs of growing size, to show that import streams:
// its memory does not grow with the size of the log. For each size it
// writes a log (RequestReceived and ResponseComplete events at
// RequestResponse level for pods, Metadata level for leases, events,
// secrets and configmaps; about a tenth of the pod requests about recorded
// pods; some denied by a webhook), copies a trace holding the recorded
// pods, runs the podtrace binary as a child and prints the log's size and
// lines, the events kept, the wall and CPU time, the throughput (of the
// log's lines, uncompressed, per wall second) and the child's memory:
//
//   - peak RSS: the kernel's high-water mark (rusage Maxrss), anonymous and
//     file-backed pages together;
//   - peak anon: the highest RssAnon sampled from /proc/PID/status every
//     10 ms: the Go heap, stacks and runtime, what the process itself holds.
//     This is the figure that must not grow with the log;
//   - peak file: the highest RssFile sampled: pages of files the process
//     maps, the binary and the trace (bbolt reads it through mmap). Clean
//     page cache the kernel can reclaim; its trace part grows with the trace,
//     that is with the events kept, as it should.
//
// -smaps also prints the largest mappings at the peak RSS, which tells the
// binary's pages from the trace's; -godebug, -podtrace-flags and -stderr help
// find what grows (GODEBUG=gctrace=1, --profile heap).
//
//	go run ./test/bench/auditimport -podtrace _output/podtrace -sizes 100M,1G
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podtrace/podtrace/store"
)

const (
	recordedPods   = 200  // in the trace, namespace ci
	unrecordedPods = 5000 // in the log only
)

// t0 is when the synthetic log begins.
var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

type options struct {
	podtrace string
	sizes    []int64
	gzip     bool
	dir      string
	keep     bool
	reuse    bool
	smaps    bool
	godebug  string
	flags    []string // global flags before import; {log} is the log's name
	stderr   bool
}

func main() {
	var o options
	var sizes string
	flag.StringVar(&o.podtrace, "podtrace", "_output/podtrace", "podtrace binary")
	flag.StringVar(&sizes, "sizes", "100M,1G", "sizes of the audit logs, comma-separated (K, M, G suffixes)")
	flag.BoolVar(&o.gzip, "gzip", true, "also import a gzip copy of the smallest log")
	flag.StringVar(&o.dir, "dir", "", "directory for the logs and traces (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the logs and traces")
	flag.BoolVar(&o.reuse, "reuse", false, "import the logs -dir holds already (from -keep) instead of writing them again")
	flag.BoolVar(&o.smaps, "smaps", false, "print the child's largest mappings (/proc/PID/smaps) at its peak RSS")
	flag.StringVar(&o.godebug, "godebug", "", "GODEBUG for the child, e.g. gctrace=1 (see -stderr)")
	var podFlags string
	flag.StringVar(&podFlags, "podtrace-flags", "", "global flags for the child, e.g. \"--profile heap --profile-output /tmp/{log}.pprof\"; {log} is the log's file name")
	flag.BoolVar(&o.stderr, "stderr", false, "copy the child's stderr to this one's")
	flag.Parse()
	o.flags = strings.Fields(podFlags)
	for _, s := range strings.Split(sizes, ",") {
		n, err := parseSize(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "auditimport: -sizes: %v\n", err)
			os.Exit(2)
		}
		o.sizes = append(o.sizes, n)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "auditimport: %v\n", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 100M or 1G", s)
	}
	return int64(n * float64(mult)), nil
}

// result is one import.
type result struct {
	name    string
	bytes   int64 // of the file read
	logSize int64 // of the log, uncompressed
	lines   int
	kept    int
	elapsed time.Duration
	cpu     time.Duration // user + system time of the child
	maxRSS  int64         // bytes, the kernel's peak (rusage)
	peaks   peaks         // sampled from /proc
	trace   int64         // size of the trace after
}

func run(o options) error {
	if _, err := os.Stat(o.podtrace); err != nil {
		return fmt.Errorf("podtrace binary: %w (make build, or name it with -podtrace)", err)
	}
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "podtrace-auditimport-")
		if err != nil {
			return err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	base := filepath.Join(dir, "base.db")
	if err := writeTrace(base); err != nil {
		return fmt.Errorf("write the trace: %w", err)
	}
	fmt.Printf("podtrace import --audit-log, %s; %d recorded pods, logs in %s\n", o.podtrace, recordedPods, dir)
	fmt.Printf("%-18s %8s %9s %7s %8s %8s %9s %9s %9s %9s %9s\n", "log", "size", "lines", "kept", "seconds", "CPU s", "log MB/s", "peak RSS", "peak anon", "peak file", "trace")
	for i, size := range o.sizes {
		name := fmt.Sprintf("audit-%s.log", humanSize(size))
		log := filepath.Join(dir, name)
		if _, err := os.Stat(log); err != nil || !o.reuse {
			began := time.Now()
			lines, err := writeLog(log, size, int64(i+1))
			if err != nil {
				return fmt.Errorf("write %s: %w", log, err)
			}
			fmt.Fprintf(os.Stderr, "wrote %s (%d lines) in %s\n", log, lines, time.Since(began).Round(time.Millisecond))
		}
		files := []string{log}
		if o.gzip && i == 0 {
			gz := log + ".gz"
			if _, err := os.Stat(gz); err != nil || !o.reuse {
				if err := gzipFile(log, gz); err != nil {
					return err
				}
			}
			files = append(files, gz)
		}
		for _, f := range files {
			r, err := importLog(o, base, f)
			if err != nil {
				return err
			}
			r.name = filepath.Base(f)
			r.logSize = size
			if fi, err := os.Stat(log); err == nil {
				r.logSize = fi.Size()
			}
			mbs := float64(r.logSize) / (1 << 20) / r.elapsed.Seconds()
			fmt.Printf("%-18s %8s %9d %7d %8.2f %8.2f %9.1f %9s %9s %9s %9s\n", r.name, humanSize(r.bytes), r.lines, r.kept,
				r.elapsed.Seconds(), r.cpu.Seconds(), mbs, humanSize(r.maxRSS), humanSize(r.peaks.anon), humanSize(r.peaks.file), humanSize(r.trace))
			for _, m := range r.peaks.top {
				fmt.Printf("%18s   %9s rss %9s anon  %s\n", "", humanSize(m.rss), humanSize(m.anon), m.name)
			}
			if !o.keep {
				os.Remove(f)
			}
		}
	}
	return nil
}

// importLog imports log into a copy of the base trace and measures it.
func importLog(o options, base, log string) (result, error) {
	db := strings.TrimSuffix(log, filepath.Ext(log)) + ".db"
	if err := copyFile(base, db); err != nil {
		return result{}, err
	}
	defer os.Remove(db)
	fi, err := os.Stat(log)
	if err != nil {
		return result{}, err
	}
	var args []string
	for _, f := range o.flags {
		args = append(args, strings.ReplaceAll(f, "{log}", filepath.Base(log)))
	}
	cmd := exec.Command(o.podtrace, append(args, "import", "--audit-log", log, "--db", db)...)
	if o.godebug != "" {
		cmd.Env = append(os.Environ(), "GODEBUG="+o.godebug)
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if o.stderr {
		cmd.Stderr = io.MultiWriter(&errOut, os.Stderr)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	stop := make(chan struct{})
	sampled := make(chan peaks, 1)
	go func() { sampled <- sample(cmd.Process.Pid, o.smaps, stop) }()
	err = cmd.Wait()
	elapsed := time.Since(began)
	close(stop)
	r := result{bytes: fi.Size(), elapsed: elapsed, peaks: <-sampled}
	if err != nil {
		return r, fmt.Errorf("podtrace import %s: %v\n%s%s", log, err, out.String(), errOut.String())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSS = ru.Maxrss << 10 // KiB on Linux
		r.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	}
	m := regexp.MustCompile(`, (\d+) lines? .*: (\d+) events? kept`).FindStringSubmatch(out.String())
	if m == nil {
		return r, fmt.Errorf("podtrace import %s: no summary in its output:\n%s", log, out.String())
	}
	r.lines, _ = strconv.Atoi(m[1])
	r.kept, _ = strconv.Atoi(m[2])
	if tfi, err := os.Stat(db); err == nil {
		r.trace = tfi.Size()
	}
	return r, nil
}

// peaks are the highest values of a process's /proc/PID/status fields seen
// while sampling, in bytes: VmRSS (all its resident pages), RssAnon (heap,
// stacks: what the process holds) and RssFile (pages of files it maps, here
// the binary and the trace: the kernel's page cache, reclaimable), each
// its own peak. Top is /proc/PID/smaps's largest mappings at the peak VmRSS
// when asked for.
type peaks struct {
	rss, anon, file int64
	top             []mapping
}

// mapping is one line of a smaps breakdown.
type mapping struct {
	name      string
	rss, anon int64
}

// sample samples /proc/PID/status every 10ms until stop; with smaps, it
// also reads /proc/PID/smaps at each new peak of VmRSS.
func sample(pid int, smaps bool, stop <-chan struct{}) peaks {
	var p peaks
	path := fmt.Sprintf("/proc/%d/status", pid)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			var rss, anon, file int64
			for _, l := range strings.Split(string(b), "\n") {
				f := strings.Fields(l)
				if len(f) != 3 || f[2] != "kB" {
					continue
				}
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					continue
				}
				switch f[0] {
				case "VmRSS:":
					rss = kb << 10
				case "RssAnon:":
					anon = kb << 10
				case "RssFile:":
					file = kb << 10
				}
			}
			if rss > p.rss {
				p.rss = rss
				if smaps {
					if top := readSmaps(pid); top != nil {
						p.top = top
					}
				}
			}
			p.anon, p.file = max(p.anon, anon), max(p.file, file)
		}
		select {
		case <-stop:
			return p
		case <-tick.C:
		}
	}
}

// readSmaps sums /proc/PID/smaps's Rss and Anonymous by mapping name (the
// file, or [heap], or "anon" for Go's arenas) and returns the largest five.
func readSmaps(pid int) []mapping {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil
	}
	byName := map[string]*mapping{}
	var cur *mapping
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") { // a mapping's header: range perms offset dev inode [name]
			name := "anon"
			if len(f) >= 6 {
				name = f[5]
			}
			if byName[name] == nil {
				byName[name] = &mapping{name: name}
			}
			cur = byName[name]
			continue
		}
		if cur == nil || len(f) != 3 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Rss:":
			cur.rss += kb << 10
		case "Anonymous:":
			cur.anon += kb << 10
		}
	}
	var all []mapping
	for _, m := range byName {
		all = append(all, *m)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].rss > all[j].rss })
	return all[:min(len(all), 5)]
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.0fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// pod names one pod of the synthetic cluster.
type pod struct {
	ns, name, uid, node string
	recorded            bool
}

func recorded(i int) pod {
	return pod{ns: "ci", name: fmt.Sprintf("runner-job-%d", i), uid: fmt.Sprintf("0a000000-0000-4000-8000-%012d", i), node: fmt.Sprintf("node-%d", i%20), recorded: true}
}

func unrecorded(i int) pod {
	ns := [...]string{"web", "batch", "ci", "monitoring"}[i%4]
	return pod{ns: ns, name: fmt.Sprintf("app-%d-%05x", i, i*7919), uid: fmt.Sprintf("0b000000-0000-4000-8000-%012d", i), node: fmt.Sprintf("node-%d", i%20)}
}

// writeTrace writes a trace holding the recorded pods, as podtrace record
// would have: each created, then running.
func writeTrace(path string) error {
	db, err := store.Open(path, store.Options{Version: "bench"})
	if err != nil {
		return err
	}
	var recs []store.Record
	for i := range recordedPods {
		p := recorded(i)
		for j, typ := range []store.EventType{store.Added, store.Updated} {
			rv := strconv.Itoa(1000 + i*10 + j)
			recs = append(recs, store.Record{
				Session: 1, Observed: t0.Add(-time.Minute + time.Duration(j)*time.Second), Type: typ,
				APIVersion: "v1", Kind: "Pod", Namespace: p.ns, Name: p.name, UID: p.uid, ResourceVersion: rv,
				Object: podJSON(nil, p, rv, t0.Add(-time.Minute), j == 1),
			})
		}
	}
	if err := db.Write(recs); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// podJSON appends a pod as the API server stores it: managedFields,
// two containers, status with conditions: about 4 KB.
func podJSON(dst []byte, p pod, rv string, created time.Time, running bool) []byte {
	ts := created.Format(time.RFC3339)
	phase, ready := "Pending", "False"
	if running {
		phase, ready = "Running", "True"
	}
	return fmt.Appendf(dst, `{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":%q,"creationTimestamp":%q,`+
		`"labels":{"app.kubernetes.io/name":"runner","app.kubernetes.io/instance":%q,"pod-template-hash":"7d9f8b6c5d"},`+
		`"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-02-28T09:00:00Z","prometheus.io/scrape":"true","prometheus.io/port":"9090"},`+
		`"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":%q,"uid":"0c000000-0000-4000-8000-000000000001","controller":true,"blockOwnerDeletion":true}],`+
		`"finalizers":["batch.kubernetes.io/job-tracking"],`+
		`"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":%q,"fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{".":{},"v:\"batch.kubernetes.io/job-tracking\"":{}},"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/name":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"0c000000-0000-4000-8000-000000000001\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{".":{},"f:command":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}},"k:{\"name\":\"helper\"}":{".":{},"f:image":{},"f:name":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}},`+
		`{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":%q,"fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.1.17\"}":{".":{},"f:ip":{}}},"f:startTime":{}}},"subresource":"status"}]},`+
		`"spec":{"volumes":[{"name":"kube-api-access-x7k2p","projected":{"sources":[{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},{"configMap":{"name":"kube-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}}],"defaultMode":420}}],`+
		`"containers":[{"name":"build","image":"registry.example.com/ci/runner@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","command":["sh","-c","make test"],"resources":{"limits":{"cpu":"2","memory":"4Gi"},"requests":{"cpu":"500m","memory":"1Gi"}},"volumeMounts":[{"name":"kube-api-access-x7k2p","readOnly":true,"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}],"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},`+
		`{"name":"helper","image":"registry.example.com/runner-helper:x86_64-v17.0.0","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],`+
		`"restartPolicy":"Never","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","serviceAccount":"default","nodeName":%q,"securityContext":{},"schedulerName":"default-scheduler",`+
		`"tolerations":[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}],"priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},`+
		`"status":{"phase":%q,"conditions":[{"type":"Initialized","status":"True","lastProbeTime":null,"lastTransitionTime":%q},{"type":"Ready","status":%q,"lastProbeTime":null,"lastTransitionTime":%q},{"type":"ContainersReady","status":%q,"lastProbeTime":null,"lastTransitionTime":%q},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":%q}],`+
		`"hostIP":"10.0.0.7","podIP":"10.244.1.17","podIPs":[{"ip":"10.244.1.17"}],"startTime":%q,"containerStatuses":[{"name":"build","state":{"running":{"startedAt":%q}},"lastState":{},"ready":true,"restartCount":0,"image":"registry.example.com/ci/runner@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","imageID":"registry.example.com/ci/runner@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","containerID":"containerd://4b825dc642cb6eb9a060e54bf8d69288fbee4904","started":true}],"qosClass":"Burstable"}}`,
		p.name, p.ns, p.uid, rv, ts, p.name, p.name, ts, ts, p.node, phase, ts, ready, ts, ready, ts, ts, ts, ts)
}

// logWriter writes one synthetic audit log.
type logWriter struct {
	w     *bufio.Writer
	rng   *rand.Rand
	now   time.Time
	id    uint64
	rv    int
	lines int
	n     int64
	line  []byte
}

// writeLog writes an audit log of about size bytes and returns its lines.
func writeLog(path string, size, seed int64) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	lw := &logWriter{w: bufio.NewWriterSize(f, 1<<20), rng: rand.New(rand.NewPCG(uint64(seed), 42)), now: t0, rv: 100000}
	for lw.n < size {
		lw.request()
	}
	if err := lw.w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return lw.lines, f.Close()
}

// users of the synthetic cluster.
const (
	kubelet   = `{"username":"system:node:%s","groups":["system:nodes","system:authenticated"]}`
	gc        = `{"username":"system:serviceaccount:kube-system:generic-garbage-collector","uid":"5e1c7a55-8a0b-4d43-9d3c-0c1a8a4b2f10","groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}`
	jobCtl    = `{"username":"system:serviceaccount:kube-system:job-controller","uid":"1f2e3d4c-5b6a-4789-9abc-def012345678","groups":["system:serviceaccounts","system:serviceaccounts:kube-system","system:authenticated"]}`
	scheduler = `{"username":"system:kube-scheduler","groups":["system:authenticated"]}`
)

// request writes one request: its RequestReceived and ResponseComplete
// events (ResponseStarted too for a watch).
func (lw *logWriter) request() {
	lw.now = lw.now.Add(time.Duration(200+lw.rng.IntN(800)) * time.Microsecond)
	lw.id++
	var p pod
	if lw.rng.IntN(10) == 0 {
		p = recorded(lw.rng.IntN(recordedPods))
	} else {
		p = unrecorded(lw.rng.IntN(unrecordedPods))
	}
	switch x := lw.rng.IntN(100); {
	case x < 25: // a kubelet or controller reads a pod
		lw.pod(p, "get", "", "GET", fmt.Sprintf(kubelet, p.node), "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0", 200, "", lw.pod200(p, true))
	case x < 40: // the kubelet patches a pod's status
		req := `{"metadata":{"uid":"` + p.uid + `"},"status":{"conditions":[{"lastTransitionTime":"` + lw.now.Format(time.RFC3339) + `","status":"True","type":"Ready"}],"containerStatuses":[{"name":"build","ready":true,"started":true,"state":{"running":{"startedAt":"` + t0.Format(time.RFC3339) + `"}}}]}}`
		lw.pod(p, "patch", "status", "PATCH", fmt.Sprintf(kubelet, p.node), "kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0", 200, req, lw.pod200(p, true))
	case x < 45: // a job controller creates a pod; a webhook patches it
		req := string(podJSON(nil, p, "", lw.now, false))
		lw.pod(p, "create", "", "POST", jobCtl, "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef0/system:serviceaccount:kube-system:job-controller", 201, req, lw.pod200(p, false))
	case x < 47: // the scheduler binds a pod
		req := `{"kind":"Binding","apiVersion":"v1","metadata":{"name":"` + p.name + `","namespace":"` + p.ns + `","uid":"` + p.uid + `"},"target":{"kind":"Node","name":"` + p.node + `"}}`
		lw.pod(p, "create", "binding", "POST", scheduler, "kube-scheduler/v1.37.2 (linux/amd64) kubernetes/abcdef0/scheduler", 201, req, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}`)
	case x < 50: // a pod is deleted, in the foreground
		lw.pod(p, "delete", "", "DELETE", jobCtl, "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef0/system:serviceaccount:kube-system:job-controller", 200,
			`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`, lw.pod200(p, true))
	case x < 53: // the garbage collector's finalizer removal, denied by a webhook
		lw.pod(p, "patch", "", "PATCH", gc, "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abcdef0/system:serviceaccount:kube-system:generic-garbage-collector", 500,
			`{"metadata":{"finalizers":null,"uid":"`+p.uid+`"}}`,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission webhook \"digester.example.com\" denied the request: failed to create keychain: secrets \"`+p.name+`-pull\" not found","reason":"InternalError","code":500}`)
	case x < 60: // a controller watches pods
		lw.metadata("watch", "pods", "", p.ns, "", "GET", jobCtl, 200, true)
	case x < 78: // a node lease renewed
		lw.metadata("update", "leases", "coordination.k8s.io", "kube-node-lease", p.node, "PUT", fmt.Sprintf(kubelet, p.node), 200, false)
	case x < 90: // an event recorded
		lw.metadata("create", "events", "", p.ns, p.name+".18a2b3c4d5e6f7a8", "POST", fmt.Sprintf(kubelet, p.node), 201, false)
	case x < 96: // a secret read (Metadata level: never its data)
		lw.metadata("get", "secrets", "", p.ns, p.name+"-pull", "GET", fmt.Sprintf(kubelet, p.node), 200, false)
	default: // a configmap read
		lw.metadata("get", "configmaps", "", p.ns, "kube-root-ca.crt", "GET", fmt.Sprintf(kubelet, p.node), 200, false)
	}
}

// pod200 is the pod as stored after a request.
func (lw *logWriter) pod200(p pod, running bool) string {
	lw.rv++
	return string(podJSON(nil, p, strconv.Itoa(lw.rv), t0, running))
}

func (lw *logWriter) auditID() string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(lw.id*2654435761), uint16(lw.id>>7), lw.id&0xfff, (lw.id>>12)&0xfff, lw.id)
}

// pod writes a request about a pod at RequestResponse level.
func (lw *logWriter) pod(p pod, verb, sub, method, user, agent string, code int, req, resp string) {
	id := lw.auditID()
	uri := "/api/v1/namespaces/" + p.ns + "/pods/" + p.name
	if sub != "" {
		uri += "/" + sub
	}
	ref := `{"resource":"pods","namespace":"` + p.ns + `","name":"` + p.name + `","apiVersion":"v1"`
	if sub != "" {
		ref += `,"subresource":"` + sub + `"`
	}
	ref += "}"
	received := lw.now.Add(-time.Duration(1+lw.rng.IntN(20)) * time.Millisecond)
	head := func(stage string) []byte {
		return fmt.Appendf(lw.line[:0], `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":%q,"stage":%q,"requestURI":%q,"verb":%q,"user":%s,"sourceIPs":["10.0.0.7"],"userAgent":%q,"objectRef":%s`,
			id, stage, uri, verb, user, agent, ref)
	}
	b := head("RequestReceived")
	b = fmt.Appendf(b, `,"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n", received.Format(time.RFC3339Nano), received.Format(time.RFC3339Nano))
	lw.emit(b)
	b = head("ResponseComplete")
	b = fmt.Appendf(b, `,"responseStatus":{"metadata":{},"code":%d}`, code)
	if req != "" {
		b = append(append(b, `,"requestObject":`...), req...)
	}
	if resp != "" {
		b = append(append(b, `,"responseObject":`...), resp...)
	}
	b = fmt.Appendf(b, `,"requestReceivedTimestamp":%q,"stageTimestamp":%q,"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""`, received.Format(time.RFC3339Nano), lw.now.Format(time.RFC3339Nano))
	if verb == "create" && sub == "" {
		b = append(b, `,"mutation.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"digester\",\"webhook\":\"digester.example.com\",\"mutated\":true}","patch.webhook.admission.k8s.io/round_0_index_0":"{\"configuration\":\"digester\",\"webhook\":\"digester.example.com\",\"patch\":[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"registry.example.com/ci/runner@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}],\"patchType\":\"JSONPatch\"}"`...)
	}
	b = append(b, "}}\n"...)
	lw.emit(b)
}

// metadata writes a request at Metadata level: no objects.
func (lw *logWriter) metadata(verb, resource, group, ns, name, method, user string, code int, watch bool) {
	id := lw.auditID()
	ref := `{"resource":"` + resource + `","namespace":"` + ns + `"`
	if name != "" {
		ref += `,"name":"` + name + `"`
	}
	if group != "" {
		ref += `,"apiGroup":"` + group + `","apiVersion":"v1"`
	} else {
		ref += `,"apiVersion":"v1"`
	}
	ref += "}"
	uri := "/api/v1/namespaces/" + ns + "/" + resource
	if group != "" {
		uri = "/apis/" + group + "/v1/namespaces/" + ns + "/" + resource
	}
	if name != "" {
		uri += "/" + name
	}
	stages := []string{"RequestReceived", "ResponseComplete"}
	if watch {
		stages = []string{"RequestReceived", "ResponseStarted", "ResponseComplete"}
	}
	for _, stage := range stages {
		b := fmt.Appendf(lw.line[:0], `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":%q,"requestURI":%q,"verb":%q,"user":%s,"sourceIPs":["10.0.0.7"],"userAgent":"kubelet/v1.37.2 (linux/amd64) kubernetes/abcdef0","objectRef":%s`,
			id, stage, uri, verb, user, ref)
		if stage != "RequestReceived" {
			b = fmt.Appendf(b, `,"responseStatus":{"metadata":{},"code":%d}`, code)
		}
		b = fmt.Appendf(b, `,"requestReceivedTimestamp":%q,"stageTimestamp":%q,"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"system:node\""}}`+"\n",
			lw.now.Format(time.RFC3339Nano), lw.now.Format(time.RFC3339Nano))
		lw.emit(b)
	}
}

func (lw *logWriter) emit(b []byte) {
	lw.line = b[:0]
	n, _ := lw.w.Write(b)
	lw.n += int64(n)
	lw.lines++
}
