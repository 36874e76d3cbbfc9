package explain

// Probes and readiness: a running pod not Ready for longer than its probes
// allow (not-ready), and probes that failed (probe-failed): each quotes the
// probe (handler, period, thresholds) and its failures, the kubelet's
// Unhealthy events.

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
)

// probeKinds are the probes of a container, as the kubelet's Unhealthy
// events name them ("Readiness probe failed: ...").
var probeKinds = []string{"Startup", "Readiness", "Liveness"}

func probeOf(c *corev1.Container, kind string) *corev1.Probe {
	switch kind {
	case "Startup":
		return c.StartupProbe
	case "Readiness":
		return c.ReadinessProbe
	case "Liveness":
		return c.LivenessProbe
	}
	return nil
}

// probeKind is the probe an event is about ("Readiness"), or "".
func probeKind(e *diff.Event) string {
	for _, k := range probeKinds {
		if strings.HasPrefix(e.Message, k+" probe") {
			return k
		}
	}
	return ""
}

// describeProbe quotes a probe: its handler and numbers, defaulted as the
// API server does.
func describeProbe(kind string, p *corev1.Probe) string {
	period, failures, successes, timeout := probeNumbers(p)
	return fmt.Sprintf("%s probe %s, initialDelaySeconds %d, periodSeconds %d, timeoutSeconds %d, failureThreshold %d, successThreshold %d",
		strings.ToLower(kind), probeHandler(p), p.InitialDelaySeconds, period, timeout, failures, successes)
}

// probeHandler says what a probe checks: "httpGet HTTP :8080/healthz".
func probeHandler(p *corev1.Probe) string {
	switch h := p.ProbeHandler; {
	case h.HTTPGet != nil:
		scheme := h.HTTPGet.Scheme
		if scheme == "" {
			scheme = corev1.URISchemeHTTP
		}
		return fmt.Sprintf("httpGet %s %s:%s%s", scheme, h.HTTPGet.Host, h.HTTPGet.Port.String(), h.HTTPGet.Path)
	case h.TCPSocket != nil:
		return fmt.Sprintf("tcpSocket %s:%s", h.TCPSocket.Host, h.TCPSocket.Port.String())
	case h.Exec != nil:
		return fmt.Sprintf("exec %q", h.Exec.Command)
	case h.GRPC != nil:
		s := fmt.Sprintf("grpc port %d", h.GRPC.Port)
		if h.GRPC.Service != nil {
			s += " service " + *h.GRPC.Service
		}
		return s
	}
	return "with no handler recorded"
}

// probeTrouble reads the pod's readiness against its probes, and the
// probes' failures.
func probeTrouble(lc *diff.Lifecycle, in diff.Input, d *diagnosis) []Finding {
	var out []Finding
	// The stretches not Ready, but those a container's own trouble
	// explains (waiting, restarting, exited): its finding tells why.
	unwell := d.unwell
	var notReady []Stretch
	for _, s := range unwell {
		if s.State == StateNotReady && !slices.ContainsFunc(unwell, func(c Stretch) bool {
			return (c.State == StateWaiting || c.State == StateRestarted || c.State == StateExited) && !c.Init &&
				!c.Start.After(s.End) && !c.End.Before(s.Start)
		}) {
			notReady = append(notReady, s)
		}
	}
	cited := map[uint64]bool{}
	if len(notReady) > 0 {
		f := notReadyFinding(lc, notReady)
		for _, e := range f.Evidence {
			cited[e.Seq] = true
		}
		out = append(out, f)
	}
	if f, ok := probeFailures(lc, unwell, cited); ok {
		out = append(out, f)
	}
	return out
}

// notReadyFinding explains the stretches in which a running pod was not
// Ready past what its probes allow.
func notReadyFinding(lc *diff.Lifecycle, stretches []Stretch) Finding {
	longest := stretches[0]
	for _, s := range stretches {
		if s.Observed > longest.Observed {
			longest = s
		}
	}
	i := seqIndex(lc, longest.Seq)
	pod := lc.Pods()[i]
	f := Finding{ID: "not-ready", Severity: Warning}
	for _, s := range stretches {
		text := fmt.Sprintf("Running, not Ready: condition Ready=False %s: %s", s.Reason, s.Message)
		f.Evidence = append(f.Evidence, Evidence{Seq: s.Seq, Time: s.Start, Text: text})
		if !s.Open {
			f.Evidence = append(f.Evidence, Evidence{Time: s.End, Text: fmt.Sprintf("not Ready for %s, until here", diff.Duration(s.Observed))})
		}
	}
	// The containers not ready, as the longest stretch began, with their
	// probes.
	var unready []string
	probed := map[string]bool{}
	for _, c := range readinessContainers(pod) {
		st := containerStatus(pod, c.Name)
		if st == nil || st.Ready {
			continue
		}
		unready = append(unready, c.Name)
		state := "not running"
		switch {
		case st.State.Running != nil:
			state = "running since " + stamp(st.State.Running.StartedAt.Time) + ", not ready"
		case st.State.Waiting != nil:
			state = "waiting: " + st.State.Waiting.Reason
		case st.State.Terminated != nil:
			state = "terminated: " + st.State.Terminated.Reason
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: longest.Seq, Time: longest.Start, Text: fmt.Sprintf("container %s %s", c.Name, state)})
		for _, k := range []string{"Startup", "Readiness"} {
			if p := probeOf(&c, k); p != nil {
				probed[k] = true
				f.Evidence = append(f.Evidence, Evidence{Seq: longest.Seq, Time: longest.Start, Text: fmt.Sprintf("container %s %s", c.Name, describeProbe(k, p))})
			}
		}
	}
	// The probes' failures while not Ready.
	var failures []string
	for _, g := range warningGroups(lc) {
		k := probeKind(g.occurrences[0])
		if k == "" || k == "Liveness" {
			continue
		}
		for _, s := range stretches {
			if overlapsStretch(g, s) {
				f.Evidence = append(f.Evidence, groupEvidence(g)...)
				failures = append(failures, fmt.Sprintf("%s probe failed, %s at least: %s", strings.ToLower(k), times(groupCount(g)), shorten(strings.TrimPrefix(strings.TrimPrefix(g.message, k+" probe failed:"), " "), 120)))
				break
			}
		}
	}
	head := fmt.Sprintf("Running but not Ready for %s (its probes allow %s)", diff.Duration(longest.Observed), diff.Duration(longest.Allowed))
	if longest.Open {
		head = fmt.Sprintf("Running but not Ready for %s until the recording ended (its probes allow %s)", diff.Duration(longest.Observed), diff.Duration(longest.Allowed))
	}
	switch {
	case len(failures) > 0:
		f.Headline = head + ": " + failures[0]
		f.Next = []string{"the probe fails: check what it checks (kubectl exec into the container, its logs) and whether its port, path and thresholds fit the application"}
	case longest.Reason == "ReadinessGatesNotReady":
		f.Headline = head + ": a readiness gate's condition is not True (" + longest.Message + ")"
		f.Next = []string{"the controller that owns the readiness gate's condition (spec.readinessGates) has not set it True: check that controller"}
	case len(unready) > 0 && !probed["Readiness"] && !probed["Startup"]:
		f.Headline = head + ": container " + strings.Join(unready, ", ") + " not ready, and no probe is defined to say why"
		f.Next = []string{"with no readiness or startup probe a running container is ready at once: the kubelet did not report it ready, check its log on node " + orUnknown(lc.Node)}
	default:
		f.Headline = head + ": container " + strings.Join(unready, ", ") + " not ready; no probe failure was recorded"
		f.Next = []string{"no Unhealthy event was recorded (events expire, or were not in scope): kubectl describe pod -n " + lc.Namespace + " " + lc.Name + " shows the probe's latest result"}
	}
	if len(unready) == 0 && longest.Reason != "ReadinessGatesNotReady" {
		f.Headline = head + ": condition Ready=False " + longest.Reason
	}
	return f
}

func overlapsStretch(g warningGroup, s Stretch) bool {
	for _, e := range g.occurrences {
		if !e.Time.Before(s.Start.Add(-overlapSlack)) && !e.Time.After(s.End.Add(overlapSlack)) {
			return true
		}
	}
	return false
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, l := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range l {
			if l[i].Name == name {
				return &l[i]
			}
		}
	}
	return nil
}

// probeFailures gathers the probes' failures that no not-ready finding
// cited (cited, by Seq), and that no restart for a failed probe accounts
// for: a warning, or, when each happened during a start-up within what
// the probes allow or during the pod's deletion, an info.
func probeFailures(lc *diff.Lifecycle, unwell []Stretch, cited map[uint64]bool) (Finding, bool) {
	killedFor := map[string]bool{}
	for _, e := range lc.Events {
		if e.Reason == "Killing" && strings.Contains(e.Message, " probe") {
			for _, k := range probeKinds {
				if strings.Contains(e.Message, strings.ToLower(k)+" probe") {
					killedFor[k] = true
				}
			}
		}
	}
	f := Finding{ID: "probe-failed", Severity: Info}
	var what []string
	pod := lc.Pods()[len(lc.Pods())-1]
	for _, g := range warningGroups(lc) {
		first := g.occurrences[0]
		if !probeEvent(first) || cited[first.Seq] {
			continue
		}
		k := probeKind(first)
		if killedFor[k] && k != "Readiness" {
			continue // crash-loop or restarted quote it with the kill
		}
		benign := true
		for _, e := range g.occurrences {
			if !eventBenign(lc, unwell, e) {
				benign = false
			}
		}
		if !benign {
			f.Severity = Warning
		}
		f.Evidence = append(f.Evidence, groupEvidence(g)...)
		name := strings.ToLower(orDefault(k, "a")) + " probe"
		var owners []string
		for _, c := range readinessContainersAndAll(pod) {
			if p := probeOf(&c, k); p != nil {
				owners = append(owners, c.Name)
				f.Evidence = append(f.Evidence, Evidence{Seq: first.Seq, Time: first.Time, Text: fmt.Sprintf("container %s %s", c.Name, describeProbe(k, p))})
			}
		}
		if len(owners) == 1 {
			name += " of container " + owners[0]
		}
		what = append(what, fmt.Sprintf("%s failed, %s at least", name, times(groupCount(g))))
	}
	if len(what) == 0 {
		return Finding{}, false
	}
	f.Headline = strings.Join(what, "; ")
	if f.Severity == Info {
		f.Headline += ", during a start-up within what the probes allow or during the pod's deletion"
	} else {
		f.Next = []string{"the probe fails while the pod runs: check what it checks, and whether its period and thresholds fit the application"}
	}
	return f, true
}

// readinessContainersAndAll are all the pod's containers, init ones too.
func readinessContainersAndAll(pod *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// groupCount is how many times a group's events happened, at least: the
// highest count of its occurrences (an Event's count grows with each), or
// their number if more.
func groupCount(g warningGroup) int {
	n := len(g.occurrences)
	for _, e := range g.occurrences {
		n = max(n, int(e.Count))
	}
	return n
}
