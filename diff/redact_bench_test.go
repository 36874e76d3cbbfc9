package diff

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// redactBench is a replayed pod of 1,000 revisions (BenchmarkReplay's) and
// a copy of its steps to redact afresh each time.
func redactBench(b *testing.B) (*Lifecycle, func()) {
	lc, err := Replay(Input{Pod: history(1000)}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	steps := lc.Steps
	return lc, func() {
		lc.Steps = make([]Step, len(steps))
		for i, s := range steps {
			lc.Steps[i] = s
			lc.Steps[i].Changes = append([]Change(nil), s.Changes...)
		}
	}
}

// BenchmarkRedact redacts the changes of a pod of 1,000 revisions, as
// podtrace diff does; BenchmarkRedactReference does it the way Redactor
// did before its prefilters and cache (refRedactor, in redact_test.go).
func BenchmarkRedact(b *testing.B) {
	lc, reset := redactBench(b)
	r, err := NewRedactor(nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		reset()
		r.Redact(lc)
	}
}

func BenchmarkRedactReference(b *testing.B) {
	lc, reset := redactBench(b)
	r, err := NewRedactor(nil)
	if err != nil {
		b.Fatal(err)
	}
	ref := newRefRedactor(r)
	for b.Loop() {
		reset()
		ref.Redact(lc)
	}
}

// BenchmarkRedactText runs text over real and generated strings, most
// with a word a credential needs, many repeated.
func BenchmarkRedactText(b *testing.B) {
	all := texts(rand.New(rand.NewPCG(1, 2)), 1000)
	r, err := NewRedactor(nil)
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
	r, err := NewRedactor(nil)
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
