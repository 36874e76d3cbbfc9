package app

import (
	"sync"
	"time"

	"github.com/podtrace/podtrace/store"
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
