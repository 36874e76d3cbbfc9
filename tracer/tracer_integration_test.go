package tracer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
	"github.com/podtrace/podtrace/tracer"
)

// sink keeps the records it is given, the pods sent as protobuf as their
// JSON (what a read of the trace gives), and counts those by UID.
type sink struct {
	mu     sync.Mutex
	recs   []store.Record
	protos map[string]int
}

func (s *sink) Write(b []store.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range b {
		if r.Proto {
			if s.protos == nil {
				s.protos = map[string]int{}
			}
			s.protos[r.UID]++
			data, err := r.JSON()
			if err != nil {
				return fmt.Errorf("sink: %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
			}
			r.Object, r.Proto = data, false
		}
		s.recs = append(s.recs, r)
	}
	return nil
}

func (s *sink) records() []store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Record(nil), s.recs...)
}

// TestRecordPodLifecycle records a pod created, scheduled, run by kwok and
// deleted on the local control plane, with a Secret the pod owns, and checks
// that the tracer saw exactly the revisions an independent watch saw.
func TestRecordPodLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := c.Client()
	const ns = "trace"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var warnings []string
	tr, err := tracer.New(tracer.Options{
		RESTConfig: c.RESTConfig(), Namespace: ns, FlushInterval: 50 * time.Millisecond,
		Warn: func(s string) { warnings = append(warnings, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tr.Run(runCtx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("tracer not ready")
	}

	// An independent watch on the pod: what the tracer must match.
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "job").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	pod, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const secretValue = "hunter2-do-not-record"
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "job-pull", Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
		Data:       map[string][]byte{"token": []byte(secretValue)},
	}
	if secret, err = client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var want []string
	wantJSON := map[string][]byte{} // by resourceVersion: encoding/json of the typed pod
	add := func(e watch.Event) {
		p, ok := e.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch: %T %v", e.Object, e.Object)
		}
		typ := map[watch.EventType]store.EventType{watch.Added: store.Added, watch.Modified: store.Updated, watch.Deleted: store.Deleted}[e.Type]
		want = append(want, fmt.Sprintf("%s rv=%s", typ, p.ResourceVersion))
		p = p.DeepCopy()
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON[p.ResourceVersion] = data
	}
	// Wait for kwok to run it.
	for running := false; !running; {
		select {
		case e := <-w.ResultChan():
			add(e)
			running = e.Object.(*corev1.Pod).Status.Phase == corev1.PodRunning
		case <-ctx.Done():
			t.Fatalf("pod not running; watch saw %v", want)
		}
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deleted := false; !deleted; {
		select {
		case e := <-w.ResultChan():
			add(e)
			deleted = e.Type == watch.Deleted
		case <-ctx.Done():
			t.Fatalf("pod not deleted; watch saw %v", want)
		}
	}
	// The garbage collector deletes the Secret the pod owned.
	for {
		_, err := client.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the garbage collector did not delete the pod's Secret")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hasSecretDeleted := func() bool {
		for _, r := range out.records() {
			if r.Kind == "Secret" && r.Type == store.Deleted {
				return true
			}
		}
		return false
	}
	for !hasSecretDeleted() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	var got []string
	var scheduled, secretRecs int
	for _, r := range out.records() {
		switch {
		case r.Kind == "Pod" && r.UID == string(pod.UID):
			got = append(got, fmt.Sprintf("%s rv=%s", r.Type, r.ResourceVersion))
			// The recorder writes a pod's spec and status straight from
			// the protobuf (rawPod): the bytes encoding/json writes for
			// the typed pod.
			if w, ok := wantJSON[r.ResourceVersion]; ok && !bytes.Equal(r.Object, w) {
				t.Errorf("pod rv=%s: recorded JSON differs from encoding/json's of the typed pod:\n%s\n%s", r.ResourceVersion, r.Object, w)
			}
		case r.Kind == "Event" && len(r.Refs) > 0 && r.Refs[0] == string(pod.UID) && strings.Contains(string(r.Object), `"reason":"Scheduled"`):
			scheduled++
		case r.Kind == "Secret" && r.UID == string(secret.UID):
			secretRecs++
			if bytes.Contains(r.Object, []byte(secretValue)) || bytes.Contains(r.Object, []byte(base64.StdEncoding.EncodeToString([]byte(secretValue)))) {
				t.Errorf("Secret data recorded: %s", r.Object)
			}
			if bytes.Contains(r.Object, []byte(`"data"`)) {
				t.Errorf("Secret record has a data field: %s", r.Object)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod revisions, tracer vs. an independent watch (-want +got):\n%s", diff)
	}
	if len(got) < 4 {
		t.Errorf("only %d pod revisions: want create, binding, running, ..., delete", len(got))
	}
	out.mu.Lock()
	if protos := out.protos[string(pod.UID)]; protos < len(got)-1 {
		// All but the deletion, whose tombstone may come without an object.
		t.Errorf("%d of %d pod revisions came as protobuf: the API server served protobuf", protos, len(got))
	}
	out.mu.Unlock()
	t.Logf("pod revisions: %v", got)
	if scheduled == 0 {
		t.Error("no Scheduled event about the pod was recorded")
	}
	if secretRecs < 2 {
		t.Errorf("%d records of the pod's Secret, want its creation and its deletion", secretRecs)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings as cluster admin: %v", warnings)
	}
}

// TestAPIServerGoesAway kills the API server while recording: the tracer
// warns that its watches keep failing, keeps retrying, and on shutdown
// returns without error with what it had recorded.
func TestAPIServerGoesAway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	var mu sync.Mutex
	var warnings []string
	tr, err := tracer.New(tracer.Options{
		RESTConfig: c.RESTConfig(), FlushInterval: 50 * time.Millisecond,
		Warn: func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("tracer not ready")
	}
	// The initial lists reach the sink within a flush interval.
	time.Sleep(500 * time.Millisecond)
	before := len(out.records())
	if before == 0 {
		t.Fatal("nothing recorded from the initial lists")
	}
	if err := syscall.Kill(c.Pid(cluster.KubeAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n := len(warnings)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no warning 90s after the API server died")
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned while the API server is away: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Log(string(buf[:runtime.Stack(buf, true)]))
		t.Fatal("Run did not return 10s after cancel with the API server away")
	}
	if got := len(out.records()); got < before {
		t.Errorf("%d records after shutdown, %d before the API server died", got, before)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("warnings: %q", warnings)
	if !strings.Contains(warnings[0], "still retrying") {
		t.Errorf("warning %q does not say the tracer keeps retrying", warnings[0])
	}
}

// TestRelistDeletionIsRecorded deletes a pod while the tracer cannot see the
// API server and checks that the deletion the informer infers from its relist
// reaches the trace as a DeletedFinalStateUnknown record whose object is the
// pod as last recorded.
//
// How the relist comes about, for real: the tracer dials through a gate. The
// test shuts the gate (closing the tracer's connections; its new dials wait),
// deletes the pod, so the deletion exists only in etcd and in the API
// server's watch cache, and restarts the API server: the new one's watch
// cache starts from etcd's current revision, after the deletion. When the
// gate opens, the tracer's pod reflector resumes its watch from the
// resourceVersion of the last event it saw, before the deletion; the new
// watch cache has nothing that old and answers 410 Gone, so the reflector
// lists again (as it does at once after a watch that broke within a second).
// The pod is missing from the list, and the informer hands the handler a
// cache.DeletedFinalStateUnknown tombstone holding its cache entry, which no
// longer holds the object. The tracer's record has no object; the store
// keeps the last recorded revision's.
//
// Without the restart the resumed watch is served from the old watch cache
// and delivers the deletion as a watch event (tried: the pod's last record is
// then Deleted); without the gate the tracer would see it before the
// restart.
func TestRelistDeletionIsRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	client := c.Client()
	const ns = "relist"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	db, err := store.Open(filepath.Join(t.TempDir(), "trace.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := &storeSink{db: db}
	g := newGate()
	defer g.open() // a failed test must not leave the tracer's dials waiting
	cfg := c.RESTConfig()
	cfg.Dial = g.dial
	var mu sync.Mutex
	var warnings []string
	tr, err := tracer.New(tracer.Options{
		RESTConfig: cfg, Namespace: ns, FlushInterval: 50 * time.Millisecond,
		Warn: func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.Run(runCtx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("tracer not ready")
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	pod, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(pod.UID)
	// Wait until kwok runs it and the tracer recorded that revision.
	var running *corev1.Pod
	for running == nil {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			t.Fatal(err)
		case p.Status.Phase == corev1.PodRunning:
			running = p
		case ctx.Err() != nil:
			t.Fatalf("pod not running: %s", p.Status.Phase)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor(ctx, t, "the tracer to record the running pod", func() bool {
		return slices.ContainsFunc(out.sentOf(uid), func(r store.Record) bool { return r.ResourceVersion == running.ResourceVersion })
	})

	// Out of the tracer's sight: delete the pod, restart the API server.
	g.shut()
	zero := int64(0)
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitFor(ctx, t, "the pod to be gone", func() bool {
		_, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	began := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server restarted in %s", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	g.open()
	waitFor(ctx, t, "the tracer to record the pod's deletion", func() bool {
		recs := out.sentOf(uid)
		return isDeletion(recs[len(recs)-1].Type)
	})
	t.Logf("deletion recorded %s after the tracer's connections reopened", time.Since(began).Round(time.Millisecond))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	// What the tracer sent: revisions (as many as it saw before the gate
	// shut), then a tombstone without an object, naming the last of them.
	sent := out.sentOf(uid)
	t.Logf("records sent: %v", types(sent))
	if len(sent) < 3 {
		t.Fatalf("%d records of the pod, want at least created, running, deleted", len(sent))
	}
	tomb, lastSeen := sent[len(sent)-1], sent[len(sent)-2]
	for _, r := range sent[:len(sent)-1] {
		if isDeletion(r.Type) {
			t.Errorf("a deletion before the last record: %v", types(sent))
		}
	}
	if tomb.Type != store.DeletedUnknown {
		t.Fatalf("the pod's deletion was recorded as %s, want %s (a watch event, not a relist?)", tomb.Type, store.DeletedUnknown)
	}
	if len(tomb.Object) != 0 {
		t.Errorf("the tombstone's record came with an object (%d bytes), want none (the cache keeps identities)", len(tomb.Object))
	}
	if tomb.ResourceVersion != lastSeen.ResourceVersion || tomb.Name != pod.Name || tomb.Namespace != ns {
		t.Errorf("tombstone %s/%s rv=%s, want %s/%s rv=%s (the last revision recorded)",
			tomb.Namespace, tomb.Name, tomb.ResourceVersion, ns, pod.Name, lastSeen.ResourceVersion)
	}

	// What the trace holds: the last revision's object as the final state.
	hist, err := db.History(uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != len(sent) {
		t.Fatalf("%d revisions in the trace, %d sent: %v", len(hist), len(sent), types(hist))
	}
	last, prev := hist[len(hist)-1], hist[len(hist)-2]
	if last.Type != store.DeletedUnknown || prev.Type == store.DeletedUnknown || prev.Type == store.Deleted {
		t.Fatalf("last two revisions %s, %s; want a revision, then %s", prev.Type, last.Type, store.DeletedUnknown)
	}
	if prev.ResourceVersion != lastSeen.ResourceVersion {
		t.Errorf("the revision before the tombstone has rv=%s, want the last seen %s", prev.ResourceVersion, lastSeen.ResourceVersion)
	}
	if !bytes.Equal(last.Object, prev.Object) {
		t.Errorf("the tombstone's stored object is not the previous revision's:\n got %s\nwant %s", last.Object, prev.Object)
	}
	var final corev1.Pod
	if err := json.Unmarshal(last.Object, &final); err != nil {
		t.Fatalf("tombstone's object: %v", err)
	}
	if final.UID != pod.UID || final.Spec.NodeName == "" || len(final.Spec.Containers) != 1 || final.Status.Phase == "" {
		t.Errorf("the tombstone's object is not the whole pod as last recorded: %s", last.Object)
	}
	mu.Lock()
	t.Logf("warnings: %q", warnings)
	mu.Unlock()

	// The deletion was not observed, and the trace says so: a gap of the
	// pods (the API server never failed a request, so not an outage) covers it.
	out.mu.Lock()
	defer out.mu.Unlock()
	t.Logf("gaps: %+v", out.gaps)
	if !slices.ContainsFunc(out.gaps, func(g store.Gap) bool {
		return g.Cause == store.GapWatch && g.Resource == "pods" && !g.Start.After(deleted) && !g.End.Before(deleted)
	}) {
		t.Errorf("no %s gap of pods covers the deletion at %s", store.GapWatch, deleted.Format(time.StampMilli))
	}
}

// storeSink writes the tracer's records to a trace, and keeps a copy of
// each as the tracer sent it (Write fills in a tombstone's object).
type storeSink struct {
	db   *store.DB
	mu   sync.Mutex
	sent []store.Record
	gaps []store.Gap
}

func (s *storeSink) Gap(g store.Gap) {
	s.mu.Lock()
	s.gaps = append(s.gaps, g)
	s.mu.Unlock()
}

func (s *storeSink) Write(b []store.Record) error {
	s.mu.Lock()
	for _, r := range b {
		if r.Proto {
			data, err := r.JSON()
			if err != nil {
				s.mu.Unlock()
				return err
			}
			r.Object, r.Proto = data, false
		}
		s.sent = append(s.sent, r)
	}
	s.mu.Unlock()
	return s.db.Write(b)
}

// sentOf returns the records sent about the object with uid.
func (s *storeSink) sentOf(uid string) []store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var recs []store.Record
	for _, r := range s.sent {
		if r.UID == uid {
			recs = append(recs, r)
		}
	}
	return recs
}

func isDeletion(typ store.EventType) bool {
	return typ == store.Deleted || typ == store.DeletedUnknown
}

func types(recs []store.Record) []string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s rv=%s", r.Type, r.ResourceVersion))
	}
	return s
}

// waitFor polls ok every 50ms until it reports true, and fails t when ctx
// ends first.
func waitFor(ctx context.Context, t *testing.T, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// gate dials connections and can cut them: shut closes the connections it
// made and makes new dials wait until open.
type gate struct {
	mu     sync.Mutex
	opened chan struct{} // closed while the gate is open
	conns  []net.Conn
}

func newGate() *gate {
	g := &gate{opened: make(chan struct{})}
	close(g.opened)
	return g
}

func (g *gate) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	for {
		g.mu.Lock()
		opened := g.opened
		g.mu.Unlock()
		select {
		case <-opened:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		if g.opened == opened { // not shut meanwhile
			g.conns = append(g.conns, conn)
			g.mu.Unlock()
			return conn, nil
		}
		g.mu.Unlock()
		conn.Close()
	}
}

func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
	default:
		return // shut already
	}
	g.opened = make(chan struct{})
	for _, c := range g.conns {
		c.Close()
	}
	g.conns = nil
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

// gapSink is a sink that keeps the gaps too.
type gapSink struct {
	sink
	gmu  sync.Mutex
	gaps []store.Gap
}

func (s *gapSink) Gap(g store.Gap) {
	s.gmu.Lock()
	s.gaps = append(s.gaps, g)
	s.gmu.Unlock()
}

// TestRewatchAfterOutage kills the API server, keeps it down long enough for
// a reflector's watch back-off to grow (about 12 s: 0.8 s, then doubling,
// with jitter), restarts it and changes a pod as soon as it is ready: the
// tracer must record that change within a few seconds, not when its pod
// reflector wakes from its back-off (it slept up to ~30 s, see retryMax),
// and the outage must be a gap with its cause.
func TestRewatchAfterOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	client := c.Client()
	const ns = "outage"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := tracer.New(tracer.Options{RESTConfig: c.RESTConfig(), Namespace: ns, FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	out := &gapSink{}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.Run(runCtx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("tracer not ready")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	if pod, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recorded := func(rv string) (store.Record, bool) {
		for _, r := range out.records() {
			if r.UID == string(pod.UID) && r.ResourceVersion == rv {
				return r, true
			}
		}
		return store.Record{}, false
	}
	waitFor(ctx, t, "the tracer to record the pod", func() bool { _, ok := recorded(pod.ResourceVersion); return ok })

	killed := time.Now()
	if err := syscall.Kill(c.Pid(cluster.KubeAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(12 * time.Second)
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now() // ready: /readyz answered ok
	var changed *corev1.Pod
	patch := []byte(`{"metadata":{"labels":{"after":"outage"}}}`)
	waitFor(ctx, t, "the pod to be patched", func() bool {
		changed, err = client.CoreV1().Pods(ns).Patch(ctx, pod.Name, "application/merge-patch+json", patch, metav1.PatchOptions{})
		return err == nil
	})
	patched := time.Now()
	var rec store.Record
	waitFor(ctx, t, "the tracer to record the change", func() bool {
		var ok bool
		rec, ok = recorded(changed.ResourceVersion)
		return ok
	})
	delay := rec.Observed.Sub(back)
	t.Logf("API server down %s; change made %s after it was ready, recorded %s after it was ready",
		back.Sub(killed).Round(time.Millisecond), patched.Sub(back).Round(time.Millisecond), delay.Round(time.Millisecond))
	if delay > 3*time.Second {
		t.Errorf("the change was recorded %s after the API server was ready, want at most 3s", delay.Round(time.Millisecond))
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	out.gmu.Lock()
	defer out.gmu.Unlock()
	t.Logf("gaps: %+v", out.gaps)
	if len(out.gaps) != 1 {
		t.Fatalf("%d gaps, want the one outage", len(out.gaps))
	}
	g := out.gaps[0]
	if g.Cause != store.GapAPIServer || g.Detail == "" {
		t.Errorf("gap cause %q detail %q, want %q with the error", g.Cause, g.Detail, store.GapAPIServer)
	}
	// The gap starts with the first failed request after the kill (a
	// reflector's watch ends, it waits its first back-off of 0.8-1.6 s, then
	// asks again), and ends with the first answer, by the time it was ready.
	if g.Start.Before(killed) || g.Start.After(killed.Add(3*time.Second)) {
		t.Errorf("gap starts %s after the kill, want within 3s", g.Start.Sub(killed))
	}
	if g.End.Before(g.Start) || g.End.After(back.Add(time.Second)) || g.End.Before(killed.Add(12*time.Second)) {
		t.Errorf("gap ends %s after the kill, want between the restart (12s) and when the server was ready (%s)",
			g.End.Sub(killed), back.Sub(killed))
	}
}

// TestRelistIsAGap reproduces what the API server did to the recorder under
// load (BENCHMARKS.md, "Watches the API server ends"): it drops what it had queued for a
// watch and closes it, then closes the resumed watch at once with nothing
// sent, and client-go's reflector lists the pods again. The revisions made
// in between are lost to any informer; the tracer must say so with a gap
// that covers them, though the API server never stopped answering.
func TestRelistIsAGap(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	client := c.Client()
	const ns = "relisted"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cut := &watchCutter{}
	cfg := c.RESTConfig()
	cfg.WrapTransport = cut.wrap
	tr, err := tracer.New(tracer.Options{RESTConfig: cfg, Namespace: ns, FlushInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	out := &gapSink{}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.Run(runCtx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("tracer not ready")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "skipped", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	if pod, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recorded := func(rv string) bool {
		return slices.ContainsFunc(out.records(), func(r store.Record) bool { return r.UID == string(pod.UID) && r.ResourceVersion == rv })
	}
	waitFor(ctx, t, "the tracer to record the pod", func() bool { return recorded(pod.ResourceVersion) })
	// kwok may still be changing the pod; let it settle so that the held
	// watch holds only the patches below.
	time.Sleep(2 * time.Second)

	held := time.Now()
	cut.hold()
	var revs []string
	for _, step := range []string{"1", "2"} {
		p, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, "application/merge-patch+json",
			[]byte(`{"metadata":{"labels":{"step":"`+step+`"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, p.ResourceVersion)
	}
	time.Sleep(time.Second) // the held watch sends nothing meanwhile
	ended := time.Now()
	cut.end()
	waitFor(ctx, t, "the tracer to record the last patch", func() bool { return recorded(revs[1]) })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if recorded(revs[0]) {
		t.Fatalf("revision %s was recorded: the watch was not held, the test proves nothing", revs[0])
	}

	out.gmu.Lock()
	defer out.gmu.Unlock()
	t.Logf("gaps: %+v", out.gaps)
	if len(out.gaps) != 1 {
		t.Fatalf("%d gaps, want the one relist", len(out.gaps))
	}
	g := out.gaps[0]
	if g.Cause != store.GapWatch || g.Resource != "pods" || !strings.Contains(g.Detail, "nothing received") {
		t.Errorf("gap %s of %q (%s), want %s of pods saying the watch ended with nothing received", g.Cause, g.Resource, g.Detail, store.GapWatch)
	}
	if g.Start.After(held) || g.End.Before(ended) {
		t.Errorf("gap %s to %s does not cover the lost revision's time: held from %s to %s",
			g.Start.Format(time.StampMilli), g.End.Format(time.StampMilli), held.Format(time.StampMilli), ended.Format(time.StampMilli))
	}
}

// watchCutter wraps the tracer's transport to play an API server that drops
// a pods watch: hold makes the running watch deliver nothing more, end
// closes it and makes the next pods watch end at once, with nothing sent.
type watchCutter struct {
	mu        sync.Mutex
	current   *heldBody
	closeNext bool
}

func (w *watchCutter) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || !strings.HasSuffix(req.URL.Path, "/pods") || req.URL.Query().Get("watch") != "true" || resp.StatusCode != http.StatusOK {
			return resp, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.closeNext {
			w.closeNext = false
			resp.Body.Close()
			resp.Body = io.NopCloser(strings.NewReader(""))
			return resp, nil
		}
		w.current = &heldBody{ReadCloser: resp.Body, cut: make(chan struct{})}
		resp.Body = w.current
		return resp, nil
	})
}

func (w *watchCutter) hold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.current.holding.Store(true)
}

func (w *watchCutter) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeNext = true
	close(w.current.cut)
	w.current.ReadCloser.Close()
}

// heldBody is a watch body that, once holding, drops what it reads and
// waits for cut, then ends.
type heldBody struct {
	io.ReadCloser
	holding atomic.Bool
	cut     chan struct{}
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.holding.Load() {
		<-b.cut
		return 0, io.EOF
	}
	return n, err
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
