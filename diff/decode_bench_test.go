package diff

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkDecodeCrashLoop decodes the revisions of one pod of the report
// benchmark (see crashLoop) with one decoder, as Replay does: the decoder's
// part of BenchmarkReplayCrashLoop.
func BenchmarkDecodeCrashLoop(b *testing.B) {
	pod, _ := crashLoop(100)
	b.ResetTimer()
	var keep []*corev1.Pod
	for b.Loop() {
		var d decoder
		keep = keep[:0]
		for _, rec := range pod {
			p, err := d.decode(rec)
			if err != nil {
				b.Fatal(err)
			}
			keep = append(keep, p)
		}
	}
}
