package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	"github.com/podtrace/podtrace/store"
)

// The admission policies: CEL rules that the API server itself runs on a
// request, each through the bindings that name it
// (k8s.io/apiserver/pkg/admission/plugin/policy: generic/policy_source.go,
// generic/policy_matcher.go, matching/matching.go, validating/dispatcher.go).
const (
	KindValidatingPolicy  = "ValidatingAdmissionPolicy"
	KindValidatingBinding = "ValidatingAdmissionPolicyBinding"
	KindMutatingPolicy    = "MutatingAdmissionPolicy"
	KindMutatingBinding   = "MutatingAdmissionPolicyBinding"
)

// PolicyKinds are the kinds of admission policies and their bindings, as
// recorded.
var PolicyKinds = []string{KindValidatingPolicy, KindValidatingBinding, KindMutatingPolicy, KindMutatingBinding}

// IsPolicy reports whether w is an admission policy through one of its
// bindings (Configuration names the binding), not a webhook.
func (w Webhook) IsPolicy() bool {
	return w.Kind == KindValidatingPolicy || w.Kind == KindMutatingPolicy
}

// PolicyMatch is an admission policy, through one binding, that intercepts
// a request but cannot deny it: why not is in Reason.
type PolicyMatch struct {
	Webhook
	Reason string
}

// MatchPolicies returns the admission policies that intercept req, through
// the bindings that name them, as policies and bindings stood at time t:
// those that can deny it (a ValidatingAdmissionPolicy whose binding's
// validationActions include Deny; one that can fail with failurePolicy
// Fail where a failure denies whatever the actions say; a
// MutatingAdmissionPolicy with failurePolicy Fail, which denies when it
// fails), and those that match but cannot. A binding that names a policy
// not recorded at t is skipped, as the API server skips it; one whose
// policy is absent but whose matchResources match req is noted.
//
// A request matches a policy when it matches the policy's
// spec.matchConstraints and the binding's spec.matchResources (a binding
// without one matches whatever its policy does): resourceRules (an empty
// list matches every request), excludeResourceRules, namespaceSelector
// and objectSelector, as for webhooks. matchPolicy Equivalent makes no
// difference for pods, which exist in core/v1 only. matchConditions and
// the validations are CEL, not evaluated here: they are shown.
func MatchPolicies(recs map[string][]store.Record, t time.Time, req Request) (deny []Webhook, cannot []PolicyMatch, notes []string) {
	policies := map[string]policyAt{} // kind/name
	var bindings []policyAt
	for _, rs := range recs {
		rec, ok := RevisionAt(rs, t)
		if !ok {
			continue
		}
		p, ok := decodePolicy(rec)
		if !ok {
			continue
		}
		switch rec.Kind {
		case KindValidatingPolicy, KindMutatingPolicy:
			policies[rec.Kind+"/"+p.name] = p
		case KindValidatingBinding, KindMutatingBinding:
			bindings = append(bindings, p)
		}
	}
	slices.SortFunc(bindings, func(a, b policyAt) int { return strings.Compare(a.kind+"/"+a.name, b.kind+"/"+b.name) })
	for _, b := range bindings {
		policyKind := strings.TrimSuffix(b.kind, "Binding")
		bm, ok := matchResources(b.match, req, true)
		if !ok {
			continue
		}
		p, ok := policies[policyKind+"/"+b.policyName]
		if !ok {
			notes = append(notes, fmt.Sprintf("%s %s names %s %s, which was not recorded at that time: the API server skips such a binding", b.kind, b.name, policyKind, b.policyName))
			continue
		}
		pm, ok := matchResources(p.match, req, false)
		if !ok {
			continue
		}
		w := Webhook{Kind: policyKind, Name: p.name, Configuration: b.name, FailurePolicy: p.failurePolicy,
			Rules: pm.Rules, NamespaceSelector: pm.NamespaceSelector, ObjectSelector: pm.ObjectSelector,
			MatchConditions: p.conditions, Validations: p.validations, Uncertain: pm.Uncertain}
		if b.match != nil {
			w.Rules = joinNonEmpty(w.Rules, bm.Rules, "; binding ")
			w.NamespaceSelector = joinNonEmpty(w.NamespaceSelector, bm.NamespaceSelector, "; binding ")
			w.ObjectSelector = joinNonEmpty(w.ObjectSelector, bm.ObjectSelector, "; binding ")
			w.Uncertain = joinNonEmpty(w.Uncertain, bm.Uncertain, "; ")
		}
		if policyKind == KindValidatingPolicy {
			w.ValidationActions = b.actions
		}
		// A failure to configure the binding (its param missing, with
		// parameterNotFoundAction Deny) denies whatever the validation
		// actions say, under failurePolicy Fail.
		paramDeny := false
		if p.paramKind != "" {
			w.Params, paramDeny = paramsText(p.paramKind, b.paramRef)
			paramDeny = paramDeny && p.failurePolicy == string(admissionv1.Fail)
		}
		switch {
		case policyKind == KindMutatingPolicy && p.failurePolicy != string(admissionv1.Fail):
			cannot = append(cannot, PolicyMatch{w, "a mutating policy denies only when it fails, and its failurePolicy is " + p.failurePolicy})
		case policyKind == KindValidatingPolicy && !slices.Contains(b.actions, string(admissionv1.Deny)) && !paramDeny:
			var fates []string
			for _, a := range b.actions {
				switch admissionv1.ValidationAction(a) {
				case admissionv1.Warn:
					fates = append(fates, "returned to the client as a warning")
				case admissionv1.Audit:
					fates = append(fates, "recorded in the audit log")
				}
			}
			cannot = append(cannot, PolicyMatch{w, fmt.Sprintf("its binding's validationActions are %s, without Deny: a failed validation is %s, and the request goes on",
				strings.Join(b.actions, ", "), strings.Join(fates, " and "))})
		default:
			deny = append(deny, w)
		}
	}
	return deny, cannot, notes
}

func joinNonEmpty(a, b, sep string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return strings.TrimPrefix(sep, "; ") + b
	}
	return a + sep + b
}

// paramsText describes a paramed policy's binding: what params it takes,
// and whether a missing param denies the request (parameterNotFoundAction
// Deny, the API server's error then goes to failurePolicy).
func paramsText(paramKind string, ref *admissionv1.ParamRef) (string, bool) {
	s := "paramKind " + paramKind + ", params not recorded: whether its validations fail depends on them"
	if ref == nil {
		return s + "; the binding has no paramRef", false
	}
	var which []string
	if ref.Namespace != "" {
		which = append(which, "namespace "+ref.Namespace)
	}
	if ref.Name != "" {
		which = append(which, "name "+ref.Name)
	}
	if ref.Selector != nil {
		which = append(which, "a selector")
	}
	action := policyString(ref.ParameterNotFoundAction, "")
	s += "; paramRef " + strings.Join(which, ", ")
	if action != "" {
		s += ", parameterNotFoundAction " + action
	}
	return s, action == string(admissionv1.DenyAction)
}

// policyAt is what the matcher reads of a policy or a binding revision.
type policyAt struct {
	kind, name string
	match      *admissionv1.MatchResources // matchConstraints or matchResources
	// Policies.
	failurePolicy string
	paramKind     string // apiVersion/kind
	conditions    []string
	validations   []string
	// Bindings.
	policyName string
	actions    []string
	paramRef   *admissionv1.ParamRef
}

// decodePolicy reads a policy or binding revision, of any version: the
// fields the matcher reads have the same JSON in v1, v1beta1 and v1alpha1.
// Decoded revisions are kept by their JSON, like webhooksOf's.
func decodePolicy(rec store.Record) (policyAt, bool) {
	decodedPolicies.Lock()
	c, hit := decodedPolicies.m[string(rec.Object)]
	decodedPolicies.Unlock()
	if hit && c.p.kind == rec.Kind {
		return c.p, c.ok
	}
	c.p, c.ok = decodePolicyRecord(rec)
	decodedPolicies.Lock()
	if decodedPolicies.m == nil || len(decodedPolicies.m) >= maxDecodedConfigs {
		decodedPolicies.m = make(map[string]decodedPolicy)
	}
	decodedPolicies.m[string(rec.Object)] = c
	decodedPolicies.Unlock()
	return c.p, c.ok
}

var decodedPolicies struct {
	sync.Mutex
	m map[string]decodedPolicy
}

type decodedPolicy struct {
	p  policyAt
	ok bool
}

func decodePolicyRecord(rec store.Record) (policyAt, bool) {
	p := policyAt{kind: rec.Kind}
	var spec struct {
		MatchConstraints  *admissionv1.MatchResources `json:"matchConstraints"`
		MatchResources    *admissionv1.MatchResources `json:"matchResources"`
		FailurePolicy     *admissionv1.FailurePolicyType
		ParamKind         *admissionv1.ParamKind
		MatchConditions   []admissionv1.MatchCondition
		Validations       []admissionv1.Validation
		PolicyName        string
		ValidationActions []admissionv1.ValidationAction
		ParamRef          *admissionv1.ParamRef
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(rec.Object, &obj) != nil || json.Unmarshal(obj.Spec, &spec) != nil {
		return p, false
	}
	p.name = obj.Metadata.Name
	switch rec.Kind {
	case KindValidatingPolicy, KindMutatingPolicy:
		p.match = spec.MatchConstraints
		if p.match == nil {
			// The API server requires matchConstraints; without them
			// the policy matches nothing.
			return p, false
		}
		p.failurePolicy = policyString(spec.FailurePolicy, string(admissionv1.Fail))
		if k := spec.ParamKind; k != nil {
			p.paramKind = k.APIVersion + "/" + k.Kind
		}
		p.conditions = conditions(spec.MatchConditions)
		for _, v := range spec.Validations {
			s := v.Expression
			if v.Message != "" {
				s += " (message: " + v.Message + ")"
			}
			p.validations = append(p.validations, s)
		}
	case KindValidatingBinding, KindMutatingBinding:
		p.match = spec.MatchResources
		p.policyName = spec.PolicyName
		p.paramRef = spec.ParamRef
		for _, a := range spec.ValidationActions {
			p.actions = append(p.actions, string(a))
		}
	default:
		return p, false
	}
	return p, true
}

// matchResources decides whether a policy's matchConstraints, or a
// binding's matchResources, cover req. A binding's nil matchResources
// covers every request (binding is true).
func matchResources(mr *admissionv1.MatchResources, req Request, binding bool) (Webhook, bool) {
	var w Webhook
	if mr == nil {
		return w, binding
	}
	if len(mr.ExcludeResourceRules) > 0 {
		if _, excluded := matchNamedRules(mr.ExcludeResourceRules, req); excluded {
			return w, false
		}
	}
	if len(mr.ResourceRules) > 0 {
		rule, ok := matchNamedRules(mr.ResourceRules, req)
		if !ok {
			return w, false
		}
		w.Rules = rule
	} else if !binding {
		w.Rules = "every request (no resourceRules)"
	}
	if !matchSelectors(&w, mr.NamespaceSelector, mr.ObjectSelector, req) {
		return w, false
	}
	return w, true
}

// matchNamedRules returns the first rule that covers req, its
// resourceNames included, as text.
func matchNamedRules(rules []admissionv1.NamedRuleWithOperations, req Request) (string, bool) {
	for _, r := range rules {
		text, ok := matchRules([]admissionv1.RuleWithOperations{r.RuleWithOperations}, req)
		if !ok {
			continue
		}
		if len(r.ResourceNames) == 0 {
			return text, true
		}
		if slices.Contains(r.ResourceNames, req.Name) {
			return text + fmt.Sprintf(" resourceNames %v", r.ResourceNames), true
		}
	}
	return "", false
}

// UnrecordedPolicies returns the policy kinds that a session of the trace
// could not record.
func UnrecordedPolicies(sessions []store.Session) []string {
	var out []string
	for _, s := range sessions {
		for _, k := range s.Unrecorded {
			if slices.Contains(PolicyKinds, k) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}
