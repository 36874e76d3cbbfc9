package report

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// crashLoopStory is a Deployment's pod whose app container crashes and
// restarts until the story has revs revisions: each cycle is a kubelet
// status update to running (ready) and one to CrashLoopBackOff with the last
// termination, with the events a kubelet sends. Every tenth pod is then
// deleted with foregroundDeletion and stays Terminating. It is the shape of
// a busy pod: several changes per revision, fresh timestamps and container
// IDs in each.
func crashLoopStory(tb testing.TB, c *clock, i, revs int) *explain.Lifecycle {
	ns := fmt.Sprintf("team-%02d", i%20)
	name := fmt.Sprintf("worker-%04d-5d9c7", i)
	s := newStory(tb, c, ns, name, fmt.Sprintf("%08x-1c2d-4e5f-8a9b-%012x", i, i*7919))
	ctrl := true
	s.write(store.Added, "kube-controller-manager", "",
		`{"f:metadata":{"f:generateName":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{},"f:restartPolicy":{},"f:volumes":{},"f:tolerations":{}}}`,
		func(p *corev1.Pod) {
			p.GenerateName = "worker-"
			p.Labels = map[string]string{"app": "worker", "team": ns, "pod-template-hash": "5d9c7"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "worker-5d9c7", UID: "rs-worker", Controller: &ctrl}}
			p.Spec.RestartPolicy = corev1.RestartPolicyAlways
			p.Spec.Containers = []corev1.Container{
				{Name: "app", Image: "registry.example.com/team/worker:2.14.1", Args: []string{"--queue", ns},
					Env:       []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "QUEUE", Value: ns}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}},
				{Name: "proxy", Image: "envoyproxy/envoy:v1.31.2"},
			}
			p.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "worker-config"}}}}}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		})
	c.tick(300 * time.Millisecond)
	s.write(store.Updated, "kube-scheduler", "binding", bindingFields, func(p *corev1.Pod) { p.Spec.NodeName = fmt.Sprintf("node-%02d", i%30) })
	s.event("Normal", "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to node-%02d", ns, name, i%30), "default-scheduler", 1)
	c.tick(time.Second)
	s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.HostIP, p.Status.PodIP = fmt.Sprintf("10.0.%d.%d", i%30, 10), fmt.Sprintf("10.244.%d.%d", i%30, i%250)
		setCondition(p, condition(corev1.PodScheduled, corev1.ConditionTrue, c.now))
		setCondition(p, condition(corev1.PodReady, corev1.ConditionFalse, c.now))
		for _, ct := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: ct.Name, Image: ct.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
		}
	})
	backoff := int32(0)
	for n := 0; len(s.in.Pod) < revs; n++ {
		c.tick(time.Duration(15+n%20) * time.Second)
		started := c.now
		s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			setCondition(p, condition(corev1.PodReady, corev1.ConditionTrue, c.now))
			for k := range p.Status.ContainerStatuses {
				cs := &p.Status.ContainerStatuses[k]
				if k > 0 && cs.State.Running != nil {
					continue // the proxy keeps running
				}
				cs.Ready = true
				cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.now)}}
				cs.ContainerID = fmt.Sprintf("containerd://%x", sha256.Sum256([]byte(fmt.Sprint(i, n, k))))
			}
		})
		s.event("Normal", "Started", "Started container app", "kubelet", int32(n+1))
		if len(s.in.Pod) >= revs {
			break
		}
		c.tick(time.Duration(10+n%7) * time.Second)
		s.write(store.Updated, "kubelet", "status", kubeletFields, func(p *corev1.Pod) {
			setCondition(p, condition(corev1.PodReady, corev1.ConditionFalse, c.now))
			cs := &p.Status.ContainerStatuses[0]
			cs.Ready = false
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 1, Reason: "Error", StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(c.now), ContainerID: cs.ContainerID}}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %ds restarting failed container=app pod=%s_%s(%s)", min(10<<min(n, 5), 300), name, ns, p.UID)}}
		})
		backoff++
		s.event("Warning", "BackOff", "Back-off restarting failed container app in pod "+name+"_"+ns, "kubelet", backoff)
	}
	if i%10 == 0 {
		c.tick(2 * time.Second)
		s.write(store.Updated, "", "", "", func(p *corev1.Pod) {
			grace := int64(30)
			dt := metav1.NewTime(c.now.Add(30 * time.Second))
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &dt, &grace
			p.Finalizers = append(p.Finalizers, metav1.FinalizerDeleteDependents)
		})
		c.tick(5 * time.Minute)
	}
	s.in.End = c.now
	return s.replay()
}

// syntheticTrace replays pods crash-looping pods of revs revisions each,
// on every core.
func syntheticTrace(tb testing.TB, pods, revs int) *Trace {
	tb.Helper()
	tr := &Trace{File: "synthetic.db", Generated: fixtureStart.Add(24 * time.Hour), Pods: make([]*explain.Lifecycle, pods)}
	var wg sync.WaitGroup
	work := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range work {
				c := &clock{now: fixtureStart.Add(time.Duration(i) * 7 * time.Second), seq: uint64(i) * 1_000_000}
				tr.Pods[i] = crashLoopStory(tb, c, i, revs)
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	SortPods(tr.Pods)
	start, end := tr.Pods[0].Steps[0].Time, time.Time{}
	for _, p := range tr.Pods {
		if p.Steps[0].Time.Before(start) {
			start = p.Steps[0].Time
		}
		if p.RecordingEnd.After(end) {
			end = p.RecordingEnd
		}
	}
	tr.Sessions = []store.Session{{ID: 1, Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.2", Started: start, Stopped: end, Version: "v0.1.0"}}
	return tr
}

var (
	bigTraceOnce sync.Once
	bigTrace     *Trace
)

// BenchmarkHTML renders 1,000 pods of 100 revisions each; it reports the
// size of the page and of its embedded data.
func BenchmarkHTML(b *testing.B) {
	bigTraceOnce.Do(func() { bigTrace = syntheticTrace(b, benchPods, 100) })
	revs := 0
	for _, p := range bigTrace.Pods {
		revs += len(p.Steps)
	}
	var size int
	start := cpuTime()
	for b.Loop() {
		var cw countWriter
		if err := HTML(&cw, bigTrace, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	data, err := htmlData{bigTrace}.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	var zipped countWriter
	zw, _ := gzip.NewWriterLevel(&zipped, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(float64(len(data)), "data-bytes")
	// What the data weighs gzipped at best, for comparison with the page,
	// which embeds it deflated at a faster level (see embedData).
	b.ReportMetric(float64(zipped.n), "data-gzip-bytes")
	b.ReportMetric(float64(revs), "revisions")
}

// BenchmarkPrepareHTML encodes the page data of the same 1,000 pods, one
// after the other (the part of BenchmarkHTML that PrepareHTML does on
// GOMAXPROCS workers, or report's workers as they replay pods).
func BenchmarkPrepareHTML(b *testing.B) {
	bigTraceOnce.Do(func() { bigTrace = syntheticTrace(b, benchPods, 100) })
	start := cpuTime()
	for b.Loop() {
		for _, p := range bigTrace.Pods {
			PrepareHTML(p)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkHTMLPrepared renders the same trace with every pod prepared
// ahead, as the report command does: what is left is the page's serial
// part (numbering the strings, writing the pods' data, deflating it on a
// goroutine of its own, the template).
func BenchmarkHTMLPrepared(b *testing.B) {
	bigTraceOnce.Do(func() { bigTrace = syntheticTrace(b, benchPods, 100) })
	tr := *bigTrace
	tr.Prepared = make(map[*explain.Lifecycle]*HTMLPod, len(tr.Pods))
	for _, p := range tr.Pods {
		tr.Prepared[p] = PrepareHTML(p)
	}
	start := cpuTime()
	for b.Loop() {
		if err := HTML(io.Discard, &tr, HTMLOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// BenchmarkMarkdown renders the same trace as markdown.
func BenchmarkMarkdown(b *testing.B) {
	bigTraceOnce.Do(func() { bigTrace = syntheticTrace(b, benchPods, 100) })
	var size int
	for b.Loop() {
		var cw countWriter
		if err := Markdown(&cw, bigTrace, TextOptions{}); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size), "bytes")
}

// cpuTime is the CPU time the process has used, in user and system mode
// (all threads, the garbage collector's too): steadier than the clock on a
// shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)

var benchPods = 1000

// BenchmarkDiffText renders `podtrace diff` of a pod of 1,000 revisions
// (and its events), in colour and without.
func BenchmarkDiffText(b *testing.B) {
	lc := crashLoopStory(b, &clock{now: fixtureStart}, 7, 1000)
	for _, color := range []bool{false, true} {
		b.Run(fmt.Sprintf("color=%v", color), func(b *testing.B) {
			var size int
			start := cpuTime()
			for b.Loop() {
				var cw countWriter
				if err := Diff(&cw, lc, TextOptions{Color: color}); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
