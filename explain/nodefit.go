package explain

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	podresource "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// The scheduler's node filters that podtrace can evaluate from a trace, as
// the default scheduler's plugins do (k8s.io/kubernetes/pkg/scheduler):
// NodeUnschedulable (spec.unschedulable, unless the pod tolerates the
// node.kubernetes.io/unschedulable taint), NodeAffinity (spec.nodeSelector
// and required node affinity, with k8s.io/component-helpers), TaintToleration
// (every NoSchedule and NoExecute taint tolerated) and NodeResourcesFit (the
// pod's requests within allocatable minus the requests of the pods bound
// to the node that have not finished, and one pod more than allocatable
// pods). Pod affinity, topology spread, volumes, ports and dynamic
// resources are not evaluated: a node that passes these checks is said to,
// and the scheduler's message is the cause.

// misfit is one reason a node does not fit the pod.
type misfit struct {
	// verb and rest make the reason ("lacks", "label disk=ssd"); verb is
	// in the singular, for one node.
	verb, rest string
	// detail adds what the node has, for its evidence line only.
	detail string
	// remedy identifies the remedy, the same for every node it applies
	// to; next says it for those nodes.
	remedy string
	next   func(nodes []string) string
}

func (m misfit) key() string { return m.verb + " " + m.rest }

// plural is the verb for several nodes.
func (m misfit) plural() string {
	switch m.verb {
	case "lacks":
		return "lack"
	case "has":
		return "have"
	case "is":
		return "are"
	case "matches":
		return "match"
	}
	return m.verb
}

// nodeFit is what the checks say of one node at the time the scheduler last
// failed.
type nodeFit struct {
	name     string
	rec      store.Record
	misfits  []misfit
	notReady string // the node's Ready condition, when not True
}

// scheduleTime is when the pod's node fit is evaluated: the last
// FailedScheduling event, else the end of the recording.
func scheduleTime(lc *diff.Lifecycle) time.Time {
	t := lc.RecordingEnd
	for _, e := range lc.Events {
		if e.Reason == "FailedScheduling" && !e.Time.IsZero() {
			t = e.Time
		}
	}
	return t
}

// podAt returns the pod as last recorded at or before t, else its first
// revision.
func podAt(lc *diff.Lifecycle, t time.Time) *corev1.Pod {
	p := lc.Pods()[0]
	for i, s := range lc.Steps {
		if s.Time.After(t) {
			break
		}
		p = lc.Pods()[i]
	}
	return p
}

// recordAt returns the last of recs observed at or before t.
func recordAt(recs []store.Record, t time.Time) (store.Record, bool) {
	var out store.Record
	found := false
	for _, r := range recs {
		if r.Observed.After(t) {
			break
		}
		out, found = r, true
	}
	return out, found
}

// nodesAt decodes the nodes recorded as present at t, by name.
func nodesAt(in diff.Input, t time.Time) ([]*corev1.Node, []store.Record) {
	type at struct {
		node *corev1.Node
		rec  store.Record
	}
	byName := map[string]at{}
	for _, recs := range in.Nodes {
		rec, ok := recordAt(recs, t)
		if !ok || rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			continue
		}
		var n corev1.Node
		if json.Unmarshal(rec.Object, &n) != nil {
			continue
		}
		if prev, ok := byName[n.Name]; !ok || rec.Observed.After(prev.rec.Observed) {
			byName[n.Name] = at{&n, rec}
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	nodes := make([]*corev1.Node, len(names))
	recs := make([]store.Record, len(names))
	for i, name := range names {
		nodes[i], recs[i] = byName[name].node, byName[name].rec
	}
	return nodes, recs
}

// boundAt sums the requests of the pods recorded bound to each node at t
// that had not finished, and counts them: what the scheduler holds against
// a node's allocatable, as far as the trace recorded those pods.
func boundAt(in diff.Input, self string, t time.Time) (map[string]corev1.ResourceList, map[string]int) {
	used, count := map[string]corev1.ResourceList{}, map[string]int{}
	for uid, recs := range in.NodePods {
		if uid == self {
			continue
		}
		rec, ok := recordAt(recs, t)
		if !ok || rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			continue
		}
		var p corev1.Pod
		if json.Unmarshal(rec.Object, &p) != nil || p.Spec.NodeName == "" ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		l := used[p.Spec.NodeName]
		if l == nil {
			l = corev1.ResourceList{}
			used[p.Spec.NodeName] = l
		}
		for name, q := range podresource.PodRequests(&p, podresource.PodResourcesOptions{}) {
			sum := l[name]
			sum.Add(q)
			l[name] = sum
		}
		count[p.Spec.NodeName]++
	}
	return used, count
}

// The taints the node lifecycle controller puts on a node that is not
// Ready (TaintNodesByCondition): the scheduler keeps pods off such a node
// through them, not through the condition.
var notReadyTaints = map[string]bool{corev1.TaintNodeNotReady: true, corev1.TaintNodeUnreachable: true}

// fitNode checks one node against the pod.
func fitNode(pod *corev1.Pod, node *corev1.Node, used corev1.ResourceList, bound int, boundKnown bool) []misfit {
	var out []misfit
	logger := logr.Discard()
	// A toleration with the Gt or Lt operators exists only if the API
	// server's TaintTolerationComparisonOperators gate let it in, so they
	// are compared whenever the pod has them.
	const comparisons = true
	tolerates := func(t *corev1.Taint) bool {
		return corev1helpers.TolerationsTolerateTaint(logger, pod.Spec.Tolerations, t, comparisons)
	}
	cordoned := node.Spec.Unschedulable && !tolerates(&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	if cordoned {
		out = append(out, misfit{verb: "is", rest: "cordoned (spec.unschedulable)", remedy: "uncordon", next: func(nodes []string) string {
			return fmt.Sprintf("uncordon the node if it should take pods again: kubectl uncordon %s", strings.Join(nodes, " "))
		}})
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		out = append(out, affinityMisfits(pod, node, err)...)
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute || tolerates(t) {
			continue
		}
		if t.Key == corev1.TaintNodeUnschedulable && cordoned {
			continue // said above
		}
		taint := taintText(t)
		if notReadyTaints[t.Key] {
			out = append(out, misfit{verb: "is", rest: "NotReady (taint " + taint + ")", remedy: "not ready", next: func(nodes []string) string {
				return fmt.Sprintf("%s not Ready: its kubelet stopped reporting; bring it back, or delete the Node if the machine is gone", strings.Join(nodes, ", "))
			}})
			continue
		}
		out = append(out, misfit{verb: "has", rest: "untolerated taint " + taint, remedy: "taint " + taint, next: func(nodes []string) string {
			return fmt.Sprintf("add a toleration to the pod, %s, if it may run there; or remove the taint: kubectl taint node %s %s-",
				tolerationText(t), nodes[0], taint)
		}})
	}
	out = append(out, resourceMisfits(pod, node, used, bound, boundKnown)...)
	return out
}

func taintText(t *corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

func tolerationText(t *corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("{key: %s, operator: Exists, effect: %s}", t.Key, t.Effect)
	}
	return fmt.Sprintf("{key: %s, operator: Equal, value: %s, effect: %s}", t.Key, t.Value, t.Effect)
}

// affinityMisfits says which of the pod's nodeSelector labels and required
// node affinity terms the node does not match.
func affinityMisfits(pod *corev1.Pod, node *corev1.Node, err error) []misfit {
	var out []misfit
	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		want := k + "=" + pod.Spec.NodeSelector[k]
		have, ok := node.Labels[k]
		switch {
		case !ok:
			out = append(out, misfit{verb: "lacks", rest: "label " + want, remedy: "label " + want, next: labelNext(k, want)})
		case have != pod.Spec.NodeSelector[k]:
			out = append(out, misfit{verb: "lacks", rest: "label " + want, detail: "it has " + k + "=" + have, remedy: "label " + want, next: labelNext(k, want)})
		}
	}
	var terms []string
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		sel := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if ok, _ := nodeaffinity.NewLazyErrorNodeSelector(sel).Match(node); !ok {
			for _, term := range sel.NodeSelectorTerms {
				terms = append(terms, failingRequirement(term, node))
			}
		}
	}
	if len(terms) > 0 {
		out = append(out, misfit{verb: "matches", rest: "no required node affinity term (" + strings.Join(terms, "; ") + ")", remedy: "affinity", next: func(nodes []string) string {
			return "change the pod's required node affinity, or label a node so that it matches a term (kubectl label node " + nodes[0] + " KEY=VALUE)"
		}})
	}
	if len(out) == 0 {
		// The library said no and neither check says why: a term it could
		// not parse, say. Its word stands.
		why := "its labels"
		if err != nil {
			why = err.Error()
		}
		out = append(out, misfit{verb: "matches", rest: "not the pod's node selector or affinity (" + why + ")", remedy: "affinity", next: func([]string) string {
			return "check the pod's nodeSelector and required node affinity against the nodes' labels"
		}})
	}
	return out
}

// systemLabels are the node labels the kubelet or the cloud provider
// sets (k8s.io/api/core/v1 well_known_labels.go), which no one labels by
// hand.
var systemLabels = map[string]bool{
	corev1.LabelHostname: true, corev1.LabelOSStable: true, corev1.LabelArchStable: true,
	corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true, corev1.LabelInstanceTypeStable: true,
	corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true, corev1.LabelInstanceType: true,
	corev1.LabelWindowsBuild: true,
}

func labelNext(key, want string) func([]string) string {
	return func(nodes []string) string {
		if systemLabels[key] {
			return fmt.Sprintf("%s is set by the kubelet or the cloud provider, not by hand: change the pod's spec.nodeSelector %s if it may run on %s", key, want, strings.Join(nodes, ", "))
		}
		return fmt.Sprintf("label a node that should run it: kubectl label node %s %s; or change the pod's spec.nodeSelector", nodes[0], want)
	}
}

// failingRequirement names the first requirement of a node selector term
// that the node fails, each evaluated alone by the same library.
func failingRequirement(term corev1.NodeSelectorTerm, node *corev1.Node) string {
	one := func(t corev1.NodeSelectorTerm) bool {
		ok, _ := nodeaffinity.NewLazyErrorNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{t}}).Match(node)
		return ok
	}
	for _, r := range term.MatchExpressions {
		if !one(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{r}}) {
			return requirementText(r, node.Labels)
		}
	}
	for _, r := range term.MatchFields {
		if !one(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{r}}) {
			return requirementText(r, map[string]string{"metadata.name": node.Name})
		}
	}
	return "an empty term, which matches no node"
}

func requirementText(r corev1.NodeSelectorRequirement, have map[string]string) string {
	s := r.Key + " " + string(r.Operator)
	if len(r.Values) > 0 {
		s += " [" + strings.Join(r.Values, ", ") + "]"
	}
	if v, ok := have[r.Key]; ok {
		return s + ", the node has " + r.Key + "=" + v
	}
	return s + ", the node has no " + r.Key
}

// resourceMisfits compares the pod's requests with what the node has left,
// as the scheduler's NodeResourcesFit filter does.
func resourceMisfits(pod *corev1.Pod, node *corev1.Node, used corev1.ResourceList, bound int, boundKnown bool) []misfit {
	alloc := node.Status.Allocatable
	if len(alloc) == 0 {
		return nil // not recorded: nothing to compare with
	}
	recorded := "as far as recorded"
	if !boundKnown {
		recorded = "with no pod recorded on it"
	}
	var out []misfit
	if max, ok := alloc[corev1.ResourcePods]; ok && int64(bound+1) > max.Value() {
		out = append(out, misfit{verb: "is", rest: fmt.Sprintf("full: %d pods of %d allowed, %s", bound, max.Value(), recorded), remedy: "pods", next: func(nodes []string) string {
			return "make room on " + strings.Join(nodes, ", ") + " or add a node"
		}})
	}
	req := podresource.PodRequests(pod, podresource.PodResourcesOptions{})
	names := make([]string, 0, len(req))
	for n, q := range req {
		if q.Sign() > 0 {
			names = append(names, string(n))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		name := corev1.ResourceName(n)
		want := req[name]
		free := alloc[name].DeepCopy()
		u := used[name]
		free.Sub(u)
		if want.Cmp(free) <= 0 {
			continue
		}
		a := alloc[name]
		rest := fmt.Sprintf("too little %s free: the pod requests %s, %s of %s allocatable is free, %s", n, want.String(), nonNegative(free), a.String(), recorded)
		if _, ok := alloc[name]; !ok {
			rest = fmt.Sprintf("no %s: the pod requests %s", n, want.String())
		}
		out = append(out, misfit{verb: "has", rest: rest, remedy: "request " + n, next: func(nodes []string) string {
			return fmt.Sprintf("lower the pod's %s request (%s), or make room on %s, or add a node", n, want.String(), strings.Join(nodes, ", "))
		}})
	}
	return out
}

func nonNegative(q resource.Quantity) string {
	if q.Sign() < 0 {
		return "none"
	}
	return q.String()
}

// fitNodes evaluates every node recorded at the time the scheduler last
// failed. It returns nil when the trace holds no node then.
func fitNodes(lc *diff.Lifecycle, in diff.Input, t time.Time) []nodeFit {
	nodes, recs := nodesAt(in, t)
	if len(nodes) == 0 {
		return nil
	}
	pod := podAt(lc, t)
	used, count := boundAt(in, lc.UID, t)
	out := make([]nodeFit, len(nodes))
	for i, n := range nodes {
		out[i] = nodeFit{name: n.Name, rec: recs[i], misfits: fitNode(pod, n, used[n.Name], count[n.Name], len(in.NodePods) > 0)}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				out[i].notReady = fmt.Sprintf("Ready=%s %s", c.Status, c.Reason)
			}
		}
	}
	return out
}

// fitGroup is the nodes with the same misfits.
type fitGroup struct {
	nodes   []string
	misfits []misfit
}

// groupFits groups the nodes that fail by the same reasons, in node order.
func groupFits(fits []nodeFit) []fitGroup {
	var out []fitGroup
	for _, f := range fits {
		if len(f.misfits) == 0 {
			continue
		}
		found := false
		for i := range out {
			if reflect.DeepEqual(keysOf(out[i].misfits), keysOf(f.misfits)) {
				out[i].nodes = append(out[i].nodes, f.name)
				found = true
			}
		}
		if !found {
			out = append(out, fitGroup{nodes: []string{f.name}, misfits: f.misfits})
		}
	}
	return out
}

func keysOf(ms []misfit) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.key()
	}
	return out
}

// text says the group's reasons in one clause: "kwok-node-0 lacks label
// disk=ssd", "kwok-node-0, kwok-node-1 and 3 more lack label disk=ssd".
func (g fitGroup) text() string {
	var who string
	switch n := len(g.nodes); {
	case n == 1:
		who = g.nodes[0]
	case n <= 3:
		who = strings.Join(g.nodes[:n-1], ", ") + " and " + g.nodes[n-1]
	default:
		who = fmt.Sprintf("%s and %d more", strings.Join(g.nodes[:2], ", "), n-2)
	}
	var parts []string
	for _, m := range g.misfits {
		verb := m.verb
		if len(g.nodes) > 1 {
			verb = m.plural()
		}
		parts = append(parts, verb+" "+m.rest)
	}
	return who + " " + strings.Join(parts, ", ")
}

// shorten cuts a message at the last end of a sentence or clause (". ",
// "; ") within n bytes, else at the first one, and says it did with
// "...". A message with no such boundary is kept whole: a sentence is
// never cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	var ends []int // just after each period or semicolon that ends a clause
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == ';') && s[i+1] == ' ' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 {
		return s
	}
	cut := ends[0]
	for _, e := range ends {
		if e <= n {
			cut = e
		}
	}
	return strings.TrimSuffix(s[:cut], ";") + " ..."
}

// remedies says each remedy once, for all the nodes it applies to, in the
// order the groups first need it.
func remedies(groups []fitGroup) []string {
	type remedy struct {
		m     misfit
		nodes []string
	}
	var order []string
	byKey := map[string]*remedy{}
	for _, g := range groups {
		for _, m := range g.misfits {
			r := byKey[m.remedy]
			if r == nil {
				r = &remedy{m: m}
				byKey[m.remedy] = r
				order = append(order, m.remedy)
			}
			r.nodes = append(r.nodes, g.nodes...)
		}
	}
	var out []string
	for _, k := range order {
		out = append(out, byKey[k].m.next(byKey[k].nodes))
	}
	return out
}
