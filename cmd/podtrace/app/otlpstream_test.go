package app

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestOTLPStream records two pods' histories into a new trace through
// record --otlp's stream, with an endpoint that fails at first: one pod
// deleted, one quiet (the sample trace's, stuck). With a queue of one,
// one waits and one is dropped, counted; once the endpoint answers, the
// one that waited arrives, read back from the trace.
func TestOTLPStream(t *testing.T) {
	quiet := traceRecords(t, sampleTrace)
	deleted := traceRecords(t, filepath.Join("testdata", "audit", "trace.db"))
	// The second trace's pod, deleted after its last revision.
	var last store.Record
	for _, r := range deleted {
		if r.Kind == "Pod" {
			last = r
		}
	}
	gone := last
	gone.Type, gone.Observed = store.Deleted, last.Observed.Add(time.Second)
	deleted = append(deleted, gone)

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
	s := newOTLPStream(path, client, otlp.Options{Cluster: "test"}, 200*time.Millisecond, 1, red, warn)
	recSink := s.wrap(sink)
	go s.run()

	if err := recSink.Write(deleted); err != nil {
		t.Fatal(err)
	}
	if err := recSink.Write(quiet); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a pod queued, the other dropped, a failed request", 10*time.Second, func() bool {
		st := s.stats()
		return st.Queued == 1 && st.Dropped == 1 && st.SendErrors > 0
	})
	if n := len(rc.Spans()); n != 0 {
		t.Fatalf("%d spans received while failing", n)
	}
	rc.SetFail(0)
	waitUntil(t, "the queued pod sent", 15*time.Second, func() bool { return s.stats().SentPods == 1 })
	st := s.stats()
	if st.Queued != 0 || st.Dropped != 1 || st.SentSpans == 0 {
		t.Errorf("stats %+v: want nothing queued, 1 dropped, spans sent", st)
	}
	names := rc.Names()
	if names["pod ci/runner-job-1"] != 1 {
		t.Errorf("spans received %v: want one pod's", names)
	}
	// The deleted pod ended first: it waited, and the quiet one was
	// dropped.
	spans := rc.Spans()
	if uid := spans[0].TraceId; otlp.TraceID("87d9cb75-b045-4dd1-8c75-c93d921b4f0c").String() != hexID(uid) {
		t.Errorf("trace %s received, want the deleted pod's", hexID(uid))
	}
	if !strings.Contains(otlptest.Text(spans), `podtrace.outcome = "Deleted"`) {
		t.Errorf("the deleted pod's trace does not say it was deleted:\n%s", otlptest.Text(spans))
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
		`sent the traces of 1 pod (`,
		`as cluster "test"; `,
		"not sent: 1 dropped while the queue (--otlp-queue 1) was full, 0 still queued at the end; podtrace export --otlp sends them from " + path,
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
