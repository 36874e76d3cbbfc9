package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// cutProxy forwards TCP connections to an address until cut: then it closes
// every connection and refuses new ones until resumed. It stands between a
// recorder and the API server, so that the recorder alone loses the server
// while the cluster goes on.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			io.Copy(dst, src)
			dst.Close()
			src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// setCut cuts (closing every connection) or resumes the proxy.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// TestFaultWatchExpired: the recorder loses the API server while the
// cluster goes on, long enough that its watch's resourceVersion is
// compacted away, so that its watch answers 410 Gone and its informer lists
// again. Pods deleted meanwhile must be recorded as gone while not
// observed (no deletion lost), pods changed meanwhile with their new state,
// and no revision twice.
func TestFaultWatchExpired(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, APIServerFlags: []string{
		// Pods watched from etcd, not the watch cache, and etcd compacted
		// every few seconds: a watch resumed after the cut finds its
		// resourceVersion compacted, 410 Gone.
		"--watch-cache-sizes=pods#0",
		"--etcd-compaction-interval=2s",
	}})
	ctx := t.Context()
	const ns = "relist"
	createNamespace(t, client, ns, nil)
	proxy := startCutProxy(t, strings.TrimPrefix(c.Server, "https://"))
	kubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	viaProxy := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(viaProxy, []byte(strings.ReplaceAll(string(kubeconfig), c.Server, "https://"+proxy.ln.Addr().String())), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "trace.db")
	rec := startRecordProcess(t, "--kubeconfig", viaProxy, "-n", ns, "-o", db)

	const pods = 6
	for i := range pods {
		createPod(t, client, simplePod(ns, fmt.Sprintf("r%d", i)))
	}
	for i := range pods {
		waitPod(t, client, ns, fmt.Sprintf("r%d", i), "ready", podReady)
	}
	time.Sleep(2 * time.Second) // recorded

	proxy.setCut(true)
	cutAt := time.Now()
	for i := range pods / 2 {
		if err := client.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("r%d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods / 2 {
		waitFor(t, "pod gone", time.Minute, podGone(client, ns, fmt.Sprintf("r%d", i)))
	}
	changed := fmt.Sprintf("r%d", pods/2)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, changed, types.MergePatchType, []byte(`{"metadata":{"labels":{"during":"cut"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Other writes move etcd's revision on; compaction drops the old ones.
	for i := range 5 {
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("r%d", pods-1), types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"n":"%d"}}}`, i)), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(4 * time.Second)
	proxy.setCut(false)
	resumed := time.Now()

	// The deletions reach the trace once the informer has listed again.
	var seenAt time.Time
	waitFor(t, "the deletions recorded after the cut", 90*time.Second, func() (bool, error) {
		tdb, err := store.Open(db, store.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			return false, err
		}
		defer tdb.Close()
		objs, err := tdb.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns, Name: "r0"})
		if err != nil || len(objs) == 0 {
			return false, err
		}
		if objs[0].Deleted {
			seenAt = time.Now()
			return true, nil
		}
		return false, nil
	})
	t.Logf("FIGURE watch expired: cut %s, resumed after %s, deletion recorded %s after resuming",
		cutAt.Format("15:04:05.000"), resumed.Sub(cutAt).Round(100*time.Millisecond), seenAt.Sub(resumed).Round(100*time.Millisecond))
	if st := rec.signal(t, syscall.SIGTERM); !st.Success() {
		t.Fatalf("podtrace record after SIGTERM: %v\n%s", st, rec.stderr.String())
	}

	tdb, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := tdb.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		h, err := tdb.History(o.UID)
		if err != nil {
			t.Fatal(err)
		}
		rvs := map[string]store.EventType{}
		for _, r := range h {
			if prev, ok := rvs[r.ResourceVersion]; ok && r.Type != store.DeletedUnknown && r.Type != store.Deleted {
				t.Errorf("%s: revision %s recorded twice (%s, then %s)", o.Name, r.ResourceVersion, prev, r.Type)
			}
			rvs[r.ResourceVersion] = r.Type
		}
	}
	tdb.Close()

	for i := range pods {
		name := fmt.Sprintf("r%d", i)
		lc := lifecycle(t, db, ns, name)
		last := lc.Steps[len(lc.Steps)-1]
		if i < pods/2 {
			if last.Type != store.DeletedUnknown || lc.Outcome != diff.OutcomeGone {
				t.Errorf("%s, deleted during the cut: last step %s, outcome %q; want %s, %q", name, last.Type, lc.Outcome, store.DeletedUnknown, diff.OutcomeGone)
			}
			// The recorder saw the server go away: the cut is a gap, and
			// the deletion happened somewhere in it.
			if !strings.HasPrefix(last.Unobserved, "deleted while not observed, between") {
				t.Errorf("%s: last step's note %q, want deleted while not observed", name, last.Unobserved)
			}
			if len(lc.Gaps) == 0 || lc.Gaps[0].Cause != store.GapAPIServer {
				t.Errorf("%s: gaps %+v, want the API server's unreachability from the recorder", name, lc.Gaps)
			}
		} else if lc.Outcome != "Running" {
			t.Errorf("%s: outcome %q, want Running", name, lc.Outcome)
		}
		for _, f := range lc.Findings {
			if f.Severity == explain.Warning || f.Severity == explain.Critical {
				t.Errorf("%s: phantom finding %s: %s", name, f.ID, f.Headline)
			}
		}
	}
	lc := lifecycle(t, db, ns, changed)
	found := false
	for _, s := range lc.Steps {
		for _, ch := range s.Changes {
			if ch.Path == "metadata.labels[during]" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("%s: the label set during the cut is not in its recorded history", changed)
	}
	t.Logf("podtrace diff r0:\n%s", podtrace(t, "diff", "r0", "-n", ns, "--db", db, "--color", "never"))
	_ = context.Background
}
