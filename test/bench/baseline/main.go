// Command baseline is the bare informer that test/bench runs beside
// `podtrace record`: client-go shared informers on the resources podtrace
// watches (typed informers over protobuf, metadata-only informers for
// Secrets, ConfigMaps and PersistentVolumeClaims), with handlers that only
// count notifications, and, for pods, remember a 64-bit hash of each revision
// (UID, resourceVersion, deleted or not) so that test/bench can tell whether
// podtrace lost one. On SIGINT or SIGTERM it stops and prints its counts and
// those hashes as one JSON object on stdout.
//
// Its transport is client-go's default, which asks the API server for gzip,
// unless -disable-compression (podtrace record's default; see
// tracer.Options.Compression).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/test/bench/revision"
)

// counter counts one resource's notifications; with revs set it also keeps
// the hash of each revision notified.
type counter struct {
	add, update, del atomic.Int64

	revs   map[uint64]struct{}
	revsMu sync.Mutex
}

func (c *counter) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.add.Add(1); c.revision(obj, false) },
		UpdateFunc: func(_, obj any) { c.update.Add(1); c.revision(obj, false) },
		DeleteFunc: func(obj any) {
			c.del.Add(1)
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			c.revision(obj, true)
		},
	}
}

func (c *counter) revision(obj any, deleted bool) {
	if c.revs == nil {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	h := revision.Hash(string(m.GetUID()), m.GetResourceVersion(), deleted)
	c.revsMu.Lock()
	c.revs[h] = struct{}{}
	c.revsMu.Unlock()
}

// Counts is what baseline prints: notifications per resource, and the pod
// revisions notified (add, update with a new resourceVersion, delete).
type Counts struct {
	Ready        bool                        `json:"ready"`
	Resources    map[string]map[string]int64 `json:"resources"`
	Total        int64                       `json:"total"`
	PodRevisions []uint64                    `json:"podRevisions"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	noGzip := flag.Bool("disable-compression", false, "ask the API server for no gzip, as podtrace record does by default")
	flag.Parse()
	if err := run(*kubeconfig, *noGzip); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, noGzip bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.DisableCompression = noGzip
	cfg.QPS, cfg.Burst = 50, 100 // as podtrace's tracer
	typed := rest.CopyConfig(cfg)
	typed.ContentType = "application/vnd.kubernetes.protobuf"
	typed.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(typed)
	if err != nil {
		return fmt.Errorf("build client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build metadata client: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	counters := map[string]*counter{}
	var synced []cache.InformerSynced
	add := func(name string, inf cache.SharedIndexInformer) error {
		c := &counter{}
		if name == "pods" {
			c.revs = map[uint64]struct{}{}
		}
		counters[name] = c
		if _, err := inf.AddEventHandler(c.handler()); err != nil {
			return fmt.Errorf("%s handler: %w", name, err)
		}
		synced = append(synced, inf.HasSynced)
		go inf.Run(ctx.Done())
		return nil
	}
	f := informers.NewSharedInformerFactory(client, 0)
	typedInformers := map[string]cache.SharedIndexInformer{
		"pods":                            f.Core().V1().Pods().Informer(),
		"events":                          f.Core().V1().Events().Informer(),
		"namespaces":                      f.Core().V1().Namespaces().Informer(),
		"nodes":                           f.Core().V1().Nodes().Informer(),
		"services":                        f.Core().V1().Services().Informer(),
		"replicasets":                     f.Apps().V1().ReplicaSets().Informer(),
		"deployments":                     f.Apps().V1().Deployments().Informer(),
		"statefulsets":                    f.Apps().V1().StatefulSets().Informer(),
		"daemonsets":                      f.Apps().V1().DaemonSets().Informer(),
		"jobs":                            f.Batch().V1().Jobs().Informer(),
		"cronjobs":                        f.Batch().V1().CronJobs().Informer(),
		"mutatingwebhookconfigurations":   f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer(),
		"validatingwebhookconfigurations": f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer(),
	}
	for name, inf := range typedInformers {
		if err := add(name, inf); err != nil {
			return err
		}
	}
	for _, res := range []string{"secrets", "configmaps", "persistentvolumeclaims"} {
		gvr := schema.GroupVersionResource{Version: "v1", Resource: res}
		if err := add(res, metadatainformer.NewFilteredMetadataInformer(meta, gvr, "", 0, cache.Indexers{}, nil).Informer()); err != nil {
			return err
		}
	}
	ready := cache.WaitForCacheSync(ctx.Done(), synced...)
	if ready {
		fmt.Fprintln(os.Stderr, "baseline: informers synced")
	}
	<-ctx.Done()

	out := Counts{Ready: ready, Resources: map[string]map[string]int64{}}
	for name, c := range counters {
		a, u, d := c.add.Load(), c.update.Load(), c.del.Load()
		out.Resources[name] = map[string]int64{"add": a, "update": u, "delete": d}
		out.Total += a + u + d
	}
	for h := range counters["pods"].revs {
		out.PodRevisions = append(out.PodRevisions, h)
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
