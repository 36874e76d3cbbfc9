package tracer

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/store"
)

// handler turns an informer's notifications about kind k into records.
func (t *Tracer) handler(k *kind) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, isInInitialList bool) {
			typ := store.Added
			if isInInitialList {
				typ = store.Initial
			}
			t.observe(k, typ, take(obj))
		},
		UpdateFunc: func(oldObj, newObj any) {
			newObj = take(newObj)
			o, err1 := meta.Accessor(oldObj)
			n, err2 := meta.Accessor(newObj)
			if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a relist or resync, not a new revision
			}
			t.observe(k, store.Updated, newObj)
		},
		DeleteFunc: func(obj any) {
			typ := store.Deleted
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				// The cache's entry: the object as last recorded is in
				// the trace, not here (see cached).
				typ, obj = store.DeletedUnknown, tomb.Obj
			}
			t.observe(k, typ, take(obj))
		},
	}
}

// held is a revision on its way to the writer, or waiting for the pod it
// names to be recorded.
type held struct {
	k        *kind
	typ      store.EventType
	obj      any
	observed time.Time
	since    time.Time // wall clock, for expiry while held
}

// observe decides whether a revision is kept and sends its record. obj is
// the object, or, for a deletion the informer inferred from a relist, the
// cache's entry for it (a *cached holding no object).
func (t *Tracer) observe(k *kind, typ store.EventType, obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return // not an object (cannot happen with these informers)
	}
	h := held{k: k, typ: typ, obj: obj, observed: t.clock.Now()}
	deleted := isDeletion(typ)
	uid := m.GetUID()

	switch k.class {
	case classPod:
		if t.allPods {
			t.send(h)
			return
		}
		t.mu.Lock()
		t.known[uid] = struct{}{}
		waiting := t.pending[uid]
		delete(t.pending, uid)
		if len(waiting) == 0 {
			t.mu.Unlock()
			t.send(h)
			return
		}
		// Send under the lock so that the revisions that waited for this
		// pod stay ahead of their own later revisions.
		defer t.mu.Unlock()
		t.send(h)
		for _, w := range waiting {
			if w.k.class == classDependent && !isDeletion(w.typ) {
				t.dependents[uidOf(w.obj)] = struct{}{}
			}
			t.send(w)
		}

	case classAll:
		if !t.allPods {
			t.mu.Lock()
			t.known[uid] = struct{}{}
			t.mu.Unlock()
		}
		t.send(h)

	case classEvent:
		if t.allPods {
			t.send(h)
			return
		}
		var about types.UID
		var aboutPod bool
		switch o := obj.(type) {
		case *corev1.Event:
			about, aboutPod = o.InvolvedObject.UID, o.InvolvedObject.Kind == "Pod"
		case *cached:
			about = o.about // a tombstone: recorded before, or never
		default:
			return
		}
		t.mu.Lock()
		if _, ok := t.known[about]; ok {
			t.mu.Unlock()
			t.send(h)
			return
		}
		if aboutPod && about != "" {
			t.hold(about, h)
		}
		t.mu.Unlock()

	case classDependent:
		t.mu.Lock()
		if _, ok := t.dependents[uid]; ok {
			if deleted {
				delete(t.dependents, uid)
			}
			t.mu.Unlock()
			t.send(h)
			return
		}
		owners := podOwners(m)
		if len(owners) == 0 {
			t.mu.Unlock()
			return
		}
		keep := t.allPods
		for _, o := range owners {
			if _, ok := t.known[o]; ok {
				keep = true
			}
		}
		if !keep {
			t.hold(owners[0], h)
			t.mu.Unlock()
			return
		}
		if !deleted {
			t.dependents[uid] = struct{}{}
		}
		t.mu.Unlock()
		t.send(h)
	}
}

// hold keeps h until pod is recorded; t.mu is held.
func (t *Tracer) hold(pod types.UID, h held) {
	h.since = time.Now()
	t.pending[pod] = append(t.pending[pod], h)
}

// sweepPending drops, every few seconds, the held revisions whose pod did not
// show up in time: it is not selected.
func (t *Tracer) sweepPending(ctx context.Context) {
	tick := time.NewTicker(t.pendTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.dropExpired(now)
		}
	}
}

// dropExpired drops the revisions held since before now minus the TTL.
func (t *Tracer) dropExpired(now time.Time) {
	cutoff := now.Add(-t.pendTTL)
	t.mu.Lock()
	defer t.mu.Unlock()
	for pod, hs := range t.pending {
		if hs[len(hs)-1].since.Before(cutoff) {
			delete(t.pending, pod)
		}
	}
}

func isDeletion(typ store.EventType) bool {
	return typ == store.Deleted || typ == store.DeletedUnknown
}

func uidOf(obj any) types.UID {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetUID()
	}
	return ""
}

// podOwners returns the UIDs of the Pods among m's owners.
func podOwners(m metav1.Object) []types.UID {
	var uids []types.UID
	for _, r := range m.GetOwnerReferences() {
		if r.Kind == "Pod" && r.APIVersion == "v1" {
			uids = append(uids, r.UID)
		}
	}
	return uids
}

// send encodes h and queues its record for the writer.
func (t *Tracer) send(h held) {
	rec, err := t.record(h)
	if err != nil {
		t.warn(err.Error())
		return
	}
	t.out.push(rec) // dropped only once the writer has stopped taking
}

// record builds the store.Record of one revision. The object's TypeMeta was
// set by the informer's transform, so the JSON names its apiVersion and kind.
// A tombstone's cache entry gives a record with no object: the store keeps
// the object's last recorded revision as its final state.
//
// The JSON comes from encode: the bytes encoding/json writes
// (TestEncodeMatchesEncodingJSON) in a fraction of the time; encoding each
// revision is the largest cost of recording beside the informers' own. So
// a pod decoded from the API server's protobuf is not encoded at all: its
// record holds the protobuf (store.Record.Proto), which reads turn into the
// same JSON (podJSON, TestPodProtoJSON).
func (t *Tracer) record(h held) (store.Record, error) {
	m, err := meta.Accessor(h.obj)
	if err != nil {
		return store.Record{}, fmt.Errorf("record %s: %w", h.k.resource(), err)
	}
	var data []byte
	proto := false
	if r, ok := h.obj.(*rawPod); ok && r.typed == nil && r.pb != nil {
		// The trace keeps the pod's protobuf; reads make the JSON encode
		// would write now (podJSON).
		data, proto = r.pb, true
	} else if o, ok := h.obj.(runtime.Object); ok {
		if data, err = encode(o); err != nil {
			return store.Record{}, fmt.Errorf("encode %s %s/%s: %w", h.k.gvk.Kind, m.GetNamespace(), m.GetName(), err)
		}
	}
	var refs []string
	if ev, ok := h.obj.(*corev1.Event); ok && ev.InvolvedObject.UID != "" {
		refs = append(refs, string(ev.InvolvedObject.UID))
	}
	for _, r := range m.GetOwnerReferences() {
		refs = append(refs, string(r.UID))
	}
	return store.Record{
		Observed:        h.observed,
		Type:            h.typ,
		APIVersion:      h.k.apiVersion,
		Kind:            h.k.gvk.Kind,
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		UID:             string(m.GetUID()),
		ResourceVersion: m.GetResourceVersion(),
		Refs:            refs,
		Object:          data,
		Proto:           proto,
	}, nil
}
