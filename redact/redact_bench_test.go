package redact

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/internal/tracetest"
)

// redactBench is a replayed pod of 1,000 revisions (BenchmarkReplay's) and
// a copy of its steps to redact afresh each time.
func redactBench(b *testing.B) (*diff.Lifecycle, func()) {
	lc, err := diff.Replay(diff.Input{Pod: tracetest.History(1000)}, diff.Options{})
	if err != nil {
		b.Fatal(err)
	}
	steps := lc.Steps
	return lc, func() {
		lc.Steps = make([]diff.Step, len(steps))
		for i, s := range steps {
			lc.Steps[i] = s
			lc.Steps[i].Changes = append([]diff.Change(nil), s.Changes...)
		}
	}
}

// BenchmarkRedact redacts the changes of a pod of 1,000 revisions, as
// podtrace diff does; BenchmarkRedactReference does it the way Redactor
// did before its prefilters and cache (refRedactor, in redact_test.go).
func BenchmarkRedact(b *testing.B) {
	lc, reset := redactBench(b)
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		reset()
		r.Redact(&explain.Lifecycle{Lifecycle: lc})
	}
}

func BenchmarkRedactReference(b *testing.B) {
	lc, reset := redactBench(b)
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	ref := newRefRedactor(r)
	for b.Loop() {
		reset()
		ref.Redact(lc)
	}
}

// redactCrashLoopBench is one pod of the report benchmark replayed
// (tracetest.CrashLoop(100), BenchmarkReplayCrashLoop's: about 1,000 changes, most of
// them the kubelet's status fields of a crash-looping pod) and what resets
// its changes and events to the replayed ones, in memory kept from one reset
// to the next: -benchmem counts the Redactor's allocations only.
func redactCrashLoopBench(b *testing.B) (*diff.Lifecycle, func()) {
	pod, events := tracetest.CrashLoop(100)
	lc, err := diff.Replay(diff.Input{Pod: pod, Events: events}, diff.Options{})
	if err != nil {
		b.Fatal(err)
	}
	steps := make([][]diff.Change, len(lc.Steps))
	for i, s := range lc.Steps {
		steps[i] = append([]diff.Change(nil), s.Changes...)
	}
	evs := append([]diff.Event(nil), lc.Events...)
	return lc, func() {
		for i := range lc.Steps {
			copy(lc.Steps[i].Changes, steps[i])
		}
		copy(lc.Events, evs)
		lc.Redacted = nil
	}
}

// BenchmarkRedactCrashLoop redacts the changes and events of one pod of the
// report benchmark with one Redactor for every pod, as each worker of
// podtrace report does (app.redactFlags.forWorker); it reports the changes
// redacted per op.
func BenchmarkRedactCrashLoop(b *testing.B) {
	lc, reset := redactCrashLoopBench(b)
	n := 0
	for _, s := range lc.Steps {
		n += len(s.Changes)
	}
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		reset()
		r.Redact(&explain.Lifecycle{Lifecycle: lc})
	}
	b.ReportMetric(float64(n), "changes/op")
}

// BenchmarkRedactText runs text over real and generated strings, most
// with a word a credential needs, many repeated.
func BenchmarkRedactText(b *testing.B) {
	all := texts(rand.New(rand.NewPCG(1, 2)), 1000)
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	r.counts = map[string]int{}
	for b.Loop() {
		for _, s := range all {
			r.text(s)
		}
	}
}

func BenchmarkRedactTextReference(b *testing.B) {
	all := texts(rand.New(rand.NewPCG(1, 2)), 1000)
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	ref := newRefRedactor(r)
	for b.Loop() {
		for _, s := range all {
			ref.text(s)
		}
	}
}

// crashLoopValues are the values of the changes of tracetest.CrashLoop(100), Old
// and New, as Replay renders them: timestamps, booleans, container IDs,
// counts and small JSON objects of container states.
func crashLoopValues(b *testing.B) []string {
	pod, events := tracetest.CrashLoop(100)
	lc, err := diff.Replay(diff.Input{Pod: pod, Events: events}, diff.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var vs []string
	for _, s := range lc.Steps {
		for _, c := range s.Changes {
			for _, v := range []string{c.Old, c.New} {
				if v != "" {
					vs = append(vs, v)
				}
			}
		}
	}
	return vs
}

// BenchmarkMayHoldCredentialCrashLoop is the prefilter over the values of
// a crash-looping pod's changes, none of which holds a credential word.
func BenchmarkMayHoldCredentialCrashLoop(b *testing.B) {
	vs := crashLoopValues(b)
	bytes := 0
	for _, v := range vs {
		bytes += len(v)
	}
	b.SetBytes(int64(bytes))
	for b.Loop() {
		for _, v := range vs {
			if mayHoldCredential(v) {
				b.Fatalf("mayHoldCredential(%q) = true", v)
			}
		}
	}
}

// BenchmarkMayHoldCredentialUnicode is the prefilter over 64 KiB of
// non-ASCII text: linear, not quadratic, in the string's length.
func BenchmarkMayHoldCredentialUnicode(b *testing.B) {
	s := strings.Repeat("日本語のテキスト", 64<<10/24)
	for b.Loop() {
		if mayHoldCredential(s) {
			b.Fatal("mayHoldCredential found a credential word in Japanese")
		}
	}
}
