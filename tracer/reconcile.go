package tracer

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/store"
)

// Reconciler is a Sink that also takes the tracer's complete initial lists,
// one store.Listing per kind, once each has synced. A recorder that resumes
// into an existing trace uses them to mark what was deleted while it was
// not running (see store.Writer.Reconcile).
type Reconciler interface {
	Reconcile(store.Listing)
}

// reconcile hands sink, if it is a Reconciler, the listing of each kind of
// ks from its informer's cache, which holds exactly the initial list once
// the informer has synced. Events are left out: they expire an hour after
// their last occurrence, and an expired Event is no part of a pod's life.
// Relists later in the session need no listing: the informer itself
// reports what a relist lacks, as DeletedFinalStateUnknown tombstones.
func (t *Tracer) reconcile(sink Sink, ks []*kind, stores map[*kind]cache.Store) {
	r, ok := sink.(Reconciler)
	if !ok {
		return
	}
	at := t.clock.Now()
	var sel labels.Selector
	if !t.allPods {
		sel, _ = labels.Parse(t.opts.PodSelector) // checked by New
	}
	for _, k := range ks {
		st := stores[k]
		if k.class == classEvent || st == nil {
			continue
		}
		l := store.Listing{APIVersion: k.apiVersion, Kind: k.gvk.Kind, At: at, UIDs: map[string]struct{}{}}
		if !k.cluster {
			l.Namespace = t.opts.Namespace
		}
		for _, obj := range st.List() {
			if c, ok := obj.(*cached); ok {
				l.UIDs[string(c.UID)] = struct{}{}
			}
		}
		switch {
		case k.class == classPod && sel != nil:
			// A pod that stopped matching the selector left the list
			// without being deleted.
			l.InScope = func(last store.Record) bool { return sel.Matches(labels.Set(recordLabels(last))) }
		case k.gvk.Kind == "Namespace" && t.opts.Namespace != "":
			ns := t.opts.Namespace
			l.InScope = func(last store.Record) bool { return last.Name == ns }
		}
		r.Reconcile(l)
	}
}

// recordLabels returns the labels of a recorded object's JSON.
func recordLabels(r store.Record) map[string]string {
	var o struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	json.Unmarshal(r.Object, &o)
	return o.Metadata.Labels
}
