package app

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

// BenchmarkRecorded runs the read commands on traces recorded on the local
// control plane by test/bench (its -out directory keeps trace.db, and
// trace-audit.db with the audit log imported): $PODTRACE_BENCH_TRACE, one
// path or several separated by commas. Their pods share owners with long
// histories, as on a real cluster, which the synthetic traces of the other
// benchmarks never do: a cost of pods x owner revisions shows here. It is
// skipped without the variable.
//
//	go run ./test/bench -workload rollout -pods 4000 -audit -podtrace _output/podtrace -out _output/bench-rollout
//	PODTRACE_BENCH_TRACE=_output/bench-rollout/trace.db,_output/bench-rollout/trace-audit.db \
//	  go test ./cmd/podtrace/app/ -run '^$' -bench Recorded -benchtime 3x -timeout 60m
//
// explain takes the pod with most revisions, compare the first and last
// pods recorded; serve answers `kubectl get pods -A` at the moment most
// pods were present.
func BenchmarkRecorded(b *testing.B) {
	env := os.Getenv("PODTRACE_BENCH_TRACE")
	if env == "" {
		b.Skip("set PODTRACE_BENCH_TRACE to traces test/bench recorded")
	}
	for _, path := range strings.Split(env, ",") {
		db, err := store.Open(path, store.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		pods, err := db.Objects(store.ObjectFilter{Kind: "Pod"})
		if err != nil {
			b.Fatal(err)
		}
		st, err := db.Stats()
		db.Close()
		if err != nil {
			b.Fatal(err)
		}
		if len(pods) < 2 {
			b.Fatalf("%s holds %d pods, want 2 or more", path, len(pods))
		}
		one := slices.MaxFunc(pods, func(a, b store.Object) int { return cmp.Compare(a.Revisions, b.Revisions) })
		first, last := pods[0], pods[len(pods)-1]
		name := strings.TrimSuffix(filepath.Base(path), ".db")
		b.Run(name+"/report", func(b *testing.B) {
			benchCommand(b, []string{"podtrace", "report", "--db", path, "--color", "never"}, func(out *countWriter, _ string) error {
				return contains(out.head.String(), fmt.Sprintf("Pods:    %d", len(pods)))
			})
			b.ReportMetric(float64(len(pods)), "pods")
			b.ReportMetric(float64(st.Records), "trace-records")
		})
		b.Run(name+"/report-html", func(b *testing.B) {
			page := filepath.Join(b.TempDir(), "report.html")
			benchCommand(b, []string{"podtrace", "report", "--html", "-o", page, "--db", path}, func(_ *countWriter, errOut string) error {
				return contains(errOut, fmt.Sprintf("wrote html report of %d pods", len(pods)))
			})
		})
		b.Run(name+"/explain", func(b *testing.B) {
			benchCommand(b, []string{"podtrace", "explain", one.Name, "-n", one.Namespace, "--uid", one.UID, "--db", path, "--color", "never"}, func(out *countWriter, _ string) error {
				return contains(out.head.String(), one.Name)
			})
		})
		b.Run(name+"/compare", func(b *testing.B) {
			benchCommand(b, []string{"podtrace", "compare", first.Namespace + "/" + first.Name, last.Namespace + "/" + last.Name, "--db", path, "--color", "never"}, func(out *countWriter, _ string) error {
				return contains(out.head.String(), "Verdict")
			})
		})
		b.Run(name+"/serve-get-pods", func(b *testing.B) {
			srv := benchServer(b, path)
			at := tracetest.Busiest(pods)
			cpu := cpuTime()
			var rows int
			for b.Loop() {
				rows = getPods(b, srv, at)
			}
			b.ReportMetric(float64(rows), "rows")
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}
