package tracetest

import (
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// PolicyT0 is when Policies adds its objects.
var PolicyT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// Policies is a trace's policy revisions: each object added at PolicyT0.
func Policies(t testing.TB, objs ...any) map[string][]store.Record {
	t.Helper()
	out := map[string][]store.Record{}
	for i, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		uid := meta.Kind + "/" + meta.Metadata.Name
		out[uid] = append(out[uid], store.Record{Seq: uint64(i + 1), Observed: PolicyT0, Type: store.Added, Kind: meta.Kind,
			Name: meta.Metadata.Name, UID: uid, Object: raw})
	}
	return out
}

// PodRules are policy rules on pods for ops.
func PodRules(ops ...admissionv1.OperationType) []admissionv1.NamedRuleWithOperations {
	return []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{Operations: ops,
		Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}
}

// VAP is a ValidatingAdmissionPolicy as the API server stores it: selectors
// defaulted to {}, failurePolicy Fail.
func VAP(name string, edit func(*admissionv1.ValidatingAdmissionPolicySpec)) *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	equivalent := admissionv1.Equivalent
	p := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: PodRules(admissionv1.Update),
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent},
			Validations: []admissionv1.Validation{{Expression: "object.metadata.finalizers.size() >= oldObject.metadata.finalizers.size()", Message: "finalizers stay"}},
		},
	}
	if edit != nil {
		edit(&p.Spec)
	}
	return p
}

// VAPB is a ValidatingAdmissionPolicyBinding of policy with actions.
func VAPB(name, policy string, actions []admissionv1.ValidationAction, edit func(*admissionv1.ValidatingAdmissionPolicyBindingSpec)) *admissionv1.ValidatingAdmissionPolicyBinding {
	b := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
	if edit != nil {
		edit(&b.Spec)
	}
	return b
}

// Selector is a label selector matching the labels kv, key then value.
func Selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}
