package explain

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

// finStart is when the hand-made histories of these tests begin.
var finStart = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

const (
	finNS     = "ci"
	finPodUID = types.UID("pod-uid-1")
	finJobUID = types.UID("job-uid-1")
)

// finRecord makes the record of one revision of obj, observed at start+at.
func finRecord(t *testing.T, seq uint64, at time.Duration, typ store.EventType, kind string, obj runtime.Object) store.Record {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return store.Record{Seq: seq, Observed: finStart.Add(at), Type: typ, Kind: kind, Namespace: m.GetNamespace(),
		Name: m.GetName(), UID: string(m.GetUID()), ResourceVersion: m.GetResourceVersion(), Object: b}
}

// finJobPod is a Job's pod with the job controller's tracking finalizer, as
// the job controller creates it.
func finJobPod() *corev1.Pod {
	yes := true
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "build-x7k2p", Namespace: finNS, UID: finPodUID, ResourceVersion: "100",
			CreationTimestamp: metav1.NewTime(finStart),
			Labels:            map[string]string{"job-name": "build"},
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "build", UID: finJobUID, Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec:   corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "work", Image: "busybox:1.36"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// finRunning and finFinished move a pod on as the scheduler and the kubelet
// do.
func finRunning(p *corev1.Pod, rv string) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	p.Spec.NodeName = "node-a"
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", Ready: true, State: corev1.ContainerState{
		Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(finStart.Add(2 * time.Second))}}}}
	return p
}

func finFinished(p *corev1.Pod, rv string, phase corev1.PodPhase) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	p.Status.Phase = phase
	code, reason := int32(0), "Completed"
	if phase == corev1.PodFailed {
		code, reason = 1, "Error"
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "work", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: code, Reason: reason, StartedAt: metav1.NewTime(finStart.Add(2 * time.Second)), FinishedAt: metav1.NewTime(finStart.Add(5 * time.Second))}}}}
	return p
}

// finDeleted sets the deletion a DELETE with the given grace period makes at
// start+at.
func finDeleted(p *corev1.Pod, rv string, at time.Duration, grace int64) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = rv
	ts := metav1.NewTime(finStart.Add(at + time.Duration(grace)*time.Second))
	p.DeletionTimestamp = &ts
	p.DeletionGracePeriodSeconds = &grace
	return p
}

// finJob is the Job as the job controller reports it; uncounted lists the
// finished pods it has not counted yet.
func finJob(rv string, uncounted ...types.UID) *batchv1.Job {
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "build", Namespace: finNS, UID: finJobUID, ResourceVersion: rv},
	}
	if len(uncounted) > 0 {
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: uncounted}
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached"}}
	}
	return j
}

// finFreeze is a validating webhook that intercepts pod UPDATE in the
// namespaces labelled frozen=true.
func finFreeze() *admissionv1.ValidatingWebhookConfiguration {
	fail := admissionv1.Fail
	return &admissionv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "freeze", UID: "webhook-uid-1"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "freeze.example.com",
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"frozen": "true"}},
			FailurePolicy:     &fail,
		}},
	}
}

// finInput builds a replay input: the pod's revisions, the Job's, the
// namespace (labelled frozen=true when frozen) and the freeze webhook, and
// the recording's end at start+end.
func finInput(t *testing.T, pods []store.Record, jobs []store.Record, frozen bool, end time.Duration) diff.Input {
	t.Helper()
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: finNS, UID: "ns-uid-1"}}
	if frozen {
		ns.Labels = map[string]string{"frozen": "true"}
	}
	in := diff.Input{
		Pod: pods,
		Related: map[string][]store.Record{
			"ns-uid-1": {finRecord(t, 1, -time.Minute, store.Initial, "Namespace", ns)},
		},
		Webhooks: map[string][]store.Record{
			"webhook-uid-1": {finRecord(t, 2, -time.Minute, store.Initial, "ValidatingWebhookConfiguration", finFreeze())},
		},
		End: finStart.Add(end),
	}
	if len(jobs) > 0 {
		in.Related[string(finJobUID)] = jobs
	}
	return in
}

func finIDs(fs []Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

func finFind(fs []Finding, id string) *Finding {
	for i := range fs {
		if fs[i].ID == id {
			return &fs[i]
		}
	}
	return nil
}

func hasText(ss []string, sub string) bool {
	return slices.ContainsFunc(ss, func(s string) bool { return strings.Contains(s, sub) })
}

func evidenceHas(f *Finding, sub string) bool {
	return slices.ContainsFunc(f.Evidence, func(e Evidence) bool { return strings.Contains(e.Text, sub) })
}

// TestFinalizerFindings covers the two rules about finalizers that are not
// removed: stuck-finalizer (a deleted pod, held) and finalizer-not-removed
// (a finished pod, not deleted, that keeps a finalizer its controller removes
// from finished pods).
func TestFinalizerFindings(t *testing.T) {
	created := finJobPod()
	running := finRunning(created, "101")
	succeeded := finFinished(running, "102", corev1.PodSucceeded)
	failed := finFinished(running, "102", corev1.PodFailed)
	// The pod finishes 5s in; the Job lists it as uncounted 1s later.
	jobPod := func(t *testing.T, last *corev1.Pod) []store.Record {
		return []store.Record{
			finRecord(t, 10, 0, store.Added, "Pod", created),
			finRecord(t, 11, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 13, 5*time.Second, store.Updated, "Pod", last),
		}
	}
	jobRecs := func(t *testing.T) []store.Record {
		return []store.Record{
			finRecord(t, 9, 0, store.Added, "Job", finJob("50")),
			finRecord(t, 14, 6*time.Second, store.Updated, "Job", finJob("51", finPodUID)),
		}
	}
	past := 5*time.Second + FinalizerRemovalGrace + time.Second

	custom := func(p *corev1.Pod) *corev1.Pod {
		p = p.DeepCopy()
		p.OwnerReferences = nil
		p.Finalizers = []string{"example.com/hold"}
		return p
	}

	tests := []struct {
		name  string
		in    func(t *testing.T) diff.Input
		want  []string // finding ids, in order
		check func(t *testing.T, fs []Finding)
	}{{
		name: "finished job pod keeps job-tracking past the grace, a webhook intercepts pod UPDATE",
		in: func(t *testing.T) diff.Input {
			return finInput(t, jobPod(t, succeeded), jobRecs(t), true, past)
		},
		want: []string{"finalizer-not-removed"},
		check: func(t *testing.T, fs []Finding) {
			f := finFind(fs, "finalizer-not-removed")
			if !strings.Contains(f.Headline, batchv1.JobTrackingFinalizer) {
				t.Errorf("headline %q does not name the finalizer", f.Headline)
			}
			if len(f.Suspects) != 1 || f.Suspects[0].Name != "freeze.example.com" {
				t.Errorf("suspects %+v, want freeze.example.com", f.Suspects)
			}
			if !hasText(f.Next, "job controller") {
				t.Errorf("next %q does not name the job controller", f.Next)
			}
			if !evidenceHas(f, "uncountedTerminatedPods.succeeded") || !evidenceHas(f, "conditions SuccessCriteriaMet") {
				t.Errorf("evidence lacks the Job's accounting: %+v", f.Evidence)
			}
			// In time order: the finalizer at creation (#10), then the
			// revision that finished the pod (#13).
			if f.Evidence[0].Seq != 10 || f.Evidence[1].Seq != 13 || !strings.Contains(f.Evidence[1].Text, diff.PhaseSucceeded) {
				t.Errorf("evidence %+v, want the finalizer's revision (#10), then the one that finished the pod (#13)", f.Evidence[:2])
			}
		},
	}, {
		name: "failed job pod keeps job-tracking: failed and finalizer-not-removed",
		in: func(t *testing.T) diff.Input {
			return finInput(t, jobPod(t, failed), jobRecs(t), false, past)
		},
		want: []string{"finalizer-not-removed", "failed"},
		check: func(t *testing.T, fs []Finding) {
			f := finFind(fs, "finalizer-not-removed")
			if len(f.Suspects) != 0 {
				t.Errorf("suspects %+v, want none: the namespace is not frozen", f.Suspects)
			}
			if !evidenceHas(f, "no recorded admission webhook or admission policy intercepts pod UPDATE") {
				t.Errorf("evidence does not say no webhook intercepts: %+v", f.Evidence)
			}
		},
	}, {
		name: "within the grace after finishing: nothing yet",
		in: func(t *testing.T) diff.Input {
			return finInput(t, jobPod(t, succeeded), jobRecs(t), true, 5*time.Second+FinalizerRemovalGrace-time.Second)
		},
		want: nil,
	}, {
		name: "the job controller removed the finalizer",
		in: func(t *testing.T) diff.Input {
			done := succeeded.DeepCopy()
			done.ResourceVersion = "103"
			done.Finalizers = nil
			recs := append(jobPod(t, succeeded), finRecord(t, 15, 6*time.Second, store.Updated, "Pod", done))
			return finInput(t, recs, jobRecs(t), true, past)
		},
		want: nil,
	}, {
		name: "running job pod keeps its finalizer: normal",
		in: func(t *testing.T) diff.Input {
			return finInput(t, jobPod(t, running)[:2], jobRecs(t)[:1], true, past)
		},
		want: nil,
	}, {
		name: "finished pod keeps a custom finalizer: its controller may remove it on deletion only",
		in: func(t *testing.T) diff.Input {
			recs := []store.Record{
				finRecord(t, 10, 0, store.Added, "Pod", custom(created)),
				finRecord(t, 11, 2*time.Second, store.Updated, "Pod", custom(running)),
				finRecord(t, 13, 5*time.Second, store.Updated, "Pod", custom(succeeded)),
			}
			return finInput(t, recs, nil, true, past)
		},
		want: nil,
	}, {
		name: "deleted pod held by a custom finalizer, grace period over",
		in: func(t *testing.T) diff.Input {
			recs := []store.Record{
				finRecord(t, 10, 0, store.Added, "Pod", custom(created)),
				finRecord(t, 11, 2*time.Second, store.Updated, "Pod", custom(running)),
				finRecord(t, 12, 4*time.Second, store.Updated, "Pod", finDeleted(custom(running), "102", 4*time.Second, 2)),
				finRecord(t, 13, 5*time.Second, store.Updated, "Pod", finDeleted(custom(succeeded), "103", 4*time.Second, 2)),
			}
			return finInput(t, recs, nil, false, 30*time.Second)
		},
		want: []string{"stuck-finalizer", "ended"},
		check: func(t *testing.T, fs []Finding) {
			f := finFind(fs, "stuck-finalizer")
			// No managedFields: the creator is not named, and nothing is
			// claimed of it.
			if !hasText(f.Next, `"example.com/hold": no built-in controller owns it; the pod was created with it, by a client the recording does not name`) ||
				!hasText(f.Next, `kubectl patch pod build-x7k2p -n ci --type=json -p '[{"op":"test","path":"/metadata/finalizers/0","value":"example.com/hold"},{"op":"remove","path":"/metadata/finalizers/0"}]'`) {
				t.Errorf("next %q does not say that no built-in controller owns the finalizer, nor how to remove it", f.Next)
			}
			if len(f.Suspects) != 0 {
				t.Errorf("suspects %+v, want none", f.Suspects)
			}
		},
	}, {
		name: "deleted pod held by a custom finalizer, within its grace period",
		in: func(t *testing.T) diff.Input {
			recs := []store.Record{
				finRecord(t, 10, 0, store.Added, "Pod", custom(created)),
				finRecord(t, 12, 4*time.Second, store.Updated, "Pod", finDeleted(custom(running), "102", 4*time.Second, 30)),
			}
			return finInput(t, recs, nil, false, 10*time.Second)
		},
		want: []string{"ended"}, // asked to end: how, ended says
	}, {
		name: "deleted job pod held by job-tracking: stuck-finalizer names the job controller and the webhook",
		in: func(t *testing.T) diff.Input {
			recs := append(jobPod(t, succeeded), finRecord(t, 15, 7*time.Second, store.Updated, "Pod", finDeleted(succeeded, "103", 7*time.Second, 0)))
			return finInput(t, recs, jobRecs(t), true, past)
		},
		want: []string{"stuck-finalizer", "ended"},
		check: func(t *testing.T, fs []Finding) {
			f := finFind(fs, "stuck-finalizer")
			if !hasText(f.Next, "job controller") {
				t.Errorf("next %q does not name the job controller", f.Next)
			}
			if len(f.Suspects) != 1 || f.Suspects[0].Name != "freeze.example.com" {
				t.Errorf("suspects %+v, want freeze.example.com", f.Suspects)
			}
			if !evidenceHas(f, "uncountedTerminatedPods.succeeded") {
				t.Errorf("evidence lacks the Job's accounting: %+v", f.Evidence)
			}
		},
	}, {
		name: "finished job pod whose Job was deleted",
		in: func(t *testing.T) diff.Input {
			jobs := append(jobRecs(t), finRecord(t, 16, 8*time.Second, store.Deleted, "Job", finJob("52", finPodUID)))
			return finInput(t, jobPod(t, succeeded), jobs, true, past)
		},
		want: []string{"finalizer-not-removed"},
		check: func(t *testing.T, fs []Finding) {
			if f := finFind(fs, "finalizer-not-removed"); !evidenceHas(f, "owner Job build was deleted") {
				t.Errorf("evidence does not say the Job was deleted: %+v", f.Evidence)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, lc.Findings, lc)
			if got := finIDs(lc.Findings); !slices.Equal(got, tc.want) {
				t.Fatalf("findings %v, want %v\n%+v", got, tc.want, lc.Findings)
			}
			if tc.check != nil {
				tc.check(t, lc.Findings)
			}
		})
	}
}

// TestSortEvidence: evidence in time order, stable, and evidence without a
// time last, in the order it was given.
func TestSortEvidence(t *testing.T) {
	at := func(s int) time.Time { return finStart.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name string
		in   []Evidence
		want []string
	}{{
		name: "out of order",
		in:   []Evidence{{Time: at(3), Text: "c"}, {Time: at(1), Text: "a"}, {Time: at(2), Text: "b"}},
		want: []string{"a", "b", "c"},
	}, {
		name: "same time: stable",
		in:   []Evidence{{Time: at(2), Text: "x"}, {Time: at(1), Text: "a"}, {Time: at(2), Text: "y"}},
		want: []string{"a", "x", "y"},
	}, {
		name: "untimed last, in their order",
		in:   []Evidence{{Text: "note 1"}, {Time: at(2), Text: "b"}, {Text: "note 2"}, {Time: at(1), Text: "a"}},
		want: []string{"a", "b", "note 1", "note 2"},
	}, {
		name: "the stuck-finalizer order: dependents deleted after the pod's last revision come after its silence",
		in: []Evidence{
			{Time: at(4), Text: "deletion requested"}, {Time: at(0), Text: "finalizer appeared"},
			{Time: at(9), Text: "containers stopped"}, {Time: at(10), Text: "dependent deleted"},
			{Text: "dependents still present"}, {Time: at(9), Text: "silence"}, {Text: "no webhook intercepts"},
		},
		want: []string{"finalizer appeared", "deletion requested", "containers stopped", "silence", "dependent deleted", "dependents still present", "no webhook intercepts"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := []Finding{{Evidence: tc.in}}
			sortEvidence(fs)
			var got []string
			for _, e := range fs[0].Evidence {
				got = append(got, e.Text)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %q, want %q", got, tc.want)
			}
		})
	}
}

// TestUnownedFinalizer: for a finalizer no built-in controller owns, the
// next step says who added it, as the recording shows, and what follows.
func TestUnownedFinalizer(t *testing.T) {
	const fin = "example.com/hold"
	finFields := `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/hold\"":{}}}}`
	specFields := `{"f:spec":{"f:containers":{"k:{\"name\":\"work\"}":{".":{},"f:image":{},"f:name":{}}}}}`
	base := func() *corev1.Pod {
		p := finJobPod()
		p.Finalizers = nil
		return p
	}
	withFin := func(p *corev1.Pod, fins ...string) *corev1.Pod {
		p = p.DeepCopy()
		p.Finalizers = fins
		return p
	}
	managed := func(p *corev1.Pod, es ...metav1.ManagedFieldsEntry) *corev1.Pod {
		p = p.DeepCopy()
		p.ManagedFields = es
		return p
	}
	// history: created at 0, running at 2s, deleted at 4s with a grace
	// period of 2s; the end at 30s.
	history := func(t *testing.T, created, running *corev1.Pod, typ store.EventType) diff.Input {
		recs := []store.Record{
			finRecord(t, 10, 0, typ, "Pod", created),
			finRecord(t, 11, 2*time.Second, store.Updated, "Pod", running),
			finRecord(t, 12, 4*time.Second, store.Updated, "Pod", finDeleted(running, "102", 4*time.Second, 2)),
		}
		return finInput(t, recs, nil, false, 30*time.Second)
	}
	noOwner := func(p *corev1.Pod) *corev1.Pod { p = p.DeepCopy(); p.OwnerReferences = nil; return p }
	kubectl := tracetest.ManagedEntry("kubectl-create", "", finStart, `{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/hold\"":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"work\"}":{".":{},"f:image":{},"f:name":{}}}}}`)
	for _, tc := range []struct {
		name     string
		in       func(t *testing.T) diff.Input
		want     []string // in the next step about fin
		wantNot  []string
		evidence string
	}{{
		name: "created with it by kubectl: the manifest, nothing removes it",
		in: func(t *testing.T) diff.Input {
			p := managed(withFin(noOwner(base()), "other.example.com/keep", fin), kubectl)
			return history(t, p, finRunning(p, "101"), store.Added)
		},
		want: []string{`"example.com/hold": no built-in controller owns it; the pod was created with it by kubectl create (managedFields): it was in the manifest`,
			// The index in the last revision: second of two.
			`{"op":"test","path":"/metadata/finalizers/1","value":"example.com/hold"},{"op":"remove","path":"/metadata/finalizers/1"}`},
		evidence: `finalizer "example.com/hold" appeared, added by kubectl create (managedFields)`,
	}, {
		name: "created with it from a Job's template by kube-controller-manager",
		in: func(t *testing.T) diff.Input {
			p := managed(withFin(base(), fin), tracetest.ManagedEntry("kube-controller-manager", "", finStart, finFields))
			return history(t, p, finRunning(p, "101"), store.Added)
		},
		want:    []string{"from the pod template of its owner Job build: that controller copies the template and does not remove it"},
		wantNot: []string{"in the manifest"},
	}, {
		name: "created with it by an operator: the operator is named, not dismissed",
		in: func(t *testing.T) diff.Input {
			p := managed(withFin(noOwner(base()), fin), tracetest.ManagedEntry("hold-operator", "", finStart, finFields))
			return history(t, p, finRunning(p, "101"), store.Added)
		},
		want:    []string{"created with it by hold-operator (managedFields): if that is a controller, it is the one to remove it"},
		wantNot: []string{"none may ever remove it"},
	}, {
		name: "added later by a controller: named, no patch advised",
		in: func(t *testing.T) diff.Input {
			created := managed(noOwner(base()), tracetest.ManagedEntry("kubectl-create", "", finStart, specFields))
			running := finRunning(created, "101")
			running = managed(withFin(running, fin), tracetest.ManagedEntry("kubectl-create", "", finStart, specFields), tracetest.ManagedEntry("hold-operator", "", finStart.Add(2*time.Second), finFields))
			return history(t, created, running, store.Added)
		},
		want:     []string{`"example.com/hold": no built-in controller owns it; it was added at #11 by hold-operator (managedFields): check that controller`},
		wantNot:  []string{"kubectl patch"},
		evidence: `finalizer "example.com/hold" appeared, added by hold-operator (managedFields)`,
	}, {
		name: "present when the recording began: who added it is not recorded",
		in: func(t *testing.T) diff.Input {
			p := managed(withFin(noOwner(base()), fin), kubectl)
			return history(t, p, finRunning(p, "101"), store.Initial)
		},
		want:    []string{"it was on the pod when the recording began, so who added it is not recorded"},
		wantNot: []string{"kubectl patch", "kubectl create"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			lc, err := Replay(tc.in(t), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden(t, lc.Findings, lc)
			f := finFind(lc.Findings, "stuck-finalizer")
			if f == nil {
				t.Fatalf("no stuck-finalizer: %+v", lc.Findings)
			}
			var next string
			for _, n := range f.Next {
				if strings.HasPrefix(n, `"`+fin+`"`) {
					next = n
				}
			}
			t.Logf("next: %s", next)
			for _, w := range tc.want {
				if !strings.Contains(next, w) {
					t.Errorf("next %q lacks %q", next, w)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(next, w) {
					t.Errorf("next %q says %q", next, w)
				}
			}
			if tc.evidence != "" && !evidenceHas(f, tc.evidence) {
				t.Errorf("evidence lacks %q: %+v", tc.evidence, f.Evidence)
			}
		})
	}
}
