package app

import (
	"runtime/debug"
	"testing"
)

// TestBatchGC: record and report set their GOGC while they run and put the
// previous one back; a GOGC the user set wins.
func TestBatchGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	restore := batchGC(recordGCPercent)
	if got := debug.SetGCPercent(recordGCPercent); got != recordGCPercent {
		t.Errorf("GC percent while recording = %d, want %d", got, recordGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent after = %d, want the previous 100", got)
	}

	t.Setenv("GOGC", "50")
	restore = batchGC(recordGCPercent)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent with GOGC=50 set by the user = %d, want it untouched (100 here)", got)
	}
	restore()
}
