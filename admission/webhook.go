package admission

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/store"
)

// Webhook is one admission webhook that intercepts a request, as its
// configuration stood at the time asked about.
type Webhook struct {
	// Kind is the Mutating- or ValidatingWebhookConfiguration, or for an
	// admission policy (IsPolicy) the Validating- or
	// MutatingAdmissionPolicy; Configuration is then the binding through
	// which it matched and Name the policy.
	Kind          string `json:"kind"`
	Configuration string `json:"configuration"`
	Name          string `json:"name"`
	FailurePolicy string `json:"failurePolicy"`
	// ReinvocationPolicy is set for mutating webhooks only.
	ReinvocationPolicy string `json:"reinvocationPolicy,omitempty"`
	SideEffects        string `json:"sideEffects,omitempty"`
	TimeoutSeconds     int32  `json:"timeoutSeconds,omitempty"`
	// Rules and the selectors that matched, as text.
	Rules             string `json:"rules"`
	NamespaceSelector string `json:"namespaceSelector,omitempty"`
	ObjectSelector    string `json:"objectSelector,omitempty"`
	// MatchConditions are shown, not evaluated: they may narrow the match.
	MatchConditions []string `json:"matchConditions,omitempty"`
	// ValidationActions are a ValidatingAdmissionPolicy binding's (Deny,
	// Warn, Audit); Validations the policy's CEL expressions, not
	// evaluated; Params says what a paramed policy takes.
	ValidationActions []string `json:"validationActions,omitempty"`
	Validations       []string `json:"validations,omitempty"`
	Params            string   `json:"params,omitempty"`
	// Uncertain says why the match could not be decided for sure (a
	// namespace that was not recorded), empty when it is certain.
	Uncertain string `json:"uncertain,omitempty"`
}

// Request describes an admission request to match webhooks against.
type Request struct {
	Operation admissionv1.OperationType // CREATE, UPDATE, DELETE, CONNECT
	Group     string                    // "" for core
	Version   string
	Resource  string // plural, e.g. pods
	// Subresource, e.g. status; "" for the main resource.
	Subresource string
	Namespace   string // "" for a cluster-scoped object
	// Name is the object's (for resourceNames in policies' rules).
	Name string
	// NamespaceLabels are the labels of the request's namespace; nil when
	// the namespace is not known.
	NamespaceLabels map[string]string
	// ObjectLabels and OldObjectLabels are the object's labels after and
	// before the request (for UPDATE a webhook matches if either does).
	ObjectLabels    map[string]string
	OldObjectLabels map[string]string
}

// MatchWebhooks returns the webhooks of the configurations, as they stood at
// time t, that intercept req, following the rules of the Kubernetes
// documentation (Dynamic Admission Control, "Matching requests").
func MatchWebhooks(configs map[string][]store.Record, t time.Time, req Request) []Webhook {
	var out []Webhook
	for _, recs := range configs {
		rec, ok := RevisionAt(recs, t)
		if !ok {
			continue
		}
		name, hooks, ok := webhooksOf(rec)
		if !ok {
			continue
		}
		for _, w := range hooks {
			m, ok := match(w.Rules, w.NamespaceSelector, w.ObjectSelector, req)
			if !ok {
				continue
			}
			m.Kind, m.Configuration, m.Name = rec.Kind, name, w.Name
			m.FailurePolicy = policyString(w.FailurePolicy, "Fail")
			if rec.Kind == "MutatingWebhookConfiguration" {
				m.ReinvocationPolicy = policyString(w.ReinvocationPolicy, "Never")
			}
			m.SideEffects = policyString(w.SideEffects, "")
			m.TimeoutSeconds = int32Or(w.TimeoutSeconds, 10)
			m.MatchConditions = conditions(w.MatchConditions)
			out = append(out, m)
		}
	}
	sortWebhooks(out)
	return out
}

// webhooksOf decodes a Mutating- or ValidatingWebhookConfiguration into its
// name and webhooks; a validating webhook has the fields of a mutating one
// but reinvocationPolicy, which stays unset. The webhooks are shared with
// other callers: they must not be modified.
func webhooksOf(rec store.Record) (string, []admissionv1.MutatingWebhook, bool) {
	// Every pod of a report asks for the same few revisions: decode each
	// once (by its JSON, so that the same bytes always decode the same).
	decodedConfigs.Lock()
	c, hit := decodedConfigs.m[string(rec.Object)]
	decodedConfigs.Unlock()
	if hit && c.kind == rec.Kind {
		return c.name, c.hooks, c.ok
	}
	c = decodedConfig{kind: rec.Kind}
	c.name, c.hooks, c.ok = decodeWebhooks(rec)
	decodedConfigs.Lock()
	if decodedConfigs.m == nil || len(decodedConfigs.m) >= maxDecodedConfigs {
		decodedConfigs.m = make(map[string]decodedConfig)
	}
	decodedConfigs.m[string(rec.Object)] = c
	decodedConfigs.Unlock()
	return c.name, c.hooks, c.ok
}

// decodedConfigs holds what webhooksOf decoded, by the configuration's
// JSON; it is emptied when it holds maxDecodedConfigs.
var decodedConfigs struct {
	sync.Mutex
	m map[string]decodedConfig
}

const maxDecodedConfigs = 256

type decodedConfig struct {
	kind, name string
	hooks      []admissionv1.MutatingWebhook
	ok         bool
}

// decodeWebhooks is webhooksOf without the cache.
func decodeWebhooks(rec store.Record) (string, []admissionv1.MutatingWebhook, bool) {
	switch rec.Kind {
	case "MutatingWebhookConfiguration":
		var c admissionv1.MutatingWebhookConfiguration
		if json.Unmarshal(rec.Object, &c) != nil {
			return "", nil, false
		}
		return c.Name, c.Webhooks, true
	case "ValidatingWebhookConfiguration":
		var c admissionv1.ValidatingWebhookConfiguration
		if json.Unmarshal(rec.Object, &c) != nil {
			return "", nil, false
		}
		hooks := make([]admissionv1.MutatingWebhook, len(c.Webhooks))
		for i, w := range c.Webhooks {
			hooks[i] = admissionv1.MutatingWebhook{
				Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules, FailurePolicy: w.FailurePolicy,
				MatchPolicy: w.MatchPolicy, NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
				SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds,
				AdmissionReviewVersions: w.AdmissionReviewVersions, MatchConditions: w.MatchConditions,
			}
		}
		return c.Name, hooks, true
	}
	return "", nil, false
}

// RevisionAt returns the revision of an object in force at time t: the last
// one observed at or before t, unless that was its deletion. An object
// already present when recording began is taken to have stood since then.
func RevisionAt(recs []store.Record, t time.Time) (store.Record, bool) {
	var cur store.Record
	found := false
	for _, r := range recs {
		if r.Observed.After(t) && !(r.Type == store.Initial && !found) {
			break
		}
		cur, found = r, true
	}
	if !found || cur.Type == store.Deleted || cur.Type == store.DeletedUnknown {
		return store.Record{}, false
	}
	return cur, true
}

func policyString[T ~string](p *T, def string) string {
	if p == nil {
		return def
	}
	return string(*p)
}

func int32Or(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func conditions(cs []admissionv1.MatchCondition) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+": "+c.Expression)
	}
	return out
}

// match decides whether one webhook's rules and selectors intercept req.
func match(rules []admissionv1.RuleWithOperations, nsSel, objSel *metav1.LabelSelector, req Request) (Webhook, bool) {
	var w Webhook
	rule, ok := matchRules(rules, req)
	if !ok {
		return w, false
	}
	w.Rules = rule
	return w, matchSelectors(&w, nsSel, objSel, req)
}

// matchSelectors decides whether a namespaceSelector and an objectSelector
// select req, noting them (and what could not be checked) in w.
func matchSelectors(w *Webhook, nsSel, objSel *metav1.LabelSelector, req Request) bool {
	// namespaceSelector applies to namespaced objects (and to Namespace
	// objects themselves, by their own labels).
	if req.Namespace != "" && nsSel != nil {
		sel, err := metav1.LabelSelectorAsSelector(nsSel)
		if err != nil {
			return false // the API server rejects such a configuration
		}
		if !sel.Empty() {
			w.NamespaceSelector = sel.String()
			if req.NamespaceLabels == nil {
				w.Uncertain = fmt.Sprintf("namespace %s was not recorded, so namespaceSelector %s could not be checked", req.Namespace, sel)
			} else if !sel.Matches(labels.Set(req.NamespaceLabels)) {
				return false
			}
		}
	}
	if objSel != nil {
		sel, err := metav1.LabelSelectorAsSelector(objSel)
		if err != nil {
			return false
		}
		if !sel.Empty() {
			w.ObjectSelector = sel.String()
			matched := sel.Matches(labels.Set(req.ObjectLabels))
			if req.Operation == admissionv1.Update && sel.Matches(labels.Set(req.OldObjectLabels)) {
				matched = true
			}
			if !matched {
				return false
			}
		}
	}
	return true
}

// matchRules returns the first rule that covers req, as text.
func matchRules(rules []admissionv1.RuleWithOperations, req Request) (string, bool) {
	for _, r := range rules {
		if !hasOrStar(opStrings(r.Operations), string(req.Operation)) {
			continue
		}
		if !hasOrStar(r.APIGroups, req.Group) || !hasOrStar(r.APIVersions, req.Version) {
			continue
		}
		if !matchResource(r.Resources, req.Resource, req.Subresource) {
			continue
		}
		scope := admissionv1.AllScopes
		if r.Scope != nil {
			scope = *r.Scope
		}
		switch {
		case scope == admissionv1.NamespacedScope && req.Namespace == "" && req.Resource != "namespaces":
			continue
		case scope == admissionv1.ClusterScope && req.Namespace != "":
			continue
		}
		return fmt.Sprintf("%v %v %v/%v (scope %s)", r.Operations, r.Resources, groupsString(r.APIGroups), r.APIVersions, scope), true
	}
	return "", false
}

func groupsString(gs []string) string {
	for i, g := range gs {
		if g == "" {
			gs = append([]string{}, gs...)
			gs[i] = "core"
		}
	}
	return fmt.Sprint(gs)
}

func opStrings(ops []admissionv1.OperationType) []string {
	out := make([]string, len(ops))
	for i, o := range ops {
		out[i] = string(o)
	}
	return out
}

func hasOrStar(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

// matchResource follows the resource rule syntax: "pods" is the resource
// alone, "pods/status" one subresource, "pods/*" every subresource, "*" every
// resource, "*/*" every resource and subresource, "*/status" one subresource
// of every resource.
func matchResource(resources []string, resource, sub string) bool {
	for _, r := range resources {
		res, s, hasSub := cutSlash(r)
		if res != "*" && res != resource {
			continue
		}
		switch {
		case !hasSub && sub == "":
			return true
		case hasSub && (s == "*" || s == sub) && sub != "":
			return true
		case hasSub && s == "*" && res == "*" && sub == "":
			return true // "*/*" covers the main resources too
		}
	}
	return false
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// PodRequest builds the admission request for an operation on a pod, with the
// namespace labels as recorded at time t.
func PodRequest(op admissionv1.OperationType, sub string, old, pod *corev1.Pod, namespaces []store.Record, t time.Time) Request {
	req := Request{Operation: op, Version: "v1", Resource: "pods", Subresource: sub, Namespace: pod.Namespace, Name: pod.Name, ObjectLabels: pod.Labels}
	if old != nil {
		req.OldObjectLabels = old.Labels
	}
	if rec, ok := RevisionAt(namespaces, t); ok {
		req.NamespaceLabels = namespaceLabels(rec)
	}
	return req
}

// namespaceLabels returns the labels of a Namespace's revision: empty, not
// nil, when it has none; nil when it cannot be decoded. The pods of one
// namespace ask for the same revisions: they are decoded once, kept by
// their JSON (up to maxDecodedNamespaces of them). The map is shared: it
// must not be modified.
func namespaceLabels(rec store.Record) map[string]string {
	decodedNamespaces.Lock()
	l, hit := decodedNamespaces.m[string(rec.Object)]
	decodedNamespaces.Unlock()
	if hit {
		return l
	}
	var ns corev1.Namespace
	if json.Unmarshal(rec.Object, &ns) == nil {
		l = ns.Labels
		if l == nil {
			l = map[string]string{}
		}
	}
	decodedNamespaces.Lock()
	if decodedNamespaces.m == nil || len(decodedNamespaces.m) >= maxDecodedNamespaces {
		decodedNamespaces.m = make(map[string]map[string]string)
	}
	decodedNamespaces.m[string(rec.Object)] = l
	decodedNamespaces.Unlock()
	return l
}

// decodedNamespaces holds what namespaceLabels decoded, by the Namespace
// revision's JSON; it is emptied when it holds maxDecodedNamespaces.
var decodedNamespaces struct {
	sync.Mutex
	m map[string]map[string]string
}

const maxDecodedNamespaces = 256

func sortWebhooks(ws []Webhook) {
	sort.Slice(ws, func(i, j int) bool {
		if ws[i].Kind != ws[j].Kind {
			return ws[i].Kind < ws[j].Kind // Mutating before Validating
		}
		if ws[i].Configuration != ws[j].Configuration {
			return ws[i].Configuration < ws[j].Configuration
		}
		return ws[i].Name < ws[j].Name
	})
}
