package app

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer"
)

// fakeTracer is a recordingTracer with fixed stats.
type fakeTracer struct {
	ready chan struct{}
	stats tracer.Stats
}

func (f *fakeTracer) Ready() <-chan struct{} { return f.ready }
func (f *fakeTracer) Stats() tracer.Stats    { return f.stats }

// get requests path from h and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// scrape parses /metrics with the Prometheus text parser.
func scrape(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of metric name whose labels include want; ok is
// false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

type fakePruner struct{ st store.PruneStats }

func (f fakePruner) PruneStats() store.PruneStats { return f.st }

func TestRecordServer(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	out := filepath.Join(dir, "trace.db")
	if err := os.WriteFile(out, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &recordServer{out: out, now: func() time.Time { return now }}
	h := s.handler()

	if code, _ := get(t, h, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not started") {
		t.Errorf("/readyz before the recording = %d %q, want 503 saying it has not started", code, body)
	}
	s.setWaiting("waiting for pid 7 on host h since 2026-03-01T11:00:00Z, which records into trace.db, to stop")
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for pid 7") {
		t.Errorf("/readyz while waiting for the lease = %d %q, want 503 saying whom it waits for", code, body)
	}
	s.setWaiting("")
	if _, ok := scrape(t, mustGet(t, h, "/metrics"))["podtrace_pruned_pods_total"]; ok {
		t.Errorf("retention metrics before the trace is open")
	}
	s.setWriter(fakePruner{store.PruneStats{Age: store.PruneCounts{Pods: 3, Objects: 9, Records: 22, Bytes: 4096},
		Transactions: 2, MaxTx: 12 * time.Millisecond, UsedBytes: 1 << 20, PageBytes: 2 << 20}})

	tr := &fakeTracer{ready: make(chan struct{}), stats: tracer.Stats{
		Objects: 12, Pods: 5, Events: 4, Revisions: 40,
		Kinds: []tracer.KindStats{
			{Resource: "pods", Kind: "Pod", Watched: true, Revisions: 30, Lists: 3, Watches: 4, WatchErrors: 1},
			{Resource: "secrets", Kind: "Secret", Watched: false},
		},
		APIServerFailures: 7,
	}}
	w := &fakeWriter{}
	sink := newTraceSink(w, out, 1, func(string) {})
	sink.now = func() time.Time { return now }
	s.set("https://127.0.0.1:6443", tr, sink, nil)

	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "have not synced") {
		t.Errorf("/readyz before sync = %d %q, want 503 saying the lists have not synced", code, body)
	}
	close(tr.ready)
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "never") {
		t.Errorf("/readyz before a flush = %d %q, want 503 (no flush yet)", code, body)
	}
	sink.add(batch(now, 3, 100))
	if err := sink.flush(); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after sync and a flush = %d %q, want 200", code, body)
	}

	code, body := get(t, h, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d\n%s", code, body)
	}
	fams := scrape(t, body)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"podtrace_ready", nil, 1},
		{"podtrace_revisions_total", map[string]string{"kind": "Pod"}, 30},
		{"podtrace_revisions_total", map[string]string{"kind": "Secret"}, 0},
		{"podtrace_resource_watched", map[string]string{"resource": "pods"}, 1},
		{"podtrace_resource_watched", map[string]string{"resource": "secrets"}, 0},
		{"podtrace_lists_total", map[string]string{"resource": "pods"}, 3},
		{"podtrace_relists_total", map[string]string{"resource": "pods"}, 2},
		{"podtrace_watches_total", map[string]string{"resource": "pods"}, 4},
		{"podtrace_watch_errors_total", map[string]string{"resource": "pods"}, 1},
		{"podtrace_objects_recorded", map[string]string{"of": "pods"}, 5},
		{"podtrace_errors_total", map[string]string{"error": "api_server"}, 7},
		{"podtrace_errors_total", map[string]string{"error": "watch"}, 1},
		{"podtrace_errors_total", map[string]string{"error": "trace_write"}, 0},
		{"podtrace_seconds_since_last_flush", nil, 0},
		{"podtrace_pending_records", nil, 0},
		{"podtrace_trace_bytes", nil, 4096},
		{"podtrace_info", map[string]string{"version": Version}, 1},
		{"podtrace_pruned_pods_total", map[string]string{"reason": "age"}, 3},
		{"podtrace_pruned_pods_total", map[string]string{"reason": "size"}, 0},
		{"podtrace_pruned_objects_total", map[string]string{"reason": "age"}, 9},
		{"podtrace_pruned_records_total", map[string]string{"reason": "age"}, 22},
		{"podtrace_pruned_bytes_total", map[string]string{"reason": "age"}, 4096},
		{"podtrace_prune_transactions_total", nil, 2},
		{"podtrace_prune_transaction_seconds_max", nil, 0.012},
		{"podtrace_trace_used_bytes", nil, 1 << 20},
		{"podtrace_trace_page_bytes", nil, 2 << 20},
	} {
		if got, ok := value(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Errorf("no Go runtime metrics")
	}
	if _, ok := fams["podtrace_audit_lines_read_total"]; ok {
		t.Errorf("audit metrics without --audit-log")
	}

	// A full disk: the records wait, the write errors count, and the
	// recorder is unready while they do.
	w.err = &fs.PathError{Op: "write", Path: out, Err: syscall.ENOSPC}
	now = now.Add(2 * time.Second)
	sink.add(batch(now, 5, 100))
	if err := sink.flush(); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot write") {
		t.Errorf("/readyz on a full disk = %d %q, want 503 saying the trace cannot be written", code, body)
	}
	fams = scrape(t, mustGet(t, h, "/metrics"))
	for name, want := range map[string]float64{"podtrace_pending_records": 5, "podtrace_pending_bytes": 500, "podtrace_seconds_since_last_flush": 2} {
		if got, _ := value(fams, name, nil); got != want {
			t.Errorf("on a full disk: %s = %v, want %v", name, got, want)
		}
	}
	if got, _ := value(fams, "podtrace_errors_total", map[string]string{"error": "trace_write"}); got != 1 {
		t.Errorf("on a full disk: trace_write errors = %v, want 1", got)
	}
	w.err = nil
	now = now.Add(retryEvery)
	if err := sink.flush(); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once the disk takes the records = %d %q, want 200", code, body)
	}

	// A reader holding the file past readyFlushAge.
	w.locked = true
	sink.add(batch(now, 1, 10))
	now = now.Add(readyFlushAge + time.Second)
	if err := sink.flush(); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "reader") {
		t.Errorf("/readyz with records held back = %d %q, want 503", code, body)
	}
	w.locked = false
	if err := sink.flush(); err != nil {
		t.Fatal(err)
	}

	// The API server away for longer than readyServerDown.
	tr.stats.APIServerDown = now.Add(-readyServerDown)
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "API server at https://127.0.0.1:6443 has not answered") {
		t.Errorf("/readyz with the API server away = %d %q, want 503 naming it", code, body)
	}
	tr.stats.APIServerDown = time.Time{}
	if code, _ := get(t, h, "/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with the API server back = %d, want 200", code)
	}
}

func mustGet(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	code, body := get(t, h, path)
	if code != http.StatusOK {
		t.Fatalf("%s = %d\n%s", path, code, body)
	}
	return body
}

func TestRecordListenFlag(t *testing.T) {
	for _, tc := range []struct{ listen, wantErr string }{
		{"127.0.0.1:0", ""},
		{":9090", ""},
		{"[::1]:9090", ""},
		{"9090", "--listen"},
		{"127.0.0.1:http", "port must be a number"},
		{"127.0.0.1:70000", "port must be a number"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			o := defaultRecordOptions()
			o.Listen = tc.listen
			err := o.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
