package diff

import (
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
)

var gapStart = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

func TestObservedFor(t *testing.T) {
	at := func(s int) time.Time { return gapStart.Add(time.Duration(s) * time.Second) }
	gaps := []Gap{{Start: at(10), End: at(20)}, {Start: at(15), End: at(30)}, {Start: at(50), End: at(60)}}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 100, 100*time.Second - 30*time.Second},
		{0, 10, 10 * time.Second},
		{12, 25, 0},
		{25, 55, 30*time.Second - 5*time.Second - 5*time.Second},
		{70, 60, 0},
	} {
		if got := ObservedFor(gaps, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("ObservedFor(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// A revision first seen after a gap may fold several requests: a removal
// in it is not pinned on the one manager whose entry moved.
func TestGapUnpinsRemovals(t *testing.T) {
	at := func(s int) time.Time { return gapStart.Add(time.Duration(s) * time.Second) }
	lc := &Lifecycle{RecordingEnd: at(100), Steps: []Step{
		{Seq: 1, Time: at(0), Type: store.Added},
		{Seq: 2, Time: at(60), Type: store.Initial, Changes: []Change{
			{Path: "metadata.finalizers[example.com/x]", Op: OpRemove, Manager: "kubectl-label", Basis: BasisManagedFields},
			{Path: "metadata.labels[a]", Op: OpAdd, Manager: "kubectl-label", Basis: BasisManagedFields},
		}},
	}}
	lc.gaps(Input{Sessions: []store.Session{{ID: 1, Started: at(0), Alive: at(10)}, {ID: 2, Started: at(50), Stopped: at(100)}}})
	rm, add := lc.Steps[1].Changes[0], lc.Steps[1].Changes[1]
	if rm.Basis != BasisUnknown || rm.Manager != "" || len(rm.Candidates) != 1 || rm.Candidates[0] != "kubectl-label" {
		t.Errorf("removal after a gap: %+v, want unknown with kubectl-label a candidate", rm)
	}
	if add.Basis != BasisManagedFields || add.Manager != "kubectl-label" {
		t.Errorf("a field the manager's entry owns stays its: %+v", add)
	}
	if !strings.HasPrefix(lc.Steps[1].Unobserved, "changed while not observed, between 2026-05-04 10:00:10 and") {
		t.Errorf("note %q", lc.Steps[1].Unobserved)
	}
}
