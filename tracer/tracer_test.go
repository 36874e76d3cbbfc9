package tracer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/store"
)

var observedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return observedAt }

// memSink keeps what it is given, the pods sent as protobuf as their JSON
// (as a read of the trace gives them), and counts those.
type memSink struct {
	mu      sync.Mutex
	recs    []store.Record
	batches int
	protos  int
	err     error
}

func (s *memSink) Write(b []store.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	for _, r := range b {
		if r.Proto {
			s.protos++
			data, err := r.JSON()
			if err != nil {
				return fmt.Errorf("memSink: %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
			}
			r.Object, r.Proto = data, false
		}
		s.recs = append(s.recs, r)
	}
	s.batches++
	return nil
}

func (s *memSink) records() []store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Record(nil), s.recs...)
}

// row is the part of a record the tests compare.
func row(r store.Record) string {
	return fmt.Sprintf("%s %s %s/%s rv=%s", r.Type, r.Kind, r.Namespace, r.Name, r.ResourceVersion)
}

func rows(recs []store.Record, kinds ...string) []string {
	var out []string
	for _, r := range recs {
		for _, k := range kinds {
			if r.Kind == k {
				out = append(out, row(r))
			}
		}
	}
	return out
}

// clients returns fake clients holding objs; metadata-only objects go to
// the metadata client. Access reviews answer with allow.
func clients(t *testing.T, allow func(*authorizationv1.ResourceAttributes) bool, objs ...runtime.Object) (fakeClient, *metadatafake.FakeMetadataClient) {
	t.Helper()
	var typed, partial []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*metav1.PartialObjectMetadata); ok {
			partial = append(partial, o)
		} else {
			typed = append(typed, o)
		}
	}
	c := fake.NewClientset(typed...)
	c.Resources = servedPolicies("v1", "v1")
	c.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		review.Status.Allowed = allow == nil || allow(review.Spec.ResourceAttributes)
		return true, review, nil
	})
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := metadatafake.NewSimpleMetadataClient(scheme, partial...)
	noteWatches(&c.Fake, c.Tracker())
	noteWatches(&m.Fake, m.Tracker())
	return fakeClient{c}, m
}

// watching holds "fake/resource" for every watch a fake client has opened.
// The fakes lose changes made between an informer's list and its watch, so
// tests change objects only once the watches are open.
var watching sync.Map

// noteWatches makes f record in watching the watches it opens.
func noteWatches(f *k8stesting.Fake, tracker k8stesting.ObjectTracker) {
	f.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if wa, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		watching.Store(fmt.Sprintf("%p/%s", f, a.GetResource().Resource), true)
		return true, w, nil
	})
}

// waitWatches waits until every resource f listed is also watched.
func waitWatches(t *testing.T, f *k8stesting.Fake) {
	t.Helper()
	for _, a := range f.Actions() {
		if a.GetVerb() != "list" {
			continue
		}
		key := fmt.Sprintf("%p/%s", f, a.GetResource().Resource)
		waitFor(t, "watch "+key, func() bool { _, ok := watching.Load(key); return ok })
	}
}

// running is a Tracer started by start.
type running struct {
	*Tracer
	sink   *memSink
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, opts Options) *running {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = fixedClock{}
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 10 * time.Millisecond
	}
	tr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Tracer: tr, sink: &memSink{}, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- tr.Run(ctx, r.sink) }()
	t.Cleanup(func() { cancel(); <-r.done })
	select {
	case <-tr.Ready():
	case err := <-r.done:
		r.done <- err
		t.Fatalf("Run returned before Ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("informers did not sync in 10s")
	}
	if c, ok := opts.Client.(fakeClient); ok {
		waitWatches(t, &c.Fake)
	}
	if m, ok := opts.Metadata.(*metadatafake.FakeMetadataClient); ok {
		waitWatches(t, &m.Fake)
	}
	return r
}

// stop cancels the recording and returns Run's error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for Cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return 10s after cancel")
		return nil
	}
}

// waitFor polls until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasRow(s *memSink, want string) func() bool {
	return func() bool {
		for _, r := range s.records() {
			if row(r) == want {
				return true
			}
		}
		return false
	}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("ns-" + name), ResourceVersion: "1"}}
}

func pod(name, rv string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv, Labels: lbls,
	}}
}

func event(name, podName string, kind string) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "default", Name: podName, UID: types.UID("uid-" + podName)},
		Reason:         "Scheduled",
	}
}

// partial is a metadata-only object of kind, optionally owned by pod owner.
func partial(kind, name, rv, owner string) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv},
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner, UID: types.UID("uid-" + owner)}}
	}
	return p
}

// secretValue is base64 of "hunter2", as kubectl apply leaves it in a
// Secret's last-applied-configuration annotation.
const secretValue = "aHVudGVyMg=="

func lastApplied(p *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	p.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","data":{"password":"` + secretValue + `"},"kind":"Secret"}`,
		"team": "ci",
	}
	return p
}

func gvr(res string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Version: "v1", Resource: res}
}

func TestRunRecordsPodRevisions(t *testing.T) {
	c, m := clients(t, nil, namespace("default"), pod("p0", "1", nil))
	r := start(t, Options{Client: c, Metadata: m})
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")

	p1 := pod("p1", "10", nil)
	p1.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs"}}
	created, err := pods.Create(ctx, p1, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Added p1", hasRow(r.sink, "Added Pod default/p1 rv=10"))
	p1.ResourceVersion, p1.Spec.NodeName = "11", "node-1"
	if _, err := pods.Update(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Updated p1", hasRow(r.sink, "Updated Pod default/p1 rv=11"))
	// Same resourceVersion: not a new revision, must be skipped.
	p1.Labels = map[string]string{"same": "rv"}
	if _, err := pods.Update(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Deleted p1", hasRow(r.sink, "Deleted Pod default/p1 rv=11"))
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	recs := r.sink.records()
	want := []string{
		"Initial Pod default/p0 rv=1",
		"Added Pod default/p1 rv=10",
		"Updated Pod default/p1 rv=11",
		"Deleted Pod default/p1 rv=11",
		"Initial Namespace /default rv=1",
	}
	if diff := cmp.Diff(want, append(rows(recs, "Pod"), rows(recs, "Namespace")...)); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}

	var added store.Record
	for _, rec := range recs {
		if rec.Type == store.Added && rec.Name == "p1" {
			added = rec
		}
	}
	gotMeta := store.Record{Observed: added.Observed, APIVersion: added.APIVersion, Kind: added.Kind, UID: added.UID, Refs: added.Refs}
	wantMeta := store.Record{Observed: observedAt, APIVersion: "v1", Kind: "Pod", UID: "uid-p1", Refs: []string{"uid-rs"}}
	if diff := cmp.Diff(wantMeta, gotMeta); diff != "" {
		t.Errorf("Added record fields (-want +got):\n%s", diff)
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(added.Object, &obj); err != nil {
		t.Fatalf("decode recorded object: %v", err)
	}
	if obj.APIVersion != "v1" || obj.Kind != "Pod" {
		t.Errorf("object apiVersion, kind = %q, %q; want v1, Pod", obj.APIVersion, obj.Kind)
	}
	// The fake's field manager filled managedFields in; they must be kept.
	if len(created.ManagedFields) == 0 {
		t.Fatal("the fake clientset set no managedFields: the check below proves nothing")
	}
	for i := range created.ManagedFields {
		// JSON keeps whole seconds.
		created.ManagedFields[i].Time = &metav1.Time{Time: created.ManagedFields[i].Time.Truncate(time.Second)}
	}
	if diff := cmp.Diff(created.ManagedFields, obj.Metadata.ManagedFields); diff != "" {
		t.Errorf("managedFields (-want +got):\n%s", diff)
	}

	st := r.Stats()
	byKind := map[string]int64{}
	for _, k := range st.Kinds {
		if k.Revisions > 0 {
			byKind[k.Kind] = k.Revisions
		}
		if !k.Watched {
			t.Errorf("Stats: %s not watched, want every kind watched", k.Resource)
		}
	}
	if diff := cmp.Diff(map[string]int64{"Pod": 4, "Namespace": 1}, byKind); diff != "" {
		t.Errorf("Stats: revisions by kind (-want +got):\n%s", diff)
	}
	st.Kinds = nil
	wantStats := Stats{Objects: 3, Pods: 2, Revisions: int64(len(recs)), LastWrite: observedAt}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

func TestRunRecordsEventsAndPodDependents(t *testing.T) {
	c, m := clients(t, nil,
		namespace("default"),
		pod("web", "1", nil),
		event("web.1", "web", "Pod"),
		event("node.1", "node-1", "Node"),
		lastApplied(partial("Secret", "pull", "1", "web")),
		partial("Secret", "unowned", "1", ""),
		partial("ConfigMap", "env", "1", "web"),
	)
	r := start(t, Options{Client: c, Metadata: m})

	secrets := m.Resource(gvr("secrets")).Namespace("default").(metadatafake.MetadataClient)
	configmaps := m.Resource(gvr("configmaps")).Namespace("default").(metadatafake.MetadataClient)
	// An unowned Secret becomes owned by the pod: recorded from then on.
	if _, err := secrets.UpdateFake(partial("Secret", "unowned", "2", "web"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ConfigMap loses its owner: still recorded, it was recorded before.
	if _, err := configmaps.UpdateFake(partial("ConfigMap", "env", "2", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Resource(gvr("configmaps")).Namespace("default").Delete(ctx, "env", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Resource(gvr("secrets")).Namespace("default").Delete(ctx, "pull", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Deleted pull", hasRow(r.sink, "Deleted Secret default/pull rv=1"))
	waitFor(t, "Deleted env", hasRow(r.sink, "Deleted ConfigMap default/env rv=2"))
	waitFor(t, "Updated unowned", hasRow(r.sink, "Updated Secret default/unowned rv=2"))
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	recs := r.sink.records()
	want := []string{
		"Initial Event default/node.1 rv=1",
		"Initial Event default/web.1 rv=1",
	}
	got := rows(recs, "Event")
	if diff := cmp.Diff(want, sorted(got)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	wantDeps := []string{
		"Initial ConfigMap default/env rv=1",
		"Initial Secret default/pull rv=1",
		"Updated ConfigMap default/env rv=2",
		"Updated Secret default/unowned rv=2",
		"Deleted ConfigMap default/env rv=2",
		"Deleted Secret default/pull rv=1",
	}
	if diff := cmp.Diff(sorted(wantDeps), sorted(rows(recs, "Secret", "ConfigMap"))); diff != "" {
		t.Errorf("dependents (-want +got):\n%s", diff)
	}

	for _, rec := range recs {
		switch {
		case rec.Kind == "Event" && rec.Name == "web.1":
			if diff := cmp.Diff([]string{"uid-web"}, rec.Refs); diff != "" {
				t.Errorf("event Refs (-want +got):\n%s", diff)
			}
		case rec.Kind == "Secret":
			var obj map[string]any
			if err := json.Unmarshal(rec.Object, &obj); err != nil {
				t.Fatal(err)
			}
			if obj["apiVersion"] != "v1" || obj["kind"] != "Secret" {
				t.Errorf("secret object apiVersion, kind = %v, %v; want v1, Secret", obj["apiVersion"], obj["kind"])
			}
			for _, key := range []string{"data", "stringData", "type"} {
				if _, ok := obj[key]; ok {
					t.Errorf("secret record holds %q: %s", key, rec.Object)
				}
			}
			// kubectl apply keeps the applied Secret, data and all, in an
			// annotation: it must not reach the trace either.
			if strings.Contains(string(rec.Object), secretValue) || strings.Contains(string(rec.Object), "last-applied-configuration") {
				t.Errorf("secret record carries the last-applied configuration: %s", rec.Object)
			}
			if rec.Name == "pull" && (len(rec.Refs) != 1 || rec.Refs[0] != "uid-web") {
				t.Errorf("secret Refs = %v, want [uid-web]", rec.Refs)
			}
		}
	}
	// Secret data is never asked for: the typed client never touches
	// Secrets or ConfigMaps.
	for _, a := range c.Actions() {
		switch a.GetResource().Resource {
		case "secrets", "configmaps":
			t.Errorf("typed client did %s %s; want metadata client only", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestRunWithPodSelector(t *testing.T) {
	c, m := clients(t, nil,
		namespace("default"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "uid-node-1", ResourceVersion: "1"}},
		pod("a", "1", map[string]string{"app": "a"}),
		pod("b", "1", map[string]string{"app": "b"}),
		event("a.1", "a", "Pod"),
		event("b.1", "b", "Pod"),
		event("node.1", "node-1", "Node"),
		event("other.1", "gone", "ConfigMap"),
		partial("Secret", "sa", "1", "a"),
		partial("Secret", "sb", "1", "b"),
	)
	r := start(t, Options{Client: c, Metadata: m, PodSelector: "app=a"})
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{
		"Initial Event default/a.1 rv=1",
		"Initial Event default/node.1 rv=1",
		"Initial Pod default/a rv=1",
		"Initial Secret default/sa rv=1",
	}
	if diff := cmp.Diff(want, sorted(rows(r.sink.records(), "Pod", "Event", "Secret"))); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// directTracer is a Tracer whose handlers are called by the test.
func directTracer(t *testing.T, selector string) *Tracer {
	t.Helper()
	c, m := clients(t, nil)
	tr, err := New(Options{Client: c, Metadata: m, PodSelector: selector, Clock: fixedClock{}})
	if err != nil {
		t.Fatal(err)
	}
	tr.out = newQueue(100)
	return tr
}

func (t *Tracer) kind(resource string) *kind {
	for _, k := range t.kinds {
		if k.gvr.Resource == resource {
			return k
		}
	}
	panic("no kind " + resource)
}

// drain returns the queued records.
func drain(tr *Tracer) []string {
	var out []string
	for _, r := range drainRecords(tr) {
		out = append(out, row(r))
	}
	return out
}

// informed returns obj as an informer would hand it over: kind set.
func informed(k *kind, obj runtime.Object) runtime.Object {
	o, _ := k.setKind()(obj)
	return o.(runtime.Object)
}

func TestTombstoneIsDeletedUnknown(t *testing.T) {
	tr := directTracer(t, "")
	k := tr.kind("pods")
	last := informed(k, pod("p", "7", nil))
	tr.handler(k).OnDelete(cacheTombstone("default/p", last))
	recs := drainRecords(tr)
	if len(recs) != 1 {
		t.Fatalf("got %d records, want 1", len(recs))
	}
	if diff := cmp.Diff("DeletedFinalStateUnknown Pod default/p rv=7", row(recs[0])); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.Contains(string(recs[0].Object), `"kind":"Pod"`) {
		t.Errorf("object lacks its kind: %s", recs[0].Object)
	}
}

func TestHeldUntilPodIsRecorded(t *testing.T) {
	tr := directTracer(t, "app=a")
	pods, events, secrets := tr.kind("pods"), tr.kind("events"), tr.kind("secrets")
	// The event and the Secret arrive before their pod (separate watches).
	tr.handler(events).OnAdd(informed(events, event("a.1", "a", "Pod")), false)
	tr.handler(secrets).OnAdd(informed(secrets, partial("Secret", "sa", "1", "a")), false)
	if got := drain(tr); len(got) != 0 {
		t.Fatalf("records before the pod: %v", got)
	}
	tr.handler(pods).OnAdd(informed(pods, pod("a", "1", map[string]string{"app": "a"})), false)
	// Once the pod is recorded, the Secret is tracked: its deletion is kept
	// even though its owner is gone from the object.
	tr.handler(secrets).OnDelete(informed(secrets, partial("Secret", "sa", "2", "")))
	want := []string{
		"Added Pod default/a rv=1",
		"Added Event default/a.1 rv=1",
		"Added Secret default/sa rv=1",
		"Deleted Secret default/sa rv=2",
	}
	if diff := cmp.Diff(want, drain(tr)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// An event about a pod that never shows up is dropped after the TTL.
	tr.handler(events).OnAdd(informed(events, event("b.1", "b", "Pod")), false)
	tr.dropExpired(time.Now().Add(tr.pendTTL + time.Second))
	tr.handler(pods).OnAdd(informed(pods, pod("b", "1", map[string]string{"app": "a"})), false)
	if diff := cmp.Diff([]string{"Added Pod default/b rv=1"}, drain(tr)); diff != "" {
		t.Errorf("after expiry (-want +got):\n%s", diff)
	}
}

func TestPreflight(t *testing.T) {
	deny := func(denied ...string) func(*authorizationv1.ResourceAttributes) bool {
		return func(a *authorizationv1.ResourceAttributes) bool {
			for _, d := range denied {
				if d == a.Verb+" "+a.Resource {
					return false
				}
			}
			return true
		}
	}
	tests := []struct {
		name      string
		namespace string
		denied    []string
		wantErr   string
		wantWarn  []string
	}{
		{
			name:      "all allowed",
			namespace: "x",
		},
		{
			name:      "pods and events denied",
			namespace: "x",
			// Warnings about optional kinds would bury the error: none.
			denied: []string{"watch pods", "list events", "watch events", "list secrets"},
			wantErr: "cannot watch pods in namespace x: ask for list and watch on pods (kubectl auth can-i watch pods -n x)\n" +
				"cannot list and watch events in namespace x: ask for list and watch on events (kubectl auth can-i list events -n x)",
		},
		{
			name:   "optional kinds denied",
			denied: []string{"list secrets", "watch nodes", "watch replicasets"},
			wantWarn: []string{
				"cannot watch nodes (cluster-scoped): not recording nodes (kubectl auth can-i watch nodes)",
				"cannot watch replicasets.apps in all namespaces: not recording ReplicaSets (kubectl auth can-i watch replicasets.apps -A)",
				"cannot list secrets in all namespaces: not recording pod-owned Secrets (kubectl auth can-i list secrets -A)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, m := clients(t, deny(tt.denied...))
			var warnings []string
			tr, err := New(Options{Client: c, Metadata: m, Namespace: tt.namespace, Warn: func(s string) { warnings = append(warnings, s) }})
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Preflight(context.Background())
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if !errors.Is(err, ErrForbidden) {
					t.Errorf("error %v is not ErrForbidden", err)
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarn, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSkippedKindsAreNotWatched(t *testing.T) {
	deny := func(a *authorizationv1.ResourceAttributes) bool {
		return a.Resource != "secrets" && a.Resource != "nodes"
	}
	c, m := clients(t, deny, namespace("default"))
	r := start(t, Options{Client: c, Metadata: m})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	watched := map[string]bool{}
	for _, a := range append(c.Actions(), m.Actions()...) {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			watched[a.GetResource().Resource] = true
		}
	}
	for _, res := range []string{"pods", "events", "configmaps", "mutatingwebhookconfigurations"} {
		if !watched[res] {
			t.Errorf("%s not watched", res)
		}
	}
	for _, res := range []string{"secrets", "nodes"} {
		if watched[res] {
			t.Errorf("%s watched although the user may not", res)
		}
	}
}

func TestShutdownFlushesTheLastBatch(t *testing.T) {
	objs := []runtime.Object{namespace("default")}
	for i := range 50 {
		objs = append(objs, pod(fmt.Sprintf("p%02d", i), "1", nil))
	}
	c, m := clients(t, nil, objs...)
	r := start(t, Options{Client: c, Metadata: m, FlushInterval: time.Hour, BatchSize: 1 << 20})
	// Ready means every initial record was handed to the writer, which
	// holds them: nothing reached the sink yet.
	if n := len(r.sink.records()); n != 0 {
		t.Fatalf("sink has %d records before shutdown; want 0 (batch not full, interval not over)", n)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := len(rows(r.sink.records(), "Pod")); got != 50 {
		t.Errorf("pods flushed at shutdown = %d, want 50", got)
	}
	if r.sink.batches != 1 {
		t.Errorf("batches = %d, want 1", r.sink.batches)
	}
}

func TestBatchesBySize(t *testing.T) {
	objs := []runtime.Object{}
	for i := range 25 {
		objs = append(objs, pod(fmt.Sprintf("p%02d", i), "1", nil))
	}
	c, m := clients(t, nil, objs...)
	r := start(t, Options{Client: c, Metadata: m, FlushInterval: time.Hour, BatchSize: 10})
	waitFor(t, "two full batches", func() bool { return len(r.sink.records()) == 20 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if n := len(r.sink.records()); n != 25 {
		t.Errorf("records = %d, want 25", n)
	}
	if r.sink.batches != 3 {
		t.Errorf("batches = %d, want 3", r.sink.batches)
	}
}

func TestSinkErrorStopsRun(t *testing.T) {
	c, m := clients(t, nil, pod("p", "1", nil))
	tr, err := New(Options{Client: c, Metadata: m, FlushInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	done := make(chan error, 1)
	go func() { done <- tr.Run(context.Background(), &memSink{err: diskFull}) }()
	select {
	case err := <-done:
		if !errors.Is(err, diskFull) {
			t.Errorf("Run = %v, want %v", err, diskFull)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop after the sink failed")
	}
}

func TestWatchErrorWarnings(t *testing.T) {
	var warnings []string
	tr := &Tracer{warn: func(s string) { warnings = append(warnings, s) }}
	k := kinds()[0]
	h := tr.watchErr.handler(tr, k)
	ctx := context.Background()
	refused := errors.New("connect: connection refused")
	h(ctx, nil, ioEOF)
	h(ctx, nil, refused)
	h(ctx, nil, refused)
	if len(warnings) != 0 {
		t.Fatalf("warned after 2 failures: %v", warnings)
	}
	h(ctx, nil, refused)
	h(ctx, nil, refused) // within the minute: no second warning
	want := []string{"watching pods failed 3 times, still retrying: connect: connection refused"}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

var ioEOF = io.EOF

func cacheTombstone(key string, obj any) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
}

func drainRecords(tr *Tracer) []store.Record {
	batch, _, _, _ := tr.out.take(true)
	return batch
}

func TestServerHealthWarnings(t *testing.T) {
	now := observedAt
	var warnings []string
	h := &serverHealth{host: "https://127.0.0.1:6443", warn: func(s string) { warnings = append(warnings, s) }, now: func() time.Time { return now }}
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	h.succeeded()
	for range 5 { // 5 failures within 4s: not yet
		h.failed(refused)
		now = now.Add(time.Second)
	}
	if len(warnings) != 0 {
		t.Fatalf("warned too early: %v", warnings)
	}
	h.failed(refused) // 6th, 5s after the first
	h.failed(refused) // same minute: no second warning
	now = now.Add(time.Minute)
	h.failed(refused) // a minute later: reminded
	h.succeeded()
	h.succeeded()
	want := []string{
		"cannot reach the API server at https://127.0.0.1:6443 for 5s (6 failed requests, last: dial tcp 127.0.0.1:6443: connect: connection refused); still retrying, what was recorded is kept",
		"cannot reach the API server at https://127.0.0.1:6443 for 1m5s (8 failed requests, last: dial tcp 127.0.0.1:6443: connect: connection refused); still retrying, what was recorded is kept",
		"the API server at https://127.0.0.1:6443 answers again after 1m5s; changes made meanwhile may show as one revision",
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWriterTakesWhatIsQueuedWhenClosed(t *testing.T) {
	tr := directTracer(t, "")
	q := newQueue(10)
	for i := range 3 {
		q.push(store.Record{UID: fmt.Sprint(i), Kind: "Pod"})
	}
	q.close()
	if q.push(store.Record{UID: "late", Kind: "Pod"}) {
		t.Error("push after close queued its record")
	}
	sink := &memSink{}
	if err := tr.write(q, sink, func() {}); err != nil {
		t.Fatal(err)
	}
	if got := len(sink.records()); got != 3 {
		t.Errorf("written %d records, want the 3 queued", got)
	}
}

func TestQueueWaitsForRoom(t *testing.T) {
	// A handler waits while a batch is queued and the writer has not taken
	// it, and goes on once it has; close releases a waiting handler.
	q := newQueue(2)
	q.push(store.Record{UID: "a"})
	q.push(store.Record{UID: "b"})
	pushed := make(chan bool)
	go func() { pushed <- q.push(store.Record{UID: "c"}) }()
	select {
	case <-pushed:
		t.Fatal("push into a full queue did not wait")
	case <-time.After(50 * time.Millisecond):
	}
	if batch, ok, _, _ := q.take(false); !ok || len(batch) != 2 {
		t.Fatalf("take = %d records, %v; want the full batch", len(batch), ok)
	}
	if !<-pushed {
		t.Fatal("push after the writer took the batch dropped its record")
	}
	q.push(store.Record{UID: "d"})
	go func() { pushed <- q.push(store.Record{UID: "e"}) }()
	time.Sleep(10 * time.Millisecond)
	q.close()
	if <-pushed {
		t.Error("push released by close queued its record")
	}
	if batch, ok, _, closed := q.take(false); !ok || !closed || len(batch) != 2 {
		t.Errorf("take after close = %d records, %v, closed %v; want c and d", len(batch), ok, closed)
	}
}

func TestCachesHoldNoObjects(t *testing.T) {
	// The informers' caches keep each object's identity, not the object:
	// the trace has the revisions.
	c, m := clients(t, nil, namespace("default"), pod("p0", "1", nil))
	r := start(t, Options{Client: c, Metadata: m})
	ctx := context.Background()
	pods := c.CoreV1().Pods("default")
	p1 := pod("p1", "10", nil)
	if _, err := pods.Create(ctx, p1, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p1.ResourceVersion = "11"
	if _, err := pods.Update(ctx, p1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Events("default").Create(ctx, event("p1.1", "p1", "Pod"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Updated p1", hasRow(r.sink, "Updated Pod default/p1 rv=11"))
	waitFor(t, "the event", hasRow(r.sink, "Added Event default/p1.1 rv=1"))

	entries := map[string]string{}
	for _, inf := range r.informers {
		for _, e := range inf.GetStore().List() {
			ce, ok := e.(*cached)
			if !ok {
				t.Fatalf("cache entry %T, want *cached", e)
			}
			if ce.obj != nil {
				t.Errorf("cache entry %s/%s still holds its object", ce.Namespace, ce.Name)
			}
			entries[ce.Namespace+"/"+ce.Name] = string(ce.UID) + " rv=" + ce.ResourceVersion + " about=" + string(ce.about)
		}
	}
	want := map[string]string{
		"/default":     "ns-default rv=1 about=",
		"default/p0":   "uid-p0 rv=1 about=",
		"default/p1":   "uid-p1 rv=11 about=",
		"default/p1.1": "uid-p1.1 rv=1 about=uid-p1",
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("cache entries (-want +got):\n%s", diff)
	}
}

func TestTombstoneOfCacheEntry(t *testing.T) {
	// A deletion inferred from a relist hands over the cache's entry: the
	// record names the object and leaves its last state to the store.
	for _, selector := range []string{"", "app=a"} {
		tr := directTracer(t, selector)
		pods, events := tr.kind("pods"), tr.kind("events")
		pe, _ := pods.transform()(pod("a", "7", map[string]string{"app": "a"}))
		ee, _ := events.transform()(event("a.1", "a", "Pod"))
		tr.handler(pods).OnAdd(pe, false)
		tr.handler(events).OnAdd(ee, false)
		// An event about a pod never recorded: dropped with a selector.
		other, _ := events.transform()(event("b.1", "b", "Pod"))
		tr.handler(events).OnAdd(other, false)
		drainRecords(tr)

		tr.handler(events).OnDelete(cacheTombstone("default/a.1", ee))
		tr.handler(pods).OnDelete(cacheTombstone("default/a", pe))
		tr.handler(events).OnDelete(cacheTombstone("default/b.1", other))
		var got []string
		for _, r := range drainRecords(tr) {
			got = append(got, row(r)+" object="+string(r.Object))
		}
		want := []string{
			"DeletedFinalStateUnknown Event default/a.1 rv=1 object=",
			"DeletedFinalStateUnknown Pod default/a rv=7 object=",
		}
		if selector == "" {
			want = append(want, "DeletedFinalStateUnknown Event default/b.1 rv=1 object=")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("selector %q: records (-want +got):\n%s", selector, diff)
		}
	}
}

// A user with a Role in one namespace, not a ClusterRole, is told to record
// that namespace when recording all of them is refused; a user who may not
// read it either gets no such hint.
func TestPreflightSuggestsNamespace(t *testing.T) {
	roleIn := func(ns string) func(*authorizationv1.ResourceAttributes) bool {
		return func(a *authorizationv1.ResourceAttributes) bool { return a.Namespace == ns }
	}
	for _, tt := range []struct {
		name, role, wantHint string
	}{
		{"role in the kubeconfig's namespace", "team", "you may list and watch pods and events in namespace team (the kubeconfig's): record it with -n team"},
		{"role elsewhere", "other", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, m := clients(t, roleIn(tt.role))
			tr, err := New(Options{Client: c, Metadata: m, DefaultNamespace: "team"})
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Preflight(context.Background())
			if !errors.Is(err, ErrForbidden) {
				t.Fatalf("Preflight: %v, want ErrForbidden", err)
			}
			if got := strings.Contains(err.Error(), "record it with -n"); got != (tt.wantHint != "") {
				t.Errorf("error:\n%s\nwant hint %q", err, tt.wantHint)
			}
			if tt.wantHint != "" && !strings.HasSuffix(err.Error(), tt.wantHint) {
				t.Errorf("error:\n%s\nwant it to end with %q", err, tt.wantHint)
			}
		})
	}
}

// TestRunRecordsClaimsWhole: every PersistentVolumeClaim in scope is
// recorded whole (its class and phase say why a pod waits for it), owned
// by a pod or not, and every StorageClass.
func TestRunRecordsClaimsWhole(t *testing.T) {
	class := "fast"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Namespace: "default", UID: "uid-pvc", ResourceVersion: "1"},
		Spec:       corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard", UID: "uid-sc", ResourceVersion: "1"}, Provisioner: "example.com/disk"}
	c, m := clients(t, nil, namespace("default"), pod("db-0", "1", nil), pvc, sc)
	r := start(t, Options{Client: c, Metadata: m})
	waitFor(t, "the claim", hasRow(r.sink, "Initial PersistentVolumeClaim default/data-db-0 rv=1"))
	waitFor(t, "the class", hasRow(r.sink, "Initial StorageClass /standard rv=1"))
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, rec := range r.sink.records() {
		switch rec.Kind {
		case "PersistentVolumeClaim":
			var got corev1.PersistentVolumeClaim
			if err := json.Unmarshal(rec.Object, &got); err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != corev1.ClaimPending || got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != class || got.Kind != "PersistentVolumeClaim" {
				t.Errorf("claim recorded as %s: want it whole, phase Pending, class %s", rec.Object, class)
			}
		case "StorageClass":
			if !strings.Contains(string(rec.Object), `"provisioner":"example.com/disk"`) || !strings.Contains(string(rec.Object), `"apiVersion":"storage.k8s.io/v1"`) {
				t.Errorf("StorageClass recorded as %s", rec.Object)
			}
		}
	}
}
