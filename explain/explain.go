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
	for _, r := range Rules {
		out = append(out, r.run(lc, in)...)
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
}

// Rules run in this order; their findings are then sorted by severity, the
// audit log's evidence added (auditFindings) and each finding's evidence
// put in time order.
var Rules = []Rule{
	{IDs: []string{"stuck-finalizer"}, run: stuckFinalizers,
		Reads: "deletionTimestamp past its grace period, finalizers left, their owners, dependents with blockOwnerDeletion, admission webhooks and policies intercepting pod UPDATE, the audit log's denied updates"},
	{IDs: []string{"finalizer-not-removed"}, run: finalizerNotRemoved,
		Reads: "a finished pod still holding a finalizer its controller removes on finish (batch.kubernetes.io/job-tracking), the Job's uncountedTerminatedPods"},
	{IDs: []string{"node-lost"}, run: lostNode,
		Reads: "a terminating pod whose node was deleted or stopped reporting (Ready not True, its taints)"},
	{IDs: []string{"unschedulable"}, run: unschedulable,
		Reads: "PodScheduled=False, FailedScheduling events, scheduling gates, and each recorded node as of then: cordon, nodeSelector, required node affinity, taints, allocatable resources"},
	{IDs: []string{"image-pull", "crash-loop", "oom-killed"}, run: containerTrouble,
		Reads: "container statuses: waiting reasons (ErrImagePull, ImagePullBackOff, CrashLoopBackOff), terminated reason OOMKilled"},
	{IDs: []string{"failed", "evicted", "deadline-exceeded", "preempted"}, run: podFailed,
		Reads: "phase Failed, status.reason, the DisruptionTarget condition"},
	{IDs: []string{"ended"}, run: ended,
		Reads: "how a pod that left (or was asked to) ended: DisruptionTarget reasons, Job failure conditions, the controller's events and owner chain, ownerReference removal, the audit log's DELETE"},
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
