package tracer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	admissionv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// class says which revisions of a kind are kept.
type class int

const (
	// classPod: every revision (the informer applies the pod selector).
	classPod class = iota
	// classEvent: every event in scope, or, with a pod selector, the events
	// about a recorded object.
	classEvent
	// classDependent: objects owned by a recorded Pod, or owned by one in a
	// revision already recorded.
	classDependent
	// classAll: every revision (namespaces, nodes, owners, webhooks,
	// admission policies).
	classAll
)

// kind is one watched resource.
type kind struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	apiVersion string // gvk's, for records
	cluster    bool   // cluster-scoped
	required   bool   // pods and events: no recording without them
	class      class
	wave       int // 0 starts first; 1 once wave 0 has synced
	// metadataOnly kinds are watched through the metadata API so that their
	// data is never requested (Secrets, ConfigMaps).
	metadataOnly bool
	what         string // what is not recorded without it, for warnings
	// ifServed kinds are watched only where the API server serves them,
	// which Preflight asks the discovery client. Of several ifServed kinds
	// of the same Kind (versions of one resource, in order of preference)
	// the first served is watched.
	ifServed bool
	// obj is an empty object of the kind as the informer decodes it (nil
	// for metadata-only kinds).
	obj runtime.Object
	// tweak, when set, changes the kind's list options (selectors).
	tweak func(t *Tracer, o *metav1.ListOptions)

	// Counters for Stats (see KindStats).
	revisions, lists, watches, watchErrors atomic.Int64
	skipped                                atomic.Bool // Tracer.skip, for Stats

	// For the gaps of relists (see requestCounter): current is the last
	// moment, in Unix nanoseconds, the informer is known to have been up to
	// date; firstEnd and lastEnd describe how the watches since ended
	// before their time, or were refused.
	current           atomic.Int64
	endMu             sync.Mutex
	firstEnd, lastEnd string
}

// setEnded notes how one of k's watches ended before its time.
func (k *kind) setEnded(why string) {
	k.endMu.Lock()
	defer k.endMu.Unlock()
	if k.firstEnd == "" {
		k.firstEnd = why
	} else {
		k.lastEnd = why
	}
}

// takeEnded returns how k's watches ended since the last call (the first
// and the last of them), or "".
func (k *kind) takeEnded() string {
	k.endMu.Lock()
	defer k.endMu.Unlock()
	why := k.firstEnd
	if k.lastEnd != "" {
		why += "; then " + k.lastEnd
	}
	k.firstEnd, k.lastEnd = "", ""
	return why
}

// resource names the kind like kubectl does: "pods", "replicasets.apps".
func (k *kind) resource() string {
	if k.gvr.Group == "" {
		return k.gvr.Resource
	}
	return k.gvr.Resource + "." + k.gvr.Group
}

// transform returns the informers' transform: setKind's, then the object
// is wrapped in the cache entry the handler takes it from (see cached).
func (k *kind) transform() cache.TransformFunc {
	set := k.setKind()
	return func(obj any) (any, error) {
		if c, ok := obj.(*cached); ok {
			return c, nil // already transformed
		}
		obj, err := set(obj)
		if o, ok := obj.(runtime.Object); ok && err == nil {
			return wrap(o), nil
		}
		return obj, err
	}
}

// setKind returns a transform that sets the object's apiVersion and kind:
// typed informers decode objects with an empty TypeMeta, and metadata
// informers return PartialObjectMetadata. Transforms run before the object
// enters the informer's cache, so no copy is needed.
//
// For metadata-only kinds it also drops the annotation in which kubectl
// apply keeps the whole object it applied: for a Secret, its data.
func (k *kind) setKind() cache.TransformFunc {
	return func(obj any) (any, error) {
		if o, ok := obj.(runtime.Object); ok {
			o.GetObjectKind().SetGroupVersionKind(k.gvk)
		}
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && k.metadataOnly {
			if _, has := m.Annotations[corev1.LastAppliedConfigAnnotation]; has {
				delete(m.Annotations, corev1.LastAppliedConfigAnnotation)
			}
		}
		return obj, nil
	}
}

func gv(group, version, res, kindName string) (schema.GroupVersionResource, schema.GroupVersionKind) {
	return schema.GroupVersionResource{Group: group, Version: version, Resource: res},
		schema.GroupVersionKind{Group: group, Version: version, Kind: kindName}
}

func newKind(group, version, res, kindName string, obj runtime.Object, c class, wave int, what string) *kind {
	gvr, gvk := gv(group, version, res, kindName)
	return &kind{gvr: gvr, gvk: gvk, apiVersion: gvk.GroupVersion().String(), obj: obj, class: c, wave: wave, what: what}
}

// noIndex: the recorder reads nothing back from the informers' caches.
var noIndex = cache.Indexers{}

// kinds returns the resources the tracer watches, in start order.
func kinds() []*kind {
	pods := newKind("", "v1", "pods", "Pod", &corev1.Pod{}, classPod, 0, "pods")
	pods.tweak = func(t *Tracer, o *metav1.ListOptions) { o.LabelSelector = t.opts.PodSelector }
	pods.required = true
	events := newKind("", "v1", "events", "Event", &corev1.Event{}, classEvent, 1, "events")
	events.required = true
	namespaces := newKind("", "v1", "namespaces", "Namespace", &corev1.Namespace{}, classAll, 0, "namespaces")
	namespaces.tweak = func(t *Tracer, o *metav1.ListOptions) {
		if t.opts.Namespace != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", t.opts.Namespace).String()
		}
	}
	namespaces.cluster = true
	nodes := newKind("", "v1", "nodes", "Node", &corev1.Node{}, classAll, 0, "nodes")
	nodes.cluster = true
	mutating := newKind("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
		"MutatingWebhookConfiguration", &admissionv1.MutatingWebhookConfiguration{}, classAll, 0, "mutating webhook configurations")
	mutating.cluster = true
	validating := newKind("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
		"ValidatingWebhookConfiguration", &admissionv1.ValidatingWebhookConfiguration{}, classAll, 0, "validating webhook configurations")
	validating.cluster = true
	storageClasses := newKind("storage.k8s.io", "v1", "storageclasses", "StorageClass", &storagev1.StorageClass{}, classAll, 0, "StorageClasses")
	storageClasses.cluster = true

	return append([]*kind{
		pods,
		namespaces,
		nodes,
		newKind("apps", "v1", "replicasets", "ReplicaSet", &appsv1.ReplicaSet{}, classAll, 0, "ReplicaSets"),
		newKind("apps", "v1", "deployments", "Deployment", &appsv1.Deployment{}, classAll, 0, "Deployments"),
		newKind("apps", "v1", "statefulsets", "StatefulSet", &appsv1.StatefulSet{}, classAll, 0, "StatefulSets"),
		newKind("apps", "v1", "daemonsets", "DaemonSet", &appsv1.DaemonSet{}, classAll, 0, "DaemonSets"),
		newKind("batch", "v1", "jobs", "Job", &batchv1.Job{}, classAll, 0, "Jobs"),
		newKind("batch", "v1", "cronjobs", "CronJob", &batchv1.CronJob{}, classAll, 0, "CronJobs"),
		// What allowed or refused an eviction: each budget's spec and
		// status (disruptionsAllowed, currentHealthy) at every moment.
		newKind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, classAll, 0, "PodDisruptionBudgets"),
		mutating,
		validating,
		events,
		newKind("", "v1", "services", "Service", &corev1.Service{}, classDependent, 1, "pod-owned Services"),
		metadataKind("secrets", "Secret", "pod-owned Secrets"),
		metadataKind("configmaps", "ConfigMap", "pod-owned ConfigMaps"),
		// Claims whole (a claim holds no secret): their phase, class and
		// volume say why a pod waits for one; and the StorageClasses they
		// name (cluster-scoped, few), to say one is missing.
		newKind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", &corev1.PersistentVolumeClaim{}, classAll, 0, "PersistentVolumeClaims"),
		storageClasses,
	}, policyKinds()...)
}

// policyKinds are the admission policies and their bindings: CEL rules the
// API server runs on requests, which deny pod UPDATEs (a finalizer's
// removal) like webhooks do. ValidatingAdmissionPolicy is GA since 1.30;
// MutatingAdmissionPolicy was alpha (v1alpha1) in 1.32, beta (v1beta1, off
// by default) in 1.34 and GA (v1) in 1.36. Their matchConstraints are in
// the spec: typed informers, whole objects.
func policyKinds() []*kind {
	const group = "admissionregistration.k8s.io"
	k := func(version, res, kindName string, obj runtime.Object, what string) *kind {
		k := newKind(group, version, res, kindName, obj, classAll, 0, what)
		k.cluster, k.ifServed = true, true
		return k
	}
	const (
		validating, validatingb = "validating admission policies", "validating admission policy bindings"
		mutating, mutatingb     = "mutating admission policies", "mutating admission policy bindings"
	)
	return []*kind{
		k("v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", &admissionv1.ValidatingAdmissionPolicy{}, validating),
		k("v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", &admissionv1.ValidatingAdmissionPolicyBinding{}, validatingb),
		k("v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", &admissionv1.MutatingAdmissionPolicy{}, mutating),
		k("v1beta1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", &admissionv1beta1.MutatingAdmissionPolicy{}, mutating),
		k("v1alpha1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", &admissionv1alpha1.MutatingAdmissionPolicy{}, mutating),
		k("v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", &admissionv1.MutatingAdmissionPolicyBinding{}, mutatingb),
		k("v1beta1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", &admissionv1beta1.MutatingAdmissionPolicyBinding{}, mutatingb),
		k("v1alpha1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", &admissionv1alpha1.MutatingAdmissionPolicyBinding{}, mutatingb),
	}
}

// metadataKind is a core/v1 dependent kind watched through the metadata API,
// so that only its metadata is ever requested.
func metadataKind(res, kindName, what string) *kind {
	k := newKind("", "v1", res, kindName, nil, classDependent, 1, what)
	k.metadataOnly = true
	return k
}

// informer returns kind k's informer in namespace ns ("" for all, and for a
// cluster-scoped kind): for a metadata-only kind the metadata API's, for
// pods the rawPod informer when the tracer built its own clients, else an
// informer of typed objects over the Client, the one client-go's generated
// informer of the kind builds (NewFiltered...Informer, no resync).
func (t *Tracer) informer(k *kind, ns string) cache.SharedIndexInformer {
	var tweak func(*metav1.ListOptions)
	if k.tweak != nil {
		tweak = func(o *metav1.ListOptions) { k.tweak(t, o) }
	}
	switch {
	case k.metadataOnly:
		return metadataInformer(t.meta, k.gvr, ns)
	case k.class == classPod && t.pods != nil:
		return rawPodInformer(t.pods, ns, tweak)
	}
	var unnamed *cache.InformerName // as the generated informers, built outside a factory
	return cache.NewSharedIndexInformerWithOptions(t.client.ListWatch(k.gvr, ns, tweak), k.obj,
		cache.SharedIndexInformerOptions{Indexers: noIndex, Identifier: unnamed.WithResource(k.gvr)})
}

// metadataInformer is metadatainformer.NewFilteredMetadataInformer(...).
// Informer(), with no resync, no index and no tweak; that package imports
// client-go's informer factory, and through it the typed clientset of every
// API group (see Client).
func metadataInformer(c metadata.Interface, gvr schema.GroupVersionResource, ns string) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(
		cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.Resource(gvr).Namespace(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.Resource(gvr).Namespace(ns).Watch(ctx, o)
			},
		}, c),
		&metav1.PartialObjectMetadata{}, 0, noIndex)
}

// String is for messages.
func (k *kind) String() string { return fmt.Sprintf("%s %s", k.gvk.GroupVersion(), k.gvk.Kind) }
