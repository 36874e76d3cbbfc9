package explain

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// A pod's owners' recorded history, read for the ended finding. Each
// owner's history is decoded once per command (diff.DecodeHistory, shared
// through in.Histories by every pod's replay: the 2,000 pods of a
// ReplicaSet read its history 2,000 times), and what a rule asks of it is
// a binary search by time or a walk of a few revisions.

// ownerSlack is how far apart the recorder may observe an owner's revision
// and a pod's that one caused: they come from different watches.
const ownerSlack = time.Second

// ownerRev is one revision of an owner, whatever its kind: its metadata.
type ownerRev struct {
	seq      uint64
	observed time.Time
	deleted  bool
	meta     *metav1.ObjectMeta
}

// ownerRevs is an owner's history as ownerRevs, a view shared per command;
// gone is the index of its first revision that was its deletion or
// carried a deletionTimestamp, or -1.
type ownerRevs struct {
	revs []ownerRev
	gone int
}

// ownerHistory returns the history of the owner ref as ownerRevs: decoded
// as its kind where podtrace records it, else as metadata only.
func ownerHistory(in diff.Input, ref *metav1.OwnerReference) ownerRevs {
	recs := in.Related[string(ref.UID)]
	return diff.Memo(in.Histories, recs, func() ownerRevs {
		h := ownerRevs{revs: ownerMetas(in, ref.Kind, recs), gone: -1}
		for i, r := range h.revs {
			if r.deleted || r.meta != nil && r.meta.DeletionTimestamp != nil {
				h.gone = i
				break
			}
		}
		return h
	})
}

// ownerMetas decodes an owner's history as its kind, for its metadata.
func ownerMetas(in diff.Input, kind string, recs []store.Record) []ownerRev {
	switch kind {
	case "ReplicaSet":
		return revsOf(diff.DecodeHistory[appsv1.ReplicaSet](in.Histories, recs), func(o *appsv1.ReplicaSet) *metav1.ObjectMeta { return &o.ObjectMeta })
	case "Deployment":
		return revsOf(diff.DecodeHistory[appsv1.Deployment](in.Histories, recs), func(o *appsv1.Deployment) *metav1.ObjectMeta { return &o.ObjectMeta })
	case "StatefulSet":
		return revsOf(diff.DecodeHistory[appsv1.StatefulSet](in.Histories, recs), func(o *appsv1.StatefulSet) *metav1.ObjectMeta { return &o.ObjectMeta })
	case "DaemonSet":
		return revsOf(diff.DecodeHistory[appsv1.DaemonSet](in.Histories, recs), func(o *appsv1.DaemonSet) *metav1.ObjectMeta { return &o.ObjectMeta })
	case "Job":
		return revsOf(diff.DecodeHistory[batchv1.Job](in.Histories, recs), func(o *batchv1.Job) *metav1.ObjectMeta { return &o.ObjectMeta })
	case "CronJob":
		return revsOf(diff.DecodeHistory[batchv1.CronJob](in.Histories, recs), func(o *batchv1.CronJob) *metav1.ObjectMeta { return &o.ObjectMeta })
	}
	return revsOf(diff.DecodeHistory[metav1.PartialObjectMetadata](in.Histories, recs), func(o *metav1.PartialObjectMetadata) *metav1.ObjectMeta { return &o.ObjectMeta })
}

func revsOf[T any](revs []diff.Revision[T], meta func(*T) *metav1.ObjectMeta) []ownerRev {
	out := make([]ownerRev, len(revs))
	for i := range revs {
		r := &revs[i]
		out[i] = ownerRev{seq: r.Seq, observed: r.Observed, deleted: r.Deleted()}
		if r.Object != nil {
			out[i].meta = meta(r.Object)
		}
	}
	return out
}

// ownerGoneBefore reports whether the owner was deleted, or its deletion
// requested, by at, or within ownerSlack after it (strict false), and
// returns that revision's evidence.
func ownerGoneBefore(in diff.Input, owner *metav1.OwnerReference, at time.Time) (e Evidence, ok, strict bool) {
	h := ownerHistory(in, owner)
	i := h.gone
	if i < 0 || h.revs[i].observed.After(at.Add(ownerSlack)) {
		return Evidence{}, false, false
	}
	r := h.revs[i]
	strict = !r.observed.After(at)
	if r.deleted {
		return Evidence{Seq: r.seq, Time: r.observed, Text: fmt.Sprintf("owner %s %s deleted", owner.Kind, owner.Name)}, true, strict
	}
	return Evidence{Seq: r.seq, Time: r.observed, Text: fmt.Sprintf("owner %s %s deletion requested (finalizers %v)", owner.Kind, owner.Name, r.meta.Finalizers)}, true, strict
}

// revAt returns the revision of revs last observed by at that decoded,
// else the first observed within ownerSlack after it, and its index, or
// nil and -1.
func revAt[T any](revs []diff.Revision[T], at time.Time) (*diff.Revision[T], int) {
	n := diff.At(revs, at)
	for i := n; i >= 0; i-- {
		if revs[i].Object != nil {
			return &revs[i], i
		}
	}
	for i := n + 1; i < len(revs) && !revs[i].Observed.After(at.Add(ownerSlack)); i++ {
		if revs[i].Object != nil {
			return &revs[i], i
		}
	}
	return nil, -1
}

// near returns the last of idx (indexes of revs, ascending) observed by
// at, else the first observed within ownerSlack after it (the owner's
// watch and the pod's deliver apart), or -1.
func near[T any](revs []diff.Revision[T], idx []int, at time.Time) int {
	if k := lastBefore(revs, idx, at); k >= 0 {
		return k
	}
	return after(revs, idx, at)
}

// after returns the first of idx observed after at, within ownerSlack,
// or -1.
func after[T any](revs []diff.Revision[T], idx []int, at time.Time) int {
	j := sort.Search(len(idx), func(j int) bool { return revs[idx[j]].Observed.After(at) })
	if j < len(idx) && !revs[idx[j]].Observed.After(at.Add(ownerSlack)) {
		return idx[j]
	}
	return -1
}

// replicaSetView is what the rules ask of a ReplicaSet's history: the
// revisions where spec.replicas went down, and those where its controller
// had settled (status.replicas at most spec.replicas for the generation
// it observed).
type replicaSetView struct {
	revs    []diff.Revision[appsv1.ReplicaSet]
	downs   []int // indexes in revs
	settled []int
}

func replicaSetOf(in diff.Input, uid string) replicaSetView {
	recs := in.Related[uid]
	return diff.Memo(in.Histories, recs, func() replicaSetView {
		v := replicaSetView{revs: diff.DecodeHistory[appsv1.ReplicaSet](in.Histories, recs)}
		var prev *appsv1.ReplicaSet
		for i, r := range v.revs {
			rs := r.Object
			if rs == nil || r.Deleted() {
				continue
			}
			if prev != nil && ptrOr(rs.Spec.Replicas, 1) < ptrOr(prev.Spec.Replicas, 1) {
				v.downs = append(v.downs, i)
			}
			if rs.Status.ObservedGeneration >= rs.Generation && rs.Status.Replicas <= ptrOr(rs.Spec.Replicas, 1) {
				v.settled = append(v.settled, i)
			}
			prev = rs
		}
		return v
	})
}

// lastBefore returns the last of idx (indexes of revs, ascending) whose
// revision was observed by at, or -1.
func lastBefore[T any](revs []diff.Revision[T], idx []int, at time.Time) int {
	j := sort.Search(len(idx), func(j int) bool { return revs[idx[j]].Observed.After(at) })
	if j == 0 {
		return -1
	}
	return idx[j-1]
}

// scaledDown returns the revision of the ReplicaSet whose spec.replicas
// went down and made its controller delete a pod whose deletion was asked
// for at at: the last decrease observed by then, after the pod was
// created (from), with no revision between them where the controller had
// settled at the new count (a pod still there when it settled was one it
// kept); else a decrease observed within ownerSlack after at (the watches
// deliver apart). -1 when there is none.
func (v replicaSetView) scaledDown(from, at time.Time) int {
	ok := func(k int) bool {
		return k >= 0 && !v.revs[k].Observed.Before(from.Add(-ownerSlack)) && lastBefore(v.revs, v.settled, at.Add(-ownerSlack)) <= k
	}
	if k := lastBefore(v.revs, v.downs, at); ok(k) {
		return k
	}
	if k := after(v.revs, v.downs, at); ok(k) {
		return k
	}
	return -1
}

// replicasReduced reports whether the ReplicaSet's spec.replicas went
// down at a revision recorded in the pod's life, from its first revision
// to at (with ownerSlack).
func replicasReduced(in diff.Input, owner *metav1.OwnerReference, from, at time.Time) bool {
	v := replicaSetOf(in, string(owner.UID))
	k := near(v.revs, v.downs, at)
	return k >= 0 && !v.revs[k].Observed.Before(from)
}

// downEvidence says how spec.replicas went down at revision k of revs,
// and who wrote it.
func downEvidence[T any](revs []diff.Revision[T], k int, kind string, spec func(*T) (*metav1.ObjectMeta, *int32)) Evidence {
	j := k - 1
	for j >= 0 && revs[j].Object == nil {
		j--
	}
	meta, cur := spec(revs[k].Object)
	var before int32 = 1
	var prevMF []metav1.ManagedFieldsEntry
	if j >= 0 {
		pm, p := spec(revs[j].Object)
		before, prevMF = ptrOr(p, 1), pm.ManagedFields
	}
	who := "writer unknown"
	if a := diff.FieldWriter(prevMF, meta.ManagedFields, "f:spec", "f:replicas"); a != nil {
		who = "by " + a.Label()
	}
	return Evidence{Seq: revs[k].Seq, Time: revs[k].Observed, Text: fmt.Sprintf("%s %s spec.replicas %d -> %d, %s", kind, meta.Name, before, ptrOr(cur, 1), who)}
}

func rsSpec(rs *appsv1.ReplicaSet) (*metav1.ObjectMeta, *int32) {
	return &rs.ObjectMeta, rs.Spec.Replicas
}
func depSpec(d *appsv1.Deployment) (*metav1.ObjectMeta, *int32) {
	return &d.ObjectMeta, d.Spec.Replicas
}

// deploymentView is a Deployment's history and the revisions where its
// spec.replicas went down.
type deploymentView struct {
	revs  []diff.Revision[appsv1.Deployment]
	downs []int
}

func deploymentOf(in diff.Input, uid string) deploymentView {
	recs := in.Related[uid]
	return diff.Memo(in.Histories, recs, func() deploymentView {
		v := deploymentView{revs: diff.DecodeHistory[appsv1.Deployment](in.Histories, recs)}
		var prev *appsv1.Deployment
		for i, r := range v.revs {
			if r.Object == nil || r.Deleted() {
				continue
			}
			if prev != nil && ptrOr(r.Object.Spec.Replicas, 1) < ptrOr(prev.Spec.Replicas, 1) {
				v.downs = append(v.downs, i)
			}
			prev = r.Object
		}
		return v
	})
}

// rsAt returns the ReplicaSet's revision last recorded by at (with
// ownerSlack).
func rsAt(in diff.Input, uid string, at time.Time) *diff.Revision[appsv1.ReplicaSet] {
	r, _ := revAt(replicaSetOf(in, uid).revs, at)
	return r
}

// deploymentAt returns the owner Deployment of rs as last recorded by at,
// and its UID.
func deploymentAt(in diff.Input, rs *appsv1.ReplicaSet, at time.Time) (*diff.Revision[appsv1.Deployment], string) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil || ref.Kind != "Deployment" {
		return nil, ""
	}
	r, _ := revAt(deploymentOf(in, string(ref.UID)).revs, at)
	return r, string(ref.UID)
}

// revisionAnnotation is the deployment controller's revision number of a
// Deployment and of each of its ReplicaSets.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// olderRevision reports whether the ReplicaSet was an older revision of
// its Deployment at time at: the deployment controller numbers both, and
// a rollout scales the older ReplicaSets down.
func olderRevision(in diff.Input, owner *metav1.OwnerReference, at time.Time) bool {
	rs := rsAt(in, string(owner.UID), at)
	if rs == nil {
		return false
	}
	d, _ := deploymentAt(in, rs.Object, at)
	if d == nil {
		return false
	}
	mine, err1 := strconv.Atoi(rs.Object.Annotations[revisionAnnotation])
	theirs, err2 := strconv.Atoi(d.Object.Annotations[revisionAnnotation])
	return err1 == nil && err2 == nil && mine < theirs
}

// newerReplicaSet finds, among the recorded ReplicaSets of the Deployment
// depUID, the one at the Deployment's revision as of at, and the last
// revision by then where its spec.replicas went up: the rollout's new
// ReplicaSet taking over.
func newerReplicaSet(in diff.Input, depUID, revision string, at time.Time) (Evidence, bool) {
	for uid, recs := range in.Related {
		if len(recs) == 0 || recs[0].Kind != "ReplicaSet" {
			continue
		}
		v := replicaSetOf(in, uid)
		cur, i := revAt(v.revs, at)
		if cur == nil || cur.Object.Annotations[revisionAnnotation] != revision {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(cur.Object); ref == nil || string(ref.UID) != depUID {
			continue
		}
		for k := i; k > 0; k-- {
			p, c := v.revs[k-1].Object, v.revs[k].Object
			if p != nil && c != nil && ptrOr(c.Spec.Replicas, 1) > ptrOr(p.Spec.Replicas, 1) {
				return Evidence{Seq: v.revs[k].Seq, Time: v.revs[k].Observed, Text: fmt.Sprintf("ReplicaSet %s (revision %s) spec.replicas %d -> %d: the new revision taking over",
					c.Name, revision, ptrOr(p.Spec.Replicas, 1), ptrOr(c.Spec.Replicas, 1))}, true
			}
		}
	}
	return Evidence{}, false
}

// rolloutEvidence says, for a pod of a ReplicaSet, what the owner chain
// shows: the ReplicaSet's replicas and who changed them, its revision
// against its Deployment's, the new ReplicaSet scaling up, the
// Deployment's scaling events.
func rolloutEvidence(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, at time.Time, mech string) []Evidence {
	if owner.Kind != "ReplicaSet" {
		return nil
	}
	if len(in.Related[string(owner.UID)]) == 0 {
		return []Evidence{{Text: "ReplicaSet " + owner.Name + " was not recorded"}}
	}
	var out []Evidence
	v := replicaSetOf(in, string(owner.UID))
	k := v.scaledDown(lc.Steps[0].Time, at)
	if k < 0 {
		k = near(v.revs, v.downs, at)
	}
	if k >= 0 {
		out = append(out, downEvidence(v.revs, k, "ReplicaSet", rsSpec))
	}
	rsRev := rsAt(in, string(owner.UID), at)
	if rsRev == nil {
		return out
	}
	rs := rsRev.Object
	d, depUID := deploymentAt(in, rs, at)
	if d == nil {
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.Kind == "Deployment" {
			out = append(out, Evidence{Text: "Deployment " + ref.Name + " was not recorded"})
		}
		return out
	}
	dep := d.Object
	out = append(out, Evidence{Seq: d.Seq, Time: d.Observed, Text: fmt.Sprintf("ReplicaSet %s at revision %s of Deployment %s, which is at revision %s with %d replicas",
		rs.Name, orUnknown(rs.Annotations[revisionAnnotation]), dep.Name, orUnknown(dep.Annotations[revisionAnnotation]), ptrOr(dep.Spec.Replicas, 1))})
	switch mech {
	case MechanismScaleDown:
		// Who scaled the Deployment down.
		dv := deploymentOf(in, depUID)
		if k := near(dv.revs, dv.downs, at); k >= 0 {
			out = append(out, downEvidence(dv.revs, k, "Deployment", depSpec))
		}
	case MechanismRollout:
		if e, ok := newerReplicaSet(in, depUID, dep.Annotations[revisionAnnotation], at); ok {
			out = append(out, e)
		}
	}
	// The deployment controller's last "Scaled down replica set NAME ..."
	// (pkg/controller/deployment/sync.go) about this ReplicaSet by then: a
	// rollout of many steps makes dozens.
	var scaled *diff.Event
	for _, e := range diff.ReplayOwnerEvents(in.Histories, depUID, in.OwnerEvents[depUID]) {
		if e.Reason == "ScalingReplicaSet" && !e.Time.Before(lc.Steps[0].Time) && !e.Time.After(at.Add(ownerSlack)) &&
			containsWord(e.Message, rs.Name) {
			e := e
			scaled = &e
		}
	}
	if scaled != nil {
		out = append(out, Evidence{Seq: scaled.Seq, Time: scaled.Time, Text: fmt.Sprintf("event %s on Deployment %s: %s", scaled.Reason, dep.Name, scaled.Message)})
	}
	return out
}

func containsWord(s, word string) bool {
	for _, f := range strings.Fields(s) {
		if f == word {
			return true
		}
	}
	return false
}

// namespaceDeletion returns the revision of the pod's namespace that
// first carried its deletionTimestamp (or its deletion), when it was
// observed by at, or within ownerSlack after it (strict false): the
// namespace controller then deletes everything in it.
func namespaceDeletion(in diff.Input, ns string, at time.Time) (rev *diff.Revision[corev1.Namespace], ok, strict bool) {
	revs := diff.DecodeHistory[corev1.Namespace](in.Histories, in.RelatedNamed("Namespace", ns))
	for i := range revs {
		r := &revs[i]
		deleting := r.Deleted() || r.Object != nil && r.Object.DeletionTimestamp != nil
		late := r.Observed.After(at.Add(ownerSlack))
		switch {
		case deleting && !late:
			return r, true, !r.Observed.After(at)
		case deleting && r.Object != nil && !r.Object.DeletionTimestamp.After(at):
			// Seen late (a recording that began after both deletions), but
			// the namespace's own deletionTimestamp, the API server's clock
			// like the pod's, is not after the pod's deletion.
			return r, true, true
		case late:
			return nil, false, false
		}
	}
	return nil, false, false
}

// storeDeleted reports whether a record type is a deletion.
func storeDeleted(t store.EventType) bool { return t == store.Deleted || t == store.DeletedUnknown }

// inference is a deletion read from the pod's controller's recorded
// fields: the mechanism, the headline, why (for the actor's detail) and
// the evidence.
type inference struct {
	m        mechanism
	headline string
	why      string
	evidence []Evidence
}

// controllerInferred reads, from the recorded history of the pod's
// controller, whether the controller deleted it when its deletion was
// asked for (at): what each controller does by its fields' semantics.
//
//   - ReplicaSet: its spec.replicas went down, and it had not settled at
//     the new count since (replicaSetView.scaledDown): its controller
//     deletes the pods above spec.replicas. A rollout when the ReplicaSet
//     is an older revision of its Deployment.
//   - StatefulSet: its spec.replicas went down to the pod's ordinal or
//     below (scale-down); or, under the RollingUpdate strategy, its
//     status.updateRevision is not the pod's controller-revision-hash
//     (rolling update).
//   - DaemonSet: under the RollingUpdate strategy, its template
//     generation is newer than the pod's pod-template-generation.
//   - Job: it was suspended, its parallelism lowered below its active
//     pods, or it completed with pods still running.
func controllerInferred(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, at time.Time) (inference, bool) {
	if len(in.Related[string(owner.UID)]) == 0 {
		return inference{}, false
	}
	from := lc.Steps[0].Time
	switch owner.Kind {
	case "ReplicaSet":
		v := replicaSetOf(in, string(owner.UID))
		k := v.scaledDown(from, at)
		if k < 0 {
			return inference{}, false
		}
		rs := v.revs[k].Object
		inf := inference{m: deletions[MechanismScaleDown], headline: deletions[MechanismScaleDown].what}
		if olderRevision(in, owner, at) {
			inf.m, inf.headline = deletions[MechanismRollout], deletions[MechanismRollout].what
		}
		down := downEvidence(v.revs, k, "ReplicaSet", rsSpec)
		inf.why = fmt.Sprintf("%s, before this pod's deletion was asked for, and the ReplicaSet had not settled at %s since; the ReplicaSet controller deletes the pods above spec.replicas", down.Text, plural(int(ptrOr(rs.Spec.Replicas, 1)), "pod"))
		inf.evidence = rolloutEvidence(lc, in, owner, at, inf.m.name)
		return inf, true
	case "StatefulSet":
		return statefulSetInferred(lc, in, owner, from, at)
	case "DaemonSet":
		return daemonSetInferred(lc, in, owner, at)
	case "Job":
		return jobInferred(lc, in, owner, from, at)
	}
	return inference{}, false
}

// podBefore returns the pod's last revision observed by at.
func podBefore(lc *diff.Lifecycle, at time.Time) *corev1.Pod {
	pods := lc.Pods()
	p := pods[0]
	for i := range pods {
		if lc.Steps[i].Time.After(at) {
			break
		}
		p = pods[i]
	}
	return p
}

// statefulSetInferred: a StatefulSet's pod is named NAME-ORDINAL; its
// controller deletes the pods whose ordinal is not below spec.replicas
// (from spec.ordinals.start), and under the RollingUpdate strategy the
// pods not at status.updateRevision, one by one.
func statefulSetInferred(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, from, at time.Time) (inference, bool) {
	revs := diff.DecodeHistory[appsv1.StatefulSet](in.Histories, in.Related[string(owner.UID)])
	cur, k := revAt(revs, at)
	if cur == nil {
		return inference{}, false
	}
	sts := cur.Object
	ordinal, err := strconv.Atoi(strings.TrimPrefix(lc.Name, owner.Name+"-"))
	if !strings.HasPrefix(lc.Name, owner.Name+"-") || err != nil {
		return inference{}, false
	}
	start := 0
	if sts.Spec.Ordinals != nil {
		start = int(sts.Spec.Ordinals.Start)
	}
	replicas := int(ptrOr(sts.Spec.Replicas, 1))
	if ordinal >= start+replicas {
		// When did it go down to that?
		for j := k; j > 0; j-- {
			p, c := revs[j-1].Object, revs[j].Object
			if p == nil || c == nil || ptrOr(c.Spec.Replicas, 1) >= ptrOr(p.Spec.Replicas, 1) {
				continue
			}
			if revs[j].Observed.Before(from.Add(-ownerSlack)) {
				break
			}
			e := downEvidence(revs, j, "StatefulSet", func(s *appsv1.StatefulSet) (*metav1.ObjectMeta, *int32) { return &s.ObjectMeta, s.Spec.Replicas })
			m := deletions[MechanismScaleDown]
			m.by = "the StatefulSet controller (kube-controller-manager)"
			return inference{m: m, headline: fmt.Sprintf("deleted by its StatefulSet's controller when StatefulSet %s was scaled down below ordinal %d", sts.Name, ordinal),
				why:      fmt.Sprintf("%s, and the StatefulSet controller deletes the pods whose ordinal (%d) is not below spec.replicas", e.Text, ordinal),
				evidence: []Evidence{e}}, true
		}
		return inference{}, false
	}
	pod := podBefore(lc, at)
	hash := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	if sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || hash == "" || sts.Status.UpdateRevision == "" || hash == sts.Status.UpdateRevision {
		return inference{}, false
	}
	m := deletions[MechanismRollout]
	m.by = "the StatefulSet controller (kube-controller-manager)"
	e := Evidence{Seq: cur.Seq, Time: cur.Observed, Text: fmt.Sprintf("StatefulSet %s status.updateRevision %s (currentRevision %s); this pod's controller-revision-hash %s, strategy %s",
		sts.Name, sts.Status.UpdateRevision, sts.Status.CurrentRevision, hash, orUnknown(string(sts.Spec.UpdateStrategy.Type)))}
	return inference{m: m, headline: fmt.Sprintf("deleted by a rolling update of its StatefulSet %s: its revision %s is not the update revision %s", sts.Name, hash, sts.Status.UpdateRevision),
		why:      e.Text + "; under the RollingUpdate strategy the StatefulSet controller deletes the pods not at the update revision, to re-create them",
		evidence: []Evidence{e}}, true
}

// DaemonSet template generations: the API server counts a DaemonSet's
// template changes in this annotation, and its controller labels each pod
// with the generation it was made from.
const (
	daemonSetGenerationAnnotation = "deprecated.daemonset.template.generation"
	daemonSetGenerationLabel      = "pod-template-generation"
)

// daemonSetInferred: under the RollingUpdate strategy, the DaemonSet
// controller deletes the pods of an older template generation.
func daemonSetInferred(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, at time.Time) (inference, bool) {
	revs := diff.DecodeHistory[appsv1.DaemonSet](in.Histories, in.Related[string(owner.UID)])
	cur, _ := revAt(revs, at)
	if cur == nil || cur.Object.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return inference{}, false
	}
	ds := cur.Object
	theirs, err1 := strconv.Atoi(ds.Annotations[daemonSetGenerationAnnotation])
	mine, err2 := strconv.Atoi(podBefore(lc, at).Labels[daemonSetGenerationLabel])
	if err1 != nil || err2 != nil || mine >= theirs {
		return inference{}, false
	}
	m := deletions[MechanismRollout]
	m.by = "the DaemonSet controller (kube-controller-manager)"
	e := Evidence{Seq: cur.Seq, Time: cur.Observed, Text: fmt.Sprintf("DaemonSet %s at template generation %d; this pod is of generation %d", ds.Name, theirs, mine)}
	return inference{m: m, headline: fmt.Sprintf("deleted by a rolling update of its DaemonSet %s: its template generation %d is older than %d", ds.Name, mine, theirs),
		why:      e.Text + "; under the RollingUpdate strategy the DaemonSet controller deletes the pods of an older template",
		evidence: []Evidence{e}}, true
}

// jobInferred: the job controller deletes its active pods when the Job is
// suspended, when its parallelism goes below its active pods, and when it
// completes with pods still running.
func jobInferred(lc *diff.Lifecycle, in diff.Input, owner *metav1.OwnerReference, from, at time.Time) (inference, bool) {
	revs := diff.DecodeHistory[batchv1.Job](in.Histories, in.Related[string(owner.UID)])
	cur, k := revAt(revs, at)
	if cur == nil {
		return inference{}, false
	}
	job := cur.Object
	m := deletions[MechanismControllerDelete]
	m.by = "the job controller (kube-controller-manager)"
	// The revision where the Job changed as the rule reads it, observed
	// in the pod's life.
	since := func(changed func(p, c *batchv1.Job) bool) (int, bool) {
		for j := k; j > 0; j-- {
			p, c := revs[j-1].Object, revs[j].Object
			if p != nil && c != nil && changed(p, c) {
				return j, !revs[j].Observed.Before(from.Add(-ownerSlack))
			}
		}
		return -1, false
	}
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		if j, ok := since(func(p, c *batchv1.Job) bool { return !ptrTrue(p.Spec.Suspend) && ptrTrue(c.Spec.Suspend) }); ok {
			e := Evidence{Seq: revs[j].Seq, Time: revs[j].Observed, Text: fmt.Sprintf("Job %s spec.suspend set to true", job.Name)}
			return inference{m: m, headline: fmt.Sprintf("deleted by the job controller: its Job %s was suspended", job.Name),
				why: e.Text + "; the job controller deletes the active pods of a suspended Job", evidence: []Evidence{e}}, true
		}
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobSuccessCriteriaMet) && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.After(at.Add(ownerSlack)) {
			if _, failed := lc.Phase(diff.PhaseFailed); failed {
				break
			}
			if _, succeeded := lc.Phase(diff.PhaseSucceeded); succeeded {
				break
			}
			e := Evidence{Seq: cur.Seq, Time: cur.Observed, Text: fmt.Sprintf("Job %s condition %s=True, reason %s: %s", job.Name, c.Type, c.Reason, c.Message)}
			return inference{m: m, headline: fmt.Sprintf("deleted by the job controller: its Job %s met its success criteria with this pod still running", job.Name),
				why: e.Text + "; the job controller deletes the pods still running once the Job succeeded", evidence: []Evidence{e}}, true
		}
	}
	if j, ok := since(func(p, c *batchv1.Job) bool { return ptrOr(c.Spec.Parallelism, 1) < ptrOr(p.Spec.Parallelism, 1) }); ok && job.Status.Active > ptrOr(job.Spec.Parallelism, 1) {
		p := revs[j-1].Object
		e := Evidence{Seq: revs[j].Seq, Time: revs[j].Observed, Text: fmt.Sprintf("Job %s spec.parallelism %d -> %d, with %d pods active", job.Name, ptrOr(p.Spec.Parallelism, 1), ptrOr(job.Spec.Parallelism, 1), job.Status.Active)}
		return inference{m: m, headline: fmt.Sprintf("deleted by the job controller: its Job %s's parallelism was lowered", job.Name),
			why: e.Text + "; the job controller deletes the active pods above spec.parallelism", evidence: []Evidence{e}}, true
	}
	return inference{}, false
}

func ptrTrue(p *bool) bool { return p != nil && *p }
