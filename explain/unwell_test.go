package explain

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// TestLiveDeletionWithinGrace: a pod deleted with a 30s grace period and a
// foregroundDeletion finalizer, whose containers stopped at once and whose
// deletion the kubelet confirmed (deletionTimestamp moved to then, grace
// 0), read while the recorder still runs a second later: it is going, not
// stuck. Past its first grace period and the slack, it is stuck.
func TestLiveDeletionWithinGrace(t *testing.T) {
	fg := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.OwnerReferences = nil
		p.Finalizers = []string{metav1.FinalizerDeleteDependents}
		return p
	}
	created := finJobPod()
	created.OwnerReferences, created.Finalizers = nil, nil
	running := finRunning(created, "101")
	recs := func(t *testing.T) []store.Record {
		return []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", created),
			finRecord(t, 11, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 12, 4*time.Second, store.Updated, "Pod", finDeleted(fg(running), "102", 4*time.Second, 30)),
			finRecord(t, 13, 4300*time.Millisecond, store.Updated, "Pod", finDeleted(fg(finFinished(running, "103", corev1.PodSucceeded)), "103", 4300*time.Millisecond, 0)),
		}
	}
	live := func(t *testing.T, alive time.Duration) diff.Input {
		in := finInput(t, recs(t), nil, false, 0)
		in.End = time.Time{}
		// Recording now: no stop, its last sign of life at alive.
		in.Sessions = []store.Session{{ID: 1, Started: finStart.Add(-time.Minute), Alive: finStart.Add(alive)}}
		return in
	}
	for _, tc := range []struct {
		name  string
		alive time.Duration
		want  string // the most severe finding's id, "" for no warning
	}{
		{"a second after the request, still recording", 5300 * time.Millisecond, ""},
		{"within the first grace period", 30 * time.Second, ""},
		{"within the slack past it", 34*time.Second + TerminationSlack, ""},
		{"past the grace period and the slack", 34*time.Second + TerminationSlack + 2*time.Second, "stuck-finalizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(live(t, tc.alive), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := worstID(lc.Findings); got != tc.want {
				t.Errorf("most severe finding %q (%v), want %q", got, finIDs(lc.Findings), tc.want)
			}
			if v := Check(lc); len(v) > 0 {
				t.Errorf("invariant: %v", v)
			}
		})
	}
}

// worstID is the id of the most severe finding (they come most severe
// first) if it is a warning or critical, else "".
func worstID(fs []Finding) string {
	if len(fs) > 0 && fs[0].Severity > Info {
		return fs[0].ID
	}
	return ""
}
