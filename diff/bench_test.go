package diff

import (
	"testing"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

// history is tracetest.History: n revisions of a crash-looping pod.
func history(n int) []store.Record { return tracetest.History(n) }

// BenchmarkReplay replays a pod with 1,000 revisions (the store's part of a
// diff, reading them, is BenchmarkHistory in store).
func BenchmarkReplay(b *testing.B) {
	recs := history(1000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Replay(Input{Pod: recs}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// crashLoop is tracetest.CrashLoop: a pod of the report benchmark.
func crashLoop(revs int) (pod, events []store.Record) { return tracetest.CrashLoop(revs) }

// BenchmarkReplayCrashLoop replays one pod of the report benchmark: 100
// crash-loop revisions and their events (the report replays 1,000 such).
func BenchmarkReplayCrashLoop(b *testing.B) {
	pod, events := crashLoop(100)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Replay(Input{Pod: pod, Events: events}, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
