package digester_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/test/cluster"
)

// gcUser is the garbage collector's identity with
// --use-service-account-credentials.
const gcUser = "system:serviceaccount:kube-system:generic-garbage-collector"

// decisionLog collects the webhook's JSON log lines.
type decisionLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *decisionLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// decision is one logged admission decision.
type decision struct {
	Msg       string    `json:"msg"`
	Operation string    `json:"operation"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	User      string    `json:"user"`
	Err       string    `json:"err"`
	Time      time.Time `json:"time"`
}

// denials returns the denied requests for namespace/name so far.
func (l *decisionLog) denials(namespace, name string) []decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []decision
	lines := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for lines.Scan() {
		var d decision
		if json.Unmarshal(lines.Bytes(), &d) == nil && d.Msg == "denied" && d.Namespace == namespace && d.Name == name {
			out = append(out, d)
		}
	}
	return out
}

// TestDigesterOnControlPlane plays the case on a real control plane: the
// webhook pins the job pod's images at admission, and a Foreground deletion
// leaves the pod Terminating because the garbage collector's UPDATE removing
// foregroundDeletion is denied once the pull Secret is gone.
func TestDigesterOnControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{Nodes: 1})
	client := c.Client()
	// The subtests are parallel: they run after this function returns, so
	// ctx ends with the test's cleanup, not with a defer.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)

	log := &decisionLog{}
	srv, err := digester.NewServer(digester.ServerOptions{Client: client, Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close webhook server: %v", err)
		}
	})
	if _, err := digester.Register(ctx, client, digester.Options{URL: srv.URL(), CABundle: srv.CABundle()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := digester.Unregister(context.Background(), client, ""); err != nil {
			t.Errorf("unregister: %v", err)
		}
	})

	began := time.Now()
	ns := namespace(ctx, t, client, "ci-create", true)
	waitWebhookActive(ctx, t, client, ns)
	t.Logf("webhook active %s after Register", time.Since(began).Round(time.Millisecond))

	pod := runJob(ctx, t, client, c, ns, "runner-create")
	if _, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: "runner-create"}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("RunJob twice: %v, want already exists", err)
	}
	t.Logf("pod %s/%s on %s: %s, %s", ns, pod.Name, pod.Spec.NodeName, pod.Spec.Containers[0].Image, pod.Spec.Containers[1].Image)

	t.Run("foreground stays terminating", func(t *testing.T) {
		t.Parallel()
		ns := namespace(ctx, t, client, "ci-foreground", true)
		pod := runJob(ctx, t, client, c, ns, "runner-fg")
		deleted := time.Now()
		if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
			t.Fatal(err)
		}
		waitDependentsGone(ctx, t, client, ns, pod.Name)
		t.Logf("dependents gone %s after the deletion", time.Since(deleted).Round(time.Millisecond))

		const stuck = 20 * time.Second
		for time.Since(deleted) < stuck {
			p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s after the deletion: get pod: %v; want it still there, Terminating", time.Since(deleted).Round(time.Millisecond), err)
			}
			if p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, metav1.FinalizerDeleteDependents) {
				t.Fatalf("%s after the deletion: deletionTimestamp %v, finalizers %v; want set, with %s", time.Since(deleted).Round(time.Millisecond), p.DeletionTimestamp, p.Finalizers, metav1.FinalizerDeleteDependents)
			}
			time.Sleep(time.Second)
		}
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, metav1.FinalizerDeleteDependents) {
			t.Fatalf("at the end: pod %v, err %v; want Terminating with %s", p, err, metav1.FinalizerDeleteDependents)
		}

		// The denials that keep it: the garbage collector's UPDATEs, each
		// for want of the pull Secret.
		denied := log.denials(ns, pod.Name)
		var byGC int
		var at []string
		for _, d := range denied {
			want := fmt.Sprintf("failed to create keychain: secrets %q not found", digester.SecretName(pod.Name))
			if d.Operation == "UPDATE" && d.User == gcUser && d.Err == want {
				byGC++
				at = append(at, d.Time.Sub(deleted).Round(10*time.Millisecond).String())
			}
		}
		if byGC == 0 {
			t.Fatalf("no UPDATE by %s denied for the missing Secret; denials: %+v", gcUser, denied)
		}
		t.Logf("still Terminating %s after the deletion, phase %s, finalizers %v; %d UPDATEs by the garbage collector denied, at %s",
			time.Since(deleted).Round(time.Millisecond), p.Status.Phase, p.Finalizers, byGC, strings.Join(at, " "))

		// Take the webhook off the namespace: the garbage collector's next
		// UPDATE, on its exponential back-off (the denials above come at
		// doubling intervals), goes through and the pod is deleted for good.
		unlabelled := time.Now()
		if _, err := digester.EnsureNamespace(ctx, client, ns, false); err != nil {
			t.Fatal(err)
		}
		waitPodGone(ctx, t, client, pod, 60*time.Second)
		t.Logf("pod gone %s after the namespace label was removed", time.Since(unlabelled).Round(time.Millisecond))
	})

	t.Run("background goes", func(t *testing.T) {
		t.Parallel()
		ns := namespace(ctx, t, client, "ci-background", true)
		pod := runJob(ctx, t, client, c, ns, "runner-bg")
		deleted := time.Now()
		if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationBackground); err != nil {
			t.Fatal(err)
		}
		waitPodGone(ctx, t, client, pod, 30*time.Second)
		t.Logf("pod gone %s after the deletion", time.Since(deleted).Round(time.Millisecond))
		waitDependentsGone(ctx, t, client, ns, pod.Name)
		t.Logf("dependents gone %s after the deletion", time.Since(deleted).Round(time.Millisecond))
	})

	t.Run("foreground without the webhook goes", func(t *testing.T) {
		t.Parallel()
		ns := namespace(ctx, t, client, "ci-unlabelled", true)
		pod := runJob(ctx, t, client, c, ns, "runner-unlabelled")
		if _, err := digester.EnsureNamespace(ctx, client, ns, false); err != nil {
			t.Fatal(err)
		}
		deleted := time.Now()
		if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
			t.Fatal(err)
		}
		waitPodGone(ctx, t, client, pod, 30*time.Second)
		t.Logf("pod gone %s after the deletion", time.Since(deleted).Round(time.Millisecond))
		if d := log.denials(ns, pod.Name); len(d) != 0 {
			t.Errorf("denials in a namespace without the label: %+v", d)
		}
	})
}

// namespace creates a fresh namespace named after prefix, labelled for the
// webhook if digest, and waits for its default ServiceAccount.
func namespace(ctx context.Context, t *testing.T, client kubernetes.Interface, prefix string, digest bool) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
	if _, err := digester.EnsureNamespace(ctx, client, name, digest); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, 30*time.Second, "default ServiceAccount in "+name, func() (bool, error) {
		_, err := client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	return name
}

// waitWebhookActive dry-runs pod creations in ns until the API server calls
// the webhook and the image comes back pinned.
func waitWebhookActive(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "alpine:3.20"}}},
	}
	want, _ := digester.Pin("alpine:3.20")
	poll(ctx, t, 30*time.Second, "the webhook to pin a dry-run pod's image", func() (bool, error) {
		got, err := client.CoreV1().Pods(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err
		}
		return got.Spec.Containers[0].Image == want, nil
	})
}

// runJob runs a job in ns, checks that the stored pod's images were pinned
// at admission, and waits for the pod to reach Succeeded on a kwok node.
func runJob(ctx context.Context, t *testing.T, client kubernetes.Interface, c *cluster.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	began := time.Now()
	pod, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	build, _ := digester.Pin(digester.DefaultBuildImage)
	helper, _ := digester.Pin(digester.DefaultHelperImage)
	for i, want := range []string{build, helper} {
		if got := stored.Spec.Containers[i].Image; got != want {
			t.Errorf("stored container %s image %q, want %q (pinned at admission)", stored.Spec.Containers[i].Name, got, want)
		}
	}
	poll(ctx, t, 60*time.Second, "pod "+ns+"/"+name+" to succeed", func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == corev1.PodSucceeded, nil
	})
	if !slices.Contains(c.Nodes, pod.Spec.NodeName) {
		t.Errorf("pod ran on node %q, want one of the kwok nodes %v", pod.Spec.NodeName, c.Nodes)
	}
	t.Logf("job %s/%s: created and Succeeded in %s", ns, name, time.Since(began).Round(time.Millisecond))
	return pod
}

// waitPodGone waits up to limit for the pod to be deleted for good.
func waitPodGone(ctx context.Context, t *testing.T, client kubernetes.Interface, pod *corev1.Pod, limit time.Duration) {
	t.Helper()
	var last *corev1.Pod
	poll(ctx, t, limit, "pod "+pod.Namespace+"/"+pod.Name+" to be gone", func() (bool, error) {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			last = p
			if p.UID != pod.UID {
				return true, nil
			}
		}
		return false, err
	}, func() string {
		if last == nil {
			return ""
		}
		return fmt.Sprintf("last seen: deletionTimestamp %v, finalizers %v, phase %s", last.DeletionTimestamp, last.Finalizers, last.Status.Phase)
	})
}

// waitDependentsGone waits up to 30 s for the job's Secret, ConfigMap and
// Service to be deleted by the garbage collector.
func waitDependentsGone(ctx context.Context, t *testing.T, client kubernetes.Interface, ns, job string) {
	t.Helper()
	gone := func(err error) bool { return apierrors.IsNotFound(err) }
	ignoreNotFound := func(err error) error {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	poll(ctx, t, 30*time.Second, "the dependents of "+ns+"/"+job+" to be gone", func() (bool, error) {
		if _, err := client.CoreV1().Secrets(ns).Get(ctx, digester.SecretName(job), metav1.GetOptions{}); !gone(err) {
			return false, err
		}
		if _, err := client.CoreV1().ConfigMaps(ns).Get(ctx, digester.ConfigMapName(job), metav1.GetOptions{}); !gone(err) {
			return false, err
		}
		_, err := client.CoreV1().Services(ns).Get(ctx, digester.ServiceName(job), metav1.GetOptions{})
		return gone(err), ignoreNotFound(err)
	})
}

// poll calls check every 200 ms until it returns true, and fails t after
// limit with the last error and what the optional detail says.
func poll(ctx context.Context, t *testing.T, limit time.Duration, what string, check func() (bool, error), detail ...func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		ok, err := check()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			var more []string
			if last != nil {
				more = append(more, "last error: "+last.Error())
			}
			for _, d := range detail {
				if s := d(); s != "" {
					more = append(more, s)
				}
			}
			t.Fatalf("timed out after %s waiting for %s; %s", limit, what, strings.Join(more, "; "))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
