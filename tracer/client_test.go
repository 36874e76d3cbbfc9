package tracer

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// fakeClient is a Client over client-go's fake clientset: the lists and
// watches of its typed clients (as the generated informers list and watch),
// its fake discovery and its reactors. The clientset's fields and methods
// (Resources, PrependReactor, CoreV1...) are the tests' to use.
type fakeClient struct {
	*fake.Clientset
}

// typedListWatch is a typed client's List and Watch.
type typedListWatch[L runtime.Object] interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

func listWatch[L runtime.Object](c typedListWatch[L]) (cache.ListWithContextFunc, cache.WatchFuncWithContext) {
	return func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) },
		c.Watch
}

func (c fakeClient) ListWatch(gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	var list cache.ListWithContextFunc
	var watchFn cache.WatchFuncWithContext
	switch gvr.GroupVersion().String() + "/" + gvr.Resource {
	case "v1/pods":
		list, watchFn = listWatch(c.CoreV1().Pods(ns))
	case "v1/events":
		list, watchFn = listWatch(c.CoreV1().Events(ns))
	case "v1/namespaces":
		list, watchFn = listWatch(c.CoreV1().Namespaces())
	case "v1/nodes":
		list, watchFn = listWatch(c.CoreV1().Nodes())
	case "v1/services":
		list, watchFn = listWatch(c.CoreV1().Services(ns))
	case "v1/persistentvolumeclaims":
		list, watchFn = listWatch(c.CoreV1().PersistentVolumeClaims(ns))
	case "storage.k8s.io/v1/storageclasses":
		list, watchFn = listWatch(c.StorageV1().StorageClasses())
	case "apps/v1/replicasets":
		list, watchFn = listWatch(c.AppsV1().ReplicaSets(ns))
	case "apps/v1/deployments":
		list, watchFn = listWatch(c.AppsV1().Deployments(ns))
	case "apps/v1/statefulsets":
		list, watchFn = listWatch(c.AppsV1().StatefulSets(ns))
	case "apps/v1/daemonsets":
		list, watchFn = listWatch(c.AppsV1().DaemonSets(ns))
	case "batch/v1/jobs":
		list, watchFn = listWatch(c.BatchV1().Jobs(ns))
	case "batch/v1/cronjobs":
		list, watchFn = listWatch(c.BatchV1().CronJobs(ns))
	case "policy/v1/poddisruptionbudgets":
		list, watchFn = listWatch(c.PolicyV1().PodDisruptionBudgets(ns))
	case "admissionregistration.k8s.io/v1/mutatingwebhookconfigurations":
		list, watchFn = listWatch(c.AdmissionregistrationV1().MutatingWebhookConfigurations())
	case "admissionregistration.k8s.io/v1/validatingwebhookconfigurations":
		list, watchFn = listWatch(c.AdmissionregistrationV1().ValidatingWebhookConfigurations())
	case "admissionregistration.k8s.io/v1/validatingadmissionpolicies":
		list, watchFn = listWatch(c.AdmissionregistrationV1().ValidatingAdmissionPolicies())
	case "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings":
		list, watchFn = listWatch(c.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings())
	case "admissionregistration.k8s.io/v1/mutatingadmissionpolicies":
		list, watchFn = listWatch(c.AdmissionregistrationV1().MutatingAdmissionPolicies())
	case "admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies":
		list, watchFn = listWatch(c.AdmissionregistrationV1beta1().MutatingAdmissionPolicies())
	case "admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicies":
		list, watchFn = listWatch(c.AdmissionregistrationV1alpha1().MutatingAdmissionPolicies())
	case "admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings":
		list, watchFn = listWatch(c.AdmissionregistrationV1().MutatingAdmissionPolicyBindings())
	case "admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings":
		list, watchFn = listWatch(c.AdmissionregistrationV1beta1().MutatingAdmissionPolicyBindings())
	case "admissionregistration.k8s.io/v1alpha1/mutatingadmissionpolicybindings":
		list, watchFn = listWatch(c.AdmissionregistrationV1alpha1().MutatingAdmissionPolicyBindings())
	default:
		panic(fmt.Sprintf("fakeClient: no typed client for %s", gvr))
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			if tweak != nil {
				tweak(&o)
			}
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&o)
			}
			return watchFn(ctx, o)
		},
	}, c.Clientset)
}

func (c fakeClient) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return c.Discovery().ServerResourcesForGroupVersion(gv)
}

func (c fakeClient) ReviewAccess(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	return c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
}

// TestClientKnowsEveryKind: every kind the tracer watches through its own
// REST clients has a client for its group version, and its object type is
// the one the tracer's scheme decodes for its Kind (else the informer drops
// every object as of an unexpected type).
func TestClientKnowsEveryKind(t *testing.T) {
	rc, err := newRESTClient(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds() {
		if k.metadataOnly {
			continue
		}
		if rc.groups[k.gvr.GroupVersion()] == nil {
			t.Errorf("%s: no REST client for %s", k, k.gvr.GroupVersion())
		}
		obj, err := apiScheme.New(k.gvk)
		if err != nil {
			t.Errorf("%s: %v", k, err)
			continue
		}
		if got, want := fmt.Sprintf("%T", obj), fmt.Sprintf("%T", k.obj); got != want {
			t.Errorf("%s: the scheme decodes %s, the informer expects %s", k, got, want)
		}
		if _, err := apiScheme.New(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List")); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if _, err := apiScheme.New(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview")); err != nil {
		t.Error(err)
	}
}
