package explain

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// The tests of who asked for a deletion: the namespace, the owners'
// recorded history without any per-pod event, the audit log's request
// that set the deletionTimestamp (not the DELETE that confirmed it).

const (
	endNewRSUID = types.UID("rs-uid-2")
	endNSUID    = types.UID("ns-uid-1")
	endSTSUID   = types.UID("sts-uid-1")
	endDSUID    = types.UID("ds-uid-1")
)

// endRSAt is endRS with the generation its spec is at, the generation
// its controller observed, and status.replicas.
func endRSAt(rv string, replicas int32, revision string, gen, observed int64, have int32) *appsv1.ReplicaSet {
	rs := endRS(rv, replicas, revision, "kube-controller-manager")
	rs.Generation, rs.Status.ObservedGeneration, rs.Status.Replicas = gen, observed, have
	return rs
}

// endNewRS is the Deployment's ReplicaSet web-2, at revision 2.
func endNewRS(rv string, replicas int32) *appsv1.ReplicaSet {
	rs := endRS(rv, replicas, "2", "kube-controller-manager")
	rs.Name, rs.UID = "web-2", endNewRSUID
	return rs
}

// endNamespace is the namespace ci, being deleted from deleting on (0:
// not).
func endNamespace(rv string, deleting time.Duration) *corev1.Namespace {
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: finNS, UID: endNSUID, ResourceVersion: rv}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if deleting > 0 {
		ts := metav1.NewTime(finStart.Add(deleting))
		ns.DeletionTimestamp = &ts
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	return ns
}

// rolloutOwners are web-1 scaled 2 -> 1 at 19s by a rollout to revision 2
// (web-2 scaled 1 -> 2 at 18s), its controller not settled since.
func rolloutOwners(t *testing.T) map[string][]store.Record {
	return map[string][]store.Record{
		string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRSAt("1", 2, "1", 1, 1, 2)),
			finRecord(t, 18, 19*time.Second, store.Updated, "ReplicaSet", endRSAt("2", 1, "1", 2, 1, 2))},
		string(endNewRSUID): {finRecord(t, 7, 15*time.Second, store.Added, "ReplicaSet", endNewRS("3", 1)),
			finRecord(t, 17, 18*time.Second, store.Updated, "ReplicaSet", endNewRS("4", 2))},
		string(endDepUID): {finRecord(t, 4, -time.Second, store.Added, "Deployment", endDeployment("1", 2, "1")),
			finRecord(t, 6, 15*time.Second, store.Updated, "Deployment", endDeployment("2", 2, "2"))},
	}
}

// deletedAt is a running pod deleted at 20s (grace 30s), gone at 22s.
func deletedAt(t *testing.T, p *corev1.Pod) []store.Record {
	deleting := finDeleted(endRev(p, "110"), "110", 20*time.Second, 30)
	return []store.Record{
		finRecord(t, 10, 0, store.Added, "Pod", p),
		finRecord(t, 20, 20*time.Second, store.Updated, "Pod", deleting),
		finRecord(t, 21, 22*time.Second, store.Deleted, "Pod", deleting),
	}
}

// collection is the namespace controller's deletecollection of the pods
// of ci, listing this pod as it was before (resourceVersion 100) and
// another: one record of both pods.
func collection(t *testing.T, user string) store.Record {
	rec := endAuditWith(t, 20*time.Second, "deletecollection", "", user, "kube-controller-manager/v1.37.2", 200, map[string]any{
		"objectRef":  map[string]any{"resource": "pods", "namespace": finNS, "apiVersion": "v1"},
		"requestURI": "/api/v1/namespaces/ci/pods",
		"responseObject": map[string]any{"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "items": []any{
			map[string]any{"metadata": map[string]any{"name": "other", "uid": "pod-uid-9", "resourceVersion": "111"}},
			map[string]any{"metadata": map[string]any{"name": "web-1-abcde", "uid": string(finPodUID), "resourceVersion": "100"}},
		}},
	})
	rec.Refs = []string{"pod-uid-9", string(finPodUID)}
	return rec
}

func TestEndedWhoAsked(t *testing.T) {
	running := endPod(true)
	kwokConfirm := func(t *testing.T) store.Record {
		return endAuditWith(t, 22*time.Second, "delete", "", "kwok-controller", "kwok/v0.8.0", 200, deleteOptions(0))
	}
	withNamespace := func(t *testing.T, in diff.Input, deleting time.Duration) diff.Input {
		in.Related[string(endNSUID)] = []store.Record{finRecord(t, 1, -time.Minute, store.Initial, "Namespace", endNamespace("1", 0)),
			finRecord(t, 19, 19*time.Second, store.Updated, "Namespace", endNamespace("2", deleting))}
		return in
	}
	tests := []struct {
		name      string
		in        func(t *testing.T) diff.Input
		mechanism string
		severity  Severity
		basis     diff.Basis
		who       string
		evidence  []string
		absent    []string
	}{{
		name: "namespace deleted: the namespace controller, from the namespace's deletionTimestamp",
		in: func(t *testing.T) diff.Input {
			return withNamespace(t, endInput(deletedAt(t, endPod(false)), nil), 19*time.Second)
		},
		mechanism: MechanismNamespaceDeletion, basis: diff.BasisFieldSemantics, who: "the namespace controller",
		evidence: []string{"namespace ci deletion requested (deletionTimestamp 2026-05-04T10:00:19Z, phase Terminating)"},
	}, {
		name: "namespace deleted, with the audit log: the deletecollection asked, the node's DELETE confirmed",
		in: func(t *testing.T) diff.Input {
			in := withNamespace(t, endInput(deletedAt(t, endPod(false)), nil), 19*time.Second)
			in.Audit = []store.Record{collection(t, "system:serviceaccount:kube-system:namespace-controller"), kwokConfirm(t)}
			return in
		},
		mechanism: MechanismNamespaceDeletion, basis: diff.BasisAuditLog, who: "namespace-controller",
		evidence: []string{"audit log: deletecollection of the namespace's pods by system:serviceaccount:kube-system:namespace-controller, kube-controller-manager/v1.37.2 (200)",
			"audit log: DELETE by kwok-controller, kwok/v0.8.0, grace period 0s (200) after the deletion was asked for: its confirmation, not its cause"},
	}, {
		name: "namespace deleted, both seen only after (the recording began later): the namespace's deletionTimestamp is not after the pod's deletion",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, endPod(false)), nil)
			in.Related[string(endNSUID)] = []store.Record{finRecord(t, 25, 25*time.Second, store.Initial, "Namespace", endNamespace("2", 19*time.Second))}
			return in
		},
		mechanism: MechanismNamespaceDeletion, basis: diff.BasisFieldSemantics, who: "the namespace controller",
		evidence: []string{"namespace ci deletion requested (deletionTimestamp 2026-05-04T10:00:19Z, phase Terminating)"},
	}, {
		name: "a namespace deleted after the pod, seen only later, is no cause",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, endPod(false)), nil)
			in.Related[string(endNSUID)] = []store.Record{finRecord(t, 25, 25*time.Second, store.Initial, "Namespace", endNamespace("2", 21*time.Second))}
			return in
		},
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
	}, {
		name: "a forced deletion: grace period 0 while running on a node",
		in: func(t *testing.T) diff.Input {
			p := endPod(false)
			forced := finDeleted(endRev(p, "110"), "110", 20*time.Second, 0)
			return endInput([]store.Record{
				finRecord(t, 10, 0, store.Added, "Pod", p),
				finRecord(t, 20, 20*time.Second, store.Updated, "Pod", forced),
				finRecord(t, 21, 20*time.Second+time.Millisecond, store.Deleted, "Pod", forced),
			}, nil)
		},
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
		evidence: []string{"grace period 0 while the pod was bound to node node-a and Running: the API server removed it without waiting for the kubelet to confirm that its containers stopped; they may have run on until the kubelet saw the deletion, which the recording cannot see"},
	}, {
		name: "a namespace not being deleted is no cause",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, endPod(false)), nil)
			in.Related[string(endNSUID)] = []store.Record{finRecord(t, 1, -time.Minute, store.Initial, "Namespace", endNamespace("1", 0)),
				finRecord(t, 30, 30*time.Second, store.Updated, "Namespace", endNamespace("2", 30*time.Second))}
			return in
		},
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
	}, {
		name: "rollout from the owners' history, no event: inferred",
		in: func(t *testing.T) diff.Input {
			return endInput(deletedAt(t, running), rolloutOwners(t))
		},
		mechanism: MechanismRollout, basis: diff.BasisFieldSemantics, who: "the ReplicaSet controller",
		evidence: []string{"ReplicaSet web-1 spec.replicas 2 -> 1", "which is at revision 2", "ReplicaSet web-2 (revision 2) spec.replicas 1 -> 2: the new revision taking over"},
	}, {
		name: "rollout from the owners' history, the audit log names the controller",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, running), rolloutOwners(t))
			in.Audit = []store.Record{endAuditWith(t, 20*time.Second, "delete", "", "system:serviceaccount:kube-system:replicaset-controller", "kube-controller-manager/v1.37.2", 200,
				map[string]any{"responseObject": map[string]any{"kind": "Pod", "metadata": map[string]any{"uid": string(finPodUID), "resourceVersion": "110"}}}), kwokConfirm(t)}
			return in
		},
		mechanism: MechanismRollout, basis: diff.BasisAuditLog, who: "replicaset-controller",
	}, {
		name: "rollout from the owners' history, but the audit log shows a client's DELETE: the log decides",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, running), rolloutOwners(t))
			in.Audit = []store.Record{endAuditWith(t, 20*time.Second, "delete", "", "alice", "kubectl/v1.37.2", 200, deleteOptions(30)), kwokConfirm(t)}
			return in
		},
		mechanism: MechanismDelete, basis: diff.BasisAuditLog, who: "alice",
		evidence: []string{"the recorded fields pointed at the ReplicaSet controller (kube-controller-manager), but the audit log shows the deletion asked for by alice"},
	}, {
		name: "scale-down from the owners' history, no event: inferred",
		in: func(t *testing.T) diff.Input {
			dep := endDeployment("1", 3, "1")
			down := endDeployment("2", 1, "1")
			down.ManagedFields = []metav1.ManagedFieldsEntry{endMF("kubectl-scale", "", `{"f:spec":{"f:replicas":{}}}`, 18*time.Second)}
			return endInput(deletedAt(t, running), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRSAt("1", 3, "1", 1, 1, 3)),
					finRecord(t, 18, 19*time.Second, store.Updated, "ReplicaSet", endRSAt("2", 1, "1", 2, 1, 3))},
				string(endDepUID): {finRecord(t, 4, -time.Second, store.Added, "Deployment", dep), finRecord(t, 17, 18*time.Second, store.Updated, "Deployment", down)},
			})
		},
		mechanism: MechanismScaleDown, basis: diff.BasisFieldSemantics, who: "the ReplicaSet controller",
		evidence: []string{"ReplicaSet web-1 spec.replicas 3 -> 1", "Deployment web spec.replicas 3 -> 1, by kubectl (kubectl-scale) (managedFields)"},
	}, {
		name: "the owner deleted just after the rollout deleted the pod: the rollout, observed before, explains it",
		in: func(t *testing.T) diff.Input {
			owners := rolloutOwners(t)
			rs := owners[string(endRSUID)]
			owners[string(endRSUID)] = append(rs, finRecord(t, 22, 20500*time.Millisecond, store.Deleted, "ReplicaSet", endRSAt("3", 1, "1", 2, 1, 2)))
			return endInput(deletedAt(t, running), owners)
		},
		mechanism: MechanismRollout, basis: diff.BasisFieldSemantics, who: "the ReplicaSet controller",
	}, {
		name: "the owner's deletion observed just after the pod's, nothing else to explain it: the garbage collector",
		in: func(t *testing.T) diff.Input {
			return endInput(deletedAt(t, running), map[string][]store.Record{
				string(endRSUID): {finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRSAt("1", 3, "1", 1, 1, 3)),
					finRecord(t, 22, 20500*time.Millisecond, store.Deleted, "ReplicaSet", endRSAt("1", 3, "1", 1, 1, 3))}})
		},
		mechanism: MechanismGarbageCollection, basis: diff.BasisFieldSemantics, who: "the garbage collector",
	}, {
		name: "the ReplicaSet had settled at its new count before: not its controller",
		in: func(t *testing.T) diff.Input {
			owners := rolloutOwners(t)
			// Scaled down at 15s, settled at 16s with one pod: the pod
			// deleted at 20s was the one it kept.
			owners[string(endRSUID)] = []store.Record{finRecord(t, 5, -time.Second, store.Added, "ReplicaSet", endRSAt("1", 2, "1", 1, 1, 2)),
				finRecord(t, 8, 15*time.Second, store.Updated, "ReplicaSet", endRSAt("2", 1, "1", 2, 1, 2)),
				finRecord(t, 9, 16*time.Second, store.Updated, "ReplicaSet", endRSAt("3", 1, "1", 2, 2, 1))}
			return endInput(deletedAt(t, running), owners)
		},
		mechanism: MechanismDelete, basis: diff.BasisUnknown, who: "unknown",
	}, {
		name: "the controller's aggregated event names the pod: confirmed",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, running), rolloutOwners(t))
			in.OwnerEvents = map[string][]store.Record{string(endRSUID): {endEvent(t, 19, 20*time.Second, string(endRSUID), "ReplicaSet", "web-1", "SuccessfulDelete",
				"(combined from similar events): Deleted pod: web-1-abcde", "replicaset-controller", nil)}}
			return in
		},
		mechanism: MechanismRollout, basis: diff.BasisEvent, who: "replicaset-controller",
		evidence: []string{"(combined from similar events): Deleted pod: web-1-abcde"},
	}, {
		name: "the controller's event names the pod, but a client's DELETE asked first: the log decides",
		in: func(t *testing.T) diff.Input {
			in := endInput(deletedAt(t, running), rolloutOwners(t))
			in.OwnerEvents = map[string][]store.Record{string(endRSUID): {endEvent(t, 19, 20*time.Second, string(endRSUID), "ReplicaSet", "web-1", "SuccessfulDelete",
				"Deleted pod: web-1-abcde", "replicaset-controller", nil)}}
			in.Audit = []store.Record{endAuditWith(t, 20*time.Second, "delete", "", "alice", "kubectl/v1.37.2", 200, deleteOptions(30))}
			return in
		},
		mechanism: MechanismDelete, basis: diff.BasisAuditLog, who: "alice",
		evidence: []string{"the controller's event named replicaset-controller, but the audit log shows the deletion asked for by alice"},
	}, {
		name: "StatefulSet scaled down below the pod's ordinal: inferred",
		in: func(t *testing.T) diff.Input {
			p := stsPod()
			sts := func(rv string, replicas int32, at time.Duration) store.Record {
				s := &appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
					ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: finNS, UID: endSTSUID, ResourceVersion: rv},
					Spec:       appsv1.StatefulSetSpec{Replicas: &replicas}}
				return finRecord(t, uint64(3+at/time.Second), at, store.Updated, "StatefulSet", s)
			}
			return endInput(deletedAt(t, p), map[string][]store.Record{string(endSTSUID): {sts("1", 3, -time.Second), sts("2", 2, 19*time.Second)}})
		},
		mechanism: MechanismScaleDown, basis: diff.BasisFieldSemantics, who: "the StatefulSet controller",
		evidence: []string{"StatefulSet db spec.replicas 3 -> 2"},
	}, {
		name: "Job suspended: inferred",
		in: func(t *testing.T) diff.Input {
			p := finRunning(finJobPod(), "101")
			p.Finalizers = nil
			yes := true
			j1, j2 := finJob("50"), finJob("51")
			j2.Spec.Suspend = &yes
			j2.Status.Active = 1
			return endInput(deletedAt(t, p), map[string][]store.Record{string(finJobUID): {finRecord(t, 5, -time.Second, store.Added, "Job", j1), finRecord(t, 18, 19*time.Second, store.Updated, "Job", j2)}})
		},
		mechanism: MechanismControllerDelete, basis: diff.BasisFieldSemantics, who: "the job controller",
		evidence: []string{"Job build spec.suspend set to true"},
	}, {
		name: "DaemonSet rolling update: inferred from the template generations",
		in: func(t *testing.T) diff.Input {
			yes := true
			p := endPod(false)
			p.Name, p.Labels = "agent-x2", map[string]string{"app": "agent", daemonSetGenerationLabel: "1"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: endDSUID, Controller: &yes}}
			ds := func(rv, gen string, at time.Duration) store.Record {
				d := &appsv1.DaemonSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
					ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: finNS, UID: endDSUID, ResourceVersion: rv, Annotations: map[string]string{daemonSetGenerationAnnotation: gen}},
					Spec:       appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}}}
				return finRecord(t, uint64(3+at/time.Second), at, store.Updated, "DaemonSet", d)
			}
			return endInput(deletedAt(t, p), map[string][]store.Record{string(endDSUID): {ds("1", "1", -time.Second), ds("2", "2", 19*time.Second)}})
		},
		mechanism: MechanismRollout, basis: diff.BasisFieldSemantics, who: "the DaemonSet controller",
		evidence: []string{"DaemonSet agent at template generation 2; this pod is of generation 1"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			for _, h := range []*diff.Histories{nil, diff.NewHistories()} {
				in.Histories = h
				lc, err := Replay(in, diff.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if h == nil {
					golden(t, lc.Findings)
				}
				f := finFind(lc.Findings, "ended")
				if f == nil {
					t.Fatalf("no ended finding; findings %v", finIDs(lc.Findings))
				}
				if f.Mechanism != tc.mechanism || f.Severity != tc.severity {
					t.Errorf("mechanism %q (%s), want %q (%s); headline %q", f.Mechanism, f.Severity, tc.mechanism, tc.severity, f.Headline)
				}
				if f.Actor == nil || f.Actor.Basis != tc.basis || !strings.Contains(f.Actor.Who, tc.who) {
					t.Errorf("actor %+v, want %q known by %s", f.Actor, tc.who, tc.basis)
				}
				for _, want := range tc.evidence {
					if !evidenceHas(f, want) {
						t.Errorf("no evidence has %q", want)
					}
				}
				for _, fd := range lc.Findings {
					if fd.Severity > Info {
						t.Errorf("%s finding %s: %s", fd.Severity, fd.ID, fd.Headline)
					}
				}
			}
		})
	}
}

// stsPod is db-2, the third pod of the StatefulSet db.
func stsPod() *corev1.Pod {
	yes := true
	p := endPod(false)
	p.Name, p.Labels = "db-2", map[string]string{"app": "db"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: endSTSUID, Controller: &yes}}
	return p
}

func TestEvictionRefused(t *testing.T) {
	budget := func(rv string, allowed int32, at time.Duration) store.Record {
		zero := intstr.FromInt32(0)
		pdb := &policyv1.PodDisruptionBudget{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: finNS, UID: "pdb-uid-1", ResourceVersion: rv},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}}
		return finRecord(t, uint64(2+at/time.Second), at, store.Updated, "PodDisruptionBudget", pdb)
	}
	running := endPod(false)
	in := endInput([]store.Record{finRecord(t, 10, 0, store.Added, "Pod", running)}, nil)
	in.Budgets = map[string][]store.Record{"pdb-uid-1": {budget("1", 0, time.Second)}}
	in.Audit = []store.Record{
		endAuditWith(t, 10*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429, budgetRefusal("keep", 1, 1)),
		endAuditWith(t, 15*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429, budgetRefusal("keep", 1, 1)),
		endAuditWith(t, 20*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429, budgetRefusal("keep", 1, 1)),
	}
	lc, err := Replay(in, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, lc.Findings)
	f := finFind(lc.Findings, "eviction-refused")
	if f == nil {
		t.Fatalf("no eviction-refused finding: %v", finIDs(lc.Findings))
	}
	if f.Severity != Warning || f.Actor == nil || f.Actor.Who != "drainer" || f.Actor.Basis != diff.BasisAuditLog {
		t.Errorf("finding %s, actor %+v; want a warning, drainer from the audit log", f.Severity, f.Actor)
	}
	for _, want := range []string{"3 evictions refused by PodDisruptionBudget keep: it needs 1 healthy pods and has 1 currently"} {
		if !strings.Contains(f.Headline, want) {
			t.Errorf("headline %q lacks %q", f.Headline, want)
		}
	}
	for _, want := range []string{"3 create eviction attempts by drainer denied (429)", "PodDisruptionBudget keep (maxUnavailable 0, selector app=web): disruptionsAllowed 0, currentHealthy 1, desiredHealthy 1, expectedPods 1",
		"no eviction of this pod went through"} {
		if !evidenceHas(f, want) {
			t.Errorf("no evidence has %q", want)
		}
	}
	// An eviction refused by API priority and fairness (429 without a
	// DisruptionBudget cause) is no refusal: the client tries again.
	in.Audit = []store.Record{endAudit(t, 10*time.Second, "create", "eviction", "drainer", "kubectl/v1.37.2", 429)}
	lc, err = Replay(in, diff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := finFind(lc.Findings, "eviction-refused"); f != nil {
		t.Errorf("a 429 without a budget gave %+v", *f)
	}
}

// TestOwnerHistoryShared: the same answers with the histories decoded
// once for many pods as with each pod's own, and each owner's history
// decoded once.
func TestOwnerHistoryShared(t *testing.T) {
	owners := rolloutOwners(t)
	h := diff.NewHistories()
	for i := range 3 {
		in := endInput(deletedAt(t, endPod(true)), owners)
		in.Histories = h
		lc, err := Replay(in, diff.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if f := finFind(lc.Findings, "ended"); f == nil || f.Mechanism != MechanismRollout {
			t.Fatalf("pod %d: %+v", i, f)
		}
	}
	a := diff.DecodeHistory[appsv1.ReplicaSet](h, owners[string(endRSUID)])
	b := diff.DecodeHistory[appsv1.ReplicaSet](h, owners[string(endRSUID)])
	if &a[0] != &b[0] {
		t.Errorf("the ReplicaSet's history was decoded twice")
	}
}
