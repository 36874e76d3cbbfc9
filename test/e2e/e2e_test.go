package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// recorder is a `podtrace record` running in this test process.
type recorder struct {
	cancel context.CancelFunc
	done   chan error
	stderr syncBuffer
	db     string
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
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

// startRecorder runs `podtrace record` against the cluster into a new trace
// file and waits until it says its initial lists are synced: what happens
// next is recorded as it happens, not as already present.
func startRecorder(t *testing.T, c *cluster.Cluster, args ...string) *recorder {
	t.Helper()
	r := &recorder{done: make(chan error, 1), db: filepath.Join(t.TempDir(), "trace.db")}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	argv := append([]string{"podtrace", "record", "--kubeconfig", c.Kubeconfig, "-o", r.db}, args...)
	go func() {
		r.done <- app.Run(ctx, argv, app.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &r.stderr})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if strings.Contains(r.stderr.String(), "initial lists synced") {
			break
		}
		select {
		case err := <-r.done:
			t.Fatalf("podtrace record ended early: %v\n%s", err, r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("podtrace record did not sync within 60s\n%s", r.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop interrupts the recorder, as Ctrl-C does, and checks it flushed and
// exited cleanly.
func (r *recorder) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("podtrace record: %v\n%s", err, r.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Errorf("podtrace record did not stop within 60s of Ctrl-C")
		return
	}
	checkInvariant(t, r.db)
}

// checkInvariant runs explain.Check over every pod of the trace at db:
// every stretch in which Kubernetes' own state shows a pod unwell is
// covered by a warning or critical finding whose evidence overlaps it, and
// every Warning event is in some finding's evidence. Every trace the e2e
// tests record is checked so (recorder.stop, and the recorder processes'
// cleanup).
func checkInvariant(t *testing.T, db string) {
	t.Helper()
	pods, stretches := 0, 0
	err := app.ExplainEach(db, func(lc *explain.Lifecycle) error {
		pods++
		stretches += len(explain.Unwell(lc.Lifecycle))
		for _, v := range explain.Check(lc) {
			t.Errorf("invariant: %s", v)
		}
		return nil
	})
	if err != nil {
		t.Errorf("invariant over %s: %v", db, err)
		return
	}
	t.Logf("invariant checked over the %d pods of %s: %d unwell stretches, each covered", pods, filepath.Base(filepath.Dir(db)), stretches)
}

// podtrace runs a podtrace command and returns its standard output.
func podtrace(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	err := app.Run(context.Background(), append([]string{"podtrace"}, args...), app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if err != nil {
		t.Fatalf("podtrace %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// lifecycle runs `podtrace diff -o json` and decodes it.
func lifecycle(t *testing.T, db, ns, pod string) *explain.Lifecycle {
	t.Helper()
	var lc explain.Lifecycle
	out := podtrace(t, "diff", pod, "-n", ns, "--db", db, "-o", "json")
	if err := json.Unmarshal([]byte(out), &lc); err != nil {
		t.Fatalf("decode diff -o json: %v\n%s", err, out)
	}
	return &lc
}

func newCluster(t *testing.T, opts cluster.Options) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the local control plane; skipped with -short")
	}
	c := cluster.New(t, opts)
	cfg := c.RESTConfig()
	cfg.UserAgent = "e2e-client"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, client
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, err := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func podGone(client kubernetes.Interface, ns, name string) func() (bool, error) {
	return func() (bool, error) {
		_, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}
}

func phaseNames(lc *explain.Lifecycle) []string {
	var out []string
	for _, p := range lc.Phases {
		out = append(out, p.Name)
	}
	return out
}

func findPhase(t *testing.T, lc *explain.Lifecycle, name string) diff.Phase {
	t.Helper()
	for _, p := range lc.Phases {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("phase %q missing; phases: %v", name, phaseNames(lc))
	return diff.Phase{}
}

// TestRecordPodLifecycle records a pod from creation to deletion through the
// scheduler and kwok, and checks that diff names each phase with its actor.
func TestRecordPodLifecycle(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := context.Background()
	rec := startRecorder(t, c)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod ready", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	// The trace can be read while the recorder writes it.
	waitFor(t, "the running pod in a live read of the trace", 30*time.Second, func() (bool, error) {
		var out, errOut bytes.Buffer
		err := app.Run(ctx, []string{"podtrace", "report", "--db", rec.db, "--color", "never"}, app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, errOut.String())
		}
		return strings.Contains(out.String(), "Running") && strings.Contains(out.String(), "web"), nil
	})
	if err := client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod deleted", time.Minute, podGone(client, "default", "web"))
	time.Sleep(2 * time.Second) // let the watch deliver the deletion
	rec.stop(t)

	lc := lifecycle(t, rec.db, "default", "web")
	// As a kubelet since 1.27 does, kwok moves a deleted pod's phase to
	// Succeeded once its containers stopped (exit 0), before it goes.
	want := []string{diff.PhaseCreated, diff.PhaseScheduled, diff.PhaseStarted, diff.PhaseReady, diff.PhaseDeletionRequested, diff.PhaseSucceeded, diff.PhaseDeleted}
	if got := phaseNames(lc); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("phases = %v, want %v", got, want)
	}
	if lc.Outcome != "Deleted" {
		t.Errorf("outcome = %q, want Deleted", lc.Outcome)
	}
	if p := findPhase(t, lc, diff.PhaseCreated); !strings.Contains(p.Actor, "e2e-client") {
		t.Errorf("created by %q, want the test's client (e2e-client)", p.Actor)
	}
	if p := findPhase(t, lc, diff.PhaseScheduled); !strings.Contains(p.Actor, "scheduler") || !strings.Contains(p.Detail, c.Nodes[0]) {
		t.Errorf("scheduled %q by %q, want to %s by the scheduler", p.Detail, p.Actor, c.Nodes[0])
	}
	// kwok stands in for the kubelet: the status updates are its.
	sawKwok := false
	for _, s := range lc.Steps {
		for _, a := range s.Actors {
			if a.Manager == "kwok" && a.Subresource == "status" {
				sawKwok = true
			}
		}
	}
	if !sawKwok {
		t.Errorf("no step attributed to kwok's status updates; steps: %+v", lc.Steps)
	}
	if p := findPhase(t, lc, diff.PhaseDeletionRequested); !strings.Contains(p.Detail, "grace period") {
		t.Errorf("deletion requested detail %q, want the grace period", p.Detail)
	}
	// A healthy pod, deleted: its one finding says how it ended.
	if len(lc.Findings) != 1 || lc.Findings[0].ID != "ended" || lc.Findings[0].Severity != explain.Info || lc.Findings[0].Mechanism != explain.MechanismDelete {
		t.Errorf("findings %+v, want only the ended finding of a DELETE", lc.Findings)
	}
	sched := false
	for _, e := range lc.Events {
		if e.Reason == "Scheduled" {
			sched = true
		}
	}
	if !sched {
		t.Errorf("no Scheduled event interleaved; events: %+v", lc.Events)
	}

	text := podtrace(t, "diff", "web", "--db", rec.db, "--color", "never")
	for _, s := range []string{"Pod default/web", "Phases", "Timeline", "the scheduler", "+ spec.nodeName"} {
		if !strings.Contains(text, s) {
			t.Errorf("diff text lacks %q:\n%s", s, text)
		}
	}
	summary := podtrace(t, "report", "--db", rec.db, "--color", "never")
	if !strings.Contains(summary, "web") || !strings.Contains(summary, "Deleted") {
		t.Errorf("report lacks the pod:\n%s", summary)
	}
}
