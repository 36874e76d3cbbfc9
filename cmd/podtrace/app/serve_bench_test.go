package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
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
// (steadier than the clock on a shared machine) and the heap in use after.
func BenchmarkServeGetPods(b *testing.B) {
	bt := diffTrace(b, benchRecords(b))
	db, err := store.Open(bt.path, store.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	red, err := redact.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := serve.New(db, serve.Options{Redactor: red})
	if err != nil {
		b.Fatal(err)
	}
	sessions := srv.Sessions()
	start, end := sessions[0].Started, srv.End()
	for _, frac := range []float64{0.1, 0.5, 1} {
		at := start.Add(time.Duration(float64(end.Sub(start)) * frac))
		b.Run(fmt.Sprintf("at=%.0f%%", frac*100), func(b *testing.B) {
			var rows int
			cpu := cpuTime()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, serve.Path(at)+"api/v1/pods", nil)
				req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
				rows = bytesCount(w.Body.Bytes(), `"cells":`)
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(rows), "rows")
			b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
		})
	}
}

func bytesCount(b []byte, s string) int {
	n := 0
	for i := 0; i+len(s) <= len(b); i++ {
		if string(b[i:i+len(s)]) == s {
			n++
		}
	}
	return n
}
