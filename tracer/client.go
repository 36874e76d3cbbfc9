package tracer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	admissionv1alpha1 "k8s.io/api/admissionregistration/v1alpha1"
	admissionv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is what the tracer asks the API server, besides the metadata API
// (metadata.Interface) and the pods' own client: the lists and watches of
// the kinds it records, the discovery of the optional ones, and the access
// checks. New builds one from Options.RESTConfig; tests give one over a fake
// clientset.
//
// The tracer does not use client-go's typed clientset (k8s.io/client-go/
// kubernetes), its informer factory or its discovery client: each of those
// imports, and registers in its scheme, every API group Kubernetes serves,
// with their clients, listers, informers and apply configurations (and the
// discovery client the OpenAPI models): 25 of the 56 MB of a stripped
// podtrace, for the eight group versions used here.
type Client interface {
	// ListWatch lists and watches the resource gvr in namespace ns ("" for
	// all namespaces, and for a cluster-scoped resource), with the list
	// options changed by tweak (nil for none), as a generated informer of
	// client-go does.
	ListWatch(gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher
	// ServerResourcesForGroupVersion is discovery's: the resources the API
	// server serves in groupVersion, a NotFound error if it serves no such
	// group version.
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
	// ReviewAccess creates the SelfSubjectAccessReview and returns the API
	// server's answer.
	ReviewAccess(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error)
}

// apiScheme knows the API types the tracer decodes: the group versions it
// records and authorization/v1 for its access checks, as client-go's
// kubernetes/scheme registers them, and nothing else.
var apiScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	groups := runtime.SchemeBuilder{
		corev1.AddToScheme,
		appsv1.AddToScheme,
		batchv1.AddToScheme,
		policyv1.AddToScheme,
		admissionv1.AddToScheme,
		admissionv1beta1.AddToScheme,
		admissionv1alpha1.AddToScheme,
		authorizationv1.AddToScheme,
		storagev1.AddToScheme,
	}
	utilruntime.Must(groups.AddToScheme(s))
	return s
}()

var (
	codecs         = serializer.NewCodecFactory(apiScheme)
	parameterCodec = runtime.NewParameterCodec(apiScheme)
)

// clientGroupVersions are the group versions restClient reaches.
var clientGroupVersions = []schema.GroupVersion{
	corev1.SchemeGroupVersion,
	appsv1.SchemeGroupVersion,
	batchv1.SchemeGroupVersion,
	policyv1.SchemeGroupVersion,
	admissionv1.SchemeGroupVersion,
	admissionv1beta1.SchemeGroupVersion,
	admissionv1alpha1.SchemeGroupVersion,
	authorizationv1.SchemeGroupVersion,
	storagev1.SchemeGroupVersion,
}

// restClient is the Client New builds: a REST client per group version,
// configured as client-go's typed clientset configures its own, and a
// discovery client as the clientset's. They share one HTTP client (one
// connection) and one rate limiter, as the clientset's do.
type restClient struct {
	groups    map[schema.GroupVersion]*rest.RESTClient
	discovery *rest.RESTClient
}

// newRESTClient is kubernetes.NewForConfig for the group versions of
// clientGroupVersions.
func newRESTClient(c *rest.Config) (*restClient, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, err
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	rc := &restClient{groups: map[schema.GroupVersion]*rest.RESTClient{}}
	for _, gv := range clientGroupVersions {
		g := cfg
		g.GroupVersion = &gv
		g.APIPath = "/apis"
		if gv.Group == "" {
			g.APIPath = "/api"
		}
		g.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(apiScheme, codecs).WithoutConversion()
		if rc.groups[gv], err = rest.RESTClientForConfigAndClient(&g, httpClient); err != nil {
			return nil, err
		}
	}
	d := discoveryConfig(&cfg)
	if rc.discovery, err = rest.UnversionedRESTClientForConfigAndClient(d, httpClient); err != nil {
		return nil, err
	}
	return rc, nil
}

// discoveryConfig is a copy of c set up as client-go's discovery client
// sets up its own (setDiscoveryDefaults), with the tracer's scheme.
func discoveryConfig(c *rest.Config) *rest.Config {
	d := *c
	d.APIPath, d.GroupVersion = "", nil
	if d.Timeout == 0 {
		d.Timeout = 32 * time.Second
	}
	if d.Burst == 0 {
		d.Burst = 300
	}
	codec := runtime.NoopEncoder{Decoder: codecs.UniversalDecoder()}
	d.NegotiatedSerializer = serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{Serializer: codec})
	if d.UserAgent == "" {
		d.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return &d
}

func (c *restClient) group(gv schema.GroupVersion) *rest.RESTClient {
	g := c.groups[gv]
	if g == nil {
		panic(fmt.Sprintf("tracer: no client for %s", gv)) // a kind added without its group version
	}
	return g
}

// ListWatch is what the generated informers of client-go list and watch
// with: the typed client's List and Watch (gentype), with watch-list
// semantics.
func (c *restClient) ListWatch(gvr schema.GroupVersionResource, ns string, tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	g := c.group(gvr.GroupVersion())
	prepare := func(opts *metav1.ListOptions) time.Duration {
		if tweak != nil {
			tweak(opts)
		}
		if opts.TimeoutSeconds != nil {
			return time.Duration(*opts.TimeoutSeconds) * time.Second
		}
		return 0
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			timeout := prepare(&opts)
			return g.Get().
				NamespaceIfScoped(ns, ns != "").
				Resource(gvr.Resource).
				VersionedParams(&opts, parameterCodec).
				Timeout(timeout).
				Do(ctx).
				Get()
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			timeout := prepare(&opts)
			opts.Watch = true
			return g.Get().
				NamespaceIfScoped(ns, ns != "").
				Resource(gvr.Resource).
				VersionedParams(&opts, parameterCodec).
				Timeout(timeout).
				Watch(ctx)
		},
	}, g)
}

// ServerResourcesForGroupVersion is the discovery client's.
func (c *restClient) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	if groupVersion == "" {
		return nil, fmt.Errorf("groupVersion shouldn't be empty")
	}
	path := "/apis/" + groupVersion
	if groupVersion == "v1" {
		path = "/api/v1"
	}
	resources := &metav1.APIResourceList{GroupVersion: groupVersion}
	if err := c.discovery.Get().AbsPath(path).Do(context.TODO()).Into(resources); err != nil {
		if groupVersion == "v1" && apierrors.IsNotFound(err) {
			return resources, nil // discovery's tolerance
		}
		return nil, err
	}
	return resources, nil
}

// ReviewAccess is the typed client's SelfSubjectAccessReviews().Create.
func (c *restClient) ReviewAccess(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	res := &authorizationv1.SelfSubjectAccessReview{}
	err := c.group(authorizationv1.SchemeGroupVersion).Post().
		Resource("selfsubjectaccessreviews").
		VersionedParams(&metav1.CreateOptions{}, parameterCodec).
		Body(review).
		Do(ctx).
		Into(res)
	return res, err
}

// Discovery asks the API server its version, as client-go's discovery
// client does, without that client: it registers every API group in its
// scheme (see Client).
type Discovery struct {
	c *rest.RESTClient
}

// NewDiscovery is discovery.NewDiscoveryClientForConfig: its own HTTP
// client, the discovery client's timeout (32 s) and burst.
func NewDiscovery(cfg *rest.Config) (*Discovery, error) {
	c, err := rest.UnversionedRESTClientFor(discoveryConfig(cfg))
	if err != nil {
		return nil, err
	}
	return &Discovery{c: c}, nil
}

// ServerVersion is the discovery client's: GET /version.
func (d *Discovery) ServerVersion() (*version.Info, error) {
	body, err := d.c.Get().AbsPath("/version").Do(context.TODO()).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("unable to parse the server version: %v", err)
	}
	return &info, nil
}
