package explain

// Containers: image pulls that fail, crash loops and OOM kills (image-pull,
// crash-loop, oom-killed).

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// containerTrouble finds image pulls that fail, crash loops and OOM kills,
// from the container statuses of every revision.
func containerTrouble(lc *diff.Lifecycle, in diff.Input) []Finding {
	type seen struct {
		ev    Evidence
		count int
	}
	pull := map[string]*seen{}
	crash := map[string]*seen{}
	oom := map[string]*seen{}
	var order []string
	// again counts one more sighting of key, if it was seen before.
	again := func(m map[string]*seen, key string) bool {
		if s, ok := m[key]; ok {
			s.count++
			return true
		}
		return false
	}
	note := func(m map[string]*seen, key string, step diff.Step, text string) {
		m[key] = &seen{ev: Evidence{Seq: step.Seq, Time: step.Time, Text: text}, count: 1}
		order = append(order, key)
	}
	for i, pod := range lc.Pods() {
		step := lc.Steps[i]
		for _, list := range [2][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
			for i := range list {
				s := &list[i]
				if w := s.State.Waiting; w != nil {
					switch w.Reason {
					case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
						if !again(pull, s.Name) {
							note(pull, s.Name, step, fmt.Sprintf("container %s waiting: %s: %s (image %s)", s.Name, w.Reason, w.Message, s.Image))
						}
					case "CrashLoopBackOff":
						if !again(crash, s.Name) {
							note(crash, s.Name, step, fmt.Sprintf("container %s waiting: CrashLoopBackOff, %d restarts: %s", s.Name, s.RestartCount, w.Message))
						}
					}
				}
				for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
					if t != nil && t.Reason == "OOMKilled" && !again(oom, s.Name) {
						note(oom, s.Name, step, fmt.Sprintf("container %s OOMKilled (exit %d) at %s", s.Name, t.ExitCode, t.FinishedAt.UTC().Format(time.RFC3339)))
					}
				}
			}
		}
	}
	var out []Finding
	for _, name := range sortedKeys(pull) {
		s := pull[name]
		f := Finding{ID: "image-pull", Severity: Warning, Headline: "image never pulled for container " + name, Evidence: []Evidence{s.ev}}
		f.Evidence = append(f.Evidence, eventsLike(lc, "Failed", "BackOff", "ErrImagePull")...)
		f.Next = []string{"check the image name and tag, that the registry is reachable from the node, and the pod's imagePullSecrets"}
		out = append(out, f)
	}
	for _, name := range sortedKeys(crash) {
		s := crash[name]
		out = append(out, Finding{ID: "crash-loop", Severity: Warning, Headline: "container " + name + " is crash looping", Evidence: []Evidence{s.ev},
			Next: []string{"read the previous container's logs: kubectl logs --previous -c " + name}})
	}
	for _, name := range sortedKeys(oom) {
		s := oom[name]
		out = append(out, Finding{ID: "oom-killed", Severity: Warning, Headline: "container " + name + " was killed for running out of memory", Evidence: []Evidence{s.ev},
			Next: []string{"raise the container's memory limit or find what makes it grow"}})
	}
	return out
}
