package explain

// The invariant: the stretches of a pod's recorded life in which
// Kubernetes' own state shows it unwell (Unwell), read from the pod's
// status and events alone, independent of the rules. Diagnose gives every
// such stretch a warning or critical finding (unexplained.go, when no rule
// covers it), and Check verifies that it did.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// The states in which a pod is unwell (Stretch.State).
const (
	// StateUnscheduled: not bound to a node, neither finished nor being
	// deleted, for longer than SchedulingAllowance once the scheduler said
	// why (PodScheduled False), QueueAllowance before it said anything.
	StateUnscheduled = "unscheduled"
	// StatePending: bound to a node, phase Pending (no container started
	// yet), not being deleted, for longer than StartAllowance.
	StatePending = "pending"
	// StateNotReady: phase Running, not being deleted, condition Ready not
	// True for longer than its probes allow (ReadyAllowance).
	StateNotReady = "not-ready"
	// StateWaiting: a container waiting with a reason other than the
	// normal start-up ones (ContainerCreating, PodInitializing).
	StateWaiting = "container-waiting"
	// StateRestarted: a container's restartCount went up during the
	// recording.
	StateRestarted = "container-restarted"
	// StateExited: a container terminated with a non-zero exit code (or
	// OOMKilled) while the pod was not being deleted.
	StateExited = "container-exited"
	// StateFailed: phase Failed reached while the pod was not being
	// deleted (a deletion ends running pods in Failed when their
	// containers exit non-zero on SIGTERM or SIGKILL: that is not it).
	StateFailed = "failed"
	// StateTerminating: deletion requested, and the pod still present
	// TerminationSlack past its grace period, measured against the
	// original deletionTimestamp (which includes the grace period).
	StateTerminating = "terminating"
	// StateWarningEvent: a Warning event, other than a probe's failures
	// during a start-up within what the probes allow or during the pod's
	// deletion (probeEventBenign).
	StateWarningEvent = "warning-event"
)

// The allowances of the states that are normal for a while.
const (
	// SchedulingAllowance: how long a pod may wait to be bound. The
	// scheduler binds a pod that fits within a second; one that does not
	// fit gets a FailedScheduling Warning event at once.
	SchedulingAllowance = 30 * time.Second
	// QueueAllowance: how long a pod may wait unbound before the scheduler
	// has said anything of it (no PodScheduled condition, no
	// FailedScheduling event). A burst of thousands of pods waits in the
	// scheduler's queue for tens of seconds on a small control plane,
	// which is not a fault; a pod no scheduler ever looks at (an unknown
	// schedulerName) is, after this long.
	QueueAllowance = 5 * time.Minute
	// StartAllowance: how long a bound pod may stay Pending (sandbox,
	// volumes, image pulls, init containers) before it is unwell.
	StartAllowance = 5 * time.Minute
	// ReadySlack is added to what a pod's probes allow before Ready: the
	// kubelet's status sync, and a pod without probes.
	ReadySlack = 10 * time.Second
	// TerminationSlack is how long past its grace period a pod may take
	// to go: the kubelet kills what is left at the grace period, reports
	// the containers stopped and confirms the deletion within seconds,
	// and the owners of finalizers remove them once it has.
	TerminationSlack = 10 * time.Second
)

// Stretch is a stretch of a pod's recorded life in which it was unwell.
type Stretch struct {
	State string `json:"state"`
	// Container names the container the state is about ("" for the pod);
	// Init says it is an init container.
	Container string `json:"container,omitempty"`
	Init      bool   `json:"init,omitempty"`
	// Start is when the pod entered the state, at the revision Seq; End
	// is when it left it, was removed, or the recording ended (Open).
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Seq   uint64    `json:"seq,omitempty"`
	Open  bool      `json:"open,omitempty"`
	// Allowed is how long the state is normal (its allowance; for
	// StateTerminating, the grace period), and Observed how long the
	// stretch was observed, gaps left out.
	Allowed  time.Duration `json:"allowed,omitempty"`
	Observed time.Duration `json:"observed"`
	// Reason and Message are what Kubernetes said: the condition's or the
	// container state's reason, the event's reason.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Events are the Seqs of the Warning event occurrences of a
	// StateWarningEvent stretch.
	Events []uint64 `json:"events,omitempty"`
}

// What says what the stretch is about, in a few words: "init container
// setup waiting: CrashLoopBackOff".
func (s Stretch) What() string {
	who := "the pod"
	if s.Container != "" {
		who = containerNoun(s.Container, s.Init)
	}
	switch s.State {
	case StateUnscheduled:
		return "not scheduled"
	case StatePending:
		return "Pending after it was scheduled"
	case StateNotReady:
		return "Running but not Ready"
	case StateWaiting:
		return who + " waiting: " + s.Reason
	case StateRestarted:
		return who + " restarted"
	case StateExited:
		return who + " exited: " + s.Reason
	case StateFailed:
		return "phase Failed"
	case StateTerminating:
		return "Terminating past its grace period"
	case StateWarningEvent:
		return "Warning event " + s.Reason
	}
	return s.State
}

// statusList is a pod's init container statuses, or its container
// statuses.
type statusList struct {
	list []corev1.ContainerStatus
	init bool
}

// statusLists are a pod's container statuses, init containers first.
func statusLists(pod *corev1.Pod) [2]statusList {
	return [2]statusList{{pod.Status.InitContainerStatuses, true}, {pod.Status.ContainerStatuses, false}}
}

// containerNoun names a container: "container web", "init container setup".
func containerNoun(name string, init bool) string {
	if init {
		return "init container " + name
	}
	return "container " + name
}

// Unwell returns the stretches of the pod's recorded life in which
// Kubernetes' own state shows it unwell, in time order of their start.
// It reads the pod's revisions and events, nothing the rules decide.
func Unwell(lc *diff.Lifecycle) []Stretch {
	pods := lc.Pods()
	if len(pods) == 0 {
		return nil
	}
	u := unwellScan{lc: lc, end: podEnd(lc)}
	for i, pod := range pods {
		u.revision(i, pod)
	}
	u.closeAll(len(pods) - 1)
	u.warningEvents()
	return u.out
}

// podEnd is when the pod's recorded life ended: its removal, or the end
// of the recording.
func podEnd(lc *diff.Lifecycle) time.Time {
	last := lc.Steps[len(lc.Steps)-1]
	if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
		return last.Time
	}
	return lc.RecordingEnd
}

// unwellScan walks the revisions, keeping the stretches open at each.
type unwellScan struct {
	lc  *diff.Lifecycle
	end time.Time
	// open holds the stretches the last revision is in, by key
	// (state/container/reason).
	open []openStretch
	// restarts counts each container's restarts as last seen.
	restarts map[stretchKey]int32
	out      []Stretch
	// merged holds, per container state, the stretch earlier runs of the
	// same state were merged into (see close).
	merged map[stretchKey]int
}

// revision notes the states of revision i.
func (u *unwellScan) revision(i int, pod *corev1.Pod) {
	step := u.lc.Steps[i]
	if step.Type == store.Deleted || step.Type == store.DeletedUnknown {
		// The object as it went: no new state, the open ones end here.
		u.closeAll(i)
		return
	}
	for j := range u.open {
		u.open[j].seen = false
	}
	deleting := pod.DeletionTimestamp != nil
	phase := pod.Status.Phase
	finished := phase == corev1.PodSucceeded || phase == corev1.PodFailed
	// The pod's own states.
	switch {
	case deleting:
		u.enter(i, StateTerminating, "", false, "", "")
	case pod.Spec.NodeName == "" && !finished:
		c := condition(pod, corev1.PodScheduled)
		reason, msg := "", ""
		if c != nil && c.Status != corev1.ConditionTrue {
			reason, msg = c.Reason, c.Message
		}
		u.enter(i, StateUnscheduled, "", false, reason, msg)
	case phase == corev1.PodPending || phase == "":
		u.enter(i, StatePending, "", false, "", "")
	case phase == corev1.PodRunning:
		if reason, msg, ok := notReady(pod); ok {
			u.enter(i, StateNotReady, "", false, reason, msg)
		}
	case phase == corev1.PodFailed:
		// Failed while not being deleted. Once failed, the pod stays so:
		// a deletion that follows does not end the stretch.
		u.enter(i, StateFailed, "", false, pod.Status.Reason, pod.Status.Message)
	}
	if j := u.find(stretchKey{state: StateFailed}); deleting && phase == corev1.PodFailed && j >= 0 {
		u.open[j].seen = true
	}
	// The containers' states.
	for _, l := range statusLists(pod) {
		for j := range l.list {
			s := &l.list[j]
			if w := s.State.Waiting; w != nil && !startingReason(w.Reason) {
				u.enter(i, StateWaiting, s.Name, l.init, w.Reason, w.Message)
			}
			if t := s.State.Terminated; t != nil && !deleting && (t.ExitCode != 0 || t.Reason == "OOMKilled") {
				u.enter(i, StateExited, s.Name, l.init, t.Reason, "")
				if st := u.open[u.find(stretchKey{StateExited, s.Name, l.init, t.Reason})].s; st.Message == "" {
					st.Message = exitText(t)
				}
			}
			u.restarted(i, s, l.init)
		}
	}
	// What this revision is no longer in ends at it.
	kept := u.open[:0]
	for _, o := range u.open {
		if o.seen {
			kept = append(kept, o)
		} else {
			u.close(o.s, i, false)
		}
	}
	u.open = kept
}

// openStretch is a stretch the revisions read so far are in; seen says the
// revision being read is in it.
type openStretch struct {
	key  stretchKey
	s    *Stretch
	seen bool
}

// find returns the index of the open stretch key, or -1.
func (u *unwellScan) find(key stretchKey) int {
	for j := range u.open {
		if u.open[j].key == key {
			return j
		}
	}
	return -1
}

// startingReason reports whether a waiting reason is one of a normal
// start-up: the kubelet's ContainerCreating and PodInitializing, and
// RestartingAllContainers (pkg/kubelet/kubelet_pods.go; the exit that
// causes the last is unwell itself), or none given.
func startingReason(r string) bool {
	return r == "" || r == "ContainerCreating" || r == "PodInitializing" || r == "RestartingAllContainers"
}

func exitText(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Signal != 0 {
		s += fmt.Sprintf(", signal %d", t.Signal)
	}
	if t.Message != "" {
		s += ": " + t.Message
	}
	return s
}

// stretchKey identifies a state: a pod's, or a container's with its
// reason.
type stretchKey struct {
	state, container string
	init             bool
	reason           string
}

func stateKey(state, container string, init bool, reason string) stretchKey {
	if container == "" {
		return stretchKey{state: state}
	}
	return stretchKey{state, container, init, reason}
}

// enter notes that revision i is in a state: it opens a stretch, or keeps
// the open one.
func (u *unwellScan) enter(i int, state, container string, init bool, reason, msg string) {
	key := stateKey(state, container, init, reason)
	if j := u.find(key); j >= 0 {
		u.open[j].seen = true
		if msg != "" {
			u.open[j].s.Message = msg
		}
		return
	}
	step := u.lc.Steps[i]
	s := &Stretch{State: state, Container: container, Init: init, Start: step.Time, Seq: step.Seq, Reason: reason, Message: msg}
	if state == StateTerminating {
		if req, ok := u.lc.Phase(diff.PhaseDeletionRequested); ok && req.Time.Before(s.Start) {
			s.Start = req.Time
		}
	}
	u.open = append(u.open, openStretch{key: key, s: s, seen: true})
}

// closeAll ends every open stretch at revision i, or at the pod's end for
// the last revision.
func (u *unwellScan) closeAll(i int) {
	for _, o := range u.open {
		u.close(o.s, i, i == len(u.lc.Steps)-1)
	}
	u.open = u.open[:0]
}

// close ends the open stretch s at revision i (at the pod's end if last),
// and keeps it if it is unwell.
func (u *unwellScan) close(s *Stretch, i int, last bool) {
	s.End = u.lc.Steps[i].Time
	if last {
		s.End = u.end
		step := u.lc.Steps[i]
		s.Open = step.Type != store.Deleted && step.Type != store.DeletedUnknown
	}
	if s.End.Before(s.Start) {
		s.End = s.Start
	}
	from := s.Start
	switch s.State {
	case StateUnscheduled:
		s.Allowed = SchedulingAllowance
		if s.Reason == "" {
			s.Allowed = QueueAllowance
		}
	case StatePending:
		s.Allowed = StartAllowance
	case StateNotReady:
		s.Allowed = ReadyAllowance(u.lc.Pods()[seqIndex(u.lc, s.Seq)])
	case StateTerminating:
		// Measured from the grace period's end, the latest deletionTimestamp
		// of any revision: a later DELETE may shorten it (the kubelet's
		// grace 0 confirmation), never lengthen it.
		deadline, grace := GraceDeadline(u.lc)
		s.Allowed = grace
		from = deadline
	}
	s.Observed = diff.ObservedFor(u.lc.Gaps, s.Start, s.End)
	over := diff.ObservedFor(u.lc.Gaps, from, s.End)
	switch s.State {
	case StateTerminating:
		if over <= TerminationSlack {
			return
		}
	case StateUnscheduled, StatePending, StateNotReady:
		if over <= s.Allowed {
			return
		}
	}
	u.keep(*s)
}

// keep adds an unwell stretch; the runs of the same state (of the same
// container, with the same reason) are merged into one, from the first to
// the last: a crash loop's many back-offs are one stretch, and so are the
// many stretches not Ready of a pod whose readiness flaps.
func (u *unwellScan) keep(s Stretch) {
	key := stateKey(s.State, s.Container, s.Init, s.Reason)
	if u.merged == nil {
		u.merged = map[stretchKey]int{}
	}
	if j, ok := u.merged[key]; ok {
		m := &u.out[j]
		if s.End.After(m.End) {
			m.End, m.Open, m.Message = s.End, s.Open, s.Message
		}
		m.Observed += s.Observed
		return
	}
	u.merged[key] = len(u.out)
	u.out = append(u.out, s)
}

// GraceDeadline returns the end of the pod's grace period, the latest
// deletionTimestamp recorded (a later DELETE may shorten the grace period,
// as the kubelet's confirmation with grace 0 does, never lengthen it), and
// the grace period it was set with; zero if no deletion was requested.
func GraceDeadline(lc *diff.Lifecycle) (time.Time, time.Duration) {
	var at time.Time
	var grace time.Duration
	for _, p := range lc.Pods() {
		if p.DeletionTimestamp != nil && p.DeletionTimestamp.After(at) {
			at = p.DeletionTimestamp.Time
			grace = 0
			if p.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
			}
		}
	}
	return at, grace
}

// PastGrace is how long, observed, the pod was present past the end of
// its grace period (GraceDeadline): until its removal or the end of the
// recording, gaps left out. A pod is stuck terminating once that is more
// than TerminationSlack; before, it is still going, whether the recording
// ended there or goes on.
func PastGrace(lc *diff.Lifecycle) time.Duration {
	deadline, _ := GraceDeadline(lc)
	if deadline.IsZero() {
		return 0
	}
	return diff.ObservedFor(lc.Gaps, deadline, podEnd(lc))
}

// restarted notes a restart of a container: its restartCount went up
// since the revision before, or, at the first revision, a restart that
// finished within the recorded life.
func (u *unwellScan) restarted(i int, s *corev1.ContainerStatus, init bool) {
	key := stretchKey{container: s.Name, init: init}
	if u.restarts == nil {
		u.restarts = map[stretchKey]int32{}
	}
	before, known := u.restarts[key]
	u.restarts[key] = s.RestartCount
	step := u.lc.Steps[i]
	last := s.LastTerminationState.Terminated
	var start time.Time
	switch {
	case known && s.RestartCount > before:
		start = u.lc.Steps[max(i-1, 0)].Time
		if last != nil && last.FinishedAt.After(start) && !last.FinishedAt.After(step.Time) {
			start = last.FinishedAt.Time
		}
	case !known && s.RestartCount > 0 && last != nil && !last.FinishedAt.Time.Before(u.lc.Steps[0].Time) && !last.FinishedAt.After(step.Time):
		start = last.FinishedAt.Time
	default:
		return
	}
	// One stretch per container, from its first restart to its last
	// (keep merges them).
	st := Stretch{State: StateRestarted, Container: s.Name, Init: init, Start: start, End: step.Time, Seq: step.Seq,
		Message: fmt.Sprintf("restartCount %d", s.RestartCount)}
	if last != nil {
		st.Message += fmt.Sprintf("; last terminated: %s, %s", last.Reason, exitText(last))
	}
	st.Observed = diff.ObservedFor(u.lc.Gaps, st.Start, st.End)
	u.keep(st)
}

// notReady reports whether a running pod is not Ready for a reason other
// than containers that finished as they should: the Ready condition not
// True, and some container that is not ready is not one that completed
// (exit 0) under a restartPolicy that does not restart it.
func notReady(pod *corev1.Pod) (reason, msg string, ok bool) {
	c := condition(pod, corev1.PodReady)
	if c == nil || c.Status == corev1.ConditionTrue {
		return "", "", false
	}
	if c.Reason != "ReadinessGatesNotReady" {
		done := true
		for _, s := range pod.Status.ContainerStatuses {
			if s.Ready {
				continue
			}
			t := s.State.Terminated
			if t == nil || t.ExitCode != 0 || pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
				done = false
			}
		}
		if done && len(pod.Status.ContainerStatuses) > 0 {
			return "", "", false
		}
	}
	return c.Reason, c.Message, true
}

// ReadyAllowance is how long a running pod may be not Ready before it is
// unwell: what its startup and readiness probes allow (each its
// initialDelaySeconds, then periodSeconds times failureThreshold, or
// successThreshold if more, and a timeout), for the container that takes
// longest, plus ReadySlack.
func ReadyAllowance(pod *corev1.Pod) time.Duration {
	var most time.Duration
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			most = max(most, probeAllowance(c.StartupProbe)+probeAllowance(c.ReadinessProbe))
		}
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		most = max(most, probeAllowance(c.StartupProbe)+probeAllowance(c.ReadinessProbe))
	}
	return most + ReadySlack
}

// readinessContainers are the containers whose readiness makes the pod
// Ready: the regular ones and the sidecars (init containers with
// restartPolicy Always).
func readinessContainers(pod *corev1.Pod) []corev1.Container {
	var out []corev1.Container
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return append(out, pod.Spec.Containers...)
}

// probeAllowance is how long a probe may fail before it says the
// container is unwell, with the API server's defaults for fields not set.
func probeAllowance(p *corev1.Probe) time.Duration {
	if p == nil {
		return 0
	}
	period, failures, successes, timeout := probeNumbers(p)
	return time.Duration(p.InitialDelaySeconds+period*max(failures, successes)+timeout) * time.Second
}

// probeNumbers returns a probe's periodSeconds, failureThreshold,
// successThreshold and timeoutSeconds, defaulted as the API server does.
func probeNumbers(p *corev1.Probe) (period, failures, successes, timeout int32) {
	period, failures, successes, timeout = p.PeriodSeconds, p.FailureThreshold, p.SuccessThreshold, p.TimeoutSeconds
	if period == 0 {
		period = 10
	}
	if failures == 0 {
		failures = 3
	}
	if successes == 0 {
		successes = 1
	}
	if timeout == 0 {
		timeout = 1
	}
	return
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// seqIndex returns the index of the revision with that Seq, or the last.
func seqIndex(lc *diff.Lifecycle, seq uint64) int {
	for i, s := range lc.Steps {
		if s.Seq == seq {
			return i
		}
	}
	return len(lc.Steps) - 1
}

// warningEvents adds a stretch for each Warning event (by reason and
// message, its occurrences together) that is not benign in its context.
func (u *unwellScan) warningEvents() {
	for _, g := range warningGroups(u.lc) {
		var seqs []uint64
		var first, last *diff.Event
		for _, e := range g.occurrences {
			if eventBenign(u.lc, u.out, e) {
				continue
			}
			seqs = append(seqs, e.Seq)
			if first == nil {
				first = e
			}
			last = e
		}
		if first == nil {
			continue
		}
		u.out = append(u.out, Stretch{State: StateWarningEvent, Start: first.Time, End: last.Time, Seq: first.Seq,
			Reason: g.reason, Message: g.message, Events: seqs})
	}
	sortStretches(u.out)
}

func sortStretches(ss []Stretch) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && ss[j].Start.Before(ss[j-1].Start); j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}

// warningGroup is a pod's Warning events of one reason and message.
type warningGroup struct {
	reason, message string
	occurrences     []*diff.Event
}

// warningGroups returns the pod's Warning events, grouped by reason and
// message, in the order of their first occurrence.
func warningGroups(lc *diff.Lifecycle) []warningGroup {
	var out []warningGroup
	at := map[[2]string]int{}
	for i := range lc.Events {
		e := &lc.Events[i]
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		key := [2]string{e.Reason, e.Message}
		j, ok := at[key]
		if !ok {
			j = len(out)
			at[key] = j
			out = append(out, warningGroup{reason: e.Reason, message: e.Message})
		}
		out[j].occurrences = append(out[j].occurrences, e)
	}
	return out
}

// probeEvent reports whether an event is a probe's failure as the kubelet
// records it (pkg/kubelet/prober: Unhealthy, ProbeWarning).
func probeEvent(e *diff.Event) bool {
	return e.Reason == "Unhealthy" || e.Reason == "ProbeWarning"
}

// eventBenign reports whether a Warning event is part of a healthy life:
// a probe's failure during a start-up that ended Ready within what the
// probes allow, or once the pod's deletion was requested (its containers
// are stopping); a scheduling failure before a binding that came within
// SchedulingAllowance.
func eventBenign(lc *diff.Lifecycle, unwell []Stretch, e *diff.Event) bool {
	within := func(states ...string) bool {
		for _, s := range unwell {
			if slices.Contains(states, s.State) && !e.Time.Before(s.Start.Add(-time.Second)) && !e.Time.After(s.End.Add(time.Second)) {
				return true
			}
		}
		return false
	}
	switch {
	case e.Reason == "FailedScheduling":
		bound, ok := lc.Phase(diff.PhaseScheduled)
		return ok && !e.Time.After(bound.Time.Add(time.Second)) && !within(StateUnscheduled)
	case probeEvent(e):
		if req, ok := lc.Phase(diff.PhaseDeletionRequested); ok && !e.Time.Before(req.Time) {
			return true
		}
		ready, ok := lc.Phase(diff.PhaseReady)
		if !ok || e.Time.After(ready.Time.Add(time.Second)) || strings.HasPrefix(e.Message, "Liveness probe") {
			return false
		}
		return !within(StateNotReady, StatePending, StateRestarted)
	}
	return false
}
