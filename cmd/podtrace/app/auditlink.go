package app

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer/auditlog"
)

// auditSlack is how far before a pod's first observation an audit event
// about it may be: the CREATE completes before the informer sees the pod.
const auditSlack = 30 * time.Second

// podLife is one incarnation of a pod name in a trace.
type podLife struct {
	UID         string
	First, Last time.Time // first and last observed; zero: unknown
	Deleted     bool
}

// podIndex is the pods of a trace by name and UID, for linking audit
// events to them: import fills it from the trace, record from the records
// it writes. Its methods are safe for concurrent use.
type podIndex struct {
	mu     sync.Mutex
	byName map[string][]*podLife // "namespace/name" -> incarnations, oldest first
	byUID  map[string]*podLife
}

func newPodIndex() *podIndex {
	return &podIndex{byName: map[string][]*podLife{}, byUID: map[string]*podLife{}}
}

// addObject adds a pod of the trace; pods of one name must come in the
// order they were first recorded.
func (x *podIndex) addObject(o store.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p := &podLife{UID: o.UID, First: o.FirstObserved, Last: o.LastObserved, Deleted: o.Deleted}
	k := o.Namespace + "/" + o.Name
	x.byName[k] = append(x.byName[k], p)
	x.byUID[o.UID] = p
}

// hasName reports whether a pod namespace/name was recorded, in any
// incarnation.
func (x *podIndex) hasName(namespace, name string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.byName[namespace+"/"+name]) > 0
}

// observe takes note of the pods among records being written.
func (x *podIndex) observe(recs []store.Record) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		if r.Kind != "Pod" || r.APIVersion != "v1" || r.UID == "" {
			continue
		}
		p := x.byUID[r.UID]
		if p == nil {
			p = &podLife{UID: r.UID, First: r.Observed}
			k := r.Namespace + "/" + r.Name
			x.byName[k] = append(x.byName[k], p)
			x.byUID[r.UID] = p
		}
		p.Last = r.Observed
		p.Deleted = r.Type == store.Deleted || r.Type == store.DeletedUnknown
	}
}

// resolve picks the recorded pod an audit event at t is about: the one
// with uid when the event names one, else the latest incarnation of the
// name whose recorded life holds t (with some slack). gone says that
// incarnation was deleted before t: a newer one may not be recorded yet.
func (x *podIndex) resolve(namespace, name, uid string, t time.Time) (p podLife, gone, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if uid != "" {
		if q := x.byUID[uid]; q != nil {
			return *q, false, true
		}
		return podLife{}, false, false
	}
	list := x.byName[namespace+"/"+name]
	for i := len(list) - 1; i >= 0; i-- {
		q := list[i]
		if q.First.IsZero() || !t.Before(q.First.Add(-auditSlack)) {
			if q.Deleted && t.After(q.Last.Add(auditSlack)) {
				return podLife{}, false, false
			}
			return *q, q.Deleted && t.After(q.Last), true
		}
	}
	return podLife{}, false, false
}

// collection returns the UIDs of the recorded pods a deletecollection of
// pods (ev) deleted: those its response listed, when the audit event holds
// the response; else the recorded pods of its namespace present when it
// completed, that match its selectors by matches (nil: a collection with
// selectors cannot be tied to its pods, and ok is false). ok is false too
// when it names no recorded pod.
func (x *podIndex) collection(ev *auditlog.Event, matches func(uid string) (bool, error)) (uids []string, ok bool, err error) {
	if len(ev.Listed) > 0 {
		for _, l := range ev.Listed {
			if p, _, found := x.resolve(ev.Namespace, l.Name, l.UID, ev.Time); found {
				uids = append(uids, p.UID)
			}
		}
		return uids, len(uids) > 0, nil
	}
	if (ev.Selector.Labels != "" || ev.Selector.Fields != "") && matches == nil {
		return nil, false, nil
	}
	x.mu.Lock()
	var present []string
	prefix := ev.Namespace + "/"
	for k, list := range x.byName {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		for _, p := range list {
			// Present when the request completed: first seen by then,
			// not gone before it.
			if !p.First.IsZero() && p.First.After(ev.Time) || p.Deleted && p.Last.Before(ev.Time.Add(-auditSlack)) {
				continue
			}
			present = append(present, p.UID)
		}
	}
	x.mu.Unlock()
	sort.Strings(present)
	for _, uid := range present {
		if matches != nil {
			ok, err := matches(uid)
			if err != nil {
				return nil, false, err
			}
			if !ok {
				continue
			}
		}
		uids = append(uids, uid)
	}
	return uids, len(uids) > 0, nil
}

// hasNamespace reports whether a pod of the namespace was recorded.
func (x *podIndex) hasNamespace(namespace string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	prefix := namespace + "/"
	for k := range x.byName {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
