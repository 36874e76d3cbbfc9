package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
	"github.com/podtrace/podtrace/tracer"
)

// buildPodtrace builds the podtrace binary once for the tests that need a
// recorder in a process of its own (to kill it).
var buildPodtrace = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "podtrace-e2e-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "podtrace")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/podtrace/podtrace/cmd/podtrace").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build podtrace: %v\n%s", err, out)
	}
	return bin, nil
})

// proc is a `podtrace record` in a process of its own.
type proc struct {
	started time.Time // when its initial lists were synced
	cmd     *exec.Cmd
	stderr  syncBuffer
	done    chan error
}

// startRecordProcess starts `podtrace record ARGS` and waits until its
// initial lists are synced.
func startRecordProcess(t *testing.T, args ...string) *proc {
	t.Helper()
	return startRecordProcessUntil(t, "initial lists synced", "sync", args...)
}

// startRecordProcessUntil starts `podtrace record ARGS` and waits until its
// stderr says want (what describes it, for messages).
func startRecordProcessUntil(t *testing.T, want, what string, args ...string) *proc {
	t.Helper()
	bin, err := buildPodtrace()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{done: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"record"}, args...)...)
	p.cmd.Stderr = &p.stderr
	if i := slices.Index(args, "-o"); i >= 0 && i+1 < len(args) {
		// Once the recorder is stopped (cleanups run last first), its
		// trace is checked like every e2e trace.
		db := args[i+1]
		t.Cleanup(func() {
			if _, err := os.Stat(db); err == nil {
				checkInvariant(t, db)
			}
		})
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	waitFor(t, "podtrace record (pid "+fmt.Sprint(p.cmd.Process.Pid)+") to "+what, time.Minute, func() (bool, error) {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("podtrace record ended early: %v\n%s", err, p.stderr.String())
		default:
		}
		return strings.Contains(p.stderr.String(), want), nil
	})
	p.started = time.Now()
	return p
}

// signal sends sig to the recorder and waits for it to exit.
func (p *proc) signal(t *testing.T, sig syscall.Signal) *os.ProcessState {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("podtrace record did not exit within a minute of %v\n%s", sig, p.stderr.String())
	}
	return p.cmd.ProcessState
}

// seen is one pod revision the ground-truth watch saw.
type seen struct {
	name, rv string
	typ      watch.EventType
	at       time.Time
}

// groundTruth watches the namespace's pods beside the recorder, time-stamped.
type groundTruth struct {
	mu   sync.Mutex
	revs []seen
}

func watchGroundTruth(t *testing.T, client kubernetes.Interface, ns string) *groundTruth {
	t.Helper()
	w, err := client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	g := &groundTruth{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			g.mu.Lock()
			g.revs = append(g.revs, seen{name: p.Name, rv: p.ResourceVersion, typ: ev.Type, at: time.Now()})
			g.mu.Unlock()
		}
	}()
	return g
}

func (g *groundTruth) before(t time.Time) []seen {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []seen
	for _, s := range g.revs {
		if s.at.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// recordedRVs returns the resourceVersions of the pod revisions in the trace,
// by pod name.
func recordedRVs(t *testing.T, path, ns string) map[string]map[string]bool {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, o := range pods {
		h, err := db.History(o.UID)
		if err != nil {
			t.Fatal(err)
		}
		if out[o.Name] == nil {
			out[o.Name] = map[string]bool{}
		}
		for _, r := range h {
			out[o.Name][r.ResourceVersion] = true
		}
	}
	return out
}

// reportText runs `podtrace report` and drops its "Generated" stamp, the
// one line that may tell the reader's clock.
func reportText(t *testing.T, db string) string {
	t.Helper()
	out := podtrace(t, "report", "--db", db, "--color", "never")
	return regexp.MustCompile(`(?m)^.*Generated.*$`).ReplaceAllString(out, "")
}

// TestFaultKillAndRestart kills a recorder with SIGKILL during churn, changes
// the cluster while none runs, and restarts it into the same trace. The
// trace must lose at most the flush interval, tell the same story whenever
// it is read, and show what happened in the gap as not observed: deleted
// pods gone, changed pods changed, never Running, Terminating or stuck.
func TestFaultKillAndRestart(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := t.Context()
	const ns = "churn"
	createNamespace(t, client, ns, nil)
	truth := watchGroundTruth(t, client, ns)
	db := filepath.Join(t.TempDir(), "trace.db")

	first := startRecordProcess(t, "--kubeconfig", c.Kubeconfig, "-n", ns, "-o", db)
	const pods = 12
	for i := range pods {
		createPod(t, client, simplePod(ns, fmt.Sprintf("p%d", i)))
	}
	for i := range pods {
		waitPod(t, client, ns, fmt.Sprintf("p%d", i), "ready", podReady)
	}
	// Churn: label patches, a revision each, until and past the kill.
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan int)
	go func() {
		n := 0
		for churnCtx.Err() == nil {
			name := fmt.Sprintf("p%d", n%pods)
			patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"c%d"}}}`, n)
			if _, err := client.CoreV1().Pods(ns).Patch(churnCtx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
				n++
			}
			time.Sleep(20 * time.Millisecond)
		}
		churned <- n
	}()
	time.Sleep(4 * time.Second)
	killed := time.Now()
	if st := first.signal(t, syscall.SIGKILL); st.Success() {
		t.Fatalf("podtrace record survived SIGKILL")
	}
	time.Sleep(time.Second)
	stopChurn()
	t.Logf("churn: %d label patches", <-churned)

	// Loss: what the ground truth saw before the kill and the trace lacks.
	got := recordedRVs(t, db, ns)
	var lost []seen
	for _, s := range truth.before(killed) {
		if !got[s.name][s.rv] {
			lost = append(lost, s)
		}
	}
	bound := tracer.DefaultFlushInterval + 500*time.Millisecond // + one flush's own time
	var window time.Duration
	for _, s := range lost {
		if d := killed.Sub(s.at); d > window {
			window = d
		}
	}
	t.Logf("FIGURE kill -9: %d of %d revisions seen before the kill were not in the trace, the oldest %s before the kill (flush interval %s)",
		len(lost), len(truth.before(killed)), window.Round(10*time.Millisecond), tracer.DefaultFlushInterval)
	if window > bound {
		t.Errorf("lost revisions up to %s before the kill, more than the flush interval allows (%s)", window, bound)
	}

	// Read now and a while later: the same story (no reader's clock in it).
	before := reportText(t, db)
	if !strings.Contains(before, "(interrupted: no stop recorded; its recorder's last sign of life)") {
		t.Errorf("report does not say session 1 was interrupted:\n%s", before)
	}
	time.Sleep(3 * time.Second)
	if after := reportText(t, db); after != before {
		t.Errorf("report of a killed recording changed as time passed:\n--- before\n%s\n--- 3s later\n%s", before, after)
	}

	// While no recorder runs: delete half the pods, relabel one.
	for i := range pods / 2 {
		name := fmt.Sprintf("p%d", i)
		if err := client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods / 2 {
		waitFor(t, "pod gone", time.Minute, podGone(client, ns, fmt.Sprintf("p%d", i)))
	}
	changed := fmt.Sprintf("p%d", pods/2)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, changed, types.MergePatchType, []byte(`{"metadata":{"labels":{"while":"down"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	second := startRecordProcess(t, "--kubeconfig", c.Kubeconfig, "-n", ns, "-o", db)
	// A closed terminal (SIGHUP) flushes like Ctrl-C: nothing seen before
	// it is lost.
	for i := pods/2 + 1; i < pods; i++ {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"second":"s%d"}}}`, i)
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("p%d", i), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	hup := time.Now()
	if st := second.signal(t, syscall.SIGHUP); !st.Success() {
		t.Fatalf("podtrace record after SIGHUP: %v\n%s", st, second.stderr.String())
	}
	got = recordedRVs(t, db, ns)
	lost = lost[:0]
	var during int
	for _, s := range truth.before(hup) {
		if !s.at.After(second.started) {
			continue // before the second recorder had its lists
		}
		during++
		if !got[s.name][s.rv] {
			lost = append(lost, s)
			t.Errorf("SIGHUP lost %s rv %s, seen %s before the signal", s.name, s.rv, hup.Sub(s.at))
		}
	}
	t.Logf("FIGURE SIGHUP: %d of %d revisions seen while the second recorder ran were not in the trace", len(lost), during)

	for i := range pods {
		name := fmt.Sprintf("p%d", i)
		lc := lifecycle(t, db, ns, name)
		last := lc.Steps[len(lc.Steps)-1]
		switch {
		case i < pods/2:
			if lc.Outcome != diff.OutcomeGone || !strings.HasPrefix(last.Unobserved, "deleted while not observed, between") {
				t.Errorf("%s, deleted while no recorder ran: outcome %q, last step %s %q; want %q, deleted while not observed",
					name, lc.Outcome, last.Type, last.Unobserved, diff.OutcomeGone)
			}
		case name == changed:
			if lc.Outcome != "Running" || !strings.HasPrefix(last.Unobserved, "changed while not observed") {
				t.Errorf("%s, relabelled while no recorder ran: outcome %q, last step %q; want Running, changed while not observed", name, lc.Outcome, last.Unobserved)
			}
		default:
			if lc.Outcome != "Running" {
				t.Errorf("%s: outcome %q, want Running", name, lc.Outcome)
			}
		}
		if len(lc.Gaps) == 0 || lc.Gaps[0].Cause != store.GapRecorderDown {
			t.Errorf("%s: gaps %+v, want the recorder's downtime", name, lc.Gaps)
		}
		for _, f := range lc.Findings {
			if f.Severity == explain.Warning || f.Severity == explain.Critical {
				t.Errorf("%s: phantom finding %s: %s", name, f.ID, f.Headline)
			}
		}
	}
	text := podtrace(t, "diff", "p0", "-n", ns, "--db", db, "--color", "never")
	t.Logf("podtrace diff p0:\n%s", text)
	if !strings.Contains(text, "gap: nothing observed for") {
		t.Errorf("diff of p0 does not show the gap in its timeline")
	}
}

// TestFaultSecondRecorder: a second recorder on a trace being recorded is
// refused at once, naming the first, and adds nothing to the trace.
func TestFaultSecondRecorder(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	const ns = "two"
	createNamespace(t, client, ns, nil)
	db := filepath.Join(t.TempDir(), "trace.db")
	first := startRecordProcess(t, "--kubeconfig", c.Kubeconfig, "-n", ns, "-o", db)
	createPod(t, client, simplePod(ns, "web"))
	waitPod(t, client, ns, "web", "ready", podReady)

	var out, errOut bytes.Buffer
	err := runPodtrace(&out, &errOut, "record", "--kubeconfig", c.Kubeconfig, "-n", ns, "-o", db, "--duration", "5s")
	want := fmt.Sprintf("is being recorded by pid %d", first.cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second recorder: %v; want an error saying %q", err, want)
	}
	if st := first.signal(t, syscall.SIGTERM); !st.Success() {
		t.Fatalf("first recorder after SIGTERM: %v\n%s", st, first.stderr.String())
	}
	tdb, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	sessions, err := tdb.Sessions()
	if err != nil || len(sessions) != 1 {
		t.Errorf("sessions %+v, %v; want the first recorder's alone", sessions, err)
	}
	rvs := map[string]int{}
	objs, _ := tdb.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns})
	for _, o := range objs {
		h, _ := tdb.History(o.UID)
		for _, r := range h {
			if rvs[r.ResourceVersion]++; rvs[r.ResourceVersion] > 1 {
				t.Errorf("revision %s of %s recorded twice", r.ResourceVersion, o.Name)
			}
		}
	}
}

// runPodtrace runs a podtrace command in this process and returns its error.
func runPodtrace(out, errOut *bytes.Buffer, args ...string) error {
	return app.Run(context.Background(), append([]string{"podtrace"}, args...), app.Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut})
}
