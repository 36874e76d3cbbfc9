package app

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/serve"
	"github.com/podtrace/podtrace/store"
)

// BenchmarkServeGetPods is the server side of `kubectl get pods -A` (a
// Table of every pod, redacted) at moments across BenchmarkDiffCommand's
// trace (1M records with PODTRACE_BENCH_RECORDS=1000000; issue 20: <= 200
// ms). It reports the rows served, the process's CPU time per request
// (steadier than the clock on a shared machine), the heap in use after, and
// the most the heap held while the requests ran (sampled every
// millisecond; the response is counted as it is written, not kept).
func BenchmarkServeGetPods(b *testing.B) {
	bt := diffTrace(b, benchRecords(b))
	srv := benchServer(b, bt.path)
	sessions := srv.Sessions()
	start, end := sessions[0].Started, srv.End()
	for _, frac := range []float64{0.1, 0.5, 1} {
		at := start.Add(time.Duration(float64(end.Sub(start)) * frac))
		b.Run(fmt.Sprintf("at=%.0f%%", frac*100), func(b *testing.B) {
			var rows int
			runtime.GC()
			peak := sampleHeap()
			cpu := cpuTime()
			for b.Loop() {
				rows = getPods(b, srv, at)
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(rows), "rows")
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		})
	}
}

// benchServer serves the trace at path, redacted as serve redacts by
// default, until the benchmark ends.
func benchServer(b *testing.B, path string) *serve.Server {
	b.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	red, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := serve.New(db, serve.Options{Redactor: red})
	if err != nil {
		b.Fatal(err)
	}
	return srv
}

// getPods is the request of `kubectl get pods -A` at the moment at: a
// Table of every pod. It returns the rows, counted as they are written.
func getPods(b *testing.B, srv *serve.Server, at time.Time) int {
	req := httptest.NewRequest(http.MethodGet, serve.Path(at)+"api/v1/pods", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	w := &countingWriter{count: []byte(`"cells":`)}
	srv.ServeHTTP(w, req)
	if w.code != 0 && w.code != http.StatusOK {
		b.Fatalf("%d %s", w.code, w.head.Bytes())
	}
	return w.n
}

// sampleHeap samples the bytes of heap objects every millisecond until the
// function it returns is called, which returns the most it saw.
func sampleHeap() func() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var mu sync.Mutex
	var most uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			mu.Lock()
			most = max(most, s[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(stop)
		<-done
		return float64(most)
	}
}

// countingWriter is an http.ResponseWriter that keeps the head of the body
// and counts a pattern in it, as it is written.
type countingWriter struct {
	hdr   http.Header
	code  int
	count []byte
	n     int
	tail  []byte // the last len(count)-1 bytes, for a match across writes
	head  bytes.Buffer
}

func (w *countingWriter) Header() http.Header {
	if w.hdr == nil {
		w.hdr = http.Header{}
	}
	return w.hdr
}

func (w *countingWriter) WriteHeader(code int) { w.code = code }

func (w *countingWriter) Write(p []byte) (int, error) {
	if room := 4<<10 - w.head.Len(); room > 0 {
		w.head.Write(p[:min(room, len(p))])
	}
	buf := append(w.tail, p...)
	w.n += bytes.Count(buf, w.count)
	keep := min(len(w.count)-1, len(buf))
	w.tail = append(w.tail[:0:0], buf[len(buf)-keep:]...)
	return len(p), nil
}

// BenchmarkServeFindings is what serve does after it starts answering:
// replay every pod of BenchmarkDiffCommand's trace for the kubeconfig's
// contexts at findings' moments. It reports the pods with a finding, the
// CPU time and the most the heap held.
func BenchmarkServeFindings(b *testing.B) {
	bt := diffTrace(b, benchRecords(b))
	db, err := store.Open(bt.path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	runtime.GC()
	peak := sampleHeap()
	cpu := cpuTime()
	var total int
	for b.Loop() {
		if _, total, err = findingMoments(b.Context(), db); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(peak()/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(total), "findings")
}
