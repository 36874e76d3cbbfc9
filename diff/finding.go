package diff

import (
	"github.com/podtrace/podtrace/admission"

	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
)

// Severity orders findings: the most severe first.
type Severity int

const (
	Info Severity = iota
	Warning
	Critical
)

func (s Severity) String() string {
	return [...]string{"info", "warning", "critical"}[s]
}

// MarshalText implements encoding.TextMarshaler.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	for v := Info; v <= Critical; v++ {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Finding is one diagnosis about a pod: a stable id, a headline, the evidence
// in the recording that supports it and what to check next.
type Finding struct {
	ID       string     `json:"id"`
	Severity Severity   `json:"severity"`
	Headline string     `json:"headline"`
	Evidence []Evidence `json:"evidence"`
	// Suspects are the admission webhooks that intercept the request the
	// finding is about.
	Suspects []admission.Webhook `json:"suspects,omitempty"`
	Next     []string            `json:"next,omitempty"`
	// Mechanism names how the pod ended, for the ended finding (see
	// ended.go): preemption, eviction-api, scale-down, delete...
	Mechanism string `json:"mechanism,omitempty"`
	// Actor is who used the mechanism, and how that is known.
	Actor *Actor `json:"actor,omitempty"`
}

// Evidence points at what in the recording supports a finding. A
// finding's evidence is in time order (sortEvidence), evidence without a
// time last.
type Evidence struct {
	Seq  uint64    `json:"seq,omitempty"`
	Time time.Time `json:"time,omitempty"`
	Text string    `json:"text"`
}

// rule inspects a replayed lifecycle and returns its findings.
type rule func(lc *Lifecycle, in Input) []Finding

// rules run in this order; findings are then sorted by severity.
var rules = []rule{
	stuckFinalizers,
	finalizerNotRemoved,
	lostNode,
	unschedulable,
	containerTrouble,
	podFailed,
	ended,
}

func diagnose(lc *Lifecycle, in Input) []Finding {
	var out []Finding
	for _, r := range rules {
		out = append(out, r(lc, in)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity > out[j].Severity })
	return out
}

// sortEvidence puts the evidence of each finding in time order, stably.
// Evidence without a time goes last, in the order the rule gave it: it is
// about the recording as a whole or as it ended (the dependents still
// present, no webhook intercepting, no audit log imported), which comes
// after everything that happened.
func sortEvidence(fs []Finding) {
	for i := range fs {
		sort.SliceStable(fs[i].Evidence, func(a, b int) bool {
			ta, tb := fs[i].Evidence[a].Time, fs[i].Evidence[b].Time
			if ta.IsZero() || tb.IsZero() {
				return !ta.IsZero() && tb.IsZero()
			}
			return ta.Before(tb)
		})
	}
}

// finalizerOwner says who removes a well-known finalizer, and when.
type finalizerOwner struct {
	// who removes it, and how.
	who string
	// onFinish: the owner removes it once the pod has finished (Succeeded
	// or Failed) and it has accounted for the pod, whether or not the pod
	// is deleted. The others are removed only once deletion is requested.
	onFinish bool
}

// finalizerOwners are the finalizers that Kubernetes components put on pods.
var finalizerOwners = map[string]finalizerOwner{
	metav1.FinalizerDeleteDependents: {who: "the garbage collector (kube-controller-manager), with an UPDATE of the pod, once every dependent with blockOwnerDeletion is gone"},
	metav1.FinalizerOrphanDependents: {who: "the garbage collector (kube-controller-manager), with an UPDATE of the pod, once it has removed the pod's ownerReferences from the dependents"},
	// KEP-2307 (Job tracking with finalizers): the job controller lists a
	// finished pod in the Job's status.uncountedTerminatedPods, removes the
	// finalizer, then moves the pod to the Job's counters.
	batchv1.JobTrackingFinalizer: {
		who:      "the job controller (kube-controller-manager), with an UPDATE of the pod, once the pod has finished and the controller has counted it in the Job's status, whether or not the pod is deleted",
		onFinish: true,
	},
}

// finalizerOwnerOf says who removes a finalizer.
func finalizerOwnerOf(name string) string {
	if o, ok := finalizerOwners[name]; ok {
		return o.who
	}
	return "the controller that added it (no built-in controller owns it)"
}

// origin is where a finalizer came from: the revision where it appeared
// and who wrote it.
type origin struct {
	step Step
	// actors wrote the finalizer: the manager whose managedFields entry
	// owns it, else the revision's actors.
	actors []Actor
	// created: the pod was created with it during the recording; present:
	// it was there when the recording began, added by no one recorded.
	created, present bool
	// admission is the admission change that added it at creation, if the
	// admission comparison finds the pod as asked for without it.
	admission *AdmissionChange
	known     bool
}

// finalizerOrigin finds where a finalizer came from.
func (lc *Lifecycle) finalizerOrigin(name string) origin {
	seq, _, ok := lc.finalizerAdded(name)
	if !ok {
		return origin{}
	}
	for i, s := range lc.Steps {
		if s.Seq != seq {
			continue
		}
		o := origin{step: s, known: true, actors: actorsFor(s, "metadata.finalizers["+name+"]")}
		if i == 0 {
			o.present = s.Type == store.Initial
			o.created = !o.present
		}
		if o.created && lc.Admission != nil {
			for j := range lc.Admission.Changes {
				if c := &lc.Admission.Changes[j]; c.Op == OpAdd && (c.Path == "metadata.finalizers["+name+"]" || c.Path == "metadata.finalizers") {
					o.admission = c
				}
			}
		}
		return o
	}
	return origin{}
}

// knownActors reports whether any actor is known, not "unknown".
func knownActors(actors []Actor) bool {
	for _, a := range actors {
		if a.Basis != BasisUnknown {
			return true
		}
	}
	return false
}

// unownedFinalizer says what removes a finalizer that no built-in
// controller owns, from who added it; i is its index in the pod's
// metadata.finalizers as last recorded. Only a pod created with it by its
// own creator (no admission change added it) is said to have no
// controller behind it: anything else names who added it, or says it is
// not known.
func unownedFinalizer(lc *Lifecycle, name string, i int) string {
	o := lc.finalizerOrigin(name)
	head := fmt.Sprintf("%q: no built-in controller owns it", name)
	patch := fmt.Sprintf(`kubectl patch pod %s -n %s --type=json -p '[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]'`,
		lc.Name, lc.Namespace, i, name, i)
	switch {
	case !o.known:
		return head + "; the recording does not show when it was added: find the controller that handles it before removing it"
	case o.present:
		return head + "; it was on the pod when the recording began, so who added it is not recorded: find the controller that handles it (the pod's creator, its owner's pod template, a mutating webhook) before removing it"
	case o.created && o.admission != nil:
		return fmt.Sprintf("%s; the pod was created with it, added at admission by %s (%s), not in the pod as asked for: check the controller behind that, which should remove it", head, o.admission.By, o.admission.Certainty)
	case o.created && !knownActors(o.actors):
		return fmt.Sprintf("%s; the pod was created with it, by a client the recording does not name (%s): if it came in a manifest, nothing will remove it; once you are sure nothing needs it, remove it: %s", head, whoOf(o.actors), patch)
	case o.created && createdByKubectl(o.actors):
		return fmt.Sprintf("%s; the pod was created with it by %s: it was in the manifest, no controller recorded here added it, and none may ever remove it. Once you are sure nothing needs it, remove it: %s", head, whoOf(o.actors), patch)
	case o.created && createdByBuiltin(o.actors) && controllerOf(lc) != "":
		return fmt.Sprintf("%s; the pod was created with it by %s, from the pod template of its owner %s: that controller copies the template and does not remove it. Take it out of the template; once you are sure nothing needs it here, remove it: %s", head, whoOf(o.actors), controllerOf(lc), patch)
	case o.created:
		return fmt.Sprintf("%s; the pod was created with it by %s: if that is a controller, it is the one to remove it, check it; if it applied a manifest (a person, CI), nothing will: once you are sure nothing needs it, remove it: %s", head, whoOf(o.actors), patch)
	case knownActors(o.actors):
		return fmt.Sprintf("%s; it was added at #%d by %s: check that controller, which should remove it (is it running, what does it wait for?)", head, o.step.Seq, whoOf(o.actors))
	}
	return fmt.Sprintf("%s; it was added at #%d by a writer the recording does not name (%s): find the controller that handles it before removing it", head, o.step.Seq, whoOf(o.actors))
}

// createdByKubectl reports whether every known creator is kubectl, which
// sends the manifest it is given.
func createdByKubectl(actors []Actor) bool {
	ok := false
	for _, a := range actors {
		if a.Basis == BasisUnknown {
			continue
		}
		if !strings.HasPrefix(a.Manager, "kubectl") {
			return false
		}
		ok = true
	}
	return ok
}

// createdByBuiltin reports whether the creator is kube-controller-manager,
// which creates pods from their owner's template.
func createdByBuiltin(actors []Actor) bool {
	return len(actors) == 1 && actors[0].Manager == "kube-controller-manager"
}

// controllerOf names the pod's controller owner ("ReplicaSet web-7d9"), or
// "".
func controllerOf(lc *Lifecycle) string {
	for _, o := range lc.pods[0].OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + " " + o.Name
		}
	}
	return ""
}

// FinalizerRemovalGrace is how long a finished pod may keep a finalizer
// that its controller removes from finished pods before finalizer-not-removed
// reports it. Such a controller removes it within seconds of seeing the pod
// finish and retries a failed removal with a back-off that starts at a second
// (the job controller's), so this is several failed attempts.
const FinalizerRemovalGrace = 30 * time.Second

// stuckFinalizers finds a pod whose deletion was requested, whose grace
// period is over, and which is still held by finalizers at the end of the
// recording.
func stuckFinalizers(lc *Lifecycle, in Input) []Finding {
	last := lc.pods[len(lc.pods)-1]
	if lc.Outcome != "Terminating" || len(last.Finalizers) == 0 {
		return nil
	}
	if last.DeletionTimestamp != nil && lc.RecordingEnd.Before(last.DeletionTimestamp.Time) {
		return nil // still within the grace period
	}
	req, _ := lc.phase(PhaseDeletionRequested)
	lastStep := lc.Steps[len(lc.Steps)-1]
	f := Finding{
		ID:       "stuck-finalizer",
		Severity: Critical,
		Headline: fmt.Sprintf("deletion blocked for %s: finalizer %s never removed", lc.Terminating, strings.Join(quoteAll(last.Finalizers), ", ")),
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	for _, fin := range last.Finalizers {
		if seq, t, ok := lc.finalizerAdded(fin); ok {
			text := fmt.Sprintf("finalizer %q appeared", fin)
			if _, owned := finalizerOwners[fin]; !owned {
				if o := lc.finalizerOrigin(fin); o.known {
					text += ", added by " + whoOf(o.actors)
				}
			}
			f.Evidence = append(f.Evidence, Evidence{Seq: seq, Time: t, Text: text})
		}
	}
	if stopped, detail := containersStopped(last); stopped {
		f.Evidence = append(f.Evidence, Evidence{Seq: lastStep.Seq, Time: lastStep.Time, Text: "containers stopped: " + detail})
	}
	var blocking []string
	for _, d := range lc.Dependents {
		switch {
		case !d.Deleted.IsZero() && d.Deleted.After(req.Time):
			f.Evidence = append(f.Evidence, Evidence{Time: d.Deleted, Text: fmt.Sprintf("dependent %s %s deleted after the deletion request", d.Kind, d.Name)})
		case !d.Deleted.IsZero():
			f.Evidence = append(f.Evidence, Evidence{Time: d.Deleted, Text: fmt.Sprintf("dependent %s %s deleted", d.Kind, d.Name)})
		case d.Blocking:
			blocking = append(blocking, d.Kind+" "+d.Name)
		}
	}
	if len(blocking) > 0 {
		f.Evidence = append(f.Evidence, Evidence{Text: "dependents still present, with blockOwnerDeletion: " + strings.Join(blocking, ", ")})
	}
	f.Evidence = append(f.Evidence, jobAccounting(lc, in)...)
	f.Evidence = append(f.Evidence, gapEvidence(lc, req.Time)...)
	f.Evidence = append(f.Evidence, silence(lc))

	for i, fin := range last.Finalizers {
		if _, owned := finalizerOwners[fin]; owned {
			f.Next = append(f.Next, fmt.Sprintf("%q is removed by %s", fin, finalizerOwnerOf(fin)))
		} else {
			f.Next = append(f.Next, unownedFinalizer(lc, fin, i))
		}
	}
	if len(blocking) > 0 {
		f.Next = append(f.Next, "find out why the dependents still present are not being deleted (their own finalizers?)")
	}
	blockedRemoval(&f, lc, in)
	return []Finding{f}
}

// finalizerNotRemoved finds a finished pod, not deleted, that still holds a
// finalizer its controller removes from finished pods (the job controller's
// batch.kubernetes.io/job-tracking) well after it finished: the controller
// could not remove it, or is not running.
func finalizerNotRemoved(lc *Lifecycle, in Input) []Finding {
	var done Phase
	switch lc.Outcome {
	case string(corev1.PodSucceeded):
		done, _ = lc.phase(PhaseSucceeded)
	case string(corev1.PodFailed):
		done, _ = lc.phase(PhaseFailed)
	default:
		return nil // running, pending, terminating (stuckFinalizers) or gone
	}
	last := lc.pods[len(lc.pods)-1]
	var held []string
	for _, fin := range last.Finalizers {
		if finalizerOwners[fin].onFinish {
			held = append(held, fin)
		}
	}
	// Observed time only: a recorder that was not running saw no removal,
	// which is no evidence that there was none to see.
	waited := observedFor(lc.Gaps, done.Time, lc.RecordingEnd)
	if len(held) == 0 || waited < FinalizerRemovalGrace {
		return nil
	}
	f := Finding{
		ID:       "finalizer-not-removed",
		Severity: Warning,
		Headline: fmt.Sprintf("finished %s before the recording ended and still held by finalizer %s, which its controller removes once a pod has finished",
			Duration(waited), strings.Join(quoteAll(held), ", ")),
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: done.Seq, Time: done.Time, Text: strings.TrimSpace("pod " + done.Name + ": " + done.Detail)})
	for _, fin := range held {
		if seq, t, ok := lc.finalizerAdded(fin); ok {
			f.Evidence = append(f.Evidence, Evidence{Seq: seq, Time: t, Text: fmt.Sprintf("finalizer %q appeared", fin)})
		}
	}
	f.Evidence = append(f.Evidence, jobAccounting(lc, in)...)
	f.Evidence = append(f.Evidence, gapEvidence(lc, done.Time)...)
	f.Evidence = append(f.Evidence, silence(lc))
	for _, fin := range held {
		f.Next = append(f.Next, fmt.Sprintf("%q is removed by %s", fin, finalizerOwnerOf(fin)))
	}
	f.Next = append(f.Next, "until it is removed the pod stays, and its controller may not count it as finished: check that controller's logs in kube-controller-manager")
	blockedRemoval(&f, lc, in)
	return []Finding{f}
}

// silence is the evidence that nothing happened to the pod after its last
// revision.
func silence(lc *Lifecycle) Evidence {
	lastStep := lc.Steps[len(lc.Steps)-1]
	observed := observedFor(lc.Gaps, lastStep.Time, lc.RecordingEnd)
	return Evidence{Seq: lastStep.Seq, Time: lastStep.Time,
		Text: fmt.Sprintf("no revision after this one: silence for %s until the recording ended%s",
			Duration(observed), unobservedNote(lc.Gaps, lastStep.Time, lc.RecordingEnd))}
}

// gapEvidence lists the gaps in observation since from: the durations of a
// finding count only the time around them.
func gapEvidence(lc *Lifecycle, from time.Time) []Evidence {
	var out []Evidence
	for _, g := range within(lc.Gaps, from, lc.RecordingEnd) {
		out = append(out, Evidence{Time: g.Start, Text: g.Text()})
	}
	return out
}

// blockedRemoval names, as suspects, the webhooks and admission policies
// that intercept pod UPDATE in the pod's namespace: whoever removes a
// finalizer does it with an UPDATE of the pod, and each of them can deny
// it.
func blockedRemoval(f *Finding, lc *Lifecycle, in Input) {
	last := lc.pods[len(lc.pods)-1]
	var prev *corev1.Pod
	if n := len(lc.pods); n > 1 {
		prev = lc.pods[n-2]
	}
	nsRecs := namespaceRecords(in, lc.Namespace)
	req := admission.PodRequest(admissionv1.Update, "", prev, last, nsRecs, lc.RecordingEnd)
	f.Suspects = admission.MatchWebhooks(in.Webhooks, lc.RecordingEnd, req)
	for _, w := range f.Suspects {
		f.Next = append(f.Next, fmt.Sprintf("%s %s intercepts pod UPDATE here (failurePolicy %s): an error or denial from it blocks the finalizer removal; check its logs, and the API server's audit log for denied pod UPDATEs (responseStatus code 4xx/5xx)", strings.TrimSuffix(w.Kind, "Configuration"), w.Name, w.FailurePolicy))
	}
	policySuspects(f, in, lc.RecordingEnd, req)
	if len(f.Suspects) == 0 && (len(in.Webhooks) > 0 || len(in.Policies) > 0) {
		f.Evidence = append(f.Evidence, Evidence{Text: "no recorded admission webhook or admission policy intercepts pod UPDATE in this namespace"})
	}
	if missing := admission.UnrecordedPolicies(in.Sessions); len(missing) > 0 {
		f.Evidence = append(f.Evidence, Evidence{Text: fmt.Sprintf("%s were not recorded (the recorder was not permitted to watch them, or the API server does not serve them): one may intercept pod UPDATE unseen", strings.Join(missing, ", "))})
	}
}

// jobAccounting says how the pod's Job, as last recorded, accounts for it:
// a finished pod listed in status.uncountedTerminatedPods is one the job
// controller has seen finish but whose finalizer it has not yet removed.
func jobAccounting(lc *Lifecycle, in Input) []Evidence {
	last := lc.pods[len(lc.pods)-1]
	for _, o := range last.OwnerReferences {
		if o.Kind != "Job" || o.Controller == nil || !*o.Controller {
			continue
		}
		recs := in.Related[string(o.UID)]
		if len(recs) == 0 {
			return []Evidence{{Text: fmt.Sprintf("owner Job %s was not recorded", o.Name)}}
		}
		rec := recs[len(recs)-1]
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			return []Evidence{{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("owner Job %s was deleted: the job controller removes the finalizer of its orphaned pods", o.Name)}}
		}
		var job batchv1.Job
		if json.Unmarshal(rec.Object, &job) != nil {
			return nil
		}
		var out []Evidence
		if u := job.Status.UncountedTerminatedPods; u != nil {
			for _, l := range []struct {
				name string
				uids []types.UID
			}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
				if slices.Contains(l.uids, last.UID) {
					since := rec.Observed
					seq := rec.Seq
					for i := len(recs) - 1; i >= 0; i-- {
						var j batchv1.Job
						if json.Unmarshal(recs[i].Object, &j) != nil || j.Status.UncountedTerminatedPods == nil ||
							!slices.Contains(append(append([]types.UID{}, j.Status.UncountedTerminatedPods.Succeeded...), j.Status.UncountedTerminatedPods.Failed...), last.UID) {
							break
						}
						since, seq = recs[i].Observed, recs[i].Seq
					}
					out = append(out, Evidence{Seq: seq, Time: since, Text: fmt.Sprintf("Job %s lists the pod in status.uncountedTerminatedPods.%s: the job controller has seen it finish and has not removed its finalizer since", o.Name, l.name)})
				}
			}
		}
		var conds []string
		for _, c := range job.Status.Conditions {
			if c.Status == corev1.ConditionTrue {
				conds = append(conds, string(c.Type))
			}
		}
		state := "no condition True"
		if len(conds) > 0 {
			state = "conditions " + strings.Join(conds, ", ")
		}
		out = append(out, Evidence{Seq: rec.Seq, Time: rec.Observed, Text: fmt.Sprintf("Job %s as last recorded: %s; active %d, succeeded %d, failed %d", o.Name, state, job.Status.Active, job.Status.Succeeded, job.Status.Failed)})
		return out
	}
	return nil
}

// finalizerAdded returns the step where a finalizer appeared.
func (lc *Lifecycle) finalizerAdded(name string) (uint64, time.Time, bool) {
	path := "metadata.finalizers[" + name + "]"
	for _, s := range lc.Steps {
		for _, c := range s.Changes {
			if c.Op == OpAdd && (c.Path == path || (c.Path == "metadata.finalizers" && strings.Contains(c.New, `"`+name+`"`))) {
				return s.Seq, s.Time, true
			}
		}
	}
	return 0, time.Time{}, false
}

// containersStopped reports whether no container of the pod is running.
func containersStopped(p *corev1.Pod) (bool, string) {
	if len(p.Status.ContainerStatuses) == 0 {
		return false, ""
	}
	var parts []string
	ready := 0
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running != nil {
			return false, ""
		}
		if s.Ready {
			ready++
		}
		if t := s.State.Terminated; t != nil {
			parts = append(parts, fmt.Sprintf("%s terminated (%s, exit %d)", s.Name, t.Reason, t.ExitCode))
		}
	}
	return true, fmt.Sprintf("%d/%d ready; %s", ready, len(p.Status.ContainerStatuses), strings.Join(parts, ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// namespaceRecords returns the recorded revisions of the named namespace.
func namespaceRecords(in Input, name string) []store.Record {
	for _, recs := range in.Related {
		if len(recs) > 0 && recs[0].Kind == "Namespace" && recs[0].Name == name {
			return recs
		}
	}
	return nil
}

// nodeRecords returns the recorded revisions of the named node.
func nodeRecords(in Input, name string) []store.Record {
	for _, recs := range in.Related {
		if len(recs) > 0 && recs[0].Kind == "Node" && recs[0].Name == name {
			return recs
		}
	}
	return nil
}

// lostNode finds a terminating pod on a node that stopped reporting: no
// kubelet confirms the containers stopped, so the pod is never removed.
func lostNode(lc *Lifecycle, in Input) []Finding {
	if lc.Outcome != "Terminating" || lc.Node == "" {
		return nil
	}
	recs := nodeRecords(in, lc.Node)
	if len(recs) == 0 {
		return nil
	}
	last := recs[len(recs)-1]
	f := Finding{ID: "node-lost", Severity: Critical}
	if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
		f.Headline = fmt.Sprintf("terminating for %s on node %s, which was deleted", lc.Terminating, lc.Node)
		f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: "node " + lc.Node + " deleted"})
	} else {
		var node corev1.Node
		if json.Unmarshal(last.Object, &node) != nil {
			return nil
		}
		var ready *corev1.NodeCondition
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				ready = &node.Status.Conditions[i]
			}
		}
		if ready == nil || ready.Status == corev1.ConditionTrue {
			return nil
		}
		f.Headline = fmt.Sprintf("terminating for %s on node %s, which stopped reporting (Ready %s since %s)", lc.Terminating, lc.Node, ready.Status, ready.LastTransitionTime.UTC().Format(time.RFC3339))
		f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("node %s Ready=%s: %s %s", lc.Node, ready.Status, ready.Reason, ready.Message)})
		for _, t := range node.Spec.Taints {
			f.Evidence = append(f.Evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("node taint %s:%s", t.Key, t.Effect)})
		}
	}
	req, _ := lc.phase(PhaseDeletionRequested)
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	f.Next = []string{
		"no kubelet confirms that the containers stopped, so the API server keeps the pod until the node comes back or the node object is deleted",
		"bring the node back, or delete the Node object if the machine is gone (kubectl delete node " + lc.Node + "); as a last resort force-delete the pod (kubectl delete pod --grace-period=0 --force)",
	}
	return []Finding{f}
}

// unschedulable finds a pod that was never bound to a node, and says, for
// each node recorded when the scheduler last failed, which of the
// scheduler's filters it fails (fitNode). The scheduler's own message is
// kept whole in the evidence.
func unschedulable(lc *Lifecycle, in Input) []Finding {
	if lc.Node != "" {
		return nil
	}
	var evidence []Evidence
	for _, e := range lc.Events {
		if e.Reason == "FailedScheduling" {
			evidence = append(evidence, Evidence{Seq: e.Seq, Time: e.Time, Text: fmt.Sprintf("%s (x%d): %s", e.Reason, max(e.Count, 1), e.Message)})
		}
	}
	last := lc.pods[len(lc.pods)-1]
	gated := false
	for _, c := range last.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			evidence = append(evidence, Evidence{Time: c.LastTransitionTime.Time, Text: fmt.Sprintf("condition PodScheduled=False %s: %s", c.Reason, c.Message)})
			gated = c.Reason == corev1.PodReasonSchedulingGated
		}
	}
	if len(evidence) == 0 {
		return nil
	}
	// The scheduler's word, shortened at a sentence's end at most.
	said := shorten(evidence[len(evidence)-1].Text, 160)
	f := Finding{ID: "unschedulable", Severity: Warning, Headline: "never scheduled: " + said, Evidence: evidence,
		Next: []string{"compare the pod's requests, nodeSelector, affinity and tolerations with the nodes' allocatable resources, labels and taints"}}
	if gated || len(last.Spec.SchedulingGates) > 0 {
		// The scheduler does not try a gated pod: no node is at fault.
		f.Next = []string{"the pod waits for its scheduling gates to be removed (spec.schedulingGates), by whoever added them"}
		return []Finding{f}
	}
	t := scheduleTime(lc)
	fits := fitNodes(lc, in, t)
	if fits == nil {
		f.Evidence = append(f.Evidence, Evidence{Text: fmt.Sprintf("the trace holds no node recorded as of %s: the scheduler's message is all there is", t.UTC().Format(time.RFC3339))})
		return []Finding{f}
	}
	groups := groupFits(fits)
	var passing []string
	for _, nf := range fits {
		what := "passes every check podtrace makes (cordon, nodeSelector, required node affinity, taints, resources as far as recorded)"
		if len(nf.misfits) > 0 {
			var parts []string
			for _, m := range nf.misfits {
				part := m.verb + " " + m.rest
				if m.detail != "" {
					part += " (" + m.detail + ")"
				}
				parts = append(parts, part)
			}
			what = strings.Join(parts, ", ")
		} else {
			passing = append(passing, nf.name)
		}
		if nf.notReady != "" && len(nf.misfits) == 0 {
			what += "; it is not Ready (" + nf.notReady + ") but has no taint that keeps the pod off"
		}
		f.Evidence = append(f.Evidence, Evidence{Seq: nf.rec.Seq, Time: nf.rec.Observed, Text: fmt.Sprintf("node %s, as recorded when the scheduler last failed: %s", nf.name, what)})
	}
	f.Next = remedies(groups)
	var clauses []string
	for _, g := range groups {
		clauses = append(clauses, g.text())
	}
	if len(passing) == 0 {
		f.Headline = "never scheduled: no node fits: " + strings.Join(clauses, "; ")
		return []Finding{f}
	}
	// Some node passes what podtrace checks: what else the scheduler
	// checks (pod affinity, topology spread, volumes, ports) is the cause,
	// and only its message says which.
	f.Next = append(f.Next, fmt.Sprintf("%s %s every check podtrace makes: the scheduler's message says what else rules %s out (pod affinity or anti-affinity, topology spread, volumes, ports)",
		strings.Join(passing, ", "), map[bool]string{true: "passes", false: "pass"}[len(passing) == 1], map[bool]string{true: "it", false: "them"}[len(passing) == 1]))
	return []Finding{f}
}

// containerTrouble finds image pulls that fail, crash loops and OOM kills,
// from the container statuses of every revision.
func containerTrouble(lc *Lifecycle, in Input) []Finding {
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
	note := func(m map[string]*seen, key string, step Step, text string) {
		m[key] = &seen{ev: Evidence{Seq: step.Seq, Time: step.Time, Text: text}, count: 1}
		order = append(order, key)
	}
	for i, pod := range lc.pods {
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

// eventsLike returns the pod's events with one of the given reasons as
// evidence.
func eventsLike(lc *Lifecycle, reasons ...string) []Evidence {
	var out []Evidence
	for _, e := range lc.Events {
		for _, r := range reasons {
			if e.Reason == r {
				out = append(out, Evidence{Seq: e.Seq, Time: e.Time, Text: fmt.Sprintf("event %s %s (x%d): %s", e.Type, e.Reason, max(e.Count, 1), e.Message)})
				break
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// podFailed explains a pod that ended Failed: evicted, preempted, past its
// deadline, or with containers that exited non-zero.
func podFailed(lc *Lifecycle, in Input) []Finding {
	p, ok := lc.phase(PhaseFailed)
	if !ok {
		return nil
	}
	var pod *corev1.Pod
	for i, s := range lc.Steps {
		if s.Seq == p.Seq {
			pod = lc.pods[i]
		}
	}
	f := Finding{ID: "failed", Severity: Warning, Evidence: []Evidence{{Seq: p.Seq, Time: p.Time, Text: "phase Failed: " + p.Detail}}}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, Evidence{Time: c.LastTransitionTime.Time, Text: fmt.Sprintf("condition DisruptionTarget %s: %s", c.Reason, c.Message)})
		}
	}
	switch pod.Status.Reason {
	case "Evicted":
		f.ID, f.Headline = "evicted", "evicted: "+pod.Status.Message
		f.Next = []string{"check the node's pressure conditions and the pod's requests"}
	case "DeadlineExceeded":
		f.ID, f.Headline = "deadline-exceeded", "failed by deadline: "+pod.Status.Message
		f.Next = []string{"the pod ran longer than spec.activeDeadlineSeconds"}
	case "Preempting", "Preempted":
		f.ID, f.Headline = "preempted", "preempted: "+pod.Status.Message
	default:
		f.Headline = "failed: " + p.Detail
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Reason == "PreemptionByScheduler" {
				f.ID, f.Headline = "preempted", "preempted by the scheduler: "+c.Message
			}
		}
	}
	f.Evidence = append(f.Evidence, eventsLike(lc, "Evicted", "Preempted", "DeadlineExceeded", "Killing")...)
	return []Finding{f}
}
