package app

import (
	"strconv"
	"testing"
)

// BenchmarkCompareCommand is `podtrace compare A B --db TRACE` for pods of
// 1,000 revisions in a trace of 100,000 records ($PODTRACE_BENCH_RECORDS=
// 1000000 for issue 19's target of <= 150 ms in a trace of 1,000,000). The
// trace has one pod of 1,000 revisions (diffTrace): it is compared with
// itself, loaded and replayed twice, which costs what two such pods cost
// but for the differences to render.
func BenchmarkCompareCommand(b *testing.B) {
	n := benchRecords(b)
	bt := diffTrace(b, n)
	b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
		pod := bt.targetNS + "/" + bt.target
		args := []string{"podtrace", "compare", pod, pod, "--db", bt.path, "--color", "never"}
		benchCommand(b, args, func(out *countWriter, _ string) error {
			return contains(out.head.String(), "Verdict: no decisive difference", "Ignored: ")
		})
	})
}
