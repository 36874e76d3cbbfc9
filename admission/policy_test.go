package admission

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/internal/tracetest"
	"github.com/podtrace/podtrace/store"
)

// The policy fixtures are tracetest's.
var (
	policyRecs = tracetest.Policies
	podRules   = tracetest.PodRules
	vap        = tracetest.VAP
	vapb       = tracetest.VAPB
	selector   = tracetest.Selector
	policyT0   = tracetest.PolicyT0
)

// TestMatchPolicies follows the API server's policy matcher
// (k8s.io/apiserver/pkg/admission/plugin/policy): a policy matters through
// a binding that names it, when the policy's matchConstraints and the
// binding's matchResources both match, and only its Deny action, or a
// failure under failurePolicy Fail, can block.
func TestMatchPolicies(t *testing.T) {
	deny := []admissionv1.ValidationAction{admissionv1.Deny}
	warnAudit := []admissionv1.ValidationAction{admissionv1.Warn, admissionv1.Audit}
	bindingNS := func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) {
		s.MatchResources = &admissionv1.MatchResources{NamespaceSelector: selector("policy", "strict"), ObjectSelector: &metav1.LabelSelector{}}
	}
	paramed := func(s *admissionv1.ValidatingAdmissionPolicySpec) {
		s.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	}
	paramRef := func(action admissionv1.ParameterNotFoundActionType) func(*admissionv1.ValidatingAdmissionPolicyBindingSpec) {
		return func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionv1.ParamRef{Name: "limits", ParameterNotFoundAction: &action}
		}
	}
	strict := map[string]string{"policy": "strict"}
	update := Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: "ci", Name: "job-1",
		NamespaceLabels: strict, ObjectLabels: map[string]string{"app": "job"}, OldObjectLabels: map[string]string{"app": "job", "phase": "run"}}
	with := func(edit func(*Request)) Request {
		r := update
		edit(&r)
		return r
	}
	type want struct {
		deny, cannot []string // kind/policy/binding
		notes        []string
		params       string // of the first suspect, when not ""
		uncertain    bool
	}
	tests := []struct {
		name string
		objs []any
		req  Request
		want want
	}{
		{"Deny binding without matchResources: suspect", []any{vap("keep", nil), vapb("keep-all", "keep", deny, nil)}, update,
			want{deny: []string{"ValidatingAdmissionPolicy/keep/keep-all"}}},
		{"binding namespaceSelector matches the namespace", []any{vap("keep", nil), vapb("keep-ci", "keep", deny, bindingNS)}, update,
			want{deny: []string{"ValidatingAdmissionPolicy/keep/keep-ci"}}},
		{"binding namespaceSelector misses the namespace", []any{vap("keep", nil), vapb("keep-ci", "keep", deny, bindingNS)},
			with(func(r *Request) { r.NamespaceLabels = map[string]string{} }), want{}},
		{"namespace not recorded: matched, uncertain", []any{vap("keep", nil), vapb("keep-ci", "keep", deny, bindingNS)},
			with(func(r *Request) { r.NamespaceLabels = nil }), want{deny: []string{"ValidatingAdmissionPolicy/keep/keep-ci"}, uncertain: true}},
		{"policy namespaceSelector misses", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.NamespaceSelector = selector("policy", "lenient")
		}), vapb("keep-all", "keep", deny, nil)}, update, want{}},
		{"policy for CREATE only does not match UPDATE", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = podRules(admissionv1.Create)
		}), vapb("keep-all", "keep", deny, nil)}, update, want{}},
		{"excludeResourceRules exclude pods", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules = podRules(admissionv1.OperationAll)
			s.MatchConstraints.ExcludeResourceRules = podRules(admissionv1.Update)
		}), vapb("keep-all", "keep", deny, nil)}, update, want{}},
		{"excludeResourceRules for another name do not exclude this pod", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ExcludeResourceRules = podRules(admissionv1.Update)
			s.MatchConstraints.ExcludeResourceRules[0].ResourceNames = []string{"other"}
		}), vapb("keep-all", "keep", deny, nil)}, update, want{deny: []string{"ValidatingAdmissionPolicy/keep/keep-all"}}},
		{"resourceNames name another pod", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ResourceRules[0].ResourceNames = []string{"job-2"}
		}), vapb("keep-all", "keep", deny, nil)}, update, want{}},
		{"objectSelector matches the old object on UPDATE", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ObjectSelector = selector("phase", "run")
		}), vapb("keep-all", "keep", deny, nil)}, update, want{deny: []string{"ValidatingAdmissionPolicy/keep/keep-all"}}},
		{"objectSelector misses both objects", []any{vap("keep", func(s *admissionv1.ValidatingAdmissionPolicySpec) {
			s.MatchConstraints.ObjectSelector = selector("app", "web")
		}), vapb("keep-all", "keep", deny, nil)}, update, want{}},
		{"binding matchResources with its own resourceRules for CREATE", []any{vap("keep", nil), vapb("keep-create", "keep", deny, func(s *admissionv1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &admissionv1.MatchResources{ResourceRules: podRules(admissionv1.Create), NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}}
		})}, update, want{}},
		{"Warn and Audit cannot block", []any{vap("keep", nil), vapb("keep-warn", "keep", warnAudit, nil)}, update,
			want{cannot: []string{"ValidatingAdmissionPolicy/keep/keep-warn"}}},
		{"one Deny binding and one Warn binding", []any{vap("keep", nil), vapb("a-deny", "keep", deny, nil), vapb("b-warn", "keep", warnAudit, nil)}, update,
			want{deny: []string{"ValidatingAdmissionPolicy/keep/a-deny"}, cannot: []string{"ValidatingAdmissionPolicy/keep/b-warn"}}},
		{"binding to a missing policy has no effect", []any{vapb("orphan", "gone", deny, nil)}, update,
			want{notes: []string{"ValidatingAdmissionPolicyBinding orphan names ValidatingAdmissionPolicy gone, which was not recorded at that time: the API server skips such a binding"}}},
		{"a policy without a binding has no effect", []any{vap("keep", nil)}, update, want{}},
		{"paramed policy, Deny: suspect, params noted", []any{vap("limits", paramed), vapb("limits-ci", "limits", deny, paramRef(admissionv1.AllowAction))}, update,
			want{deny: []string{"ValidatingAdmissionPolicy/limits/limits-ci"},
				params: "paramKind v1/ConfigMap, params not recorded: whether its validations fail depends on them; paramRef name limits, parameterNotFoundAction Allow"}},
		{"paramed policy, Warn, missing param denies: suspect", []any{vap("limits", paramed), vapb("limits-ci", "limits", warnAudit, paramRef(admissionv1.DenyAction))}, update,
			want{deny: []string{"ValidatingAdmissionPolicy/limits/limits-ci"},
				params: "paramKind v1/ConfigMap, params not recorded: whether its validations fail depends on them; paramRef name limits, parameterNotFoundAction Deny"}},
		{"paramed policy, Warn, missing param allowed: cannot block", []any{vap("limits", paramed), vapb("limits-ci", "limits", warnAudit, paramRef(admissionv1.AllowAction))}, update,
			want{cannot: []string{"ValidatingAdmissionPolicy/limits/limits-ci"}}},
	}
	names := func(ws []Webhook) []string {
		var out []string
		for _, w := range ws {
			out = append(out, w.Kind+"/"+w.Name+"/"+w.Configuration)
		}
		return out
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, c, notes := MatchPolicies(policyRecs(t, tc.objs...), policyT0.Add(time.Minute), tc.req)
			var cw []Webhook
			for _, m := range c {
				cw = append(cw, m.Webhook)
				if m.Reason == "" {
					t.Errorf("%s: no reason why it cannot block", m.Name)
				}
			}
			if diff := cmp.Diff(tc.want.deny, names(d)); diff != "" {
				t.Errorf("can deny (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.cannot, names(cw)); diff != "" {
				t.Errorf("cannot deny (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.notes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if len(d) > 0 {
				if d[0].Params != tc.want.params {
					t.Errorf("params = %q, want %q", d[0].Params, tc.want.params)
				}
				if (d[0].Uncertain != "") != tc.want.uncertain {
					t.Errorf("uncertain = %q, want uncertain %v", d[0].Uncertain, tc.want.uncertain)
				}
				if d[0].FailurePolicy != "Fail" || len(d[0].Validations) != 1 {
					t.Errorf("suspect %+v: want failurePolicy Fail and its validation", d[0])
				}
			}
		})
	}
}

// TestMatchPoliciesAsOfTime: the policy and the binding in force at the
// request's time decide, each by its own revisions.
func TestMatchPoliciesAsOfTime(t *testing.T) {
	deny := []admissionv1.ValidationAction{admissionv1.Deny}
	recs := policyRecs(t, vap("keep", nil), vapb("keep-all", "keep", deny, nil))
	// The binding turns to Warn after an hour, and is deleted after two.
	warned, _ := json.Marshal(vapb("keep-all", "keep", []admissionv1.ValidationAction{admissionv1.Warn}, nil))
	b := recs[KindValidatingBinding+"/keep-all"]
	b = append(b, store.Record{Seq: 10, Observed: policyT0.Add(time.Hour), Type: store.Updated, Kind: KindValidatingBinding, Name: "keep-all", Object: warned},
		store.Record{Seq: 11, Observed: policyT0.Add(2 * time.Hour), Type: store.Deleted, Kind: KindValidatingBinding, Name: "keep-all", Object: warned})
	recs[KindValidatingBinding+"/keep-all"] = b
	req := Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: "ci", NamespaceLabels: map[string]string{}}
	for _, c := range []struct {
		at          time.Duration
		deny, canno int
	}{{-time.Minute, 0, 0}, {time.Minute, 1, 0}, {90 * time.Minute, 0, 1}, {3 * time.Hour, 0, 0}} {
		d, cn, _ := MatchPolicies(recs, policyT0.Add(c.at), req)
		if len(d) != c.deny || len(cn) != c.canno {
			t.Errorf("at t0%+v: %d can deny, %d cannot; want %d, %d", c.at, len(d), len(cn), c.deny, c.canno)
		}
	}
}

// TestMatchMutatingPolicies: a MutatingAdmissionPolicy denies only by
// failing, under failurePolicy Fail; v1beta1 revisions decode like v1.
func TestMatchMutatingPolicies(t *testing.T) {
	mp := func(name, version, failurePolicy string) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/" + version, "kind": KindMutatingPolicy, "metadata": map[string]any{"name": name},
			"spec": map[string]any{"failurePolicy": failurePolicy, "matchConstraints": map[string]any{
				"resourceRules":     []any{map[string]any{"operations": []any{"CREATE", "UPDATE"}, "apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"pods"}}},
				"namespaceSelector": map[string]any{}, "objectSelector": map[string]any{}}}}
	}
	mb := func(name, version, policy string) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/" + version, "kind": KindMutatingBinding, "metadata": map[string]any{"name": name},
			"spec": map[string]any{"policyName": policy}}
	}
	recs := policyRecs(t, mp("sidecar", "v1beta1", "Fail"), mb("sidecar-all", "v1beta1", "sidecar"), mp("labels", "v1", "Ignore"), mb("labels-all", "v1", "labels"))
	req := Request{Operation: admissionv1.Update, Version: "v1", Resource: "pods", Namespace: "ci", NamespaceLabels: map[string]string{}}
	d, c, _ := MatchPolicies(recs, policyT0.Add(time.Minute), req)
	if len(d) != 1 || d[0].Name != "sidecar" || d[0].Kind != KindMutatingPolicy || d[0].Configuration != "sidecar-all" {
		t.Errorf("can deny: %+v, want sidecar through sidecar-all", d)
	}
	if len(c) != 1 || c[0].Name != "labels" || !strings.Contains(c[0].Reason, "Ignore") {
		t.Errorf("cannot deny: %+v, want labels (failurePolicy Ignore)", c)
	}
}

// TestUnrecordedPolicies: the policy kinds a session could not record.
func TestUnrecordedPolicies(t *testing.T) {
	got := UnrecordedPolicies([]store.Session{{Unrecorded: []string{"Node"}}, {Unrecorded: []string{KindMutatingPolicy, KindMutatingBinding}}})
	if diff := cmp.Diff([]string{KindMutatingPolicy, KindMutatingBinding}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
