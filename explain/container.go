package explain

// Containers: image pulls that fail, crash loops, OOM kills, restarts,
// containers the kubelet could not create or start, and containers that
// exited non-zero while the pod ran on (image-pull, crash-loop,
// oom-killed, restarted, container-error, exited). Init containers are
// called init containers.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podtrace/podtrace/diff"
)

// sighting is a container state seen in one or more revisions: the first
// and the last, and how many. Only those two are put in words (text), at
// the first sighting and when the finding is made.
type sighting struct {
	first, last Evidence
	count       int
	// status is the container's status at the last sighting, pod its
	// revision.
	status corev1.ContainerStatus
	pod    *corev1.Pod
	text   func(corev1.ContainerStatus) string
}

// see notes a sighting at step; text puts a sighting in words.
func (s *sighting) see(step diff.Step, st corev1.ContainerStatus, pod *corev1.Pod, text func(corev1.ContainerStatus) string) *sighting {
	if s == nil {
		ev := Evidence{Seq: step.Seq, Time: step.Time, Text: text(st)}
		return &sighting{first: ev, last: ev, count: 1, status: st, pod: pod, text: text}
	}
	s.last, s.status, s.pod = Evidence{Seq: step.Seq, Time: step.Time}, st, pod
	s.count++
	return s
}

// evidence is the first sighting, and the last when there are more.
func (s *sighting) evidence() []Evidence {
	if s.count == 1 {
		return []Evidence{s.first}
	}
	last := s.last
	last.Text = s.text(s.status) + fmt.Sprintf(" (the last of %d revisions so)", s.count)
	return []Evidence{s.first, last}
}

// containerLife is what the revisions show of one container.
type containerLife struct {
	name string
	init bool
	// pull: waiting to pull its image; crash: CrashLoopBackOff; errored:
	// waiting with another reason the kubelet gives when it cannot create
	// or start it; oom: terminated OOMKilled (now or as its last state);
	// exited: terminated non-zero, not OOMKilled, while the pod was not
	// being deleted; restarts: its restartCount went up.
	pull, crash, errored, oom, exited, restarts *sighting
	restartCount                                int32
	seenRestarts                                bool
}

func (c *containerLife) noun() string { return containerNoun(c.name, c.init) }

// The sightings in words.
func (c *containerLife) pullText(s corev1.ContainerStatus) string {
	return fmt.Sprintf("%s waiting: %s: %s (image %s)", c.noun(), s.State.Waiting.Reason, s.State.Waiting.Message, s.Image)
}

func (c *containerLife) crashText(s corev1.ContainerStatus) string {
	return fmt.Sprintf("%s waiting: CrashLoopBackOff, %d restarts: %s", c.noun(), s.RestartCount, s.State.Waiting.Message)
}

func (c *containerLife) waitingText(s corev1.ContainerStatus) string {
	return fmt.Sprintf("%s waiting: %s: %s", c.noun(), s.State.Waiting.Reason, s.State.Waiting.Message)
}

func (c *containerLife) exitedText(s corev1.ContainerStatus) string {
	return fmt.Sprintf("%s terminated: %s, %s", c.noun(), s.State.Terminated.Reason, exitText(s.State.Terminated))
}

func (c *containerLife) oomText(s corev1.ContainerStatus) string {
	t := s.State.Terminated
	if t == nil || t.Reason != "OOMKilled" {
		t = s.LastTerminationState.Terminated
	}
	return fmt.Sprintf("%s OOMKilled (exit %d) at %s", c.noun(), t.ExitCode, t.FinishedAt.UTC().Format(time.RFC3339))
}

func (c *containerLife) restartText(s corev1.ContainerStatus) string {
	text := fmt.Sprintf("%s restarted (restartCount %d)", c.noun(), s.RestartCount)
	if t := s.LastTerminationState.Terminated; t != nil {
		text += fmt.Sprintf(": it had terminated %s, %s, at %s", t.Reason, exitText(t), t.FinishedAt.UTC().Format(time.RFC3339))
	}
	return text
}

// pullReasons are the kubelet's waiting reasons of an image that does not
// pull (pkg/kubelet/images).
var pullReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ImageInspectError"}

// containerTrouble reads every revision's container statuses.
func containerTrouble(lc *diff.Lifecycle, in diff.Input) []Finding {
	var lives []*containerLife
	life := func(name string, init bool) *containerLife {
		for _, c := range lives {
			if c.name == name && c.init == init {
				return c
			}
		}
		c := &containerLife{name: name, init: init}
		lives = append(lives, c)
		return c
	}
	type oomKey struct {
		init     bool
		name     string
		finished time.Time
	}
	oomSeen := map[oomKey]bool{}
	for i, pod := range lc.Pods() {
		step := lc.Steps[i]
		for _, l := range statusLists(pod) {
			for _, s := range l.list {
				c := life(s.Name, l.init)
				if w := s.State.Waiting; w != nil {
					switch {
					case slices.Contains(pullReasons, w.Reason):
						c.pull = c.pull.see(step, s, pod, c.pullText)
					case w.Reason == "CrashLoopBackOff":
						c.crash = c.crash.see(step, s, pod, c.crashText)
					case !startingReason(w.Reason):
						c.errored = c.errored.see(step, s, pod, c.waitingText)
					}
				}
				for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
					if t == nil || t.Reason != "OOMKilled" {
						continue
					}
					key := oomKey{l.init, s.Name, t.FinishedAt.Time}
					if oomSeen[key] {
						continue
					}
					oomSeen[key] = true
					c.oom = c.oom.see(step, s, pod, c.oomText)
				}
				if t := s.State.Terminated; t != nil && t.Reason != "OOMKilled" && t.ExitCode != 0 && pod.DeletionTimestamp == nil {
					c.exited = c.exited.see(step, s, pod, c.exitedText)
				}
				if c.seenRestarts && s.RestartCount > c.restartCount {
					c.restarts = c.restarts.see(step, s, pod, c.restartText)
				}
				c.restartCount, c.seenRestarts = s.RestartCount, true
			}
		}
	}
	var out []Finding
	for _, c := range lives {
		out = append(out, c.findings(lc)...)
	}
	return out
}

// findings are what one container's life shows.
func (c *containerLife) findings(lc *diff.Lifecycle) []Finding {
	var out []Finding
	if c.pull != nil {
		f := Finding{ID: "image-pull", Severity: Warning, Headline: "image never pulled for " + c.noun(), Evidence: c.pull.evidence()}
		st := c.pull.status
		if st.Image != "" {
			f.Headline = "image " + st.Image + " never pulled for " + c.noun()
		}
		if w := st.State.Waiting; w != nil && w.Reason != "" {
			f.Headline += ": " + w.Reason
		}
		f.Evidence = append(f.Evidence, eventsLike(lc, "Failed", "BackOff", "ErrImagePull", "InspectFailed", "ErrImageNeverPull")...)
		f.Next = []string{"check the image name and tag, that the registry is reachable from the node, and the pod's imagePullSecrets"}
		if w := st.State.Waiting; w != nil && w.Reason == "ErrImageNeverPull" {
			// imagePullPolicy Never: the kubelet does not pull, the image
			// must be on the node (kubelet images.ErrImageNeverPull).
			f.Next = []string{"with imagePullPolicy Never the kubelet never pulls: put the image on the node first, or set imagePullPolicy IfNotPresent"}
		}
		out = append(out, f)
	}
	if c.crash != nil {
		f := Finding{ID: "crash-loop", Severity: Warning, Headline: c.noun() + " is crash looping", Evidence: c.crash.evidence()}
		if t := c.crash.status.LastTerminationState.Terminated; t != nil {
			f.Headline += fmt.Sprintf(": restarted %s, the last time after it exited %d (%s)", times(int(c.crash.status.RestartCount)), t.ExitCode, t.Reason)
			f.Evidence = append(f.Evidence, Evidence{Seq: c.crash.last.Seq, Time: c.crash.last.Time,
				Text: fmt.Sprintf("%s last terminated: %s, %s, at %s", c.noun(), t.Reason, exitText(t), t.FinishedAt.UTC().Format(time.RFC3339))})
		}
		if c.restarts != nil {
			f.Evidence = append(f.Evidence, c.restarts.evidence()...)
		}
		f.Evidence = append(f.Evidence, backOffEvents(lc, c.name)...)
		f.Evidence = append(f.Evidence, probeKills(lc, c)...)
		f.Next = []string{"read the previous container's logs: kubectl logs --previous -n " + lc.Namespace + " " + lc.Name + " -c " + c.name}
		if t := c.crash.status.LastTerminationState.Terminated; t != nil && t.ExitCode == 0 && !c.init {
			// Exit 0 restarted: restartPolicy Always (or OnFailure would
			// not restart it), a command that ends instead of serving.
			policy := ""
			if c.crash.pod != nil && c.crash.pod.Spec.RestartPolicy != "" {
				policy = " (restartPolicy " + string(c.crash.pod.Spec.RestartPolicy) + ")"
			}
			f.Next = append([]string{"it exits 0 and the kubelet starts it again" + policy + ": its command ends instead of running on; run-to-completion work belongs in a Job"}, f.Next...)
		}
		c.killedByProbe(lc, c.crash, &f)
		out = append(out, f)
	}
	if c.oom != nil {
		limit, request := memoryOf(c.oom.pod, c.name, c.init)
		f := Finding{ID: "oom-killed", Severity: Warning, Evidence: c.oom.evidence()}
		f.Headline = fmt.Sprintf("%s was killed for running out of memory (memory limit %s, request %s)", c.noun(), limit, request)
		text := fmt.Sprintf("%s resources: memory limit %s, request %s", c.noun(), limit, request)
		if limit == "none" {
			text += ": with no limit of its own, the node's memory (or its pod's cgroup) ran out"
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: c.oom.first.Seq, Time: c.oom.first.Time, Text: text})
		if c.restarts != nil && c.crash == nil {
			f.Evidence = append(f.Evidence, c.restarts.evidence()...)
			f.Evidence = append(f.Evidence, backOffEvents(lc, c.name)...)
		}
		f.Next = []string{"raise the container's memory limit (resources.limits.memory) or find what makes it grow"}
		out = append(out, f)
	}
	if c.restarts != nil && c.crash == nil && c.oom == nil {
		f := Finding{ID: "restarted", Severity: Warning, Evidence: c.restarts.evidence()}
		f.Headline = fmt.Sprintf("%s restarted %s during the recording", c.noun(), times(c.restarts.count))
		if t := c.restarts.status.LastTerminationState.Terminated; t != nil {
			f.Headline += fmt.Sprintf(", the last time after it exited %d (%s)", t.ExitCode, t.Reason)
		}
		f.Evidence = append(f.Evidence, probeKills(lc, c)...)
		f.Evidence = append(f.Evidence, backOffEvents(lc, c.name)...)
		f.Next = []string{"read the previous container's logs: kubectl logs --previous -n " + lc.Namespace + " " + lc.Name + " -c " + c.name}
		c.killedByProbe(lc, c.restarts, &f)
		out = append(out, f)
	}
	if c.errored != nil {
		w := c.errored.status.State.Waiting
		f := Finding{ID: "container-error", Severity: Warning, Evidence: c.errored.evidence()}
		f.Headline = fmt.Sprintf("%s could not be started: %s", c.noun(), w.Reason)
		if w.Message != "" {
			f.Headline += ": " + shorten(w.Message, 160)
		}
		f.Evidence = append(f.Evidence, eventsLike(lc, "Failed", "FailedPostStartHook", "FailedCreatePodContainer")...)
		if w.Reason == "CreateContainerConfigError" {
			if refs := envRefs(c.errored.pod, c.name, c.init); refs != "" {
				f.Evidence = append(f.Evidence, Evidence{Seq: c.errored.first.Seq, Time: c.errored.first.Time,
					Text: c.noun() + " takes its environment from " + refs + ": podtrace records ConfigMaps and Secrets only when a pod owns them, so whether they existed is not in the trace"})
			}
		}
		f.Next = []string{"the kubelet's message says what failed: " + waitingAdvice(w.Reason)}
		out = append(out, f)
	}
	if c.exited != nil && c.restarts == nil && c.crash == nil {
		if _, failed := lc.Phase(diff.PhaseFailed); !failed {
			t := c.exited.status.State.Terminated
			f := Finding{ID: "exited", Severity: Warning, Evidence: c.exited.evidence()}
			f.Headline = fmt.Sprintf("%s exited %d (%s) while the pod ran on", c.noun(), t.ExitCode, t.Reason)
			f.Next = []string{"read its logs while the pod exists: kubectl logs -n " + lc.Namespace + " " + lc.Name + " -c " + c.name}
			out = append(out, f)
		}
	}
	return out
}

// waitingAdvice says where to look for a waiting reason the kubelet gives
// when it cannot create or start a container (pkg/kubelet/kuberuntime,
// pkg/kubelet/container).
func waitingAdvice(reason string) string {
	switch reason {
	case "CreateContainerConfigError":
		return "a ConfigMap, Secret or key the container's env or envFrom names is missing, or runAsNonRoot cannot be verified"
	case "CreateContainerError", "RunContainerError":
		return "the container runtime refused to create or start it (command not found, a mount, the security context): read the message and the runtime's log on the node"
	case "PreCreateHookError", "PreStartHookError":
		return "a hook of the kubelet's (a device plugin, the CPU or memory manager) refused the container"
	case "PostStartHookError":
		return "the container's postStart hook failed: the kubelet kills the container then"
	}
	return "read the message, and the kubelet's log on the node"
}

// memoryOf returns a container's memory limit and request from the pod's
// spec, "none" where not set.
func memoryOf(pod *corev1.Pod, name string, init bool) (limit, request string) {
	list := pod.Spec.Containers
	if init {
		list = pod.Spec.InitContainers
	}
	q := func(rl corev1.ResourceList) string {
		if v, ok := rl[corev1.ResourceMemory]; ok {
			return quantity(v)
		}
		return "none"
	}
	for _, c := range list {
		if c.Name == name {
			return q(c.Resources.Limits), q(c.Resources.Requests)
		}
	}
	return "unknown", "unknown"
}

func quantity(v resource.Quantity) string { return v.String() }

// backOffEvents are the kubelet's BackOff events about restarting a
// container ("Back-off restarting failed container NAME ...").
func backOffEvents(lc *diff.Lifecycle, name string) []Evidence {
	var out []Evidence
	for _, g := range warningGroups(lc) {
		if g.reason == "BackOff" && strings.Contains(g.message, "restarting failed container") &&
			(strings.Contains(g.message, "container "+name+" ") || strings.Contains(g.message, "container="+name) || !strings.Contains(g.message, "container ")) {
			out = append(out, groupEvidence(g)...)
		}
	}
	return out
}

// probeKills are the probe failures and the kubelet's kills for them
// ("Container NAME failed liveness probe, will be restarted"), for a
// container that restarted.
func probeKills(lc *diff.Lifecycle, c *containerLife) []Evidence {
	var out []Evidence
	killed := false
	for _, e := range lc.Events {
		if e.Reason == "Killing" && strings.Contains(e.Message, "Container "+c.name+" failed") && strings.Contains(e.Message, "probe") {
			out = append(out, Evidence{Seq: e.Seq, Time: e.Time, Text: eventText(&e)})
			killed = true
		}
	}
	if !killed {
		return nil
	}
	for _, g := range warningGroups(lc) {
		if probeEvent(g.occurrences[0]) && !strings.HasPrefix(g.message, "Readiness probe") {
			out = append(out, groupEvidence(g)...)
		}
	}
	return out
}

// probeKilled is the probe the kubelet killed the container for, as its
// Killing events name it ("Container NAME failed liveness probe, will be
// restarted": kuberuntime's message for a liveness or startup failure),
// the last such kind, and how many kills; "" and 0 if none was recorded.
func probeKilled(lc *diff.Lifecycle, name string) (kind string, kills int) {
	prefix := "Container " + name + " failed "
	// An event's revisions repeat its message with a growing count: the
	// kills of one message are its highest count.
	counts := map[string]int{}
	for i := range lc.Events {
		e := &lc.Events[i]
		if e.Reason != "Killing" || !strings.HasPrefix(e.Message, prefix) {
			continue
		}
		rest := strings.TrimPrefix(e.Message, prefix)
		for _, k := range []string{"Liveness", "Startup"} {
			if strings.HasPrefix(rest, strings.ToLower(k)+" probe") {
				kind = k
				counts[e.Message] = max(counts[e.Message], int(e.Count), 1)
			}
		}
	}
	for _, n := range counts {
		kills += n
	}
	return kind, kills
}

// killedByProbe puts in f's headline and first next step that the kubelet
// restarted the container because a probe failed, quoting the probe, when
// its Killing events say so: the exit code (137, SIGKILL) alone would read
// like the container's own failure.
func (c *containerLife) killedByProbe(lc *diff.Lifecycle, s *sighting, f *Finding) {
	kind, kills := probeKilled(lc, c.name)
	if kind == "" {
		return
	}
	f.Headline += fmt.Sprintf("; the kubelet killed it %s because its %s probe failed", times(kills), strings.ToLower(kind))
	probe := ""
	for _, spec := range containersOf(s.pod, c.init) {
		if spec.Name == c.name {
			if p := probeOf(&spec, kind); p != nil {
				probe = describeProbe(kind, p)
				f.Evidence = append(f.Evidence, Evidence{Seq: s.first.Seq, Time: s.first.Time, Text: c.noun() + " has a " + probe})
				probe = " (" + probe + ")"
			}
		}
	}
	f.Next = append([]string{"the " + strings.ToLower(kind) + " probe fails and the kubelet restarts the container for it: check what it checks against what the app serves, and its timing" + probe}, f.Next...)
}

// containersOf is a pod's containers, or its init containers.
func containersOf(pod *corev1.Pod, init bool) []corev1.Container {
	if pod == nil {
		return nil
	}
	if init {
		return pod.Spec.InitContainers
	}
	return pod.Spec.Containers
}

// times says a count: "once", "3 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

// envRefs names the ConfigMaps and Secrets a container's environment
// takes values from (env valueFrom, envFrom), or "".
func envRefs(pod *corev1.Pod, name string, init bool) string {
	list := pod.Spec.Containers
	if init {
		list = pod.Spec.InitContainers
	}
	var refs []string
	add := func(s string) {
		if !slices.Contains(refs, s) {
			refs = append(refs, s)
		}
	}
	for _, c := range list {
		if c.Name != name {
			continue
		}
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add("ConfigMap " + e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret " + e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if v := e.ValueFrom; v != nil {
				if v.ConfigMapKeyRef != nil {
					add(fmt.Sprintf("ConfigMap %s (key %s)", v.ConfigMapKeyRef.Name, v.ConfigMapKeyRef.Key))
				}
				if v.SecretKeyRef != nil {
					add(fmt.Sprintf("Secret %s (key %s)", v.SecretKeyRef.Name, v.SecretKeyRef.Key))
				}
			}
		}
	}
	return strings.Join(refs, ", ")
}
