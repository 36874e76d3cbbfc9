package store

import (
	"fmt"
	"time"
)

// Listing is what one complete list of a kind showed, in one scope: the
// objects that exist at At. A recorder that starts into a trace that already
// holds objects hands the Writer one Listing per kind once its initial lists
// are in; every object the trace believes alive in that scope and the list
// lacks was deleted while nobody watched.
type Listing struct {
	APIVersion, Kind string
	// Namespace is the scope of the list; "" for all namespaces and for
	// cluster-scoped kinds.
	Namespace string
	// UIDs are the listed objects.
	UIDs map[string]struct{}
	// At is when the list was complete.
	At time.Time
	// InScope, if not nil, says whether a recorded object absent from the
	// list was in the list's scope, from its last recorded revision: a pod
	// that no longer matches a label selector is not missing, only out of
	// sight.
	InScope func(last Record) bool
}

// Reconcile buffers l for the next flush. That flush first writes the
// records buffered before it, then a DeletedUnknown record, observed at
// l.At and carrying the last recorded state, for every object of l's kind
// and scope that the trace holds as alive and l lacks: gone while not
// observed, somewhere between its last record (or its session's end) and
// l.At.
func (w *Writer) Reconcile(l Listing) {
	w.mu.Lock()
	w.listings = append(w.listings, l)
	w.mu.Unlock()
}

// gone returns the records that reconcile db with the listings: one
// DeletedUnknown per object alive in the trace and missing from its kind's
// listing, in session.
func gone(db *DB, session uint32, listings []Listing) ([]Record, error) {
	var out []Record
	for _, l := range listings {
		objs, err := db.Objects(ObjectFilter{Kind: l.Kind, Namespace: l.Namespace})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.Deleted || o.APIVersion != l.APIVersion {
				continue
			}
			if _, ok := l.UIDs[o.UID]; ok {
				continue
			}
			h, err := db.History(o.UID)
			if err != nil {
				return nil, fmt.Errorf("reconcile %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
			}
			last := h[len(h)-1]
			if last.Observed.After(l.At) || l.InScope != nil && !l.InScope(last) {
				// Recorded after the list was complete (by this session's
				// watch), or out of the list's sight: not the list's to
				// judge.
				continue
			}
			rv := last.ResourceVersion
			out = append(out, Record{Session: session, Observed: l.At, Type: DeletedUnknown,
				APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
				ResourceVersion: rv})
		}
	}
	return out, nil
}
