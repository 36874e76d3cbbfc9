package diff

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/store"
)

// A recorder killed during a Job run, restarted 40 minutes later: the
// trace must say the same thing whenever it is read, and what it did not
// see it must not count.
func TestGapsKeepDurationsHonest(t *testing.T) {
	pod := finJobPod()
	running := finRunning(pod, "101")
	done := finFinished(running, "102", corev1.PodSucceeded)
	killed := finStart.Add(10 * time.Second) // session 1's last flush
	restart := finStart.Add(40 * time.Minute)
	sessions := []store.Session{
		{ID: 1, Started: finStart.Add(-time.Second), Alive: killed},
		{ID: 2, Started: restart, Stopped: restart.Add(time.Minute)},
	}
	recorderDown := store.Gap{Session: 2, Cause: store.GapRecorderDown, Start: killed, End: restart, Detail: "session 1 was interrupted"}

	t.Run("finished pod gone while not observed", func(t *testing.T) {
		in := Input{Sessions: sessions, Gaps: []store.Gap{recorderDown}, Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
			// The restarted recorder's list lacks it: reconciled.
			finRecord(t, 4, 40*time.Minute+time.Second, store.DeletedUnknown, "Pod", done),
		}}
		lc, err := Replay(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if lc.Outcome != OutcomeGone {
			t.Errorf("Outcome = %q, want %q", lc.Outcome, OutcomeGone)
		}
		for _, f := range lc.Findings {
			if f.Severity != Info {
				t.Errorf("finding %s (%s): %s; want none about a pod that was only not observed", f.ID, f.Severity, f.Headline)
			}
		}
		last := lc.Steps[len(lc.Steps)-1]
		want := "deleted while not observed, between 2026-05-04 10:00:10 and 2026-05-04 10:40:01"
		if last.Unobserved != want {
			t.Errorf("last step's note %q, want %q", last.Unobserved, want)
		}
		if len(lc.Gaps) != 1 || lc.Gaps[0].Cause != store.GapRecorderDown {
			t.Errorf("Gaps = %+v, want the recorder-down gap", lc.Gaps)
		}
	})

	t.Run("finished pod still held after the restart", func(t *testing.T) {
		in := Input{Sessions: sessions, Gaps: []store.Gap{recorderDown}, Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
			finRecord(t, 4, 40*time.Minute+time.Second, store.Initial, "Pod", done),
		}}
		lc, err := Replay(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Observed: 5 s in session 1, 60 s in session 2, not the 41 minutes
		// between the pod finishing and the end.
		var f *Finding
		for i := range lc.Findings {
			if lc.Findings[i].ID == "finalizer-not-removed" {
				f = &lc.Findings[i]
			}
		}
		if f == nil {
			t.Fatalf("no finalizer-not-removed finding; findings %+v", lc.Findings)
		}
		if !strings.HasPrefix(f.Headline, "finished 1m5s before the recording ended") {
			t.Errorf("headline %q, want the observed 1m5s", f.Headline)
		}
		var texts []string
		for _, e := range f.Evidence {
			texts = append(texts, e.Text)
		}
		all := strings.Join(texts, "\n")
		for _, want := range []string{"nothing observed for 39m50s: no recorder was running", "silence for 59s until the recording ended\n"} {
			if !strings.Contains(all, want) {
				t.Errorf("evidence lacks %q:\n%s", want, all)
			}
		}
		if got := lc.Steps[3].Unobserved; got != "seen again after a gap in observation, unchanged" {
			t.Errorf("relisted step's note %q", got)
		}
	})

	t.Run("killed and never restarted: the end is the last flush", func(t *testing.T) {
		in := Input{Sessions: sessions[:1], Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
		}}
		lc, err := Replay(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !lc.RecordingEnd.Equal(killed) {
			t.Errorf("RecordingEnd = %v, want the last flush %v", lc.RecordingEnd, killed)
		}
		for _, f := range lc.Findings {
			if f.ID == "finalizer-not-removed" {
				t.Errorf("finding %q 5s after the pod finished, within the %s the job controller has", f.Headline, FinalizerRemovalGrace)
			}
		}
		_ = batchv1.JobTrackingFinalizer
	})
}

func TestObservedFor(t *testing.T) {
	at := func(s int) time.Time { return finStart.Add(time.Duration(s) * time.Second) }
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
		if got := observedFor(gaps, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("observedFor(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

// A revision first seen after a gap may fold several requests: a removal
// in it is not pinned on the one manager whose entry moved.
func TestGapUnpinsRemovals(t *testing.T) {
	at := func(s int) time.Time { return finStart.Add(time.Duration(s) * time.Second) }
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
