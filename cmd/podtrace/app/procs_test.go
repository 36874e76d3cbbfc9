package app

import (
	"runtime"
	"testing"
)

// TestFewerProcs: record runs on one P while it records and puts the
// previous GOMAXPROCS back when the last overlapping recorder returns; a
// GOMAXPROCS the user set wins.
func TestFewerProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)

	t.Setenv("GOMAXPROCS", "")
	first := fewerProcs(recordProcs)
	if got := runtime.GOMAXPROCS(0); got != recordProcs {
		t.Fatalf("GOMAXPROCS while recording = %d, want %d", got, recordProcs)
	}
	second := fewerProcs(recordProcs)
	first()
	first() // twice: counted once
	if got := runtime.GOMAXPROCS(0); got != recordProcs {
		t.Errorf("GOMAXPROCS while a second recorder runs = %d, want %d", got, recordProcs)
	}
	second()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS after both = %d, want the previous 4", got)
	}

	runtime.GOMAXPROCS(1)
	restore := fewerProcs(recordProcs)
	restore()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS already 1 = %d after, want 1", got)
	}

	runtime.GOMAXPROCS(4)
	t.Setenv("GOMAXPROCS", "3")
	restore = fewerProcs(recordProcs)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("GOMAXPROCS with GOMAXPROCS=3 set by the user = %d, want it untouched (4 here)", got)
	}
	restore()
}
