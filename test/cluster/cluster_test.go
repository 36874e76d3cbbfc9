package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/test/cluster"
)

// integration skips the test with -short; otherwise the test needs the
// binaries and fails, saying to run `make cluster-binaries`, without them.
func integration(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
}

// auditPolicy records who bound and who updated pods.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["pods", "pods/binding", "pods/status"]
- level: None
`

func TestStart(t *testing.T) {
	integration(t)
	c := cluster.New(t, cluster.Options{})
	t.Logf("1 node: Start to ready in %s", c.Ready.Round(time.Millisecond))

	v, err := c.Client().Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("server version = %q, want v1.37.2 (hack/build.sh sets it with -ldflags)", v.GitVersion)
	}
	nodes, err := c.Client().CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	if got := len(nodes.Items); got != 1 {
		t.Errorf("%d nodes, want 1", got)
	}
	for _, l := range []string{c.Server, c.Kubeconfig} {
		if l == "" {
			t.Errorf("empty Server or Kubeconfig: %+v", c)
		}
	}
	if _, err := os.Stat(c.Kubeconfig); err != nil {
		t.Errorf("kubeconfig: %v", err)
	}

	// Stop stops every process it started and removes the data.
	stopChecked(t, c, cluster.Etcd, cluster.KubeAPIServer, cluster.KubeControllerManager, cluster.KubeScheduler, cluster.Kwok)
	if os.Getenv(cluster.KeepEnv) != "1" {
		if _, err := os.Stat(c.Dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cluster directory %s still there after Stop (stat: %v)", c.Dir, err)
		}
	}
}

// stopChecked stops the cluster and checks that the named processes ran
// before and that none of its processes exists after.
func stopChecked(t *testing.T, c *cluster.Cluster, names ...string) {
	t.Helper()
	pids := c.Pids()
	for _, name := range names {
		if pids[name] == 0 {
			t.Errorf("no pid for %s: %v", name, pids)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after Stop: kill(0) = %v", name, pid, err)
		}
	}
}

func TestPods(t *testing.T) {
	integration(t)
	c := cluster.New(t, cluster.Options{Nodes: 2, AuditPolicy: auditPolicy})
	client := c.Client()

	t.Run("scheduled, running, deleted", func(t *testing.T) {
		ctx := t.Context()
		w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Stop()
		createPod(t, client, pod("web", nil, nil))
		p := waitPod(t, client, "web", "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		if !slices.Contains(c.Nodes, p.Spec.NodeName) {
			t.Errorf("spec.nodeName = %q, want one of %v", p.Spec.NodeName, c.Nodes)
		}
		if p.Status.PodIP == "" || p.Status.HostIP == "" {
			t.Errorf("podIP %q hostIP %q, want both set", p.Status.PodIP, p.Status.HostIP)
		}

		// The binding and the status updates come from the scheduler's and
		// kwok's own identities, not from the admin.
		waitAudit(t, c, "binding by system:kube-scheduler", func(e auditEvent) bool {
			return e.ObjectRef.Name == "web" && e.ObjectRef.Subresource == "binding" && e.Verb == "create" &&
				e.User.Username == "system:kube-scheduler" && e.ResponseStatus.Code == 201
		})
		waitAudit(t, c, "status patch by kwok", func(e auditEvent) bool {
			return e.ObjectRef.Name == "web" && e.ObjectRef.Subresource == "status" && e.Verb == "patch" &&
				e.User.Username == cluster.KwokUser && e.ResponseStatus.Code == 200
		})

		if err := client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		// Before it goes, the pod is seen Terminating with its containers
		// stopped, as a kubelet reports them.
		var terminated bool
		for ev := range watchUntilDeleted(t, w) {
			p := ev.Object.(*corev1.Pod)
			if p.DeletionTimestamp != nil && allTerminated(p) && !podReady(p) {
				terminated = true
				if p.Status.Phase != corev1.PodSucceeded || p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 0 {
					t.Errorf("deleted pod: phase %s, containers %s; want Succeeded, exit code 0", p.Status.Phase, containers(p))
				}
			}
		}
		if !terminated {
			t.Errorf("pod deleted without a revision showing it Terminating with its containers terminated")
		}
		waitGone(t, client, "web")
	})

	t.Run("finalizer holds a terminated pod", func(t *testing.T) {
		ctx := t.Context()
		const hold = "example.com/hold"
		// Killed after its grace period: exit code 137, phase Failed.
		createPod(t, client, pod("held", map[string]string{"podtrace.dev/exit-code-on-delete": "137"}, []string{hold}))
		waitPod(t, client, "held", "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		if err := client.CoreV1().Pods("default").Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		p := waitPod(t, client, "held", "Terminating, containers terminated (0/1), Ready False", func(p *corev1.Pod) bool {
			return p.DeletionTimestamp != nil && allTerminated(p) && !podReady(p)
		})
		if p.Status.Phase != corev1.PodFailed || p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 137 {
			t.Errorf("phase %s, containers %s; want Failed, exit code 137", p.Status.Phase, containers(p))
		}
		// kwok neither deletes it nor touches the finalizer.
		time.Sleep(2 * time.Second)
		p = getPod(t, client, "held")
		if !slices.Equal(p.Finalizers, []string{hold}) {
			t.Errorf("finalizers = %v, want [%s]", p.Finalizers, hold)
		}
		patch := fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, hold)
		if _, err := client.CoreV1().Pods("default").Patch(ctx, "held", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("remove finalizer: %v", err)
		}
		waitGone(t, client, "held")
	})

	for _, tc := range []struct {
		outcome  string
		phase    corev1.PodPhase
		exitCode int32
	}{
		{"succeeded", corev1.PodSucceeded, 0},
		{"failed", corev1.PodFailed, 1},
	} {
		t.Run("complete "+tc.outcome, func(t *testing.T) {
			name := "complete-" + tc.outcome
			p := pod(name, map[string]string{"podtrace.dev/complete": tc.outcome}, nil)
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			createPod(t, client, p)
			got := waitPod(t, client, name, "phase "+string(tc.phase), func(p *corev1.Pod) bool {
				return p.Status.Phase == tc.phase
			})
			if !allTerminated(got) || podReady(got) {
				t.Errorf("containers %+v, want terminated and not ready", got.Status.ContainerStatuses)
			}
			if code := got.Status.ContainerStatuses[0].State.Terminated.ExitCode; code != tc.exitCode {
				t.Errorf("exit code %d, want %d", code, tc.exitCode)
			}
		})
	}

	t.Run("image pull fails", func(t *testing.T) {
		ctx := t.Context()
		createPod(t, client, pod("nopull", map[string]string{"podtrace.dev/image-pull": "fail"}, nil))
		p := waitPod(t, client, "nopull", "ImagePullBackOff", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ImagePullBackOff"
		})
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", p.Status.Phase)
		}
		want := `Failed to pull image "registry.example/app:1"`
		var found bool
		for range 50 {
			events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nopull"})
			if err != nil {
				t.Fatalf("list events: %v", err)
			}
			for _, e := range events.Items {
				if e.Type == corev1.EventTypeWarning && e.Reason == "Failed" && strings.HasPrefix(e.Message, want) && e.InvolvedObject.UID == p.UID {
					found = true
				}
			}
			if found {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !found {
			t.Errorf("no Warning event Failed %q... for the pod", want)
		}
		if err := client.CoreV1().Pods("default").Delete(ctx, "nopull", metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		waitGone(t, client, "nopull")
	})

	t.Run("init containers", func(t *testing.T) {
		p := pod("init", nil, nil)
		p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "registry.example/setup:1"}}
		createPod(t, client, p)
		got := waitPod(t, client, "init", "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		ics := got.Status.InitContainerStatuses
		if len(ics) != 1 || ics[0].State.Terminated == nil || ics[0].State.Terminated.Reason != "Completed" {
			t.Errorf("init containers %+v, want setup terminated Completed", ics)
		}
	})

	t.Run("job completes", func(t *testing.T) {
		ctx := t.Context()
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default"},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.example/job:1"}},
			}}},
		}
		if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create job: %v", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			j, err := client.BatchV1().Jobs("default").Get(ctx, "once", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get job: %v", err)
			}
			if j.Status.Succeeded == 1 && slices.ContainsFunc(j.Status.Conditions, func(c batchv1.JobCondition) bool {
				return c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue
			}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job not complete after 30s: %+v", j.Status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

func TestNodeLoss(t *testing.T) {
	integration(t)
	c := cluster.New(t, cluster.Options{NodeMonitorGracePeriod: 10 * time.Second})
	client := c.Client()
	ctx := t.Context()
	k, err := c.StartKwok(ctx, "doomed")
	if err != nil {
		t.Fatalf("start kwok: %v", err)
	}
	p := pod("stranded", nil, nil)
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "doomed"}
	createPod(t, client, p)
	waitPod(t, client, "stranded", "Running and Ready on doomed", func(p *corev1.Pod) bool {
		return p.Spec.NodeName == "doomed" && podReady(p)
	})

	k.Kill()
	if k.Pid() != 0 {
		t.Errorf("kwok for doomed still running after Kill")
	}
	// The node lifecycle controller notices the silence, marks the node
	// Unknown and its pod not ready.
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, "doomed", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node: %v", err)
		}
		if nodeCondition(n, corev1.NodeReady) == corev1.ConditionUnknown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node doomed still %s 60s after its kwok was killed", nodeCondition(n, corev1.NodeReady))
		}
		time.Sleep(500 * time.Millisecond)
	}
	waitPod(t, client, "stranded", "Ready False after node loss", func(p *corev1.Pod) bool { return !podReady(p) })
	// The other node is unaffected.
	n, err := client.CoreV1().Nodes().Get(ctx, c.Nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	if got := nodeCondition(n, corev1.NodeReady); got != corev1.ConditionTrue {
		t.Errorf("node %s Ready=%s, want True", c.Nodes[0], got)
	}
}

// TestRestartAPIServer restarts the API server twice, once running and once
// after it died, and checks that the cluster carries on with its data and
// that Stop stops the new process.
func TestRestartAPIServer(t *testing.T) {
	integration(t)
	c := cluster.New(t, cluster.Options{})
	client := c.Client()
	ctx := t.Context()
	createPod(t, client, pod("before", nil, nil))
	waitPod(t, client, "before", "Running and Ready", podReady)
	names := slices.Sorted(maps.Keys(c.Pids()))

	restart := func(how string) {
		t.Helper()
		old := c.Pid(cluster.KubeAPIServer)
		if old == 0 {
			t.Fatalf("%s: no kube-apiserver pid", how)
		}
		if err := c.RestartAPIServer(ctx); err != nil {
			t.Fatalf("%s: RestartAPIServer: %v", how, err)
		}
		pid := c.Pid(cluster.KubeAPIServer)
		if pid == 0 || pid == old {
			t.Errorf("%s: kube-apiserver pid %d after restart, was %d", how, pid, old)
		}
		if err := syscall.Kill(old, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: the old kube-apiserver (pid %d) still exists: kill(0) = %v", how, old, err)
		}
		if got := slices.Sorted(maps.Keys(c.Pids())); !slices.Equal(got, names) {
			t.Errorf("%s: running components %v, want %v", how, got, names)
		}
		if _, err := client.CoreV1().Pods("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the pod created before the restart: %v", how, err)
		}
	}
	restart("running")
	// The controllers, scheduler and kwok reconnected.
	createPod(t, client, pod("after", nil, nil))
	waitPod(t, client, "after", "Running and Ready", podReady)

	if err := syscall.Kill(c.Pid(cluster.KubeAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	restart("killed")

	log, err := os.ReadFile(c.LogFile(cluster.KubeAPIServer))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for line := range strings.Lines(string(log)) {
		if strings.HasPrefix(line, "+ ") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) != 3 || cmds[1] != cmds[0] || cmds[2] != cmds[0] {
		t.Errorf("kube-apiserver command lines in its log, want the same 3 times:\n%s", strings.Join(cmds, ""))
	}

	pids := c.Pids()
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for name, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) still exists after Stop: kill(0) = %v", name, pid, err)
		}
	}
	if err := c.RestartAPIServer(ctx); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Errorf("RestartAPIServer after Stop: %v, want an error saying the cluster is stopped", err)
	}
}

func TestStartErrors(t *testing.T) {
	// Neither case needs the binaries: Start checks ports, then binaries,
	// before it starts anything.
	fakeBins := func(t *testing.T, names ...string) string {
		dir := t.TempDir()
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Run("missing binaries", func(t *testing.T) {
		_, err := cluster.Start(t.Context(), cluster.Options{BinDir: fakeBins(t, "etcd", "kube-scheduler")})
		if !errors.Is(err, cluster.ErrMissingBinaries) {
			t.Fatalf("err = %v, want ErrMissingBinaries", err)
		}
		t.Log(err)
		for _, want := range []string{"kube-apiserver, kube-controller-manager, kwok", "make cluster-binaries"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if strings.Contains(err.Error(), "etcd") {
			t.Errorf("error %q names etcd, which is there", err)
		}
	})
	t.Run("missing binary directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nothing-here")
		_, err := cluster.Start(t.Context(), cluster.Options{BinDir: dir})
		if !errors.Is(err, cluster.ErrMissingBinaries) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("err = %v, want ErrMissingBinaries naming %s", err, dir)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		all := fakeBins(t, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
		_, err = cluster.Start(t.Context(), cluster.Options{BinDir: all, Ports: cluster.Ports{APIServer: port}})
		if !errors.Is(err, cluster.ErrPortInUse) {
			t.Fatalf("err = %v, want ErrPortInUse", err)
		}
		t.Log(err)
		for _, want := range []string{"127.0.0.1:" + strconv.Itoa(port), "kube-apiserver", "Options.Ports.APIServer"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
	})
	t.Run("same port twice", func(t *testing.T) {
		_, err := cluster.Start(t.Context(), cluster.Options{BinDir: t.TempDir(), Ports: cluster.Ports{EtcdClient: 40001, Scheduler: 40001}})
		if err == nil || !strings.Contains(err.Error(), "EtcdClient") || !strings.Contains(err.Error(), "Scheduler") {
			t.Fatalf("err = %v, want an error naming both ports", err)
		}
	})
	t.Run("port taken while starting", func(t *testing.T) {
		// An etcd that finds its port taken, as a component does when
		// someone binds the port between picking and starting: Start begins
		// again with other ports, three times in all, then says why.
		dir := fakeBins(t, "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
		count := filepath.Join(t.TempDir(), "starts")
		script := "#!/bin/sh\necho start >> " + count + "\necho 'listen tcp 127.0.0.1:1: bind: address already in use'\nexit 1\n"
		if err := os.WriteFile(filepath.Join(dir, "etcd"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		var retries int
		_, err := cluster.Start(t.Context(), cluster.Options{
			BinDir:  dir,
			Timeout: 20 * time.Second,
			Logf: func(format string, args ...any) {
				if strings.Contains(format, "starting again with other ports") {
					retries++
				}
			},
		})
		if err == nil || !strings.Contains(err.Error(), "port taken") {
			t.Fatalf("err = %v, want etcd's port taken", err)
		}
		b, _ := os.ReadFile(count)
		if starts := strings.Count(string(b), "start"); starts != 3 || retries != 2 {
			t.Errorf("etcd started %d times with %d retries logged, want 3 starts and 2 retries", starts, retries)
		}
	})
	t.Run("failing component", func(t *testing.T) {
		// Binaries that exit at once: Start says which and quotes its log.
		_, err := cluster.Start(t.Context(), cluster.Options{
			BinDir:  fakeBins(t, "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"),
			Timeout: 20 * time.Second,
		})
		if err == nil || !strings.Contains(err.Error(), "etcd exited") || !strings.Contains(err.Error(), "last ") {
			t.Fatalf("err = %v, want etcd exited with its log tail", err)
		}
		t.Log(err)
	})
}

func pod(name string, annotations map[string]string, finalizers []string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations, Finalizers: finalizers},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}},
		},
	}
}

func createPod(t *testing.T, client kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", p.Name, err)
	}
}

func getPod(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return p
}

// waitPod polls pod name until ok, for up to 30s.
func waitPod(t *testing.T, client kubernetes.Interface, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := getPod(t, client, name)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not %s after 30s: phase %s, deletion %v, finalizers %v, containers %s",
				name, what, p.Status.Phase, p.DeletionTimestamp, p.Finalizers, containers(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitGone(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := client.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatalf("get pod %s: %v", name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still there 30s after deletion: phase %s, finalizers %v, containers %s",
				name, p.Status.Phase, p.Finalizers, containers(p))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watchUntilDeleted yields the watch events up to the pod's deletion.
func watchUntilDeleted(t *testing.T, w watch.Interface) func(func(watch.Event) bool) {
	return func(yield func(watch.Event) bool) {
		timeout := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Errorf("watch closed before the pod was deleted")
					return
				}
				if _, isPod := ev.Object.(*corev1.Pod); !isPod {
					t.Errorf("watch: %v %T", ev.Type, ev.Object)
					return
				}
				if !yield(ev) || ev.Type == watch.Deleted {
					return
				}
			case <-timeout:
				t.Errorf("pod not deleted within 30s")
				return
			}
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func allTerminated(p *corev1.Pod) bool {
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated == nil || cs.Ready {
			return false
		}
	}
	return true
}

func containers(p *corev1.Pod) string {
	var s []string
	for _, cs := range p.Status.ContainerStatuses {
		state := "?"
		switch {
		case cs.State.Waiting != nil:
			state = "waiting " + cs.State.Waiting.Reason
		case cs.State.Running != nil:
			state = "running"
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("terminated %s (%d)", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
		}
		s = append(s, fmt.Sprintf("%s: %s ready=%t", cs.Name, state, cs.Ready))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests look at.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// waitAudit waits up to 10s for an audit event matching ok.
func waitAudit(t *testing.T, c *cluster.Cluster, what string, ok func(auditEvent) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var users []string
	for ctx.Err() == nil {
		f, err := os.Open(c.AuditLog)
		if err != nil {
			t.Fatalf("audit log: %v", err)
		}
		users = users[:0]
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e auditEvent
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatalf("audit log line %q: %v", sc.Text(), err)
			}
			if ok(e) {
				f.Close()
				return
			}
			if e.ObjectRef.Resource == "pods" {
				users = append(users, fmt.Sprintf("%s %s/%s by %s: %d", e.Verb, e.ObjectRef.Name, e.ObjectRef.Subresource, e.User.Username, e.ResponseStatus.Code))
			}
		}
		f.Close()
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("no audit event: %s; pod requests seen:\n%s", what, strings.Join(users, "\n"))
}
