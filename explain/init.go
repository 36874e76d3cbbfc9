package explain

// Init containers: a pod Pending past its allowance while an init
// container runs on (init-running). Init containers run one at a time, in
// order, each to completion (exit 0) before the next and before any of the
// pod's containers start; one that never exits holds the whole pod, however
// healthy it looks. Restartable init containers (sidecars, restartPolicy
// Always) are meant to run on and are not read here.

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// initRunning finds, for each stretch the pod was Pending past its
// allowance once bound, an init container running at the stretch's end.
func initRunning(lc *diff.Lifecycle, in diff.Input, d *diagnosis) []Finding {
	var out []Finding
	for _, s := range d.unwell {
		if s.State != StatePending {
			continue
		}
		// The last revision of the stretch: what the pod was doing as it
		// ended.
		i := seqIndex(lc, s.Seq)
		for j := i + 1; j < len(lc.Steps) && !lc.Steps[j].Time.After(s.End); j++ {
			i = j
		}
		pod, step := lc.Pods()[i], lc.Steps[i]
		for _, st := range pod.Status.InitContainerStatuses {
			spec := initSpec(pod, st.Name)
			if st.State.Running == nil || spec == nil || spec.RestartPolicy != nil && *spec.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				continue
			}
			since := st.State.Running.StartedAt.Time
			f := Finding{ID: "init-running", Severity: Warning}
			f.Headline = fmt.Sprintf("init container %s still running after %s: the pod's containers start only once it exits 0", st.Name, diff.Duration(s.End.Sub(since).Round(time.Second)))
			f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Start, Text: "from here: " + s.What()})
			text := fmt.Sprintf("init container %s running since %s", st.Name, since.UTC().Format(time.RFC3339))
			if cmd := append(append([]string{}, spec.Command...), spec.Args...); len(cmd) > 0 {
				text += fmt.Sprintf(", its command %q", cmd)
			}
			f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: text})
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodInitialized && c.Status != corev1.ConditionTrue {
					f.Evidence = append(f.Evidence, Evidence{Seq: step.Seq, Time: step.Time, Text: strings.TrimSpace(fmt.Sprintf("condition Initialized=%s %s: %s", c.Status, c.Reason, c.Message))})
				}
			}
			if s.Open {
				f.Evidence = append(f.Evidence, Evidence{Time: s.End, Text: "still running when the recording ended"})
			}
			f.Next = []string{
				"read what it waits for: kubectl logs -n " + lc.Namespace + " " + lc.Name + " -c " + st.Name,
				"an init container must exit 0 for the pod to go on: make what it waits for available, or bound its wait",
			}
			out = append(out, f)
		}
	}
	return out
}

// initSpec is the pod's init container named name, or nil.
func initSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
