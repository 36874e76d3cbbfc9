package app

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/otlp"
	"github.com/podtrace/podtrace/otlp/otlptest"
	"github.com/podtrace/podtrace/store"
)

// traceRecords reads every record of a trace, to write again.
func traceRecords(t *testing.T, path string) []store.Record {
	t.Helper()
	db, err := openTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var recs []store.Record
	if err := db.Scan(func(r store.Record) error {
		r.Seq = 0
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestOTLPStream records histories into a new trace through record
// --otlp's stream, with an endpoint that fails at first and a queue of
// two: pods A and B deleted, then the sample trace's pod Q (stuck, quiet),
// then pod C deleted. A and B wait; Q waits for room, not dropped (it is
// quiet: nothing is lost); C is dropped and counted. Once the endpoint
// answers, A and B arrive, then Q, read back from the trace.
func TestOTLPStream(t *testing.T) {
	quiet := traceRecords(t, sampleTrace)
	deleted := traceRecords(t, filepath.Join("testdata", "audit", "trace.db"))
	// The second trace's pod, deleted after its last revision: A; and its
	// revisions again as pods of their own (the pods alone), B and C.
	var podRecs []store.Record
	for _, r := range deleted {
		if r.Kind == "Pod" {
			podRecs = append(podRecs, r)
		}
	}
	gone := podRecs[len(podRecs)-1]
	gone.Type, gone.Observed = store.Deleted, gone.Observed.Add(time.Second)
	deleted = append(deleted, gone)
	podRecs = append(podRecs, gone)
	const uidA = "87d9cb75-b045-4dd1-8c75-c93d921b4f0c"
	like := func(n int) ([]store.Record, string) {
		uid := fmt.Sprintf("87d9cb75-b045-4dd1-8c75-c93d921b4f%02d", n)
		var out []store.Record
		for _, r := range podRecs {
			r.UID, r.Name = uid, fmt.Sprintf("runner-job-%d", n)
			r.Object = bytes.ReplaceAll(bytes.ReplaceAll(r.Object, []byte(uidA), []byte(uid)), []byte(`"runner-job-1"`), []byte(fmt.Sprintf(`"runner-job-%d"`, n)))
			out = append(out, r)
		}
		return out, uid
	}
	podB, uidB := like(2)
	podC, uidC := like(3)

	path := filepath.Join(t.TempDir(), "trace.db")
	w, err := store.NewWriter(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	session, err := w.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Context: "test", Started: quiet[0].Observed.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warnings []string
	warn := func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() }
	sink := newTraceSink(w, path, session.ID, warn)

	rc, srv := otlptest.NewServer()
	defer srv.Close()
	rc.SetFail(http.StatusServiceUnavailable)
	client, err := otlp.NewClient(otlp.ClientOptions{Endpoint: srv.URL, Protocol: otlp.ProtocolHTTP, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	red := &redactFlags{}
	if err := red.Complete(); err != nil {
		t.Fatal(err)
	}
	s := newOTLPStream(path, client, otlp.Options{Cluster: "test"}, 200*time.Millisecond, 2, red, warn)
	recSink := s.wrap(sink)
	go s.run()

	for _, recs := range [][]store.Record{deleted, podB, quiet} {
		if err := recSink.Write(recs); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // quiet scans: Q is quiet, and waits
	if err := recSink.Write(podC); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "two pods queued, one dropped, a failed request", 10*time.Second, func() bool {
		st := s.stats()
		return st.Queued == 2 && st.Dropped == 1 && st.SendErrors > 0
	})
	if n := len(rc.Spans()); n != 0 {
		t.Fatalf("%d spans received while failing", n)
	}
	rc.SetFail(0)
	waitUntil(t, "three pods sent", 20*time.Second, func() bool { return s.stats().SentPods == 3 })
	st := s.stats()
	if st.Queued != 0 || st.Dropped != 1 || st.SentSpans == 0 {
		t.Errorf("stats %+v: want nothing queued, 1 dropped, spans sent", st)
	}
	// A and B, deleted, first; then Q; never C.
	var order []string
	seen := map[string]bool{}
	for _, sp := range rc.Spans() {
		if id := hexID(sp.TraceId); !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	want := []string{otlp.TraceID(uidA).String(), otlp.TraceID(uidB).String(), otlp.TraceID("78dc8001-9b83-4f4d-8273-8d448f4ba592").String()}
	first := map[string]bool{}
	for _, id := range order[:min(2, len(order))] {
		first[id] = true
	}
	if len(order) != 3 || !first[want[0]] || !first[want[1]] || order[2] != want[2] {
		t.Errorf("traces received in the order %v, want A and B (%s, %s), then Q (%s); C (%s) dropped", order, want[0], want[1], want[2], otlp.TraceID(uidC))
	}
	text := otlptest.Text(rc.Spans())
	if strings.Count(text, `podtrace.outcome = "Deleted"`) != 2 || strings.Count(text, `podtrace.outcome = "Terminating"`) != 1 {
		t.Errorf("want two deleted pods and a terminating one:\n%s", text)
	}

	sink.flush()
	if err := w.EndSession(session.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.finishAndReport(&out)
	s.finishAndReport(&out) // once only
	for _, want := range []string{
		`sent the traces of 3 pods (`,
		`as cluster "test"; `,
		"not sent: 1 dropped while the queue (--otlp-queue 2) was full, 0 still queued at the end; podtrace export --otlp sends them from " + path,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary %q: want %q", out.String(), want)
		}
	}
	if strings.Count(out.String(), "sent the traces") != 1 {
		t.Errorf("summary written twice:\n%s", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"dropping the traces of the pods that end", "takes traces again"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q: want one with %q", joined, want)
		}
	}
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOTLPStreamHoldsWithinGrace: a quiet pod whose deletion was asked for
// moments ago is going, not stuck, and its trace would say neither: the
// stream holds it until its grace period and explain's slack are over,
// then sends it as it is then (the sample trace's pod: stuck, its root in
// error), once.
func TestOTLPStreamHoldsWithinGrace(t *testing.T) {
	recs := traceRecords(t, sampleTrace)
	var requested time.Time
	for _, r := range recs {
		if r.Kind == "Pod" && bytes.Contains(r.Object, []byte(`"deletionTimestamp"`)) {
			requested = r.Observed
			break
		}
	}
	if requested.IsZero() {
		t.Fatal("the sample trace's pod has no deletion request")
	}
	path := filepath.Join(t.TempDir(), "trace.db")
	w, err := store.NewWriter(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	session, err := w.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Context: "test", Started: recs[0].Observed.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	sink := newTraceSink(w, path, session.ID, func(string) {})
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	client, err := otlp.NewClient(otlp.ClientOptions{Endpoint: srv.URL, Protocol: otlp.ProtocolHTTP, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	red := &redactFlags{}
	if err := red.Complete(); err != nil {
		t.Fatal(err)
	}
	s := newOTLPStream(path, client, otlp.Options{Cluster: "test"}, 200*time.Millisecond, 10, red, func(string) {})
	var mu sync.Mutex
	now := requested.Add(3 * time.Second) // within the grace period (0s) and the slack
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	if err := s.wrap(sink).Write(recs); err != nil {
		t.Fatal(err)
	}
	sink.flush()
	go s.run()
	defer s.finishAndReport(&bytes.Buffer{})
	time.Sleep(3 * time.Second) // quiet scans, a read of the pod, the gather
	if st := s.stats(); st.SentPods != 0 || len(rc.Spans()) != 0 {
		t.Fatalf("sent %d pods (%d spans) 3s after the deletion request: want it held until its grace period and the slack are over", st.SentPods, len(rc.Spans()))
	}
	mu.Lock()
	now = requested.Add(explain.TerminationSlack + 5*time.Second)
	mu.Unlock()
	waitUntil(t, "the pod sent once past its grace period and the slack", 20*time.Second, func() bool { return s.stats().SentPods == 1 })
	text := otlptest.Text(rc.Spans())
	if !strings.Contains(text, "STATUS_CODE_ERROR") || !strings.Contains(text, `podtrace.finding = "stuck-finalizer"`) {
		t.Errorf("the pod's trace, sent past its grace period and the slack: want its root in error with stuck-finalizer:\n%s", text)
	}
	time.Sleep(time.Second)
	if st := s.stats(); st.SentPods != 1 {
		t.Errorf("sent %d times, want once", st.SentPods)
	}
}
