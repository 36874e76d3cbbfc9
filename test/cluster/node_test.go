package cluster_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/test/cluster"
)

// TestRealNode starts a cluster with a real node beside a kwok node, runs a
// pod on it (logs and exec through the API server, as kubectl does them),
// stops the cluster and checks that nothing is left on the machine.
func TestRealNode(t *testing.T) {
	integration(t)
	before := cluster.SnapshotHost()
	c := cluster.New(t, cluster.Options{RealNodes: 1})
	if len(c.RealNodes) != 1 {
		t.Fatalf("%d real nodes, want 1", len(c.RealNodes))
	}
	n := c.RealNodes[0]
	client := c.Client()
	ctx := t.Context()

	node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[cluster.RealNodeLabel]; got != "true" {
		t.Errorf("node %s label %s = %q, want true", n.Name, cluster.RealNodeLabel, got)
	}
	if v := node.Status.NodeInfo.KubeletVersion; v != "v1.37.2" {
		t.Errorf("kubelet version %q, want v1.37.2 (hack/build-node.sh sets it with -ldflags)", v)
	}
	if rt := node.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://") {
		t.Errorf("container runtime %q, want containerd://...", rt)
	}
	// The node's status is the kubelet's, written as system:node:NAME.
	if m := managers(node.ManagedFields); !strings.Contains(m, "kubelet") {
		t.Errorf("node managers %s, want the kubelet's", m)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:      n.Name,
			DNSPolicy:     corev1.DNSDefault,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: cluster.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "echo hello from $(hostname); trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPod(t, client, "hello", "Ready", podReady)
	if running.Status.PodIP == "" || !strings.HasPrefix(running.Status.PodIP, strings.TrimSuffix(n.Subnet, "0/24")) {
		t.Errorf("pod IP %q, want one in %s", running.Status.PodIP, n.Subnet)
	}
	logs, err := client.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).Do(ctx).Raw()
	if err != nil {
		t.Fatalf("logs through the API server: %v", err)
	}
	if !strings.Contains(string(logs), "hello from hello") {
		t.Errorf("logs %q, want the container's greeting", logs)
	}

	// Stop: the pod is deleted first (the container exits on TERM), then
	// everything goes, and nothing of the node is left on the machine.
	stopChecked(t, c, n.KubeletName(), n.ContainerdName())
	if left := n.Leftovers(); len(left) > 0 {
		t.Errorf("left on the machine by %s:\n%s", n.Name, strings.Join(left, "\n"))
	}
	if cluster.OtherRealNodes() {
		t.Logf("another real node runs on this machine: its sysctls and paths are not compared")
	} else if changes := before.Changes(); len(changes) > 0 {
		t.Errorf("the machine differs from before the cluster:\n%s", strings.Join(changes, "\n"))
	}
}

// managers lists the field managers of an object.
func managers(fields []metav1.ManagedFieldsEntry) string {
	var m []string
	for _, f := range fields {
		m = append(m, f.Manager+"/"+string(f.Operation))
	}
	return strings.Join(m, ", ")
}
