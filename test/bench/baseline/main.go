// Command baseline is the bare informer that test/bench runs beside
// `podtrace record`: client-go shared informers on the resources podtrace
// watches (typed informers over protobuf, metadata-only informers for
// Secrets, ConfigMaps and PersistentVolumeClaims), with handlers that only
// count notifications. On SIGINT or SIGTERM it stops and prints its counts as
// one JSON object on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// counter counts one resource's notifications.
type counter struct{ add, update, del atomic.Int64 }

func (c *counter) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.add.Add(1) },
		UpdateFunc: func(any, any) { c.update.Add(1) },
		DeleteFunc: func(any) { c.del.Add(1) },
	}
}

// Counts is what baseline prints: notifications per resource.
type Counts struct {
	Ready     bool                        `json:"ready"`
	Resources map[string]map[string]int64 `json:"resources"`
	Total     int64                       `json:"total"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	flag.Parse()
	if err := run(*kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
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
	return json.NewEncoder(os.Stdout).Encode(out)
}
