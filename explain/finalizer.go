package explain

// Finalizers: a pod whose deletion waits on a finalizer nobody removes
// (stuck-finalizer), and a finished pod still held by one its controller
// removes on finish (finalizer-not-removed); who owns each finalizer.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

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
	step diff.Step
	// actors wrote the finalizer: the manager whose managedFields entry
	// owns it, else the revision's actors.
	actors []diff.Actor
	// created: the pod was created with it during the recording; present:
	// it was there when the recording began, added by no one recorded.
	created, present bool
	// admission is the admission change that added it at creation, if the
	// admission comparison finds the pod as asked for without it.
	admission *diff.AdmissionChange
	known     bool
}

// finalizerOrigin finds where a finalizer came from.
func finalizerOrigin(lc *diff.Lifecycle, name string) origin {
	seq, _, ok := finalizerAdded(lc, name)
	if !ok {
		return origin{}
	}
	for i, s := range lc.Steps {
		if s.Seq != seq {
			continue
		}
		o := origin{step: s, known: true, actors: diff.ActorsFor(s, "metadata.finalizers["+name+"]")}
		if i == 0 {
			o.present = s.Type == store.Initial
			o.created = !o.present
		}
		if o.created && lc.Admission != nil {
			for j := range lc.Admission.Changes {
				if c := &lc.Admission.Changes[j]; c.Op == diff.OpAdd && (c.Path == "metadata.finalizers["+name+"]" || c.Path == "metadata.finalizers") {
					o.admission = c
				}
			}
		}
		return o
	}
	return origin{}
}

// knownActors reports whether any actor is known, not "unknown".
func knownActors(actors []diff.Actor) bool {
	for _, a := range actors {
		if a.Basis != diff.BasisUnknown {
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
func unownedFinalizer(lc *diff.Lifecycle, name string, i int) string {
	o := finalizerOrigin(lc, name)
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
		return fmt.Sprintf("%s; the pod was created with it, by a client the recording does not name (%s): if it came in a manifest, nothing will remove it; once you are sure nothing needs it, remove it: %s", head, diff.WhoOf(o.actors), patch)
	case o.created && createdByKubectl(o.actors):
		return fmt.Sprintf("%s; the pod was created with it by %s: it was in the manifest, no controller recorded here added it, and none may ever remove it. Once you are sure nothing needs it, remove it: %s", head, diff.WhoOf(o.actors), patch)
	case o.created && createdByBuiltin(o.actors) && controllerOf(lc) != "":
		return fmt.Sprintf("%s; the pod was created with it by %s, from the pod template of its owner %s: that controller copies the template and does not remove it. Take it out of the template; once you are sure nothing needs it here, remove it: %s", head, diff.WhoOf(o.actors), controllerOf(lc), patch)
	case o.created:
		return fmt.Sprintf("%s; the pod was created with it by %s: if that is a controller, it is the one to remove it, check it; if it applied a manifest (a person, CI), nothing will: once you are sure nothing needs it, remove it: %s", head, diff.WhoOf(o.actors), patch)
	case knownActors(o.actors):
		return fmt.Sprintf("%s; it was added at #%d by %s: check that controller, which should remove it (is it running, what does it wait for?)", head, o.step.Seq, diff.WhoOf(o.actors))
	}
	return fmt.Sprintf("%s; it was added at #%d by a writer the recording does not name (%s): find the controller that handles it before removing it", head, o.step.Seq, diff.WhoOf(o.actors))
}

// createdByKubectl reports whether every known creator is kubectl, which
// sends the manifest it is given.
func createdByKubectl(actors []diff.Actor) bool {
	ok := false
	for _, a := range actors {
		if a.Basis == diff.BasisUnknown {
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
func createdByBuiltin(actors []diff.Actor) bool {
	return len(actors) == 1 && actors[0].Manager == "kube-controller-manager"
}

// controllerOf names the pod's controller owner ("ReplicaSet web-7d9"), or
// "".
func controllerOf(lc *diff.Lifecycle) string {
	for _, o := range lc.Pods()[0].OwnerReferences {
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
func stuckFinalizers(lc *diff.Lifecycle, in diff.Input) []Finding {
	last := lc.Pods()[len(lc.Pods())-1]
	if lc.Outcome != "Terminating" || len(last.Finalizers) == 0 {
		return nil
	}
	// Measured against the grace period as first set (the kubelet's
	// confirmation moves deletionTimestamp to now): a pod within it, or
	// just past it, is still going, recording or not.
	past := PastGrace(lc)
	if past <= TerminationSlack {
		return nil
	}
	_, grace := GraceDeadline(lc)
	req, _ := lc.Phase(diff.PhaseDeletionRequested)
	lastStep := lc.Steps[len(lc.Steps)-1]
	f := Finding{
		ID:       "stuck-finalizer",
		Severity: Critical,
		Headline: fmt.Sprintf("deletion blocked %s past its grace period (%s): finalizer %s never removed",
			diff.Duration(past), diff.Duration(grace), strings.Join(quoteAll(last.Finalizers), ", ")),
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: req.Seq, Time: req.Time, Text: "deletion requested: " + req.Detail})
	for _, fin := range last.Finalizers {
		if seq, t, ok := finalizerAdded(lc, fin); ok {
			text := fmt.Sprintf("finalizer %q appeared", fin)
			if _, owned := finalizerOwners[fin]; !owned {
				if o := finalizerOrigin(lc, fin); o.known {
					text += ", added by " + diff.WhoOf(o.actors)
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
func finalizerNotRemoved(lc *diff.Lifecycle, in diff.Input) []Finding {
	var done diff.Phase
	switch lc.Outcome {
	case string(corev1.PodSucceeded):
		done, _ = lc.Phase(diff.PhaseSucceeded)
	case string(corev1.PodFailed):
		done, _ = lc.Phase(diff.PhaseFailed)
	default:
		return nil // running, pending, terminating (stuckFinalizers) or gone
	}
	last := lc.Pods()[len(lc.Pods())-1]
	var held []string
	for _, fin := range last.Finalizers {
		if finalizerOwners[fin].onFinish {
			held = append(held, fin)
		}
	}
	// Observed time only: a recorder that was not running saw no removal,
	// which is no evidence that there was none to see.
	waited := diff.ObservedFor(lc.Gaps, done.Time, lc.RecordingEnd)
	if len(held) == 0 || waited < FinalizerRemovalGrace {
		return nil
	}
	f := Finding{
		ID:       "finalizer-not-removed",
		Severity: Warning,
		Headline: fmt.Sprintf("finished %s before the recording ended and still held by finalizer %s, which its controller removes once a pod has finished",
			diff.Duration(waited), strings.Join(quoteAll(held), ", ")),
	}
	f.Evidence = append(f.Evidence, Evidence{Seq: done.Seq, Time: done.Time, Text: strings.TrimSpace("pod " + done.Name + ": " + done.Detail)})
	for _, fin := range held {
		if seq, t, ok := finalizerAdded(lc, fin); ok {
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

// jobAccounting says how the pod's Job, as last recorded, accounts for it:
// a finished pod listed in status.uncountedTerminatedPods is one the job
// controller has seen finish but whose finalizer it has not yet removed.
func jobAccounting(lc *diff.Lifecycle, in diff.Input) []Evidence {
	last := lc.Pods()[len(lc.Pods())-1]
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
func finalizerAdded(lc *diff.Lifecycle, name string) (uint64, time.Time, bool) {
	path := "metadata.finalizers[" + name + "]"
	for _, s := range lc.Steps {
		for _, c := range s.Changes {
			if c.Op == diff.OpAdd && (c.Path == path || (c.Path == "metadata.finalizers" && strings.Contains(c.New, `"`+name+`"`))) {
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
