package tracer

import (
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	admissionv1alpha1informers "k8s.io/client-go/informers/admissionregistration/v1alpha1"
	admissionv1beta1informers "k8s.io/client-go/informers/admissionregistration/v1beta1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/metadata/metadatainformer"
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
	// data is never requested (Secrets, ConfigMaps, PVCs).
	metadataOnly bool
	what         string // what is not recorded without it, for warnings
	// ifServed kinds are watched only where the API server serves them,
	// which Preflight asks the discovery client. Of several ifServed kinds
	// of the same Kind (versions of one resource, in order of preference)
	// the first served is watched.
	ifServed bool
	// informer builds the kind's informer.
	informer func(t *Tracer, ns string) cache.SharedIndexInformer

	// Counters for Stats (see KindStats).
	revisions, lists, watches, watchErrors atomic.Int64
	skipped                                atomic.Bool // Tracer.skip, for Stats
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

func newKind(group, version, res, kindName string, c class, wave int, what string,
	informer func(t *Tracer, ns string) cache.SharedIndexInformer) *kind {
	gvr, gvk := gv(group, version, res, kindName)
	return &kind{gvr: gvr, gvk: gvk, apiVersion: gvk.GroupVersion().String(), class: c, wave: wave, what: what, informer: informer}
}

// noIndex: the recorder reads nothing back from the informers' caches.
var noIndex = cache.Indexers{}

// kinds returns the resources the tracer watches, in start order.
func kinds() []*kind {
	pods := newKind("", "v1", "pods", "Pod", classPod, 0, "pods",
		func(t *Tracer, ns string) cache.SharedIndexInformer {
			selector := func(o *metav1.ListOptions) { o.LabelSelector = t.opts.PodSelector }
			if t.pods != nil {
				return rawPodInformer(t.pods, ns, selector)
			}
			return coreinformers.NewFilteredPodInformer(t.client, ns, 0, noIndex, selector)
		})
	pods.required = true
	events := newKind("", "v1", "events", "Event", classEvent, 1, "events",
		func(t *Tracer, ns string) cache.SharedIndexInformer {
			return coreinformers.NewFilteredEventInformer(t.client, ns, 0, noIndex, nil)
		})
	events.required = true
	namespaces := newKind("", "v1", "namespaces", "Namespace", classAll, 0, "namespaces",
		func(t *Tracer, _ string) cache.SharedIndexInformer {
			return coreinformers.NewFilteredNamespaceInformer(t.client, 0, noIndex, func(o *metav1.ListOptions) {
				if t.opts.Namespace != "" {
					o.FieldSelector = fields.OneTermEqualSelector("metadata.name", t.opts.Namespace).String()
				}
			})
		})
	namespaces.cluster = true
	nodes := newKind("", "v1", "nodes", "Node", classAll, 0, "nodes",
		func(t *Tracer, _ string) cache.SharedIndexInformer {
			return coreinformers.NewFilteredNodeInformer(t.client, 0, noIndex, nil)
		})
	nodes.cluster = true
	mutating := newKind("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
		"MutatingWebhookConfiguration", classAll, 0, "mutating webhook configurations",
		func(t *Tracer, _ string) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredMutatingWebhookConfigurationInformer(t.client, 0, noIndex, nil)
		})
	mutating.cluster = true
	validating := newKind("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
		"ValidatingWebhookConfiguration", classAll, 0, "validating webhook configurations",
		func(t *Tracer, _ string) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredValidatingWebhookConfigurationInformer(t.client, 0, noIndex, nil)
		})
	validating.cluster = true

	return append([]*kind{
		pods,
		namespaces,
		nodes,
		newKind("apps", "v1", "replicasets", "ReplicaSet", classAll, 0, "ReplicaSets",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return appsinformers.NewFilteredReplicaSetInformer(t.client, ns, 0, noIndex, nil)
			}),
		newKind("apps", "v1", "deployments", "Deployment", classAll, 0, "Deployments",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return appsinformers.NewFilteredDeploymentInformer(t.client, ns, 0, noIndex, nil)
			}),
		newKind("apps", "v1", "statefulsets", "StatefulSet", classAll, 0, "StatefulSets",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return appsinformers.NewFilteredStatefulSetInformer(t.client, ns, 0, noIndex, nil)
			}),
		newKind("apps", "v1", "daemonsets", "DaemonSet", classAll, 0, "DaemonSets",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return appsinformers.NewFilteredDaemonSetInformer(t.client, ns, 0, noIndex, nil)
			}),
		newKind("batch", "v1", "jobs", "Job", classAll, 0, "Jobs",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return batchinformers.NewFilteredJobInformer(t.client, ns, 0, noIndex, nil)
			}),
		newKind("batch", "v1", "cronjobs", "CronJob", classAll, 0, "CronJobs",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return batchinformers.NewFilteredCronJobInformer(t.client, ns, 0, noIndex, nil)
			}),
		mutating,
		validating,
		events,
		newKind("", "v1", "services", "Service", classDependent, 1, "pod-owned Services",
			func(t *Tracer, ns string) cache.SharedIndexInformer {
				return coreinformers.NewFilteredServiceInformer(t.client, ns, 0, noIndex, nil)
			}),
		metadataKind("secrets", "Secret", "pod-owned Secrets"),
		metadataKind("configmaps", "ConfigMap", "pod-owned ConfigMaps"),
		metadataKind("persistentvolumeclaims", "PersistentVolumeClaim", "pod-owned PersistentVolumeClaims"),
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
	k := func(version, res, kindName, what string, informer func(t *Tracer) cache.SharedIndexInformer) *kind {
		k := newKind(group, version, res, kindName, classAll, 0, what,
			func(t *Tracer, _ string) cache.SharedIndexInformer { return informer(t) })
		k.cluster, k.ifServed = true, true
		return k
	}
	const (
		validating, validatingb = "validating admission policies", "validating admission policy bindings"
		mutating, mutatingb     = "mutating admission policies", "mutating admission policy bindings"
	)
	return []*kind{
		k("v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", validating, func(t *Tracer) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredValidatingAdmissionPolicyInformer(t.client, 0, noIndex, nil)
		}),
		k("v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", validatingb, func(t *Tracer) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredValidatingAdmissionPolicyBindingInformer(t.client, 0, noIndex, nil)
		}),
		k("v1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", mutating, func(t *Tracer) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredMutatingAdmissionPolicyInformer(t.client, 0, noIndex, nil)
		}),
		k("v1beta1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", mutating, func(t *Tracer) cache.SharedIndexInformer {
			return admissionv1beta1informers.NewFilteredMutatingAdmissionPolicyInformer(t.client, 0, noIndex, nil)
		}),
		k("v1alpha1", "mutatingadmissionpolicies", "MutatingAdmissionPolicy", mutating, func(t *Tracer) cache.SharedIndexInformer {
			return admissionv1alpha1informers.NewFilteredMutatingAdmissionPolicyInformer(t.client, 0, noIndex, nil)
		}),
		k("v1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", mutatingb, func(t *Tracer) cache.SharedIndexInformer {
			return admissioninformers.NewFilteredMutatingAdmissionPolicyBindingInformer(t.client, 0, noIndex, nil)
		}),
		k("v1beta1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", mutatingb, func(t *Tracer) cache.SharedIndexInformer {
			return admissionv1beta1informers.NewFilteredMutatingAdmissionPolicyBindingInformer(t.client, 0, noIndex, nil)
		}),
		k("v1alpha1", "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", mutatingb, func(t *Tracer) cache.SharedIndexInformer {
			return admissionv1alpha1informers.NewFilteredMutatingAdmissionPolicyBindingInformer(t.client, 0, noIndex, nil)
		}),
	}
}

// metadataKind is a core/v1 dependent kind watched through the metadata API,
// so that only its metadata is ever requested.
func metadataKind(res, kindName, what string) *kind {
	k := newKind("", "v1", res, kindName, classDependent, 1, what, nil)
	k.metadataOnly = true
	k.informer = func(t *Tracer, ns string) cache.SharedIndexInformer {
		return metadatainformer.NewFilteredMetadataInformer(t.meta, k.gvr, ns, 0, noIndex, nil).Informer()
	}
	return k
}

// String is for messages.
func (k *kind) String() string { return fmt.Sprintf("%s %s", k.gvk.GroupVersion(), k.gvk.Kind) }
