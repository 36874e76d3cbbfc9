package tracer

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// cached is what an informer's cache keeps of an object: the identity its
// keys and relists need, and the object itself only until the handler has
// recorded it.
//
// A shared informer keeps every object it watches whole: a second copy of
// the cluster's pods, events and nodes that podtrace never reads back (the
// trace keeps the revisions). The informers' transform wraps each decoded
// object in a cached; the handler takes the object out, so what stays in the
// caches is a few hundred bytes per object, not the object.
//
// The object is set by the transform, on the reflector's goroutine, before
// the informer publishes the wrapper, and taken by the handler, on the
// informer's one handler goroutine; nothing else reads it.
type cached struct {
	// ObjectMeta holds only Namespace, Name, UID and ResourceVersion.
	metav1.ObjectMeta
	// about is an Event's involvedObject UID, for its tombstone.
	about types.UID
	obj   runtime.Object
}

// wrap returns the cache's entry for obj, a decoded object.
func wrap(obj runtime.Object) any {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj // not an object: the informer rejects it by its key
	}
	c := &cached{obj: obj}
	c.Namespace, c.Name, c.UID, c.ResourceVersion = m.GetNamespace(), m.GetName(), m.GetUID(), m.GetResourceVersion()
	if ev, ok := obj.(*corev1.Event); ok {
		c.about = ev.InvolvedObject.UID
	}
	return c
}

// take returns the object the informer handed over, once: the entry
// itself when it holds none (a tombstone's entry, recorded long ago), and
// obj unchanged when it is not a cache entry.
func take(obj any) any {
	c, ok := obj.(*cached)
	if !ok || c.obj == nil {
		return obj
	}
	o := c.obj
	c.obj = nil
	return o
}
