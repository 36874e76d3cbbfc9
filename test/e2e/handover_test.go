package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// TestFaultHandOver: a Deployment with strategy Recreate (deploy/base)
// sends SIGTERM to the old recorder, which stops its informers, flushes,
// ends its session and compacts the trace in its grace period; the new
// pod's recorder may start meanwhile (a deleted or evicted pod is replaced
// at once). Started with --wait-for-lease, it waits for the first to let
// go of the trace (answering /healthz, and /readyz saying whom it waits
// for), never writes beside it, and the trace loses nothing the first
// flushed: every revision it recorded before its final flush is there,
// and the second session begins after the first stopped.
func TestFaultHandOver(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := t.Context()
	const ns = "handover"
	createNamespace(t, client, ns, nil)
	truth := watchGroundTruth(t, client, ns)
	db := filepath.Join(t.TempDir(), "trace.db")
	args := []string{"--kubeconfig", c.Kubeconfig, "-n", ns, "-o", db}

	first := startRecordProcess(t, args...)
	const pods = 6
	for i := range pods {
		createPod(t, client, simplePod(ns, fmt.Sprintf("p%d", i)))
	}
	for i := range pods {
		waitPod(t, client, ns, fmt.Sprintf("p%d", i), "ready", podReady)
	}
	// Churn until the first recorder is told to stop, and after.
	churnCtx, stopChurn := context.WithCancel(ctx)
	defer stopChurn()
	churned := make(chan int, 1)
	go func() {
		n := 0
		for churnCtx.Err() == nil {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"c%d"}}}`, n)
			if _, err := client.CoreV1().Pods(ns).Patch(churnCtx, fmt.Sprintf("p%d", n%pods), types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
				n++
			}
			time.Sleep(30 * time.Millisecond)
		}
		churned <- n
	}()

	// The new pod's recorder, started while the first records.
	second := startRecordProcessUntil(t, "waiting up to", "wait for the lease",
		append(args, "--wait-for-lease", "1m", "--listen", "127.0.0.1:0")...)
	if want := fmt.Sprintf("is being recorded by pid %d", first.cmd.Process.Pid); !strings.Contains(second.stderr.String(), want) {
		t.Errorf("the second recorder's wait does not name the first (%q):\n%s", want, second.stderr.String())
	}
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(second.stderr.String())
	if m == nil {
		t.Fatalf("the second recorder does not say where it listens:\n%s", second.stderr.String())
	}
	probe := func(path string) (int, string) {
		resp, err := http.Get(m[1] + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := probe("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of the waiting recorder = %d, want 200 (a liveness probe must not kill it)", code)
	}
	if code, body := probe("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, fmt.Sprintf("waiting for pid %d", first.cmd.Process.Pid)) {
		t.Errorf("/readyz of the waiting recorder = %d %q, want 503 naming the first", code, body)
	}
	time.Sleep(2 * time.Second) // the churn goes on; the second waits
	if n := sessionCount(t, db); n != 1 {
		t.Fatalf("%d sessions while the second recorder waits, want the first's alone", n)
	}

	// What the first has flushed so far: all of it must survive.
	flushed := recordedRVs(t, db, ns)
	terminated := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exited time.Time
	select {
	case <-first.done:
		exited = time.Now()
	case <-time.After(time.Minute):
		t.Fatalf("the first recorder did not exit within a minute of SIGTERM\n%s", first.stderr.String())
	}
	if !first.cmd.ProcessState.Success() {
		t.Fatalf("the first recorder after SIGTERM: %v\n%s", first.cmd.ProcessState, first.stderr.String())
	}
	waitFor(t, "the second recorder to sync", time.Minute, func() (bool, error) {
		return strings.Contains(second.stderr.String(), "initial lists synced"), nil
	})
	synced := time.Now()
	time.Sleep(time.Second)
	stopChurn()
	t.Logf("churn: %d label patches", <-churned)
	time.Sleep(500 * time.Millisecond)
	if st := second.signal(t, syscall.SIGTERM); !st.Success() {
		t.Fatalf("the second recorder after SIGTERM: %v\n%s", st, second.stderr.String())
	}
	t.Logf("FIGURE hand-over: the first exited %s after SIGTERM; the second had synced %s after that",
		exited.Sub(terminated).Round(10*time.Millisecond), synced.Sub(exited).Round(10*time.Millisecond))
	if !strings.Contains(second.stderr.String(), "stopped after") {
		t.Errorf("the second recorder does not say it waited for the first:\n%s", second.stderr.String())
	}

	tdb, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	sessions, err := tdb.Sessions()
	if err != nil || len(sessions) != 2 {
		t.Fatalf("sessions %+v, %v; want two", sessions, err)
	}
	s1, s2 := sessions[0], sessions[1]
	if s1.Stopped.IsZero() || s2.Started.Before(s1.Stopped) {
		t.Errorf("session 1 stopped %s, session 2 started %s: want the second to begin after the first stopped", s1.Stopped, s2.Started)
	}
	// One writer at a time: every record of the first session precedes
	// every record of the second, and none of the second was observed
	// before the first stopped.
	var last1, first2 uint64
	type rev struct {
		session uint32
		uid, rv string
		typ     store.EventType
	}
	seen := map[rev]int{}
	err = tdb.Scan(func(r store.Record) error {
		switch r.Session {
		case s1.ID:
			last1 = r.Seq
		case s2.ID:
			if first2 == 0 {
				first2 = r.Seq
			}
			if r.Observed.Before(s1.Stopped) {
				t.Errorf("%s %s/%s rv %s recorded by the second session, observed %s, before the first stopped (%s)", r.Kind, r.Namespace, r.Name, r.ResourceVersion, r.Observed, s1.Stopped)
			}
		default:
			t.Errorf("record %d in session %d", r.Seq, r.Session)
		}
		if r.Kind == "Pod" {
			k := rev{r.Session, r.UID, r.ResourceVersion, r.Type}
			if seen[k]++; seen[k] > 1 {
				t.Errorf("pod %s rv %s recorded twice in session %d", r.Name, r.ResourceVersion, r.Session)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first2 == 0 || first2 <= last1 {
		t.Errorf("the first session's last record is Seq %d, the second's first %d: want the second after", last1, first2)
	}
	// Nothing the first flushed is lost, nor what it saw before SIGTERM
	// (its final flush).
	got := recordedRVs(t, db, ns)
	var kept, before int
	for name, rvs := range flushed {
		for rv := range rvs {
			kept++
			if !got[name][rv] {
				t.Errorf("%s rv %s, flushed by the first recorder, is not in the trace after the hand-over", name, rv)
			}
		}
	}
	for _, s := range truth.before(terminated.Add(-500 * time.Millisecond)) {
		if !s.at.After(first.started) {
			continue // before the first recorder had its lists
		}
		before++
		if !got[s.name][s.rv] {
			t.Errorf("%s rv %s, seen %s before the first recorder's SIGTERM, is not in the trace", s.name, s.rv, terminated.Sub(s.at))
		}
	}
	t.Logf("FIGURE hand-over: %d pod revisions flushed before SIGTERM and %d seen by a watch before it, all in the trace; sessions %s-%s and %s-%s",
		kept, before, s1.Started.Format("15:04:05.000"), s1.Stopped.Format("15:04:05.000"), s2.Started.Format("15:04:05.000"), s2.Stopped.Format("15:04:05.000"))
}

// sessionCount counts the trace's sessions, reading it as readers do.
func sessionCount(t *testing.T, path string) int {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ss, err := db.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	return len(ss)
}
