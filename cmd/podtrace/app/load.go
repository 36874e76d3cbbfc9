package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// openTrace opens a trace for reading; it works while a recorder writes it.
func openTrace(path string) (*store.DB, error) {
	db, err := store.Open(path, store.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return nil, err // store's errors name the file and what to do
	}
	return db, nil
}

// webhookKinds are the kinds whose every revision may matter to any pod:
// the webhook configurations, then the admission policies and their
// bindings (admission.PolicyKinds).
var webhookKinds = append([]string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}, admission.PolicyKinds...)

// podFilter selects the pods named name (in namespace ns, when given), the
// incarnations choosePod chooses from.
func podFilter(ns, name string) store.ObjectFilter {
	return store.ObjectFilter{Kind: "Pod", Name: name, Namespace: ns}
}

// choosePod finds the incarnation of a pod to show among all, the pods
// podFilter selected: the one with uid if given, else the latest of the
// pods named name (in namespace ns, or in the only namespace that has one).
// Other incarnations are listed on notes.
func choosePod(db *store.DB, all []store.Object, ns, name, uid string, notes io.Writer) (store.Object, error) {
	if len(all) == 0 {
		return store.Object{}, noSuchPod(db, ns, name)
	}
	namespaces := map[string]bool{}
	for _, o := range all {
		namespaces[o.Namespace] = true
	}
	if len(namespaces) > 1 {
		return store.Object{}, fmt.Errorf("pods named %q were recorded in several namespaces (%s): pick one with -n", name, strings.Join(sortedSet(namespaces), ", "))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].FirstSeq < all[j].FirstSeq })
	if uid != "" {
		for _, o := range all {
			if o.UID == uid || strings.HasPrefix(o.UID, uid) {
				return o, nil
			}
		}
		return store.Object{}, fmt.Errorf("no incarnation of pod %s/%s has uid %s; recorded: %s", all[0].Namespace, name, uid, incarnations(all))
	}
	chosen := all[len(all)-1]
	if len(all) > 1 {
		fmt.Fprintf(notes, "podtrace: pod %s/%s had %d incarnations (deleted and re-created): %s; showing the latest, uid %s (use --uid to pick another)\n",
			chosen.Namespace, name, len(all), incarnations(all), chosen.UID)
	}
	return chosen, nil
}

func incarnations(objs []store.Object) string {
	var parts []string
	for _, o := range objs {
		state := "present at the end"
		if o.Deleted {
			state = "deleted"
		}
		parts = append(parts, fmt.Sprintf("uid %s (first seen %s, %s)", o.UID, o.FirstObserved.UTC().Format(time.RFC3339), state))
	}
	return strings.Join(parts, "; ")
}

// noSuchPod says that no pod of that name was recorded, and what was; and
// that it may have been pruned, in a trace that retention pruned.
func noSuchPod(db *store.DB, ns, name string) error {
	err := noSuchRecordedPod(db, ns, name)
	if prunes, perr := db.Prunes(); perr == nil && len(prunes) > 0 && err != nil {
		var pods int
		var before time.Time
		for _, p := range prunes {
			pods += p.Pods
			if p.Before.After(before) {
				before = p.Before
			}
		}
		if pods > 0 {
			err = fmt.Errorf("%w (retention pruned %s gone before %s from this trace: it may have been one of them)",
				err, plural(pods, "pod"), before.UTC().Format(time.RFC3339))
		}
	}
	return err
}

func noSuchRecordedPod(db *store.DB, ns, name string) error {
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns})
	if err != nil {
		return err
	}
	where := "in the trace"
	if ns != "" {
		where = "in namespace " + ns
	}
	if len(pods) == 0 {
		if ns != "" {
			if others, _ := db.Objects(store.ObjectFilter{Kind: "Pod", Name: name}); len(others) > 0 {
				return fmt.Errorf("no pod named %q %s; it was recorded in namespace %s: use -n %s", name, where, others[0].Namespace, others[0].Namespace)
			}
		}
		return fmt.Errorf("no pod named %q %s, and no pod at all was recorded there: check -n and --db", name, where)
	}
	// A prefix of pod names, or a workload's name: "did you mean".
	guesses := prefixMatches(pods, name, ns == "")
	var owners []string
	for _, k := range [][2]string{{"deploy", "Deployment"}, {"sts", "StatefulSet"}, {"ds", "DaemonSet"}, {"job", "Job"}, {"rs", "ReplicaSet"}} {
		if w, err := db.Objects(store.ObjectFilter{Kind: k[1], Namespace: ns, Name: name}); err == nil && len(w) > 0 {
			owners = append(owners, k[0]+"/"+name)
		}
	}
	guesses = append(owners, guesses...)
	if len(guesses) > 0 {
		return fmt.Errorf("no pod named %q %s; did you mean %s?", name, where, strings.Join(firstOf(guesses, 5), ", "))
	}
	names := map[string]bool{}
	for _, p := range pods {
		if ns == "" {
			names[p.Namespace+"/"+p.Name] = true
		} else {
			names[p.Name] = true
		}
	}
	list := sortedSet(names)
	more := ""
	if len(list) > 10 {
		more = fmt.Sprintf(" and %d more (podtrace report lists them all)", len(list)-10)
		list = list[:10]
	}
	return fmt.Errorf("no pod named %q %s; recorded pods %s: %s%s", name, where, where, strings.Join(list, ", "), more)
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// traceContext is what every pod's replay shares: sessions, webhooks,
// namespaces and nodes, loaded once. It is safe for concurrent use; what it
// hands out is shared and must not be modified.
type traceContext struct {
	sessions []store.Session
	gaps     []store.Gap
	prunes   []store.Prune // what retention removed
	webhooks map[string][]store.Record
	policies map[string][]store.Record // admission policies and bindings

	// latest is the latest object of each "Namespace/name" and
	// "Node/name": nodes and namespaces are sometimes re-created.
	latest map[string]store.Object
	// namespaces holds every incarnation of each namespace name, in the
	// order first recorded: a pod's is the one it was created in.
	namespaces map[string][]store.Object

	mu     sync.Mutex                // guards byName, about and owners
	byName map[string][]store.Record // "Namespace/name", "Node/name" -> history
	about  map[string][]store.Record // owner UID -> the Events about it
	owners map[string]ownerHistory   // owner UID -> its history
	// siblings holds, by a Deployment's UID, the UIDs of its recorded
	// ReplicaSets.
	siblings map[string][]string
	// budgets holds each namespace's PodDisruptionBudgets, by UID; nil
	// until first asked for.
	budgets map[string]map[string][]store.Record

	// histories holds the decoded histories the pods' replays share.
	histories *diff.Histories

	nodes []store.Object // every node recorded
	// claims and classes are the PersistentVolumeClaims and StorageClasses
	// recorded (see claimInput).
	claims, classes []store.Object

	// For the pods never bound to a node, loaded on first use: every
	// node's history, and the revisions of the pods bound to one that tell
	// what they held (diff.OccupancyRevisions).
	fitOnce  sync.Once
	fitErr   error
	allNodes map[string][]store.Record
	nodePods map[string][]store.Record
}

// contextFilters select the objects of a trace that any pod's replay may
// need: webhookKinds, namespaces and nodes, then the claims and storage
// classes (read only for pods whose volumes name a claim).
var contextFilters = func() []store.ObjectFilter {
	var fs []store.ObjectFilter
	for _, k := range webhookKinds {
		fs = append(fs, store.ObjectFilter{Kind: k})
	}
	return append(fs, store.ObjectFilter{Kind: "Namespace"}, store.ObjectFilter{Kind: "Node"},
		store.ObjectFilter{Kind: "PersistentVolumeClaim"}, store.ObjectFilter{Kind: "StorageClass"})
}()

// scanTrace lists the objects of the trace context (contextFilters) and
// those that want selects, one list for each, in one pass over the
// objects.
func scanTrace(db *store.DB, want ...store.ObjectFilter) (ctx, found [][]store.Object, err error) {
	all, err := db.ObjectsOf(append(slices.Clip(contextFilters), want...)...)
	if err != nil {
		return nil, nil, err
	}
	return all[:len(contextFilters)], all[len(contextFilters):], nil
}

func loadContext(db *store.DB) (*traceContext, error) {
	objs, _, err := scanTrace(db)
	if err != nil {
		return nil, err
	}
	return newContext(db, objs)
}

// newContext loads the trace context from the objects scanTrace listed.
func newContext(db *store.DB, objs [][]store.Object) (*traceContext, error) {
	tc := &traceContext{webhooks: map[string][]store.Record{}, policies: map[string][]store.Record{}, latest: map[string]store.Object{}, namespaces: map[string][]store.Object{}, byName: map[string][]store.Record{},
		owners: map[string]ownerHistory{}, siblings: map[string][]string{}, histories: diff.NewHistories()}
	var err error
	if tc.sessions, err = db.Sessions(); err != nil {
		return nil, err
	}
	// A session that has not stopped (recording now, or killed) ends at
	// its last sign of life (store.Session.End), never at the reader's
	// clock: the same trace tells the same story now and in an hour.
	if tc.gaps, err = db.Gaps(); err != nil {
		return nil, err
	}
	if tc.prunes, err = db.Prunes(); err != nil {
		return nil, err
	}
	for i, kind := range webhookKinds {
		into := tc.webhooks
		if slices.Contains(admission.PolicyKinds, kind) {
			into = tc.policies
		}
		for _, o := range objs[i] {
			if into[o.UID], err = db.History(o.UID); err != nil {
				return nil, err
			}
		}
	}
	nodes := len(webhookKinds) + 1
	tc.nodes = objs[nodes]
	tc.claims, tc.classes = objs[nodes+1], objs[nodes+2]
	for _, list := range objs[len(webhookKinds) : nodes+1] {
		for _, o := range list {
			key := o.Kind + "/" + o.Name
			if l, ok := tc.latest[key]; !ok || o.FirstSeq > l.FirstSeq {
				tc.latest[key] = o
			}
			if o.Kind == "Namespace" {
				tc.namespaces[o.Name] = append(tc.namespaces[o.Name], o)
			}
		}
	}
	for _, incs := range tc.namespaces {
		sort.Slice(incs, func(i, j int) bool { return incs[i].FirstSeq < incs[j].FirstSeq })
	}
	return tc, nil
}

// namespaceOf returns the history of the namespace the pod was created
// in: of the incarnations of its name, the last one first recorded by the
// pod's first record (a namespace deleted and created again under the
// same name is another object); else the latest.
func (tc *traceContext) namespaceOf(db *store.DB, pod store.Object) ([]store.Record, error) {
	incs := tc.namespaces[pod.Namespace] // in the order first recorded
	if len(incs) < 2 {
		return tc.named(db, "Namespace", pod.Namespace)
	}
	ns := incs[len(incs)-1]
	for i := len(incs) - 1; i >= 0; i-- {
		if incs[i].FirstSeq < pod.FirstSeq {
			ns = incs[i]
			break
		}
	}
	recs, _, err := tc.owner(db, ns.UID)
	return recs, err
}

// named returns the history of the cluster-scoped object kind/name (a
// Namespace or Node), loading it on first use.
func (tc *traceContext) named(db *store.DB, kind, name string) ([]store.Record, error) {
	// Held while loading too, so that each history is read once.
	tc.mu.Lock()
	defer tc.mu.Unlock()
	key := kind + "/" + name
	if recs, ok := tc.byName[key]; ok {
		return recs, nil
	}
	var recs []store.Record
	if latest, ok := tc.latest[key]; ok {
		var err error
		if recs, err = db.History(latest.UID); err != nil {
			return nil, err
		}
	}
	tc.byName[key] = recs
	return recs, nil
}

// ownerHistory is an owner's recorded history, or that it was not
// recorded.
type ownerHistory struct {
	recs     []store.Record
	recorded bool
}

// owner returns the history of the owner uid, loading it on first use: the
// pods of a ReplicaSet share it. ok is false when the trace does not hold
// it (an owner outside the recorded scope).
func (tc *traceContext) owner(db *store.DB, uid string) (recs []store.Record, ok bool, err error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if h, ok := tc.owners[uid]; ok {
		return h.recs, h.recorded, nil
	}
	recs, err = db.History(uid)
	if errors.Is(err, store.ErrNotFound) {
		tc.owners[uid] = ownerHistory{}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	tc.owners[uid] = ownerHistory{recs: recs, recorded: true}
	return recs, true, nil
}

// replicaSetsOf returns the UIDs of the recorded ReplicaSets that refer to
// the Deployment uid, loading them on first use: a rollout's new
// ReplicaSet scaling up beside a pod's own scaling down.
func (tc *traceContext) replicaSetsOf(db *store.DB, uid string) ([]string, error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if s, ok := tc.siblings[uid]; ok {
		return s, nil
	}
	refs, err := db.Referring(uid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range refs {
		if o.Kind == "ReplicaSet" {
			out = append(out, o.UID)
		}
	}
	tc.siblings[uid] = out
	return out, nil
}

// budgetsIn returns the histories of the PodDisruptionBudgets recorded in
// namespace ns, by UID: every namespace's are loaded on first use, in one
// scan of the trace's objects.
func (tc *traceContext) budgetsIn(db *store.DB, ns string) (map[string][]store.Record, error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.budgets == nil {
		objs, err := db.Objects(store.ObjectFilter{Kind: "PodDisruptionBudget"})
		if err != nil {
			return nil, err
		}
		budgets := map[string]map[string][]store.Record{}
		for _, o := range objs {
			recs, err := db.History(o.UID)
			if err != nil {
				return nil, err
			}
			if budgets[o.Namespace] == nil {
				budgets[o.Namespace] = map[string][]store.Record{}
			}
			budgets[o.Namespace][o.UID] = recs
		}
		tc.budgets = budgets
	}
	return tc.budgets[ns], nil
}

// eventsAbout returns the revisions of the Events about the object uid (an
// owner: the pods of a ReplicaSet share it), in Seq order, loading them on
// first use.
func (tc *traceContext) eventsAbout(db *store.DB, uid string) ([]store.Record, error) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if recs, ok := tc.about[uid]; ok {
		return recs, nil
	}
	refs, err := db.Referring(uid)
	if err != nil {
		return nil, err
	}
	var recs []store.Record
	for _, o := range refs {
		if o.Kind != "Event" || isAudit(o) {
			continue
		}
		h, err := db.History(o.UID)
		if err != nil {
			return nil, err
		}
		recs = append(recs, h...)
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	if tc.about == nil {
		tc.about = map[string][]store.Record{}
	}
	tc.about[uid] = recs
	return recs, nil

}

// fitContext loads, once, what the node fit of a pod never bound needs:
// every recorded node's history and, of every pod recorded bound to a
// node, the revisions that tell what it held there. It reads every pod's
// history once per trace, and only for a trace with such a pod.
func (tc *traceContext) fitContext(db *store.DB) (nodes, pods map[string][]store.Record, err error) {
	tc.fitOnce.Do(func() {
		tc.allNodes, tc.nodePods = map[string][]store.Record{}, map[string][]store.Record{}
		for _, o := range tc.nodes {
			if tc.allNodes[o.UID], tc.fitErr = db.History(o.UID); tc.fitErr != nil {
				return
			}
		}
		var all []store.Object
		if all, tc.fitErr = db.Objects(store.ObjectFilter{Kind: "Pod"}); tc.fitErr != nil {
			return
		}
		for _, o := range all {
			recs, err := db.History(o.UID)
			if err != nil {
				tc.fitErr = err
				return
			}
			if kept := diff.OccupancyRevisions(recs); len(kept) > 0 {
				tc.nodePods[o.UID] = kept
			}
		}
	})
	return tc.allNodes, tc.nodePods, tc.fitErr
}

// loadInput loads everything recorded about one pod incarnation.
func loadInput(db *store.DB, tc *traceContext, pod store.Object) (diff.Input, error) {
	in := diff.Input{Related: map[string][]store.Record{}, Webhooks: tc.webhooks, Policies: tc.policies, Sessions: tc.sessions, Gaps: tc.gaps, Histories: tc.histories}
	var err error
	if in.Pod, err = db.History(pod.UID); err != nil {
		return in, err
	}
	refs, err := db.Referring(pod.UID)
	if err != nil {
		return in, err
	}
	for _, o := range refs {
		recs, err := db.History(o.UID)
		if err != nil {
			return in, err
		}
		if isAudit(o) {
			in.Audit = append(in.Audit, recs...)
		} else if o.Kind == "Event" {
			in.Events = append(in.Events, recs...)
		} else {
			in.Related[o.UID] = recs
		}
	}
	sort.SliceStable(in.Events, func(i, j int) bool { return in.Events[i].Seq < in.Events[j].Seq })
	sort.SliceStable(in.Audit, func(i, j int) bool { return in.Audit[i].Observed.Before(in.Audit[j].Observed) })
	// The owners, their owners (a ReplicaSet's Deployment), and the events
	// about each: how a controller ended the pod is told on its own object.
	owners := slices.Clone(pod.Refs)
	for i := 0; i < len(owners); i++ {
		owner := owners[i]
		if _, ok := in.Related[owner]; ok {
			continue
		}
		recs, recorded, err := tc.owner(db, owner)
		if err != nil {
			return in, err
		}
		if !recorded {
			continue // an owner outside the recorded scope
		}
		in.Related[owner] = recs
		evs, err := tc.eventsAbout(db, owner)
		if err != nil {
			return in, err
		}
		if len(evs) > 0 {
			if in.OwnerEvents == nil {
				in.OwnerEvents = map[string][]store.Record{}
			}
			in.OwnerEvents[owner] = evs
		}
		if i < len(pod.Refs) && len(recs) > 0 {
			owners = append(owners, recs[len(recs)-1].Refs...) // one level up
		}
		if i >= len(pod.Refs) && len(recs) > 0 && recs[0].Kind == "Deployment" {
			// The Deployment's other ReplicaSets: a rollout's new one.
			rss, err := tc.replicaSetsOf(db, owner)
			if err != nil {
				return in, err
			}
			for _, rs := range rss {
				if _, ok := in.Related[rs]; ok {
					continue
				}
				h, recorded, err := tc.owner(db, rs)
				if err != nil {
					return in, err
				}
				if recorded {
					in.Related[rs] = h
				}
			}
		}
	}
	// The pods its events name as another party: the preemptor of the
	// scheduler's Preempted event.
	for _, uid := range explain.RelatedPods(in.Events) {
		if _, ok := in.Related[uid]; ok {
			continue
		}
		recs, err := db.History(uid)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return in, err
		}
		in.Related[uid] = recs
	}
	if in.Budgets, err = tc.budgetsIn(db, pod.Namespace); err != nil {
		return in, err
	}
	if recs, err := tc.namespaceOf(db, pod); err != nil {
		return in, err
	} else if len(recs) > 0 {
		in.Related[recs[0].UID] = recs
	}
	if err := tc.claimInput(db, &in); err != nil {
		return in, err
	}
	if node := diff.NodeName(in.Pod); node != "" {
		if recs, err := tc.named(db, "Node", node); err != nil {
			return in, err
		} else if len(recs) > 0 {
			in.Related[recs[0].UID] = recs
		}
	} else if in.Nodes, in.NodePods, err = tc.fitContext(db); err != nil {
		return in, err
	}
	return in, nil
}

// isTerminal reports whether w is a terminal, for colour and status lines,
// and for what must not be written to one (HTML, a binary trace). It asks
// the terminal itself: /dev/null is a character device, not a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWidth is the width of the terminal w writes to, for wrapping
// text; 0 when w is not a terminal (a pipe or a file keeps whole lines).
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 40 {
		return 0
	}
	return width
}

// liveSession returns the ID of the session a live recorder is writing into
// the trace at path now (it holds the trace's lease), or 0: a session
// without a stop time that is not live was interrupted.
func liveSession(path string, sessions []store.Session) uint32 {
	if _, live, err := store.Recorder(path); err != nil || !live || len(sessions) == 0 {
		return 0
	}
	if last := sessions[len(sessions)-1]; last.Open() {
		return last.ID
	}
	return 0
}
