package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/bench/revision"
	"github.com/podtrace/podtrace/test/cluster"
)

// The soak (make bench-soak): `podtrace record --retain` on a churn of
// short-lived pods for minutes, sampling the trace's size and the
// recorder's RSS; the file must plateau once pruning keeps up, RSS stay
// flat, and no revision of a pod that should be kept be lost.

const soakNamespace = "soak"

// soakTruth is the workload's ground truth: an informer on the namespace's
// pods beside the recorder, each pod's revisions and when it was deleted.
type soakTruth struct {
	mu   sync.Mutex
	pods map[types.UID]*truthPod
}

type truthPod struct {
	name    string
	revs    map[uint64]bool // revision.Hash
	deleted time.Time       // zero while it exists
}

func (g *soakTruth) note(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	tp := g.pods[p.UID]
	if tp == nil {
		tp = &truthPod{name: p.Name, revs: map[uint64]bool{}}
		g.pods[p.UID] = tp
	}
	tp.revs[revision.Hash(string(p.UID), p.ResourceVersion, deleted)] = true
	if deleted {
		tp.deleted = time.Now()
	}
}

// soakSample is one point of the curve.
type soakSample struct {
	at                time.Duration // since the workload began
	file, pages, used int64         // bytes
	rss               int64
	pods              int     // in the cluster
	pruned, prunedRec int64   // so far
	maxTx             float64 // seconds
}

func runSoak(o options) (err error) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(interrupted, o.soak+10*time.Minute)
	defer cancel()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	trace := filepath.Join(o.out, "soak.db")
	for _, f := range []string{trace, trace + ".lock"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	podtraceBin, err := filepath.Abs(o.podtrace)
	if err != nil {
		return err
	}
	logf("starting the control plane (%d kwok nodes, events expire after %s)", o.nodes, o.eventTTL)
	c, err := cluster.Start(ctx, cluster.Options{
		Nodes:           o.nodes,
		NoSignalHandler: true,
		Timeout:         3 * time.Minute,
		APIServerFlags:  []string{"--event-ttl=" + o.eventTTL.String()},
	})
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer func() {
		if serr := c.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	rc := c.RESTConfig()
	rc.QPS, rc.Burst = 100, 200
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: soakNamespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := poll(ctx, "ServiceAccount default", func() (bool, string, error) {
		_, err := client.CoreV1().ServiceAccounts(soakNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "", nil
	}); err != nil {
		return err
	}

	truth := &soakTruth{pods: map[types.UID]*truthPod{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(soakNamespace))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { truth.note(obj, false) },
		UpdateFunc: func(_, obj any) { truth.note(obj, false) },
		DeleteFunc: func(obj any) { truth.note(obj, true) },
	}); err != nil {
		return err
	}
	infCtx, stopInf := context.WithCancel(ctx)
	defer stopInf()
	f.Start(infCtx.Done())
	f.WaitForCacheSync(infCtx.Done())

	args := []string{podtraceBin, "record", "--kubeconfig", c.Kubeconfig, "-o", trace, "--retain", o.retain, "--listen", "127.0.0.1:0"}
	if o.maxSize != "" {
		args = append(args, "--max-size", o.maxSize)
	}
	rec, err := start("podtrace-soak", o.out, args...)
	if err != nil {
		return err
	}
	defer rec.kill()
	if err := rec.waitLog(ctx, "initial lists synced"); err != nil {
		return err
	}
	metricsURL, err := listenURL(rec.stderr)
	if err != nil {
		return err
	}
	retain, err := parseDays(o.retain)
	if err != nil {
		return err
	}
	logf("podtrace record (pid %d) synced; churn for %s with --retain %s", rec.cmd.Process.Pid, o.soak, o.retain)

	wctx, stopWorkload := context.WithTimeout(ctx, o.soak)
	defer stopWorkload()
	wl := time.Now()
	var samples []soakSample
	var sampleMu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			s := soakSample{at: time.Since(wl)}
			if fi, err := os.Stat(trace); err == nil {
				s.file = fi.Size()
			}
			if kib, err := procRSS(rec.cmd.Process.Pid); err == nil {
				s.rss = kib << 10
			}
			m := scrapeMetrics(metricsURL)
			s.used = int64(m["podtrace_trace_used_bytes"])
			s.pages = int64(m["podtrace_trace_page_bytes"])
			s.pruned = int64(m[`podtrace_pruned_pods_total{reason="age"}`] + m[`podtrace_pruned_pods_total{reason="size"}`])
			s.prunedRec = int64(m[`podtrace_pruned_records_total{reason="age"}`] + m[`podtrace_pruned_records_total{reason="size"}`])
			s.maxTx = m["podtrace_prune_transaction_seconds_max"]
			s.pods = len(inf.GetStore().List())
			sampleMu.Lock()
			samples = append(samples, s)
			sampleMu.Unlock()
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	stats, werr := soakWorkload(wctx, client, o.churnEvery)
	wg.Wait()
	if werr != nil && wctx.Err() == nil {
		return fmt.Errorf("workload: %w", werr)
	}
	logf("workload done: %s; stopping the recorder", stats)
	time.Sleep(3 * time.Second)
	stopped := time.Now()
	if err := rec.stop(2 * time.Minute); err != nil {
		return err
	}
	stopInf()

	// The trace against the ground truth.
	db, err := store.Open(trace, store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	recorded := map[string]map[uint64]bool{}
	err = db.Scan(func(r store.Record) error {
		if r.Kind != "Pod" || r.Namespace != soakNamespace {
			return nil
		}
		if recorded[r.UID] == nil {
			recorded[r.UID] = map[uint64]bool{}
		}
		recorded[r.UID][revision.Hash(r.UID, r.ResourceVersion, r.Type == store.Deleted || r.Type == store.DeletedUnknown)] = true
		return nil
	})
	prunes, perr := db.Prunes()
	db.Close()
	if err := errors.Join(err, perr); err != nil {
		return err
	}
	bySize := o.maxSize != ""
	var live, liveRevs, recent, old, oldKept, between, lost, partial int
	// With --max-size the oldest gone go first, whatever their age: the
	// newest deletion pruned and the oldest kept.
	var newestPruned, oldestKept time.Time
	for uid, tp := range truth.pods {
		if tp.deleted.IsZero() {
			continue
		}
		if len(recorded[string(uid)]) == 0 {
			if tp.deleted.After(newestPruned) {
				newestPruned = tp.deleted
			}
		} else if oldestKept.IsZero() || tp.deleted.Before(oldestKept) {
			oldestKept = tp.deleted
		}
	}
	for uid, tp := range truth.pods {
		got := recorded[string(uid)]
		missing := 0
		for h := range tp.revs {
			if !got[h] {
				missing++
			}
		}
		goneFor := time.Duration(0)
		if !tp.deleted.IsZero() {
			goneFor = stopped.Sub(tp.deleted)
		}
		switch {
		case tp.deleted.IsZero():
			live++
			liveRevs += len(tp.revs)
			lost += missing
		case bySize:
			// Kept or not by its order; judged below.
		case goneFor < retain-10*time.Second:
			recent++
			lost += missing
		case goneFor > retain+30*time.Second:
			old++
			if len(got) > 0 {
				oldKept++
			}
		default:
			between++
		}
		if len(got) > 0 && missing > 0 && missing < len(tp.revs) {
			partial++ // pruned in part: pruning is per object, whole
		}
	}

	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format, args...) }
	w("soak: %s of churn (%s) with `podtrace record --retain %s`%s, events expiring after %s, %d kwok nodes; load average at end %s\n",
		o.soak, stats, o.retain, map[bool]string{true: " --max-size " + o.maxSize, false: ""}[o.maxSize != ""], o.eventTTL, o.nodes, loadavg())
	w("\n```\n  time  file MiB  pages MiB  in use MiB  RSS MiB  pods  pruned pods  pruned records  longest prune tx\n")
	for _, s := range samples {
		w("%6s  %8.1f  %9.2f  %10.2f  %7.1f  %4d  %11d  %14d  %13.1f ms\n", s.at.Round(time.Second), mib(s.file), mib(s.pages), mib(s.used), mib(s.rss), s.pods, s.pruned, s.prunedRec, s.maxTx*1000)
	}
	w("```\n\n")
	// The plateau: from once the first pruned pods were due (retain after
	// the churn began, plus a minute) to the end.
	from := retain + time.Minute
	if bySize {
		from = o.soak / 2 // the budget is reached within the first half
	}
	var tail []soakSample
	for _, s := range samples {
		if s.at >= from {
			tail = append(tail, s)
		}
	}
	if len(tail) >= 3 {
		fileSlope := slope(tail, func(s soakSample) float64 { return mib(s.file) })
		usedSlope := slope(tail, func(s soakSample) float64 { return mib(s.used) })
		rssSlope := slope(tail, func(s soakSample) float64 { return mib(s.rss) })
		minF, maxF := minMax(tail, func(s soakSample) float64 { return mib(s.file) })
		pagesSlope := slope(tail, func(s soakSample) float64 { return mib(s.pages) })
		minP, maxP := minMax(tail, func(s soakSample) float64 { return mib(s.pages) })
		minU, maxU := minMax(tail, func(s soakSample) float64 { return mib(s.used) })
		minR, maxR := minMax(tail, func(s soakSample) float64 { return mib(s.rss) })
		w("after %s (%d samples): file %.1f-%.1f MiB, slope %+.2f MiB/min; pages (high-water) %.2f-%.2f MiB, slope %+.3f MiB/min; in use %.2f-%.2f MiB, slope %+.3f MiB/min; RSS %.1f-%.1f MiB, slope %+.2f MiB/min\n",
			from, len(tail), minF, maxF, fileSlope, minP, maxP, pagesSlope, minU, maxU, usedSlope, minR, maxR, rssSlope)
		// Half the stretch: the pages' high-water mark at its end against
		// its middle.
		mid := tail[len(tail)/2]
		grown := tail[len(tail)-1].pages - mid.pages
		w("plateau (the pages grew by at most 5%% over the second half of the stretch, %s to %s): %s (%+.2f MiB, %+.1f%%)\n",
			mid.at.Round(time.Second), tail[len(tail)-1].at.Round(time.Second), verdict(float64(grown) <= 0.05*float64(mid.pages)), mib(grown), 100*float64(grown)/float64(max(mid.pages, 1)))
	} else {
		w("too short for a plateau: fewer than 3 samples after %s\n", from)
	}
	var prunedPods, prunedRecords int
	for _, p := range prunes {
		prunedPods += p.Pods
		prunedRecords += p.Records
	}
	if bySize {
		w("pods: %d seen by the ground truth: %d live at the end (%d revisions), %d gone\n", len(truth.pods), live, liveRevs, len(truth.pods)-live)
	} else {
		w("pods: %d seen by the ground truth: %d live at the end (%d revisions), %d gone less than %s before the stop, %d gone %s-%s before, %d gone longer than %s (of which %d still in the trace)\n",
			len(truth.pods), live, liveRevs, recent, retain-10*time.Second, between, retain-10*time.Second, retain+30*time.Second, old, retain+30*time.Second, oldKept)
	}
	w("trace: %d pods pruned (%d records) as its Prune records say\n", prunedPods, prunedRecords)
	w("revisions of live and recently gone pods the trace lacks: %d (target 0): %s\n", lost, verdict(lost == 0))
	w("pods pruned in part: %d (target 0): %s\n", partial, verdict(partial == 0))
	if bySize {
		// A second of slack: the ground truth's clock is not the recorder's.
		w("oldest first: the newest deletion pruned %s, the oldest kept %s: %s\n",
			newestPruned.Format("15:04:05.000"), oldestKept.Format("15:04:05.000"), verdict(oldestKept.IsZero() || !newestPruned.After(oldestKept.Add(time.Second))))
	} else {
		w("pods gone longer than the retention + 30 s still in the trace: %d (target 0): %s\n", oldKept, verdict(oldKept == 0))
	}
	summary, _ := podtraceSummary(rec.stderr)
	w("podtrace summary: %s\n", summary)
	if line := grepLine(rec.stderr, "pruned "); line != "" {
		w("%s\n", line)
	}
	w("wall time: %s\n", time.Since(began).Round(time.Second))
	fmt.Print(sb.String())
	return os.WriteFile(filepath.Join(o.out, "soak.txt"), []byte(sb.String()), 0o644)
}

// soakWorkload runs until ctx is done: a bare pod created every churnEvery
// and deleted 8 s later; 20 long-lived pods patched twice a second; a
// Deployment of 5 whose pods are deleted one every 10 s (its ReplicaSet
// replaces them); a Job of 2 pods every 30 s, deleted 20 s later.
func soakWorkload(ctx context.Context, cs kubernetes.Interface, churnEvery time.Duration) (string, error) {
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: podSpec(corev1.RestartPolicyAlways)}
	}
	pods := cs.CoreV1().Pods(soakNamespace)
	for i := range 20 {
		if _, err := pods.Create(ctx, pod(fmt.Sprintf("live-%d", i), map[string]string{"soak": "live"}), metav1.CreateOptions{}); err != nil {
			return "", err
		}
	}
	if _, err := cs.AppsV1().Deployments(soakNamespace).Create(ctx, soakDeployment(), metav1.CreateOptions{}); err != nil {
		return "", err
	}
	var (
		mu                                       sync.Mutex
		created, patches, deletedDep, jobs, errs int
		firstErr                                 error
		wg                                       sync.WaitGroup
	)
	fail := func(err error) {
		if ctx.Err() != nil {
			return
		}
		mu.Lock()
		errs++
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	every := func(d time.Duration, fn func(n int)) {
		wg.Go(func() {
			tick := time.NewTicker(d)
			defer tick.Stop()
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				fn(n)
			}
		})
	}
	every(churnEvery, func(n int) {
		name := fmt.Sprintf("churn-%d", n)
		if _, err := pods.Create(ctx, pod(name, map[string]string{"soak": "churn"}), metav1.CreateOptions{}); err != nil {
			fail(err)
			return
		}
		mu.Lock()
		created++
		mu.Unlock()
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(8 * time.Second):
			}
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				fail(err)
			}
		})
	})
	every(500*time.Millisecond, func(n int) {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"soak.podtrace.dev/patch":"%d"}}}`, n)
		if _, err := pods.Patch(ctx, fmt.Sprintf("live-%d", n%20), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			fail(err)
			return
		}
		mu.Lock()
		patches++
		mu.Unlock()
	})
	every(10*time.Second, func(int) {
		l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "soak=steady"})
		if err != nil || len(l.Items) == 0 {
			return
		}
		if err := pods.Delete(ctx, l.Items[0].Name, metav1.DeleteOptions{}); err != nil {
			fail(err)
			return
		}
		mu.Lock()
		deletedDep++
		mu.Unlock()
	})
	every(30*time.Second, func(n int) {
		name := fmt.Sprintf("batch-%d", n)
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: batchv1.JobSpec{
			Completions: ptr.To(int32(2)), Parallelism: ptr.To(int32(2)), BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"soak": "job"}},
				Spec: podSpec(corev1.RestartPolicyNever)}}}
		if _, err := cs.BatchV1().Jobs(soakNamespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			fail(err)
			return
		}
		mu.Lock()
		jobs++
		mu.Unlock()
		wg.Go(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Second):
			}
			bg := metav1.DeletePropagationBackground
			if err := cs.BatchV1().Jobs(soakNamespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
				fail(err)
			}
		})
	})
	<-ctx.Done()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	desc := fmt.Sprintf("%d short-lived pods (one every %s, each deleted after 8 s), 20 live pods patched %d times, a Deployment of 5 with %d pods deleted and replaced, %d Jobs of 2 pods deleted after 20 s; %d API errors",
		created, churnEvery, patches, deletedDep, jobs, errs)
	if firstErr != nil {
		desc += fmt.Sprintf(" (the first: %v)", firstErr)
	}
	return desc, nil
}

func soakDeployment() *appsv1.Deployment {
	labels := map[string]string{"soak": "steady"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "steady"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(5)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(corev1.RestartPolicyAlways)},
		},
	}
}

// listenURL reads where record --listen listens from its log.
func listenURL(logPath string) (string, error) {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`on (http://[0-9.:]+)`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s does not say where record listens", logPath)
	}
	return string(m[1]), nil
}

// scrapeMetrics reads /metrics into "name{labels}" -> value; nil on error.
func scrapeMetrics(base string) map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out
}

// parseDays parses "2m", "1h" or "7d".
func parseDays(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		return time.Duration(n) * 24 * time.Hour, err
	}
	return time.ParseDuration(s)
}

func grepLine(path, prefix string) string {
	b, _ := os.ReadFile(path)
	for l := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// slope is the least-squares slope of f over the samples, per minute.
func slope(ss []soakSample, f func(soakSample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range ss {
		x, y := s.at.Minutes(), f(s)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / d
}

func minMax(ss []soakSample, f func(soakSample) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		lo, hi = min(lo, f(s)), max(hi, f(s))
	}
	return lo, hi
}
