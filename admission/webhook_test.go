package admission

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// The cases follow "Dynamic Admission Control" in the Kubernetes
// documentation: Matching requests: rules, scope, namespaceSelector,
// objectSelector.
func TestMatchRules(t *testing.T) {
	scope := func(s admissionv1.ScopeType) *admissionv1.ScopeType { return &s }
	rule := func(ops []admissionv1.OperationType, groups, versions, resources []string, s *admissionv1.ScopeType) admissionv1.RuleWithOperations {
		return admissionv1.RuleWithOperations{Operations: ops, Rule: admissionv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources, Scope: s}}
	}
	create := []admissionv1.OperationType{admissionv1.Create}
	update := []admissionv1.OperationType{admissionv1.Update}
	all := []admissionv1.OperationType{admissionv1.OperationAll}
	core := []string{""}
	v1 := []string{"v1"}
	podUpdate := Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: "ci"}
	podStatus := podUpdate
	podStatus.Subresource = "status"
	nodeUpdate := Request{Operation: admissionv1.Update, Version: "v1", Resource: "nodes"}

	tests := []struct {
		name string
		rule admissionv1.RuleWithOperations
		req  Request
		want bool
	}{
		{"CREATE and UPDATE of pods matches a pod UPDATE", rule([]admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, core, v1, []string{"pods"}, nil), podUpdate, true},
		{"CREATE only does not match UPDATE", rule(create, core, v1, []string{"pods"}, nil), podUpdate, false},
		{"operation * matches", rule(all, core, v1, []string{"pods"}, nil), podUpdate, true},
		{"apiGroups apps does not match core", rule(update, []string{"apps"}, v1, []string{"pods"}, nil), podUpdate, false},
		{"apiGroups * matches core", rule(update, []string{"*"}, []string{"*"}, []string{"pods"}, nil), podUpdate, true},
		{"pods does not match pods/status", rule(update, core, v1, []string{"pods"}, nil), podStatus, false},
		{"pods/status matches pods/status", rule(update, core, v1, []string{"pods/status"}, nil), podStatus, true},
		{"pods/* matches pods/status", rule(update, core, v1, []string{"pods/*"}, nil), podStatus, true},
		{"pods/* does not match pods", rule(update, core, v1, []string{"pods/*"}, nil), podUpdate, false},
		{"* matches pods", rule(update, core, v1, []string{"*"}, nil), podUpdate, true},
		{"* does not match pods/status", rule(update, core, v1, []string{"*"}, nil), podStatus, false},
		{"*/* matches pods", rule(update, core, v1, []string{"*/*"}, nil), podUpdate, true},
		{"*/* matches pods/status", rule(update, core, v1, []string{"*/*"}, nil), podStatus, true},
		{"*/status matches pods/status", rule(update, core, v1, []string{"*/status"}, nil), podStatus, true},
		{"scope Namespaced matches a namespaced pod", rule(update, core, v1, []string{"pods"}, scope(admissionv1.NamespacedScope)), podUpdate, true},
		{"scope Cluster does not match a namespaced pod", rule(update, core, v1, []string{"pods"}, scope(admissionv1.ClusterScope)), podUpdate, false},
		{"scope Namespaced does not match a node", rule(update, core, v1, []string{"nodes"}, scope(admissionv1.NamespacedScope)), nodeUpdate, false},
		{"scope Cluster matches a node", rule(update, core, v1, []string{"nodes"}, scope(admissionv1.ClusterScope)), nodeUpdate, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, got := matchRules([]admissionv1.RuleWithOperations{tc.rule}, tc.req)
			if got != tc.want {
				t.Errorf("matchRules(%+v, %+v) = %v, want %v", tc.rule, tc.req, got, tc.want)
			}
		})
	}
}

func TestMatchSelectors(t *testing.T) {
	podRule := []admissionv1.RuleWithOperations{{
		Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
	labelled := &metav1.LabelSelector{MatchLabels: map[string]string{"digest-resolution": "enabled"}}
	notIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "runlevel", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"0", "1"}}}}
	tests := []struct {
		name          string
		ns, obj       *metav1.LabelSelector
		req           Request
		want          bool
		wantUncertain bool
	}{
		{"namespace label matches", labelled, nil, Request{NamespaceLabels: map[string]string{"digest-resolution": "enabled"}}, true, false},
		{"namespace label missing", labelled, nil, Request{NamespaceLabels: map[string]string{}}, false, false},
		{"NotIn matches a namespace without the label", notIn, nil, Request{NamespaceLabels: map[string]string{}}, true, false},
		{"NotIn excludes runlevel 0", notIn, nil, Request{NamespaceLabels: map[string]string{"runlevel": "0"}}, false, false},
		{"namespace not recorded: matched, uncertain", labelled, nil, Request{}, true, true},
		{"empty selectors match everything", &metav1.LabelSelector{}, &metav1.LabelSelector{}, Request{NamespaceLabels: map[string]string{}}, true, false},
		{"objectSelector on the new object", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "yes"}}, Request{ObjectLabels: map[string]string{"inject": "yes"}}, true, false},
		{"objectSelector misses", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "yes"}}, Request{ObjectLabels: map[string]string{}}, false, false},
		{"objectSelector on UPDATE matches the old object too", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "yes"}},
			Request{Operation: admissionv1.Update, ObjectLabels: map[string]string{}, OldObjectLabels: map[string]string{"inject": "yes"}}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Operation == "" {
				req.Operation = admissionv1.Create
			}
			req.Version, req.Resource, req.Namespace = "v1", "pods", "ci"
			w, got := match(podRule, tc.ns, tc.obj, req)
			if got != tc.want {
				t.Fatalf("match = %v, want %v", got, tc.want)
			}
			if (w.Uncertain != "") != tc.wantUncertain {
				t.Errorf("uncertain = %q, want uncertain %v", w.Uncertain, tc.wantUncertain)
			}
		})
	}
}

func TestMatchWebhooksAsOfTime(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fail := admissionv1.Fail
	cfg := admissionv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "policy", UID: "u1"},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "policy.example.com", FailurePolicy: &fail,
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		}},
	}
	raw, _ := json.Marshal(cfg)
	recs := map[string][]store.Record{"u1": {
		{Seq: 1, Observed: t0, Type: store.Added, Kind: "ValidatingWebhookConfiguration", Name: "policy", UID: "u1", Object: raw},
		{Seq: 2, Observed: t0.Add(time.Hour), Type: store.Deleted, Kind: "ValidatingWebhookConfiguration", Name: "policy", UID: "u1", Object: raw},
	}}
	req := Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: "ci"}
	if got := MatchWebhooks(recs, t0.Add(-time.Minute), req); len(got) != 0 {
		t.Errorf("before it was created: %d webhooks, want none", len(got))
	}
	got := MatchWebhooks(recs, t0.Add(time.Minute), req)
	if len(got) != 1 || got[0].Name != "policy.example.com" || got[0].FailurePolicy != "Fail" || got[0].Kind != "ValidatingWebhookConfiguration" {
		t.Errorf("while it stood: %+v, want policy.example.com (Fail)", got)
	}
	if got := MatchWebhooks(recs, t0.Add(2*time.Hour), req); len(got) != 0 {
		t.Errorf("after its deletion: %d webhooks, want none", len(got))
	}
}

// webhooksOf keeps what it decoded by the configuration's JSON: asked again
// it gives the same as decoding, for either kind, and the same bytes under
// another kind are decoded as that kind.
func TestWebhooksOfCached(t *testing.T) {
	reinvoke := admissionv1.IfNeededReinvocationPolicy
	mcfg := admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "digester", UID: "m1"},
		Webhooks:   []admissionv1.MutatingWebhook{{Name: "digester.example.com", ReinvocationPolicy: &reinvoke}},
	}
	raw, _ := json.Marshal(mcfg)
	mut := store.Record{Kind: "MutatingWebhookConfiguration", UID: "m1", Object: raw}
	val := store.Record{Kind: "ValidatingWebhookConfiguration", UID: "m1", Object: raw}
	for i := 0; i < 2; i++ {
		for _, rec := range []store.Record{mut, val, mut} {
			name, hooks, ok := webhooksOf(rec)
			wantName, wantHooks, wantOK := decodeWebhooks(rec)
			if name != wantName || ok != wantOK || len(hooks) != 1 || len(wantHooks) != 1 ||
				hooks[0].Name != wantHooks[0].Name || (hooks[0].ReinvocationPolicy == nil) != (wantHooks[0].ReinvocationPolicy == nil) {
				t.Fatalf("round %d, %s: webhooksOf = %q %+v %v, decoding gives %q %+v %v", i, rec.Kind, name, hooks, ok, wantName, wantHooks, wantOK)
			}
		}
	}
	// A validating webhook has no reinvocationPolicy, whatever the JSON says.
	if _, hooks, _ := webhooksOf(val); hooks[0].ReinvocationPolicy != nil {
		t.Errorf("validating webhook from the cache has reinvocationPolicy %v", *hooks[0].ReinvocationPolicy)
	}
	if _, hooks, _ := webhooksOf(mut); hooks[0].ReinvocationPolicy == nil {
		t.Errorf("mutating webhook from the cache lost its reinvocationPolicy")
	}
}

// TestPodRequestNamespaceLabels checks the namespace labels of a request,
// read from the namespace's revision at the request's time, through the
// cache of decoded revisions: each revision gives its own labels however
// often it is asked for.
func TestPodRequestNamespaceLabels(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ns := func(seq uint64, at time.Time, obj string) store.Record {
		return store.Record{Seq: seq, Observed: at, Type: store.Updated, Kind: "Namespace", Name: "team", Object: []byte(obj)}
	}
	recs := []store.Record{
		ns(1, t0, `{"metadata":{"name":"team","labels":{"env":"dev"}}}`),
		ns(2, t0.Add(time.Minute), `{"metadata":{"name":"team","labels":{"env":"prod","tier":"web"}}}`),
		ns(3, t0.Add(2*time.Minute), `{"metadata":{"name":"team"}}`),
		ns(4, t0.Add(3*time.Minute), `{"metadata":`),
	}
	pod := &corev1.Pod{}
	for round := range 3 {
		for _, c := range []struct {
			at   time.Time
			want map[string]string
		}{
			{t0.Add(30 * time.Second), map[string]string{"env": "dev"}},
			{t0.Add(90 * time.Second), map[string]string{"env": "prod", "tier": "web"}},
			{t0.Add(150 * time.Second), map[string]string{}},
			{t0.Add(210 * time.Second), nil}, // cannot be read: no namespace selector can match
		} {
			got := PodRequest(admissionv1.Create, "", nil, pod, recs, c.at).NamespaceLabels
			if !reflect.DeepEqual(got, c.want) || (got == nil) != (c.want == nil) {
				t.Errorf("round %d: namespace labels at %s = %#v, want %#v", round, c.at.Format(time.TimeOnly), got, c.want)
			}
		}
	}
}
