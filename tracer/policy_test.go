package tracer

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servedPolicies is what a discovery client lists for
// admissionregistration.k8s.io: the webhook configurations and
// ValidatingAdmissionPolicies in v1 when vap is "v1", MutatingAdmissionPolicies
// in version mutating ("" for none).
func servedPolicies(vap, mutating string) []*metav1.APIResourceList {
	const group = "admissionregistration.k8s.io/"
	lists := map[string]*metav1.APIResourceList{}
	add := func(version string, names ...string) {
		l := lists[version]
		if l == nil {
			l = &metav1.APIResourceList{GroupVersion: group + version}
			lists[version] = l
		}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
	}
	add("v1", "mutatingwebhookconfigurations", "validatingwebhookconfigurations")
	if vap != "" {
		add(vap, "validatingadmissionpolicies", "validatingadmissionpolicies/status", "validatingadmissionpolicybindings")
	}
	if mutating != "" {
		add(mutating, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")
	}
	var out []*metav1.APIResourceList
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		if l := lists[v]; l != nil {
			out = append(out, l)
		}
	}
	return out
}

// TestPreflightDiscoversPolicies: admission policies are watched in the
// version the API server serves (MutatingAdmissionPolicy: v1, else v1beta1,
// else v1alpha1), and skipped with a warning where it serves none.
func TestPreflightDiscoversPolicies(t *testing.T) {
	tests := []struct {
		name          string
		vap, mutating string
		wantWatched   []string // policy kinds watched, as resource/version
		wantWarn      []string
		wantSkipped   []string
	}{
		{
			name: "all GA", vap: "v1", mutating: "v1",
			wantWatched: []string{"validatingadmissionpolicies/v1", "validatingadmissionpolicybindings/v1", "mutatingadmissionpolicies/v1", "mutatingadmissionpolicybindings/v1"},
		},
		{
			name: "mutating in beta", vap: "v1", mutating: "v1beta1",
			wantWatched: []string{"validatingadmissionpolicies/v1", "validatingadmissionpolicybindings/v1", "mutatingadmissionpolicies/v1beta1", "mutatingadmissionpolicybindings/v1beta1"},
		},
		{
			name: "mutating in alpha", vap: "v1", mutating: "v1alpha1",
			wantWatched: []string{"validatingadmissionpolicies/v1", "validatingadmissionpolicybindings/v1", "mutatingadmissionpolicies/v1alpha1", "mutatingadmissionpolicybindings/v1alpha1"},
		},
		{
			name:        "no policies",
			wantWatched: nil,
			wantWarn: []string{
				"the API server does not serve validatingadmissionpolicies in admissionregistration.k8s.io v1: not recording validating admission policies",
				"the API server does not serve validatingadmissionpolicybindings in admissionregistration.k8s.io v1: not recording validating admission policy bindings",
				"the API server does not serve mutatingadmissionpolicies in admissionregistration.k8s.io v1, v1beta1, v1alpha1: not recording mutating admission policies",
				"the API server does not serve mutatingadmissionpolicybindings in admissionregistration.k8s.io v1, v1beta1, v1alpha1: not recording mutating admission policy bindings",
			},
			wantSkipped: []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, m := clients(t, nil)
			c.Resources = servedPolicies(tt.vap, tt.mutating)
			var warnings []string
			tr, err := New(Options{Client: c, Metadata: m, Warn: func(s string) { warnings = append(warnings, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Preflight(context.Background()); err != nil {
				t.Fatal(err)
			}
			var watched []string
			for _, k := range tr.kinds {
				if k.ifServed && !tr.skip[k] {
					watched = append(watched, k.gvr.Resource+"/"+k.gvr.Version)
				}
			}
			if d := cmp.Diff(tt.wantWatched, watched); d != "" {
				t.Errorf("watched (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantWarn, warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantSkipped, tr.Unrecorded()); d != "" {
				t.Errorf("Unrecorded (-want +got):\n%s", d)
			}
		})
	}
}

// TestPoliciesAreRecorded: a ValidatingAdmissionPolicy and its binding are
// recorded whole, spec included; one the user may not list is not watched
// and is Unrecorded.
func TestPoliciesAreRecorded(t *testing.T) {
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-finalizers", ResourceVersion: "5", UID: "uid-vap"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
			}}},
			Validations: []admissionv1.Validation{{Expression: "true"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-finalizers-ci", ResourceVersion: "6", UID: "uid-vapb"},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "keep-finalizers", ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	c, m := clients(t, nil, namespace("default"), policy, binding)
	r := start(t, Options{Client: c, Metadata: m})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	got := rows(r.sink.records(), "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
	if len(got) != 2 {
		t.Fatalf("policy records = %v, want the policy and its binding", got)
	}
	for _, rec := range r.sink.records() {
		if rec.Kind == "ValidatingAdmissionPolicy" {
			if rec.APIVersion != "admissionregistration.k8s.io/v1" || !strings.Contains(string(rec.Object), `"matchConstraints"`) {
				t.Errorf("policy record %s %s lacks its spec: %s", rec.APIVersion, rec.Kind, rec.Object)
			}
		}
	}
}
