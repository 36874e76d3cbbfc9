package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/test/cluster"
)

// killedHelperEnv makes the test binary the process that TestRealNodeKilled
// kills: it starts a cluster with a real node running a pod, prints the
// node's registry entry, and waits to be killed.
const killedHelperEnv = "PODTRACE_TEST_KILLED_REAL_NODE"

// TestRealNodeKilled kills (SIGKILL) a process whose real node runs a pod,
// so that nothing is stopped nor undone: the shim and the container go on
// running, mounts, cgroups and the bridge stay. The next start cleans up
// after it (CleanStaleNodes, which Start runs before starting real nodes),
// and nothing is left.
func TestRealNodeKilled(t *testing.T) {
	if os.Getenv(killedHelperEnv) == "1" {
		killedHelper()
		return
	}
	integration(t)
	if err := cluster.RealNodeSupport(""); errors.Is(err, cluster.ErrNoRealNode) {
		t.Skipf("skipped: %v", err)
	}
	before := cluster.SnapshotHost()

	cmd := exec.Command(os.Args[0], "-test.run=^TestRealNodeKilled$", "-test.v")
	cmd.Env = append(os.Environ(), killedHelperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	rec := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if r, ok := strings.CutPrefix(line, "NODE "); ok {
				rec <- r
			}
		}
		close(rec)
	}()
	var record string
	select {
	case r, ok := <-rec:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("the helper ended without starting its node:\n%s", log.String())
		}
		record = r
	case <-time.After(3 * time.Minute):
		t.Fatalf("the helper did not start its node within 3 minutes:\n%s", log.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true

	// The rest of the killed cluster's directory (etcd, logs) is the
	// test's to remove; CleanStaleNodes removes the node's.
	var where struct{ Dir string }
	if err := json.Unmarshal([]byte(record), &where); err != nil || where.Dir == "" {
		t.Fatalf("registry entry %s: %v", record, err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(where.Dir)) })

	// The killed process's node left its traces...
	left, err := cluster.LeftoversOf([]byte(record))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("left by the killed process:\n%s", strings.Join(left, "\n"))
	for _, want := range []string{"shim process", "mount ", "cgroup ", "network interface ", "registry entry "} {
		if !strings.Contains(strings.Join(left, "\n"), want) {
			t.Errorf("nothing like %q left by the killed process: the test does not test the clean-up", want)
		}
	}
	// ...which the next start removes.
	if err := cluster.CleanStaleNodes(t.Logf); err != nil {
		t.Fatalf("clean stale nodes: %v", err)
	}
	left, _ = cluster.LeftoversOf([]byte(record))
	if len(left) > 0 {
		t.Errorf("left on the machine after CleanStaleNodes:\n%s", strings.Join(left, "\n"))
	}
	if cluster.OtherRealNodes() {
		t.Logf("another real node runs on this machine: its sysctls and paths are not compared")
	} else if changes := before.Changes(); len(changes) > 0 {
		t.Errorf("the machine differs from before the killed cluster:\n%s", strings.Join(changes, "\n"))
	}
}

// killedHelper starts a cluster with a real node running a pod, prints the
// node's registry entry and waits to be killed; it never stops the cluster.
func killedHelper() {
	fail := func(err error) {
		fmt.Println("FAILED", err)
		os.Exit(1)
	}
	ctx := context.Background()
	c, err := cluster.Start(ctx, cluster.Options{RealNodes: 1, NoSignalHandler: true, Logf: func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}})
	if err != nil {
		fail(err)
	}
	n := c.RealNodes[0]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "left", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName: n.Name, DNSPolicy: corev1.DNSDefault,
			Containers: []corev1.Container{{Name: "main", Image: cluster.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "3600"}}},
		},
	}
	if _, err := c.Client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		fail(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := c.Client().CoreV1().Pods("default").Get(ctx, "left", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("pod not Running after a minute: %v", err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	rec, err := n.RecordJSON()
	if err != nil {
		fail(err)
	}
	fmt.Println("NODE " + string(rec))
	select {}
}
