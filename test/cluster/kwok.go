package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KwokProcess is a kwok process of its own that manages a set of nodes. Kill
// it and its nodes stop renewing their leases, as when a machine is lost:
// after the node monitor grace period the node lifecycle controller marks them
// NotReady and taints them, and their pods, once deleted, stay Terminating
// because no kubelet confirms.
type KwokProcess struct {
	// Name is the process's log name in LogDir: kwok-<group>.
	Name string
	// Nodes are the nodes it manages.
	Nodes []string
	proc  *process
}

// Pid returns the process id, or 0 once it has exited.
func (k *KwokProcess) Pid() int {
	if done, _ := k.proc.exited(); done {
		return 0
	}
	return k.proc.Pid()
}

// Kill kills the process at once (SIGKILL), without letting it release its
// node leases.
func (k *KwokProcess) Kill() { k.proc.kill() }

// Stop stops the process: SIGTERM, then SIGKILL after a few seconds.
func (k *KwokProcess) Stop() { k.proc.stop(5 * time.Second) }

// StartKwok creates the named nodes and starts a kwok process of their own to
// manage them, and returns once they are Ready. The cluster's Stop stops it
// too.
func (c *Cluster) StartKwok(ctx context.Context, nodes ...string) (*KwokProcess, error) {
	if len(nodes) == 0 {
		return nil, errors.New("start kwok: name at least one node for it to manage")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	c.mu.Lock()
	c.extraKwoks++
	group := "extra-" + strconv.Itoa(c.extraKwoks)
	c.mu.Unlock()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := c.createNamedNodes(ctx, group, nodes); err != nil {
		return nil, err
	}
	name := Kwok + "-" + group
	p, err := c.startKwok(ctx, name, group, port)
	if err != nil {
		return nil, err
	}
	k := &KwokProcess{Name: name, Nodes: nodes, proc: p}
	if err := c.waitNodesReady(ctx, name, nodes); err != nil {
		k.Stop()
		return nil, err
	}
	return k, nil
}

// startKwok starts a kwok process named name (its log name) managing the
// nodes annotated with group, serving /healthz on port.
func (c *Cluster) startKwok(ctx context.Context, name, group string, port int) (*process, error) {
	home := filepath.Join(c.Dir, name+"-home")
	// kwok also reads ~/.kwok/kwok.yaml: give it a home of its own.
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig", filepath.Join(c.Dir, Kwok+".kubeconfig"),
		"--manage-nodes-with-annotation-selector", NodeAnnotation + "=" + group,
		"--server-address", hostPort(port),
		"--node-lease-duration-seconds", strconv.Itoa(c.leaseSeconds()),
	}
	for _, stage := range c.stages {
		args = append(args, "--config", stage)
	}
	p, err := c.start(name, c.bins[Kwok], args, []string{"HOME=" + home})
	if err != nil {
		return nil, err
	}
	err = c.waitUntil(ctx, name, name+" /healthz", func(ctx context.Context) (bool, error) {
		_, err := httpGet(ctx, http.DefaultClient, "http://"+hostPort(port)+"/healthz")
		return err == nil, err
	})
	return p, err
}

// leaseSeconds is how long a kwok node lease lasts; kwok renews it every
// quarter of that, well within the node monitor grace period.
func (c *Cluster) leaseSeconds() int {
	const kubeletDefault = 40
	g := int(c.opts.NodeMonitorGracePeriod / time.Second)
	if g <= 0 || g >= kubeletDefault {
		return kubeletDefault
	}
	return max(g, 4)
}

// setupKwokAccess lets the user kwok do what a kubelet does to nodes, pods,
// events and node leases, through the ClusterRole podtrace:kwok.
func (c *Cluster) setupKwokAccess(ctx context.Context) error {
	const name = "podtrace:kwok"
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: append(read, "update", "patch")},
			{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"get", "update", "patch"}},
			// kwok deletes a pod, as a kubelet confirms a deletion, once it
			// has no finalizers; it never adds nor removes finalizers.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: append(read, "delete")},
			{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"get", "update", "patch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: append(read, "create", "update", "patch")},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: append(read, "create", "update", "patch", "delete")},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: KwokUser}},
	}
	client := c.setupClient()
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRole %s for kwok: %w", name, err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s for kwok: %w", name, err)
	}
	return nil
}

// createNodes creates n nodes named kwok-node-<i> for the kwok process group.
func (c *Cluster) createNodes(ctx context.Context, group string, n int) ([]string, error) {
	var names []string
	c.mu.Lock()
	for i := range max(n, 0) {
		names = append(names, "kwok-node-"+strconv.Itoa(c.nodeCount+i))
	}
	c.mu.Unlock()
	return names, c.createNamedNodes(ctx, group, names)
}

// createNamedNodes creates nodes annotated for the kwok process group, as a
// kubelet registers its node: labels, addresses (127.0.1.<i>, loopback),
// capacity, a pod CIDR of their own (10.244.<i>.0/24).
func (c *Cluster) createNamedNodes(ctx context.Context, group string, names []string) error {
	alloc := c.opts.NodeAllocatable
	if len(alloc) == 0 {
		alloc = defaultAllocatable()
	}
	client := c.setupClient()
	for _, name := range names {
		c.mu.Lock()
		i := c.nodeCount
		c.nodeCount++
		c.mu.Unlock()
		if i > 250 {
			return fmt.Errorf("create node %s: a local cluster has at most 250 nodes", name)
		}
		cidr := fmt.Sprintf("10.244.%d.0/24", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{
					"kubernetes.io/hostname": name,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					"type":                   "kwok",
				},
				Annotations: map[string]string{
					NodeAnnotation:                 group,
					"node.alpha.kubernetes.io/ttl": "0",
				},
			},
			Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
			Status: corev1.NodeStatus{
				Capacity:    alloc.DeepCopy(),
				Allocatable: alloc.DeepCopy(),
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("127.0.1.%d", i+1)},
					{Type: corev1.NodeHostName, Address: name},
				},
			},
		}
		created, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: it exists already; give the new nodes other names", name)
		}
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		if len(created.Status.Allocatable) == 0 {
			created.Status = node.Status
			if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("set status of node %s: %w", name, err)
			}
		}
	}
	return nil
}

// waitNodesReady waits for the named nodes to be Ready and rid of the
// not-ready taints; component names the kwok process responsible.
func (c *Cluster) waitNodesReady(ctx context.Context, component string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	what := "node"
	if len(names) > 1 {
		what += "s"
	}
	what += " " + strings.Join(names, ", ") + " Ready"
	return c.waitUntil(ctx, component, what, func(ctx context.Context) (bool, error) {
		for _, name := range names {
			n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !nodeReady(n) {
				return false, fmt.Errorf("node %s not ready: %s", name, describeNode(n))
			}
		}
		return true, nil
	})
}

// describeNode says why a node is not ready.
func describeNode(n *corev1.Node) string {
	ready := "Ready condition missing"
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = fmt.Sprintf("Ready=%s (%s)", cond.Status, cond.Reason)
		}
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		if slices.Contains(notReadyTaints, t.Key) {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
	}
	if len(taints) > 0 {
		ready += ", taints " + strings.Join(taints, " ")
	}
	return ready
}
