package explain

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
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
		in := diff.Input{Sessions: sessions, Gaps: []store.Gap{recorderDown}, Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
			// The restarted recorder's list lacks it: reconciled.
			finRecord(t, 4, 40*time.Minute+time.Second, store.DeletedUnknown, "Pod", done),
		}}
		lc, err := Replay(in, diff.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if lc.Outcome != diff.OutcomeGone {
			t.Errorf("Outcome = %q, want %q", lc.Outcome, diff.OutcomeGone)
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
		in := diff.Input{Sessions: sessions, Gaps: []store.Gap{recorderDown}, Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
			finRecord(t, 4, 40*time.Minute+time.Second, store.Initial, "Pod", done),
		}}
		lc, err := Replay(in, diff.Options{})
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
		in := diff.Input{Sessions: sessions[:1], Pod: []store.Record{
			finRecord(t, 1, 0, store.Added, "Pod", pod),
			finRecord(t, 2, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 3, 5*time.Second, store.Updated, "Pod", done),
		}}
		lc, err := Replay(in, diff.Options{})
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
