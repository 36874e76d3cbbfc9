package diff

import (
	"reflect"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// Revision is one recorded revision of an object other than a pod,
// decoded: an owner, a namespace, a budget.
type Revision[T any] struct {
	Seq             uint64
	Observed        time.Time
	Type            store.EventType
	ResourceVersion string
	// Object is the revision decoded; nil when it could not be.
	Object *T
}

// Deleted reports whether the revision is the object's deletion.
func (r *Revision[T]) Deleted() bool {
	return r.Type == store.Deleted || r.Type == store.DeletedUnknown
}

// Histories holds the decoded histories of the objects that many pods'
// replays read: their owners (the 2,000 pods of a ReplicaSet read its
// history 2,000 times), the owners' events, their namespace. Each is
// decoded once per command and shared by the replays; it is safe for
// concurrent use, and what it hands out is shared and must not be
// modified. A command makes one (NewHistories) and hands it to every pod's
// Input; a nil *Histories decodes each time (tests, one pod).
type Histories struct {
	mu sync.Mutex
	m  map[historyKey]*historyEntry
	// fields holds parsed managedFields field sets (fieldSet) by their
	// JSON: the pods of one template have the same managers' field lists,
	// revision after revision.
	fields sync.Map
}

// fieldSet returns f parsed, once per h; a nil h parses it.
func (h *Histories) fieldSet(f *metav1.FieldsV1) fieldSet {
	if h == nil {
		return parseFields(f)
	}
	if s, ok := h.fields.Load(string(f.Raw)); ok {
		return s.(fieldSet)
	}
	s := parseFields(f)
	h.fields.Store(string(f.Raw), s)
	return s
}

// historyKey names one decoded history: the object, the Go type it is
// decoded as, how many records it had and the last one (a history read
// again, longer, while a recorder writes, is another; so is one revision
// of it alone).
type historyKey struct {
	uid  string
	t    reflect.Type
	n    int
	last uint64 // the last record's Seq
}

type historyEntry struct {
	once sync.Once
	v    any
}

// historyKeyOf is the key of the history recs (not empty) decoded as T.
func historyKeyOf[T any](recs []store.Record) historyKey {
	return historyKey{uid: recs[0].UID, t: reflect.TypeFor[T](), n: len(recs), last: recs[len(recs)-1].Seq}
}

// NewHistories returns an empty Histories.
func NewHistories() *Histories {
	return &Histories{m: map[historyKey]*historyEntry{}}
}

// shared returns the value for key, made by make the first time; a nil h
// makes it each time.
func (h *Histories) shared(key historyKey, make func() any) any {
	if h == nil {
		return make()
	}
	h.mu.Lock()
	e := h.m[key]
	if e == nil {
		e = &historyEntry{}
		h.m[key] = e
	}
	h.mu.Unlock()
	e.once.Do(func() { e.v = make() })
	return e.v
}

// DecodeHistory returns the revisions of one object (recs, in Seq order)
// decoded as T, through the decoder the pods' revisions go through
// (consecutive revisions mostly repeat each other: only what changed is
// decoded), once per h. A revision that does not decode has a nil Object;
// a deletion holds the object as last seen.
func DecodeHistory[T any](h *Histories, recs []store.Record) []Revision[T] {
	if len(recs) == 0 {
		return nil
	}
	return h.shared(historyKeyOf[T](recs), func() any { return decodeHistory[T](recs) }).([]Revision[T])
}

func decodeHistory[T any](recs []store.Record) []Revision[T] {
	out := make([]Revision[T], len(recs))
	dt := decodeTypeOf(reflect.TypeFor[T]())
	var d decoder
	for i, rec := range recs {
		out[i] = Revision[T]{Seq: rec.Seq, Observed: rec.Observed, Type: rec.Type, ResourceVersion: rec.ResourceVersion}
		obj := new(T)
		if d.decodeInto(reflect.ValueOf(obj).Elem(), dt, rec.Object) == nil {
			out[i].Object = obj
		}
	}
	return out
}

// Memo returns what make returns for the object of recs (its history, in
// Seq order), once per h: a view of a decoded history that many replays
// ask for (the revisions where a ReplicaSet's replicas went down). The
// type T names the view: two views of one object need two types. A nil h
// makes it each time.
func Memo[T any](h *Histories, recs []store.Record, make func() T) T {
	if len(recs) == 0 {
		return make()
	}
	return h.shared(historyKeyOf[T](recs), func() any { return make() }).(T)
}

// ReplayOwnerEvents is ReplayEvents of the events about one owner (recs,
// in Seq order), once per h.
func ReplayOwnerEvents(h *Histories, uid string, recs []store.Record) []Event {
	if len(recs) == 0 {
		return nil
	}
	key := historyKey{uid: uid, t: reflect.TypeFor[Event](), n: len(recs), last: recs[len(recs)-1].Seq}
	return h.shared(key, func() any { return ReplayEvents(recs) }).([]Event)
}

// At returns the index of the last revision of revs (in Seq order)
// observed by t, or -1. Revisions are observed in Seq order.
func At[T any](revs []Revision[T], t time.Time) int {
	return sort.Search(len(revs), func(i int) bool { return revs[i].Observed.After(t) }) - 1
}
