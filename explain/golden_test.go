package explain

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden holds a test's findings to testdata/rules/NAME.json (as `explain
// -o json` carries them) and NAME.txt (their text: headline, mechanism,
// actor and its basis, evidence, suspects, next steps), NAME from the
// test's name. The rules' tests assert what matters; the goldens hold every
// word, so that a change to a rule's text is seen in review.
//
// Given the lifecycle too, it checks the invariant on it (Check): the
// goldens are fixtures of the property as well.
func golden(t *testing.T, fs []Finding, lcs ...*Lifecycle) {
	t.Helper()
	for _, lc := range lcs {
		for _, v := range Check(lc) {
			t.Errorf("invariant: %s", v)
		}
	}
	name := strings.Trim(regexp.MustCompile(`[^a-zA-Z0-9]+`).ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 100 {
		name = name[:100]
	}
	for _, f := range fs {
		if !ruleGives(f.ID) {
			t.Errorf("finding %q is given by no rule's IDs in Rules", f.ID)
		}
	}
	js, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		ext string
		got []byte
	}{{".json", append(js, '\n')}, {".txt", []byte(findingsText(fs))}} {
		path := filepath.Join("testdata", "rules", name+g.ext)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v: run go test ./explain -update to write it", err)
		}
		if string(want) != string(g.got) {
			t.Errorf("%s differs; if intended, run go test ./explain -update:\n--- want\n%s\n--- got\n%s", path, want, g.got)
		}
	}
}

// ruleGives reports whether a rule of Rules lists the finding id.
func ruleGives(id string) bool {
	for _, r := range Rules {
		for _, x := range r.IDs {
			if x == id {
				return true
			}
		}
	}
	return false
}

// findingsText is the findings as plain text, one field a line.
func findingsText(fs []Finding) string {
	if len(fs) == 0 {
		return "no finding\n"
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s: %s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Headline)
		if f.Mechanism != "" {
			fmt.Fprintf(&b, "  mechanism: %s\n", f.Mechanism)
		}
		if f.Actor != nil {
			fmt.Fprintf(&b, "  actor: %s\n", f.Actor.Label())
		}
		for _, e := range f.Evidence {
			at := "            "
			if !e.Time.IsZero() {
				at = e.Time.UTC().Format("15:04:05.000")
			}
			seq := ""
			if e.Seq != 0 {
				seq = fmt.Sprintf("#%d ", e.Seq)
			}
			fmt.Fprintf(&b, "  %s %s%s\n", at, seq, e.Text)
		}
		for _, s := range f.Suspects {
			fmt.Fprintf(&b, "  suspect %s %s (%s): failurePolicy %s, %s\n", s.Kind, s.Name, s.Configuration, s.FailurePolicy, s.Rules)
		}
		for _, n := range f.Next {
			fmt.Fprintf(&b, "  next: %s\n", n)
		}
	}
	return b.String()
}

// TestRuleGoldens: the rules that the other tests do not reach, each on a
// hand-made history shaped as the API server, the scheduler and the
// kubelet write it.
func TestRuleGoldens(t *testing.T) {
	plain := func() *corev1.Pod {
		p := finJobPod()
		p.Finalizers = nil
		return p
	}
	// history: created at 0, running at 2s, then the given revisions one
	// second apart; the end at 2 minutes.
	history := func(t *testing.T, revs ...*corev1.Pod) diff.Input {
		created := plain()
		recs := []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", created),
			finRecord(t, 11, 2*time.Second, store.Updated, "Pod", finRunning(created, "101")),
		}
		for i, p := range revs {
			recs = append(recs, finRecord(t, uint64(12+i), time.Duration(3+i)*time.Second, store.Updated, "Pod", p))
		}
		return finInput(t, recs, nil, false, 2*time.Minute)
	}
	waiting := func(rv, reason, message string, restarts int32) *corev1.Pod {
		p := finRunning(plain(), rv)
		s := &p.Status.ContainerStatuses[0]
		s.Ready, s.RestartCount, s.Image = false, restarts, "registry.example.com/work:1.0"
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
		return p
	}
	failedWith := func(rv, reason, message string) *corev1.Pod {
		p := finFinished(finRunning(plain(), rv), rv, corev1.PodFailed)
		p.Status.Reason, p.Status.Message = reason, message
		return p
	}
	for _, tc := range []struct {
		name string
		in   func(t *testing.T) diff.Input
		want string // the id of the first finding
	}{{
		name: "node-lost: terminating on a node that stopped reporting",
		in: func(t *testing.T) diff.Input {
			in := history(t, finDeleted(finRunning(plain(), "102"), "102", 3*time.Second, 30))
			node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "node-uid-a"},
				Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
					Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(finStart.Add(time.Second))}}}}
			in.Related["node-uid-a"] = []store.Record{finRecord(t, 5, time.Second, store.Updated, "Node", node)}
			return in
		},
		want: "node-lost",
	}, {
		name: "image-pull",
		in: func(t *testing.T) diff.Input {
			return history(t, waiting("102", "ErrImagePull", "failed to pull: not found", 0), waiting("103", "ImagePullBackOff", "Back-off pulling image", 0))
		},
		want: "image-pull",
	}, {
		name: "crash-loop",
		in: func(t *testing.T) diff.Input {
			return history(t, waiting("102", "CrashLoopBackOff", "back-off 40s restarting failed container", 3))
		},
		want: "crash-loop",
	}, {
		name: "oom-killed",
		in: func(t *testing.T) diff.Input {
			p := finRunning(plain(), "102")
			p.Status.ContainerStatuses[0].RestartCount = 1
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled",
				FinishedAt: metav1.NewTime(finStart.Add(3 * time.Second))}
			return history(t, p)
		},
		want: "oom-killed",
	}, {
		name: "failed: a container exited non-zero",
		in: func(t *testing.T) diff.Input {
			return history(t, finFinished(finRunning(plain(), "102"), "102", corev1.PodFailed))
		},
		want: "failed",
	}, {
		name: "evicted by the kubelet",
		in: func(t *testing.T) diff.Input {
			return history(t, failedWith("102", "Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."))
		},
		want: "evicted",
	}, {
		name: "deadline-exceeded",
		in: func(t *testing.T) diff.Input {
			return history(t, failedWith("102", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"))
		},
		want: "deadline-exceeded",
	}, {
		name: "deadline-exceeded: its spec.activeDeadlineSeconds named",
		in: func(t *testing.T) diff.Input {
			p := failedWith("102", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
			d := int64(15)
			p.Spec.ActiveDeadlineSeconds = &d
			p.Status.StartTime = &metav1.Time{Time: finStart.Add(2 * time.Second)}
			return history(t, p)
		},
		want: "deadline-exceeded",
	}, {
		name: "healthy: created, running, still running",
		in:   func(t *testing.T) diff.Input { return history(t) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && len(lc.Findings) > 0:
				t.Errorf("findings %v, want none", finIDs(lc.Findings))
			case tc.want != "" && (len(lc.Findings) == 0 || lc.Findings[0].ID != tc.want):
				t.Errorf("findings %v, want %s first", finIDs(lc.Findings), tc.want)
			}
			golden(t, lc.Findings, lc)
		})
	}
}
