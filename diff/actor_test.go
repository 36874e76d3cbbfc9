package diff

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

var actorT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// entry is a managedFields entry of an Update at second sec after actorT0.
func entry(manager, subresource string, sec int, fields string) metav1.ManagedFieldsEntry {
	return tracetest.ManagedEntry(manager, subresource, actorT0.Add(time.Duration(sec)*time.Second), fields)
}

// revisions records pods as the revisions of one pod, the first Added, the
// rest Updated (or deleted, for the last, when deleted is set), one
// second apart, with resourceVersions 100, 101, ...
func revisions(deleted bool, pods ...*corev1.Pod) []store.Record {
	var recs []store.Record
	for i, p := range pods {
		p = p.DeepCopy()
		p.UID = "uid-actor"
		p.ResourceVersion = fmt.Sprint(100 + i)
		raw, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		typ := store.Updated
		switch {
		case i == 0:
			typ = store.Added
		case deleted && i == len(pods)-1:
			typ = store.Deleted
		}
		recs = append(recs, store.Record{Seq: uint64(i + 1), Observed: actorT0.Add(time.Duration(i) * time.Second), Type: typ,
			APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion, Object: raw})
	}
	return recs
}

// auditRecord is a successful request of the pod in the audit log, whose
// response carried resourceVersion rv; impersonated, when set, is the
// identity user impersonated.
func auditRecord(id, verb, subresource, user, impersonated, userAgent, rv string) store.Record {
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "auditID": id, "stage": "ResponseComplete", "verb": verb,
		"objectRef":      map[string]any{"resource": "pods", "namespace": "ci", "name": "job", "subresource": subresource},
		"user":           map[string]any{"username": user, "groups": []string{"system:authenticated"}},
		"userAgent":      userAgent,
		"responseStatus": map[string]any{"code": 200},
		"stageTimestamp": actorT0.Add(3 * time.Second),
	}
	if impersonated != "" {
		ev["impersonatedUser"] = map[string]any{"username": impersonated, "groups": []string{"system:authenticated"}}
	}
	b, _ := json.Marshal(ev)
	return store.Record{Kind: "Event", APIVersion: "audit.k8s.io/v1", UID: id, Observed: actorT0.Add(3 * time.Second), ResourceVersion: rv, Object: b}
}

// The managedFields of a pod applied with kubectl apply (client side),
// before and after a request that removed its finalizer: the API server
// took the finalizer out of kubectl's set and left its time alone.
const (
	appliedWithFinalizer = `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/cleanup\"":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{".":{},"f:image":{},"f:name":{}}}}}`
	appliedWithout       = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{".":{},"f:image":{},"f:name":{}}}}}`
)

func withFinalizer(p *corev1.Pod) *corev1.Pod {
	p.Finalizers = []string{"example.com/cleanup"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", 0, appliedWithFinalizer)}
	return p
}

// TestActorBasis replays histories whose last revision tells, or does not
// tell, who made it, and checks the actor of that revision and of one of
// its changes, with how each is known.
func TestActorBasis(t *testing.T) {
	type changeActor struct {
		Manager    string
		Basis      Basis
		Candidates []string
	}
	tests := []struct {
		name    string
		deleted bool // the last revision is the pod's deletion
		pods    func() []*corev1.Pod
		audit   []store.Record
		want    Actor // of the last step; its Time is not compared
		more    []Actor
		path    string
		change  changeActor
	}{{
		// The bug: diff said "by kubectl apply", the manager that lost the
		// finalizer. The remover's JSON patch under its own field manager
		// gained it no field: it has no entry.
		name: "finalizer removed by a JSON patch: no entry gained or moved",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			q := p.DeepCopy()
			q.Finalizers = nil
			q.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", 0, appliedWithout)}
			return []*corev1.Pod{p, q}
		},
		want:   Actor{Who: "unknown", Basis: BasisUnknown, Detail: noManager},
		path:   "metadata.finalizers[example.com/cleanup]",
		change: changeActor{Basis: BasisUnknown},
	}, {
		// The same, when removing the last finalizer let the pod go: the
		// API server removed the pod, an unknown request the finalizer.
		name:    "last finalizer removed by a JSON patch: the pod deleted",
		deleted: true,
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			now := metav1.NewTime(actorT0)
			zero := int64(0)
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &zero
			q := p.DeepCopy()
			q.Finalizers = nil
			q.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", 0, appliedWithout)}
			return []*corev1.Pod{p, q}
		},
		want:   Actor{Who: "the API server", Basis: BasisFieldSemantics, Detail: "removing the pod: no finalizer left, grace period over"},
		path:   "metadata.finalizers[example.com/cleanup]",
		change: changeActor{Basis: BasisUnknown},
	}, {
		// The bug: kubectl label pod job app- tier- --field-manager=x. x's
		// entry, which held tier alone, is dropped empty; the controller
		// that set app lost it and did not write.
		name: "labels removed by a field manager whose entry ends up empty",
		pods: func() []*corev1.Pod {
			p := basePod()
			p.Labels = map[string]string{"app": "ci", "pod-template-hash": "5d9c", "tier": "web"}
			p.ManagedFields = []metav1.ManagedFieldsEntry{
				entry("kube-controller-manager", "", 0, `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}}}`),
				entry("x", "", 1, `{"f:metadata":{"f:labels":{"f:tier":{}}}}`),
			}
			q := p.DeepCopy()
			q.Labels = map[string]string{"pod-template-hash": "5d9c"}
			q.ManagedFields = []metav1.ManagedFieldsEntry{
				entry("kube-controller-manager", "", 0, `{"f:metadata":{"f:labels":{".":{},"f:pod-template-hash":{}}}}`),
			}
			return []*corev1.Pod{p, q}
		},
		want:   Actor{Who: "unknown", Basis: BasisUnknown, Detail: noManager},
		path:   "metadata.labels[app]",
		change: changeActor{Basis: BasisUnknown},
	}, {
		name: "a label added: the entry that gained it",
		pods: func() []*corev1.Pod {
			p := basePod()
			p.ManagedFields = []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", 0, `{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)}
			q := p.DeepCopy()
			q.Labels = map[string]string{"app": "ci", "tier": "web"}
			// Within the same second as its last write: the time alone
			// does not show it, the field it gained does.
			q.ManagedFields = []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "", 0, `{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}}}`)}
			return []*corev1.Pod{p, q}
		},
		want: Actor{Manager: "kube-controller-manager", Operation: "Update", Who: "a controller in kube-controller-manager",
			Basis: BasisManagedFields, Detail: "entry gained fields at this revision"},
		path:   "metadata.labels[tier]",
		change: changeActor{Manager: "kube-controller-manager", Basis: BasisManagedFields},
	}, {
		// A request that removed the finalizer and set an annotation: its
		// manager's entry moved to this revision, and it is the only one.
		name: "finalizer removed with another field set: the one entry updated",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			q := p.DeepCopy()
			q.Finalizers = nil
			q.Annotations = map[string]string{"example.com/cleaned": "true"}
			q.ManagedFields = []metav1.ManagedFieldsEntry{
				entry("kubectl-client-side-apply", "", 0, appliedWithout),
				entry("cleanup-controller", "", 5, `{"f:metadata":{"f:annotations":{".":{},"f:example.com/cleaned":{}}}}`),
			}
			return []*corev1.Pod{p, q}
		},
		want: Actor{Manager: "cleanup-controller", Operation: "Update", Who: "cleanup-controller",
			Basis: BasisManagedFields, Detail: "new entry at this revision"},
		path:   "metadata.finalizers[example.com/cleanup]",
		change: changeActor{Manager: "cleanup-controller", Basis: BasisManagedFields},
	}, {
		// Two entries moved (the recording missed a revision): the
		// removal is one of theirs, not the one that owned the field.
		name: "finalizer removed when two managers wrote: the candidates",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			p.ManagedFields = append(p.ManagedFields, entry("kubelet", "status", 1, `{"f:status":{"f:phase":{}}}`))
			q := p.DeepCopy()
			q.Finalizers = nil
			q.Status.Phase = corev1.PodRunning
			q.Annotations = map[string]string{"example.com/cleaned": "true"}
			q.ManagedFields = []metav1.ManagedFieldsEntry{
				entry("kubectl-client-side-apply", "", 0, appliedWithout),
				entry("kubelet", "status", 4, `{"f:status":{"f:phase":{}}}`),
				entry("cleanup-controller", "", 5, `{"f:metadata":{"f:annotations":{".":{},"f:example.com/cleaned":{}}}}`),
			}
			return []*corev1.Pod{p, q}
		},
		want: Actor{Manager: "kubelet", Operation: "Update", Subresource: "status", Who: "the kubelet, status update",
			Basis: BasisManagedFields, Detail: "entry updated at this revision"},
		more: []Actor{{Manager: "cleanup-controller", Operation: "Update", Who: "cleanup-controller",
			Basis: BasisManagedFields, Detail: "new entry at this revision"}},
		path:   "metadata.finalizers[example.com/cleanup]",
		change: changeActor{Basis: BasisUnknown, Candidates: []string{"kubelet", "cleanup-controller"}},
	}, {
		name: "spec.nodeName set: the binding",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			p.Spec.SchedulerName = "default-scheduler"
			q := p.DeepCopy()
			q.Spec.NodeName = "node-1"
			return []*corev1.Pod{p, q}
		},
		want:   Actor{Subresource: "binding", Who: "the scheduler default-scheduler", Basis: BasisFieldSemantics, Detail: "binding"},
		path:   "spec.nodeName",
		change: changeActor{},
	}, {
		name: "spec.nodeName set, and the audit log's binding request",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			p.Spec.SchedulerName = "default-scheduler"
			q := p.DeepCopy()
			q.Spec.NodeName = "node-1"
			return []*corev1.Pod{p, q}
		},
		audit: []store.Record{auditRecord("b", "create", "binding", "system:kube-scheduler", "", "kube-scheduler/v1.37.2", "101")},
		want: Actor{Subresource: "binding", Who: "system:kube-scheduler", Basis: BasisAuditLog, Detail: "create binding, kube-scheduler/v1.37.2",
			User: "system:kube-scheduler", UserAgent: "kube-scheduler/v1.37.2"},
		path:   "spec.nodeName",
		change: changeActor{},
	}, {
		// kubectl --as=flush-controller patch ...: the audit log's user is
		// the impersonator, impersonatedUser the identity authorized.
		name: "finalizer removed by an impersonated request in the audit log",
		pods: func() []*corev1.Pod {
			p := withFinalizer(basePod())
			q := p.DeepCopy()
			q.Finalizers = nil
			q.ManagedFields = []metav1.ManagedFieldsEntry{entry("kubectl-client-side-apply", "", 0, appliedWithout)}
			return []*corev1.Pod{p, q}
		},
		audit: []store.Record{auditRecord("f", "patch", "", "admin", "flush-controller", "kubectl/v1.37.2", "101")},
		want: Actor{Who: "flush-controller (impersonated by admin)", Basis: BasisAuditLog, Detail: "patch, kubectl/v1.37.2",
			User: "flush-controller", Impersonator: "admin", UserAgent: "kubectl/v1.37.2"},
		path:   "metadata.finalizers[example.com/cleanup]",
		change: changeActor{Basis: BasisAuditLog},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(Input{Pod: revisions(tc.deleted, tc.pods()...), Audit: tc.audit}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			last := lc.Steps[len(lc.Steps)-1]
			var got []Actor
			for _, a := range last.Actors {
				a.Time = time.Time{}
				got = append(got, a)
			}
			if diff := cmp.Diff(append([]Actor{tc.want}, tc.more...), got); diff != "" {
				t.Errorf("actors of the last step (-want +got):\n%s", diff)
			}
			var found *Change
			for i := range last.Changes {
				if last.Changes[i].Path == tc.path {
					found = &last.Changes[i]
				}
			}
			if found == nil {
				t.Fatalf("no change of %s in %+v", tc.path, last.Changes)
			}
			if diff := cmp.Diff(tc.change, changeActor{found.Manager, found.Basis, found.Candidates}); diff != "" {
				t.Errorf("actor of %s (-want +got):\n%s", tc.path, diff)
			}
		})
	}
}

// TestActorLabel holds the one-line form of each basis.
func TestActorLabel(t *testing.T) {
	for _, tc := range []struct {
		a    Actor
		want string
	}{
		{Actor{Who: "kubectl apply", Basis: BasisManagedFields, Detail: "entry updated at this revision"}, "kubectl apply (managedFields)"},
		{Actor{Who: "the scheduler default-scheduler", Basis: BasisFieldSemantics, Detail: "binding"}, "the scheduler default-scheduler (binding)"},
		{Actor{Who: "unknown", Basis: BasisUnknown, Detail: noManager}, "unknown (a request that left no field manager; the audit log names the client)"},
		{Actor{Who: "flush-controller (impersonated by admin)", Basis: BasisAuditLog, Detail: "patch, kubectl/v1.37.2"}, "flush-controller (impersonated by admin) (audit log: patch, kubectl/v1.37.2)"},
	} {
		if got := tc.a.Label(); got != tc.want {
			t.Errorf("Label() = %q, want %q", got, tc.want)
		}
	}
}

// TestGained: an entry gained a field when its set holds a member the set
// before did not; losing members is not gaining.
func TestGained(t *testing.T) {
	for _, tc := range []struct {
		after, before string
		want          bool
	}{
		{`{"f:metadata":{"f:labels":{"f:app":{}}}}`, `{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}}}`, false},
		{`{"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}}}`, `{"f:metadata":{"f:labels":{"f:app":{}}}}`, true},
		{`{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, `{"f:metadata":{"f:labels":{"f:app":{}}}}`, true},
		{`{"f:spec":{"f:containers":{}}}`, `{"f:spec":{"f:containers":{"k:{\"name\":\"build\"}":{"f:image":{}}}}}`, true},
		{`{"f:spec":{"f:containers":{}}}`, `{"f:spec":{"f:containers":{".":{},"k:{\"name\":\"build\"}":{"f:image":{}}}}}`, false},
		{`{}`, `{"f:spec":{}}`, false},
		{`{"f:status":{"f:phase":{}}}`, `{"f:status":{"f:phase":{}}}`, false},
	} {
		if got := gained(parseFields(&metav1.FieldsV1{Raw: []byte(tc.after)}), parseFields(&metav1.FieldsV1{Raw: []byte(tc.before)})); got != tc.want {
			t.Errorf("gained(%s, %s) = %v, want %v", tc.after, tc.before, got, tc.want)
		}
	}
}
