package explain

import (
	"sort"

	"github.com/podtrace/podtrace/diff"
)

// Lifecycle is a replayed pod lifecycle with what explain found in it. It
// marshals as the diff.Lifecycle's fields and "findings".
type Lifecycle struct {
	*diff.Lifecycle
	Findings []Finding `json:"findings,omitempty"`
}

// Replay replays a pod's recorded history (diff.Replay) and explains it.
func Replay(in diff.Input, opts diff.Options) (*Lifecycle, error) {
	lc, err := diff.Replay(in, opts)
	if err != nil {
		return nil, err
	}
	return &Lifecycle{Lifecycle: lc, Findings: Diagnose(lc, in)}, nil
}

// Diagnose runs every rule on a replayed lifecycle, in to the replay's
// input. The findings come most severe first, each one's evidence in time
// order.
func Diagnose(lc *diff.Lifecycle, in diff.Input) []Finding {
	var out []Finding
	d := &diagnosis{unwell: Unwell(lc)}
	for _, r := range Rules {
		if r.run != nil {
			out = append(out, r.run(lc, in)...)
		} else {
			d.found = out
			out = append(out, r.read(lc, in, d)...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	auditFindings(out, lc)
	auditExportNotes(out, lc)
	sortEvidence(out)
	return out
}

// Rule is one diagnosis: the finding ids it can give, the Kubernetes
// mechanism it reads, and the function that reads it.
type Rule struct {
	// IDs are the finding ids the rule gives.
	IDs []string
	// Reads says what in the recording the rule reads, in a few words.
	Reads string
	run   func(lc *diff.Lifecycle, in diff.Input) []Finding
	// read, instead of run, reads what Diagnose has found so far too.
	read func(lc *diff.Lifecycle, in diff.Input, d *diagnosis) []Finding
}

// diagnosis is what Diagnose has found so far: the pod's unwell stretches
// (Unwell, read once) and the findings of the rules run before.
type diagnosis struct {
	unwell []Stretch
	found  []Finding
}

// Rules run in this order; their findings are then sorted by severity, the
// audit log's evidence added (auditFindings) and each finding's evidence
// put in time order.
var Rules = []Rule{
	{IDs: []string{"stuck-finalizer"}, run: stuckFinalizers,
		Reads: "deletionTimestamp past its grace period, finalizers left, their owners, dependents with blockOwnerDeletion, admission webhooks and policies intercepting pod UPDATE, the audit log's denied updates"},
	{IDs: []string{"finalizer-not-removed"}, run: finalizerNotRemoved,
		Reads: "a finished pod still holding a finalizer its controller removes on finish (batch.kubernetes.io/job-tracking), the Job's uncountedTerminatedPods"},
	{IDs: []string{"deletion-stuck", "deletion-slow"}, run: deletionUnconfirmed,
		Reads: "a pod present past its grace period (its first deletionTimestamp) and TerminationSlack, with no finalizer left and its node reporting: the containers' last states, the kubelet's events while stopping it, the node's Ready condition"},
	{IDs: []string{"node-lost"}, run: lostNode,
		Reads: "a terminating pod whose node was deleted or stopped reporting (Ready not True, its taints)"},
	{IDs: []string{"node-not-ready"}, run: nodeNotReady,
		Reads: "the node lifecycle controller's NodeNotReady events on the pod, and the node's recorded Ready condition and taints then: from when, why, whether it came back"},
	{IDs: []string{"unschedulable"}, run: unschedulable,
		Reads: "PodScheduled=False, FailedScheduling events, scheduling gates, the claims its volumes name (their recorded phase, StorageClass, events), and each recorded node as of then: cordon, nodeSelector, required node affinity, taints, allocatable resources; and the failures before a late binding"},
	{IDs: []string{"image-pull", "crash-loop", "oom-killed", "restarted", "container-error", "exited"}, run: containerTrouble,
		Reads: "container and init container statuses in every revision: waiting reasons (image pulls, CrashLoopBackOff, the kubelet's create and start errors), terminated reasons and exit codes, restartCount and lastState; the containers' memory limits and requests; BackOff events, and the kubelet's kills for failed liveness or startup probes"},
	{IDs: []string{"volume"}, run: volumeTrouble,
		Reads: "the kubelet's and the attach-detach controller's volume events (FailedMount, FailedAttachVolume...), the volume they name and its source: a ConfigMap or Secret (recorded only when a pod owns them), a PersistentVolumeClaim's recorded phase and class, its StorageClass, the volume controllers' events on the claim"},
	{IDs: []string{"init-running"}, read: initRunning,
		Reads: "a pod Pending past its allowance once bound while an init container (not a restartable sidecar) is running: its start, its command, the Initialized condition"},
	{IDs: []string{"event-warning"}, read: eventWarnings,
		Reads: "Warning events whose reason the vocabulary (explain.Vocabulary) says what it means and no other rule reads: the sandbox and CNI, DNS configuration, image pull secrets, dynamic resources, pod certificates, resizes"},
	{IDs: []string{"not-ready", "probe-failed"}, read: probeTrouble,
		Reads: "a running pod's Ready condition against what its startup and readiness probes allow (initialDelaySeconds, periodSeconds x failureThreshold), the probes themselves, readiness gates, the kubelet's Unhealthy events"},
	{IDs: []string{"failed", "evicted", "deadline-exceeded", "preempted"}, run: podFailed,
		Reads: "phase Failed, status.reason, the DisruptionTarget condition"},
	{IDs: []string{"eviction-refused"}, run: evictionRefused,
		Reads: "the audit log's refused evictions (429 and the PodDisruptionBudget its cause names), the recorded budgets' spec and status"},
	{IDs: []string{"ended"}, run: ended,
		Reads: "how a pod that left (or was asked to) ended: DisruptionTarget reasons, Job failure conditions, the controller's events and owner chain, ownerReference removal, the audit log's DELETE"},
	// Last: what the others leave unexplained.
	{IDs: []string{"unexplained"}, read: unexplained,
		Reads: "every stretch of the pod's life that Kubernetes' own state shows unwell (Unwell: not scheduled, Pending, Running but not Ready past its probes, containers waiting, restarting or exiting non-zero, phase Failed, Terminating past its grace period, Warning events) that no other finding covers, and every Warning event no other finding cites"},
}

// Copy returns a shallow copy: its own Lifecycle struct as well as its
// own diff.Lifecycle, the slices and maps they hold shared. (Copying an
// explain.Lifecycle by value would share the diff.Lifecycle.)
func (lc *Lifecycle) Copy() *Lifecycle {
	inner := *lc.Lifecycle
	out := *lc
	out.Lifecycle = &inner
	return &out
}
