package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The real node's processes: each runs as <name>-<node> (its log name and
// its key in Pids).
const (
	Kubelet    = "kubelet"
	Containerd = "containerd"
)

// The real node's other files in the bin directory, built by
// hack/build-node.sh (`make node-binaries`).
const (
	containerdShim = "containerd-shim-runc-v2"
	ctrBinary      = "ctr"
	nodeImagesTar  = "node-images.tar"
)

// Images every real node has, imported from node-images.tar (built without
// a container engine by hack/image/nodeimages). Pods name them with
// imagePullPolicy Never or IfNotPresent: no registry is reachable.
const (
	// BusyboxImage is a static busybox with a link for each applet (sh,
	// sleep, wget, httpd...), PATH=/bin:/sbin:/usr/bin:/usr/sbin.
	BusyboxImage = "podtrace.local/busybox:1"
	// PauseImage is containerd's sandbox image: a static program that holds
	// the pod's namespaces, reaps zombies and exits on SIGTERM.
	PauseImage = "podtrace.local/pause:1"
)

// RealNodeLabel is set, to "true", on every real node.
const RealNodeLabel = "podtrace.dev/real-node"

// ErrNoRealNode wraps why this machine cannot run a real node at all (not
// Linux, not root, no cgroups, no address): tests that need one skip. A
// missing binary that `make node-binaries` builds is ErrMissingBinaries
// instead: those tests fail, saying so.
var ErrNoRealNode = errors.New("this machine cannot run a real node")

// cniPluginDir is where Debian's containernetworking-plugins installs them.
const cniPluginDir = "/usr/lib/cni"

// RealNode is a node of the cluster run by a real kubelet, with containerd
// and runc as its container runtime: real containers, cgroups, probes, OOM
// kills, graceful termination, logs and exec.
//
// Everything it writes is under Dir, except what the kernel and the kubelet
// keep elsewhere, which Stop undoes: its cgroups (CgroupRoot in every
// hierarchy), its network bridge, the sysctls the kubelet and the CNI bridge
// change, the libcni cache in /var/lib/cni, /var/lib/kubelet/device-plugins
// and containerd's shim sockets in /run/containerd. A machine-wide registry
// in /run/podtrace-nodes lets the next start clean up after a run that was
// killed before it could.
type RealNode struct {
	// Name is the node's name: real-node-<i>.
	Name string
	// IP is its InternalIP: the host's own address (loopback is refused).
	IP string
	// Dir holds its state: containerd, kubelet, CNI config and IPAM,
	// certificates, pod logs.
	Dir string
	// Subnet is the pod network, e.g. 10.89.3.0/24, on the bridge Bridge.
	Subnet string
	Bridge string
	// CgroupRoot is the kubelet's cgroupRoot: pods and containers live below.
	CgroupRoot string

	c       *Cluster
	host    nodeRecord
	kubelet []string // kubelet's command line, for StartKubelet
}

// KubeletName and ContainerdName are the node's process names (logs, Pids).
func (n *RealNode) KubeletName() string    { return Kubelet + "-" + n.Name }
func (n *RealNode) ContainerdName() string { return Containerd + "-" + n.Name }

// RealNodeSupport says whether this machine can run a real node with the
// binaries in binDir (empty: as Start looks for them): nil, an error wrapping
// ErrNoRealNode when it cannot at all, or one wrapping ErrMissingBinaries when
// `make node-binaries` would fix it.
func RealNodeSupport(binDir string) error {
	if err := hostSupport(); err != nil {
		return err
	}
	if binDir == "" {
		var err error
		if binDir, _, err = (Options{}).locate(); err != nil {
			return err
		}
	}
	var missing []string
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc (Debian package runc)")
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniPluginDir, p)); err != nil {
			missing = append(missing, "CNI plugin "+p+" (Debian package containernetworking-plugins)")
		}
	}
	if _, err := findBinaries(binDir, Kubelet, Containerd, containerdShim, ctrBinary); err != nil {
		missing = append(missing, strings.TrimPrefix(err.Error(), ErrMissingBinaries.Error()+": "))
	}
	if _, err := os.Stat(filepath.Join(binDir, nodeImagesTar)); err != nil {
		missing = append(missing, nodeImagesTar+" in "+binDir)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w for a real node: %s; run `make node-binaries` (hack/build-node.sh installs the Debian packages and builds the rest)",
			ErrMissingBinaries, strings.Join(missing, "; "))
	}
	return nil
}

// startRealNodes starts opts.RealNodes real nodes and waits for them to be
// Ready.
func (c *Cluster) startRealNodes(ctx context.Context) error {
	if c.opts.RealNodes <= 0 {
		return nil
	}
	if err := RealNodeSupport(c.binDir); err != nil {
		return err
	}
	if err := CleanStaleNodes(c.opts.Logf); err != nil {
		return err
	}
	for i := range c.opts.RealNodes {
		n, err := c.startRealNode(ctx, i)
		if n != nil {
			c.mu.Lock()
			c.RealNodes = append(c.RealNodes, n)
			c.mu.Unlock()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startRealNode starts containerd and a kubelet for node real-node-<i>.
func (c *Cluster) startRealNode(ctx context.Context, i int) (*RealNode, error) {
	name := "real-node-" + strconv.Itoa(i)
	ip, err := hostIP()
	if err != nil {
		return nil, err
	}
	n := &RealNode{Name: name, IP: ip, Dir: filepath.Join(c.Dir, "node-"+strconv.Itoa(i)), c: c}
	for _, d := range []string{"containerd/root", "containerd/state", "runc", "cni/conf", "cni/ipam", "kubelet", "pod-logs", "volume-plugins", "pki"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	// The machine-wide parts first: from here on Stop undoes them.
	rec, err := registerNode(n.Dir, filepath.Join(n.Dir, "containerd.sock"))
	if err != nil {
		return nil, err
	}
	n.host, n.Subnet, n.Bridge, n.CgroupRoot = rec, rec.Subnet, rec.Bridge, rec.CgroupRoot
	if err := createCgroupRoot(rec.CgroupRoot); err != nil {
		return n, err
	}
	if err := n.writeCNIConfig(); err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	if err := n.startKubelet(ctx); err != nil {
		return n, err
	}
	if err := c.waitNodesReady(ctx, n.KubeletName(), []string{name}); err != nil {
		return n, err
	}
	c.opts.Logf("cluster: real node %s Ready (address %s, pods on %s, bridge %s, cgroups %s)", name, ip, n.Subnet, n.Bridge, n.CgroupRoot)
	return n, nil
}

// writeCNIConfig writes the pod network: a bridge with the host as gateway
// (so that the kubelet reaches pods for probes), addresses from Subnet, no
// masquerading (nothing leaves the machine, and no iptables rules to undo).
func (n *RealNode) writeCNIConfig() error {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       n.host.Network,
		"plugins": []any{map[string]any{
			"type":        "bridge",
			"bridge":      n.Bridge,
			"isGateway":   true,
			"ipMasq":      false,
			"hairpinMode": true,
			"ipam": map[string]any{
				"type":    "host-local",
				"ranges":  [][]map[string]string{{{"subnet": n.Subnet}}},
				"dataDir": filepath.Join(n.Dir, "cni", "ipam"),
			},
		}},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.Dir, "cni", "conf", "10-podtrace.conflist"), data, 0o644)
}

// containerdConfig is containerd's configuration: every path under the
// node's directory, runc's oom_score_adj left alone (writing it needs
// CAP_SYS_RESOURCE, which containers on CI machines often lack), the pause
// image imported rather than pulled, and the plugins that would write
// outside the directory (NRI's socket, /opt/containerd) moved or off.
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %[3]q

[plugins.'io.containerd.internal.v1.opt']
  path = %[4]q

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[5]q

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[6]q
        Root = %[7]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[8]q]
    conf_dir = %[9]q

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`

// startContainerd starts containerd and imports the node's images.
func (n *RealNode) startContainerd(ctx context.Context) error {
	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("%w: runc: %v", ErrMissingBinaries, err)
	}
	sock := n.host.Address
	config := fmt.Sprintf(containerdConfig,
		filepath.Join(n.Dir, "containerd", "root"), filepath.Join(n.Dir, "containerd", "state"), sock,
		filepath.Join(n.Dir, "containerd", "opt"), PauseImage, runc, filepath.Join(n.Dir, "runc"),
		cniPluginDir, filepath.Join(n.Dir, "cni", "conf"))
	configFile := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return err
	}
	c := n.c
	bin := filepath.Join(c.binDir, Containerd)
	// The shim is found on PATH: ours first.
	env := []string{"PATH=" + c.binDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	p, err := c.start(n.ContainerdName(), bin, []string{"--config", configFile}, env)
	if err != nil {
		return err
	}
	if err := n.host.setPid(Containerd, p.Pid(), bin); err != nil {
		return err
	}
	if err := c.waitUntil(ctx, n.ContainerdName(), "containerd socket", func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "unix", sock)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}); err != nil {
		return err
	}
	began := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(c.binDir, ctrBinary), "--address", sock, "--namespace", "k8s.io",
		"images", "import", filepath.Join(c.binDir, nodeImagesTar)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s into containerd: %v\n%s", nodeImagesTar, err, out)
	}
	c.opts.Logf("cluster: %s: images %s, %s imported in %s", n.Name, BusyboxImage, PauseImage, time.Since(began).Round(time.Millisecond))
	return nil
}

// startKubelet writes the kubelet's identity and configuration and starts it.
func (n *RealNode) startKubelet(ctx context.Context) error {
	c := n.c
	pkiDir := filepath.Join(n.Dir, "pki")
	// Its own identity, as a node's: the Node authorizer and NodeRestriction
	// treat it as the kubelet of node Name, and a recording or an audit log
	// shows system:node:NAME.
	client, err := newCert(pkiDir, "kubelet-client", c.pki.clientCA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return err
	}
	serving, err := newCert(pkiDir, "kubelet-serving", c.pki.serverCA, &x509.Certificate{
		Subject:     pkix.Name{CommonName: n.Name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP(n.IP)},
		DNSNames:    []string{n.Name},
	})
	if err != nil {
		return err
	}
	kubeconfigFile := filepath.Join(n.Dir, "kubelet.kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig(c.Server, c.pki.serverCA.certPEM, client, "system:node:"+n.Name), 0o600); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	config := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            n.IP,
		"port":               port,
		"readOnlyPort":       0,
		"healthzBindAddress": "127.0.0.1",
		"healthzPort":        healthz,
		"tlsCertFile":        serving.certFile,
		"tlsPrivateKeyFile":  serving.keyFile,
		// Only the API server (its kubelet client certificate, from the
		// cluster's client CA) talks to the kubelet: logs, exec.
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": c.pki.clientCA.certFile},
		},
		"authorization":            map[string]any{"mode": "AlwaysAllow"},
		"containerRuntimeEndpoint": "unix://" + n.host.Address,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               n.CgroupRoot,
		"cgroupsPerQOS":            true,
		"enforceNodeAllocatable":   []string{},
		"failSwapOn":               false,
		// The kubelet's own oom_score_adj (-999 by default) needs
		// CAP_SYS_RESOURCE.
		"oomScoreAdj":     0,
		"podLogsDir":      filepath.Join(n.Dir, "pod-logs"),
		"volumePluginDir": filepath.Join(n.Dir, "volume-plugins"),
		// No eviction, no image garbage collection on a test machine's disk.
		"evictionHard": map[string]string{
			"memory.available": "1Mi", "nodefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.available": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"serializeImagePulls":         false,
		// A cluster's DNS address, as every real cluster gives its kubelets:
		// without one the kubelet warns (MissingClusterDNS) on every pod
		// with the default dnsPolicy. No DNS server answers there; the
		// test images resolve no names.
		"clusterDNS":    []string{clusterDNS},
		"clusterDomain": "cluster.local",
	}
	if cgroupV1() {
		config["failCgroupV1"] = false
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return err
	}
	configFile := filepath.Join(n.Dir, "kubelet.json")
	if err := os.WriteFile(configFile, data, 0o644); err != nil {
		return err
	}
	n.kubelet = []string{
		"--config", configFile,
		"--kubeconfig", kubeconfigFile,
		"--root-dir", filepath.Join(n.Dir, "kubelet"),
		"--cert-dir", pkiDir,
		"--hostname-override", n.Name,
		"--node-ip", n.IP,
		"--node-labels", RealNodeLabel + "=true",
		"--v", "2",
	}
	if err := n.runKubelet(); err != nil {
		return err
	}
	return c.waitUntil(ctx, n.KubeletName(), "kubelet /healthz", func(ctx context.Context) (bool, error) {
		_, err := httpGet(ctx, http.DefaultClient, "http://"+hostPort(healthz)+"/healthz")
		return err == nil, err
	})
}

// kubeletEnv is the kubelet's environment: a PATH without sbin, so that it
// finds no iptables and leaves the host's firewall alone (the chains it would
// create are for kube-proxy, which a test node does not run); mount and
// umount are in /usr/bin.
var kubeletEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// runKubelet starts the kubelet process.
func (n *RealNode) runKubelet() error {
	bin := filepath.Join(n.c.binDir, Kubelet)
	p, err := n.c.start(n.KubeletName(), bin, n.kubelet, kubeletEnv)
	if err != nil {
		return err
	}
	return n.host.setPid(Kubelet, p.Pid(), bin)
}

// StopKubelet stops the node's kubelet (SIGTERM, then SIGKILL after 10s):
// its containers go on running, unwatched, and nothing confirms a deletion;
// the node stays Ready until the node monitor grace period passes.
func (n *RealNode) StopKubelet() {
	n.c.mu.Lock()
	p := n.c.procs[n.KubeletName()]
	n.c.mu.Unlock()
	if p != nil {
		p.stop(10 * time.Second)
	}
}

// StartKubelet starts the node's kubelet again after StopKubelet, with the
// same command line, and waits for the node to be Ready.
func (n *RealNode) StartKubelet(ctx context.Context) error {
	if err := n.runKubelet(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.c.opts.Timeout)
	defer cancel()
	return n.c.waitNodesReady(ctx, n.KubeletName(), []string{n.Name})
}

// Pods returns the pods bound to the node.
func (n *RealNode) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := n.c.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// realNodeDrainTimeout bounds how long Stop waits for the pods of a real node
// to be gone before it stops the kubelet anyway.
const realNodeDrainTimeout = 30 * time.Second

// stop deletes the node's pods (so that the kubelet stops their containers
// and the CNI plugin tears their network down), stops the kubelet and
// containerd, then undoes everything on the host: leftover shims and
// container processes, mounts under Dir, cgroups, the bridge, the libcni
// cache, and, once no other real node runs on the machine, the sysctls and
// the directories the first one created. It returns what it could not undo.
func (n *RealNode) stop() error {
	c := n.c
	if c.Pid(n.KubeletName()) != 0 && c.Pid(KubeAPIServer) != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), realNodeDrainTimeout)
		if err := n.drain(ctx); err != nil {
			c.opts.Logf("cluster: %s: %v; its containers are killed instead", n.Name, err)
		}
		cancel()
	}
	c.mu.Lock()
	kubelet, containerd := c.procs[n.KubeletName()], c.procs[n.ContainerdName()]
	c.mu.Unlock()
	if kubelet != nil {
		kubelet.stop(10 * time.Second)
	}
	if containerd != nil {
		containerd.stop(10 * time.Second)
	}
	return cleanNode(n.host, c.opts.Logf)
}

// drain deletes the node's pods, with a short grace period, and waits for
// them to be gone.
func (n *RealNode) drain(ctx context.Context) error {
	grace := int64(1)
	pods, err := n.pods(ctx)
	if err != nil {
		return fmt.Errorf("list its pods: %w", err)
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		err := n.c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	for {
		pods, err := n.pods(ctx)
		if err == nil && len(pods) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			var left []string
			for _, p := range pods {
				left = append(left, p.Namespace+"/"+p.Name)
			}
			return fmt.Errorf("pods still there after %s: %s", realNodeDrainTimeout, strings.Join(left, ", "))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stopRealNodes stops every real node, at once.
func (c *Cluster) stopRealNodes() error {
	c.mu.Lock()
	nodes := c.RealNodes
	c.mu.Unlock()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = n.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
