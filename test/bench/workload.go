package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	deployments = 3
	jobs        = 4
	maxPatches  = 300
	roleLabel   = "bench.podtrace.dev/role"
)

func podSpec(restart corev1.RestartPolicy) corev1.PodSpec {
	c := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.local/bench/" + name + ":1"}
	}
	return corev1.PodSpec{
		RestartPolicy: restart,
		Containers:    []corev1.Container{c("app"), c("sidecar")},
	}
}

// split divides n into k near-equal parts.
func split(n, k int) []int {
	parts := make([]int, k)
	for i := range parts {
		parts[i] = n / k
		if i < n%k {
			parts[i]++
		}
	}
	return parts
}

// createNamespace creates the workload's namespace and waits for its
// default ServiceAccount: the ServiceAccount admission plugin rejects pods
// until it exists.
func createNamespace(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	return poll(ctx, "ServiceAccount default", func() (bool, string, error) {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, "", nil
	})
}

// workload runs the Deployments and Jobs through their lives and returns a
// description of what it did.
func workload(ctx context.Context, cs kubernetes.Interface, pods int) (string, error) {
	if err := createNamespace(ctx, cs); err != nil {
		return "", err
	}
	depPods := pods * 60 / 100
	depReplicas := split(depPods, deployments)
	jobPods := split(pods-depPods, jobs)
	for i, n := range depReplicas {
		name := "web-" + strconv.Itoa(i)
		labels := map[string]string{"app": name, roleLabel: "deployment"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(n)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       podSpec(corev1.RestartPolicyAlways),
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create Deployment %s: %w", name, err)
		}
	}
	for i, n := range jobPods {
		name := "batch-" + strconv.Itoa(i)
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				Completions:  ptr.To(int32(n)),
				Parallelism:  ptr.To(int32(n)),
				BackoffLimit: ptr.To(int32(0)),
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{roleLabel: "job"}},
					Spec:       podSpec(corev1.RestartPolicyNever),
				},
			},
		}
		if _, err := cs.BatchV1().Jobs(namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create Job %s: %w", name, err)
		}
	}
	logf("created %d Deployments (%v replicas) and %d Jobs (%v pods)", deployments, depReplicas, jobs, jobPods)
	if err := poll(ctx, "Deployments ready and Jobs complete", func() (bool, string, error) {
		ready, err := deploymentsReady(ctx, cs)
		if err != nil {
			return false, "", err
		}
		js, err := cs.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		succeeded, want := 0, 0
		for _, j := range js.Items {
			succeeded += int(j.Status.Succeeded)
			want += int(*j.Spec.Completions)
		}
		return ready.done && succeeded == want, fmt.Sprintf("deployment pods ready %d/%d, job pods succeeded %d/%d", ready.ready, depPods, succeeded, want), nil
	}); err != nil {
		return "", err
	}

	// Label and annotation patches on the Deployments' pods.
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: roleLabel + "=deployment"})
	if err != nil {
		return "", err
	}
	patches := min(maxPatches, 2*len(list.Items))
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		patchErr error
	)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				pod := list.Items[i%len(list.Items)].Name
				var patch string
				if i%2 == 0 {
					patch = fmt.Sprintf(`{"metadata":{"labels":{"bench.podtrace.dev/patched":"p%d"}}}`, i)
				} else {
					patch = fmt.Sprintf(`{"metadata":{"annotations":{"bench.podtrace.dev/note":"patch %d at %s"}}}`, i, time.Now().Format(time.RFC3339Nano))
				}
				if _, err := cs.CoreV1().Pods(namespace).Patch(ctx, pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					mu.Lock()
					patchErr = fmt.Errorf("patch pod %s: %w", pod, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range patches {
		work <- i
	}
	close(work)
	wg.Wait()
	if patchErr != nil {
		return "", patchErr
	}
	logf("patched %d pods (%d patches)", min(patches, len(list.Items)), patches)

	// Roll one Deployment.
	roll := `{"spec":{"template":{"metadata":{"annotations":{"bench.podtrace.dev/rollout":"1"}}}}}`
	if _, err := cs.AppsV1().Deployments(namespace).Patch(ctx, "web-0", types.MergePatchType, []byte(roll), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("roll Deployment web-0: %w", err)
	}
	if err := poll(ctx, "rollout of web-0", func() (bool, string, error) {
		ready, err := deploymentsReady(ctx, cs)
		if err != nil {
			return false, "", err
		}
		return ready.done, fmt.Sprintf("deployment pods ready and updated %d/%d", ready.ready, depPods), nil
	}); err != nil {
		return "", err
	}

	// Delete everything, and wait until no pod is left.
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	if err := cs.AppsV1().Deployments(namespace).DeleteCollection(ctx, del, metav1.ListOptions{}); err != nil {
		return "", fmt.Errorf("delete Deployments: %w", err)
	}
	if err := cs.BatchV1().Jobs(namespace).DeleteCollection(ctx, del, metav1.ListOptions{}); err != nil {
		return "", fmt.Errorf("delete Jobs: %w", err)
	}
	if err := poll(ctx, "all pods gone", func() (bool, string, error) {
		ps, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(ps.Items) == 0, fmt.Sprintf("%d pods left", len(ps.Items)), nil
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d Deployment replicas in %d Deployments, %d Job pods in %d Jobs, %d label/annotation patches, rollout of web-0 (%d replicas), delete",
		depPods, deployments, pods-depPods, jobs, patches, depReplicas[0]), nil
}

type readiness struct {
	done  bool
	ready int
}

// deploymentsReady: every Deployment has rolled out its current template and
// has only ready, updated replicas.
func deploymentsReady(ctx context.Context, cs kubernetes.Interface) (readiness, error) {
	ds, err := cs.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return readiness{}, err
	}
	r := readiness{done: len(ds.Items) == deployments}
	for _, d := range ds.Items {
		s := d.Status
		want := *d.Spec.Replicas
		r.ready += int(min(s.ReadyReplicas, s.UpdatedReplicas))
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want || s.Replicas != want || s.AvailableReplicas != want {
			r.done = false
		}
	}
	return r, nil
}

// poll calls check every second until it reports done, logging its progress
// every 10 seconds.
func poll(ctx context.Context, what string, check func() (bool, string, error)) error {
	began := time.Now()
	lastLog := began
	var progress string
	for {
		done, p, err := check()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		progress = p
		if done {
			logf("%s after %s", what, time.Since(began).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(lastLog) >= 10*time.Second {
			logf("waiting for %s: %s", what, progress)
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s (%s): %w", what, progress, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// rolloutWorkload is one Deployment of pods/2 two-container replicas,
// rolled once (each old pod replaced by a new one: pods in all), then
// deleted: at this scale the ReplicaSet controller's SuccessfulDelete
// events are aggregated by client-go's event correlator, and a pod's end
// is told by its owners' recorded history.
func rolloutWorkload(ctx context.Context, cs kubernetes.Interface, pods int) (string, error) {
	if err := createNamespace(ctx, cs); err != nil {
		return "", err
	}
	replicas := int32(pods / 2)
	const name = "web"
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, roleLabel: "deployment"}},
				Spec:       podSpec(corev1.RestartPolicyAlways),
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create Deployment %s: %w", name, err)
	}
	rolledOut := func() (bool, string, error) {
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s := d.Status
		done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == replicas && s.ReadyReplicas == replicas &&
			s.Replicas == replicas && s.AvailableReplicas == replicas
		return done, fmt.Sprintf("ready %d, updated %d, replicas %d of %d", s.ReadyReplicas, s.UpdatedReplicas, s.Replicas, replicas), nil
	}
	if err := poll(ctx, "Deployment "+name+" ready", rolledOut); err != nil {
		return "", err
	}
	roll := `{"spec":{"template":{"metadata":{"annotations":{"bench.podtrace.dev/rollout":"1"}}}}}`
	if _, err := cs.AppsV1().Deployments(namespace).Patch(ctx, name, types.MergePatchType, []byte(roll), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("roll Deployment %s: %w", name, err)
	}
	if err := poll(ctx, "rollout of "+name, rolledOut); err != nil {
		return "", err
	}
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		return "", fmt.Errorf("delete Deployment %s: %w", name, err)
	}
	if err := poll(ctx, "all pods gone", func() (bool, string, error) {
		ps, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		return len(ps.Items) == 0, fmt.Sprintf("%d pods left", len(ps.Items)), nil
	}); err != nil {
		return "", err
	}
	return fmt.Sprintf("one Deployment of %d two-container replicas, rolled once (%d pods in all), then deleted", replicas, 2*replicas), nil
}
