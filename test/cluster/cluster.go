package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Component names: each is the binary's name in the bin directory and the
// name of its log in LogDir (<name>.log).
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

const (
	// KeepEnv, set to 1, keeps the data directory (logs, etcd, certificates)
	// after Stop, like Options.KeepDir.
	KeepEnv = "PODTRACE_KEEP_CLUSTER"
	// BinDirEnv overrides where the binaries are looked for.
	BinDirEnv = "PODTRACE_CLUSTER_BIN"

	// NodeAnnotation marks the nodes a kwok process manages; its value names
	// the kwok process ("main" for the one Start runs).
	NodeAnnotation = "podtrace.dev/kwok"

	serviceCIDR = "10.96.0.0/16"
	// clusterDNS is the real nodes' DNS address in serviceCIDR, where a
	// cluster's DNS Service usually is.
	clusterDNS = "10.96.0.10"
	mainKwok   = "main"
)

// serviceIP is the first address of serviceCIDR: the kubernetes Service.
var serviceIP = net.IPv4(10, 96, 0, 1)

// Options configure a local control plane. The zero value asks for one kwok
// node, free ports, and a temporary directory removed on Stop.
type Options struct {
	// Nodes is how many kwok nodes Start creates (kwok-node-0, kwok-node-1,
	// ...). 0 means 1; a negative number means none.
	Nodes int
	// RealNodes is how many real nodes Start creates beside the kwok nodes
	// (real-node-0, ...): each a kubelet with containerd and runc, see
	// RealNode. They need root, cgroups, the Debian packages runc and
	// containernetworking-plugins, and `make node-binaries`.
	RealNodes int
	// NodeAllocatable is each node's capacity and allocatable resources;
	// default cpu 32, memory 256Gi, pods 110.
	NodeAllocatable corev1.ResourceList

	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok. Default: $PODTRACE_CLUSTER_BIN, else
	// _output/bin in the podtrace repository (found from the working
	// directory up).
	BinDir string
	// StagesDir holds the kwok Stage files (*.yaml). Default: hack/kwok/stages
	// in the podtrace repository.
	StagesDir string

	// Dir is where the cluster keeps its data. It must not exist or be empty.
	// Default: a new temporary directory.
	Dir string
	// KeepDir keeps Dir after Stop (so does PODTRACE_KEEP_CLUSTER=1).
	KeepDir bool

	// AuditPolicy, when set, is the content of an audit policy file
	// (audit.k8s.io/v1 Policy): the API server then writes an audit log to
	// Cluster.AuditLog.
	AuditPolicy string

	// NodeMonitorGracePeriod is how long the node lifecycle controller waits
	// for a node's heartbeat before marking it NotReady (kube-controller-
	// manager default: 50s). kwok renews node leases within a quarter of it.
	NodeMonitorGracePeriod time.Duration

	// Ports fixes some of the ports; zero ports are picked free.
	Ports Ports

	// Timeout bounds Start: processes, readiness, nodes. Default 2 minutes.
	Timeout time.Duration

	// Logf, if set, receives progress messages (New uses t.Logf).
	Logf func(format string, args ...any)

	// NoSignalHandler leaves SIGINT and SIGTERM alone. By default, while a
	// cluster runs, those signals stop it (and any other running cluster)
	// before the process dies of them.
	NoSignalHandler bool

	// Extra flags appended to each component's command line; a flag given
	// twice takes its last value.
	APIServerFlags         []string
	ControllerManagerFlags []string
	SchedulerFlags         []string
}

// Cluster is a running local control plane.
type Cluster struct {
	// Dir holds all the cluster's data; see the package documentation.
	Dir string
	// LogDir holds one log per process: etcd.log, kube-apiserver.log, ...
	LogDir string
	// Kubeconfig is the path of the admin kubeconfig (user podtrace-admin,
	// group system:masters).
	Kubeconfig string
	// AuditLog is the path of the API server's audit log (JSON lines), empty
	// unless Options.AuditPolicy is set.
	AuditLog string
	// Server is the API server URL, https://127.0.0.1:<port>.
	Server string
	// Ports are the ports in use.
	Ports Ports
	// Nodes are the names of the kwok nodes Start created.
	Nodes []string
	// RealNodes are the real nodes Start created (Options.RealNodes).
	RealNodes []*RealNode
	// Ready is how long Start took, from its call to a ready cluster.
	Ready time.Duration

	opts       Options
	binDir     string
	bins       map[string]string // by process name
	stages     []string
	pki        *pki
	keep       bool
	restConfig *rest.Config
	client     kubernetes.Interface

	restartMu sync.Mutex // serializes RestartAPIServer

	mu         sync.Mutex
	procs      map[string]*process // by component name; a restart replaces its entry
	order      []string            // component names in first start order, each once
	extraKwoks int                 // extra kwok processes started so far
	nodeCount  int                 // nodes created so far: the next node's index
	stopped    bool
	stopOnce   sync.Once
	stopErr    error
}

// New starts a cluster for the test t and stops it when t ends. It fails t,
// with what to do next, when the cluster cannot start, e.g. when the binaries
// are missing ("run `make cluster-binaries`"). It skips t only when
// Options.RealNodes asks for real nodes that this machine cannot run at all
// (ErrNoRealNode: not Linux, not root, no cgroups), and says why; tests that
// want -short to skip them say so themselves.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if opts.RealNodes > 0 {
		if err := RealNodeSupport(opts.BinDir); errors.Is(err, ErrNoRealNode) {
			t.Skipf("skipped: %v", err)
		}
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start local control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if c.keep {
				t.Logf("cluster data kept in %s (logs in %s)", c.Dir, c.LogDir)
			} else {
				t.Logf("cluster data in %s is removed; set %s=1 to keep the logs", c.Dir, KeepEnv)
			}
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stop local control plane: %v", err)
		}
	})
	return c
}

// Start starts a local control plane and returns once it is ready: the API
// server answers /readyz, the controller manager has created the default
// ServiceAccount, the scheduler and kwok are healthy, and the nodes are Ready
// and schedulable. ctx bounds the start only, not the cluster's life; call
// Stop to end it.
//
// A component that finds its port taken (picked free, then bound by someone
// else before the component started) makes Start begin again with other
// ports, at most startAttempts times in all.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == startAttempts || ctx.Err() != nil {
			return c, err
		}
		if opts.Logf != nil {
			opts.Logf("cluster: a port was taken while starting (attempt %d of %d), starting again with other ports: %v",
				attempt, startAttempts, firstLine(err))
		}
	}
}

// startAttempts bounds how often Start begins again after a port race.
const startAttempts = 3

// firstLine is an error's first line, without the log tail that follows.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	began := time.Now()
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}

	ports, err := opts.Ports.allocate()
	if err != nil {
		return nil, err
	}
	binDir, stagesDir, err := opts.locate()
	if err != nil {
		return nil, err
	}
	bins, err := findBinaries(binDir, Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok)
	if err != nil {
		return nil, err
	}
	stages, err := filepath.Glob(filepath.Join(stagesDir, "*.yaml"))
	if err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("no kwok stages (*.yaml) in %s; set Options.StagesDir to hack/kwok/stages", stagesDir)
	}
	dir, err := makeDir(opts.Dir)
	if err != nil {
		return nil, err
	}

	c := &Cluster{
		binDir:     binDir,
		Dir:        dir,
		LogDir:     filepath.Join(dir, "logs"),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		Server:     "https://" + hostPort(ports.APIServer),
		Ports:      ports,
		opts:       opts,
		bins:       bins,
		stages:     stages,
		keep:       opts.KeepDir || os.Getenv(KeepEnv) == "1",
		procs:      map[string]*process{},
	}
	defer func() {
		if err == nil {
			return
		}
		if stopErr := c.Stop(); stopErr != nil {
			err = fmt.Errorf("%w\n(stopping the partly started cluster: %v)", err, stopErr)
		}
		if c.keep {
			err = fmt.Errorf("%w\n(cluster data kept in %s)", err, c.Dir)
		} else {
			err = fmt.Errorf("%w\n(cluster data removed; set %s=1 to keep the logs)", err, KeepEnv)
		}
	}()
	if !opts.NoSignalHandler {
		track(c)
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := c.prepare(); err != nil {
		return nil, err
	}
	opts.Logf("cluster: starting in %s (api server %s)", c.Dir, c.Server)
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return nil, err
	}
	if err := c.setupKwokAccess(ctx); err != nil {
		return nil, err
	}
	names, err := c.createNodes(ctx, mainKwok, opts.Nodes)
	if err != nil {
		return nil, err
	}
	c.Nodes = names
	if err := c.startControllers(ctx); err != nil {
		return nil, err
	}
	if err := c.waitNodesReady(ctx, Kwok, c.Nodes); err != nil {
		return nil, err
	}
	if err := c.startRealNodes(ctx); err != nil {
		return nil, err
	}
	c.Ready = time.Since(began)
	nodes := slices.Clone(c.Nodes)
	for _, n := range c.RealNodes {
		nodes = append(nodes, n.Name+" (real)")
	}
	opts.Logf("cluster: ready in %s, nodes: %s", c.Ready.Round(time.Millisecond), strings.Join(nodes, ", "))
	return c, nil
}

// RESTConfig returns a new admin configuration for the API server.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Client returns an admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Pid returns the process id of a running component (Etcd, KubeAPIServer,
// ...), or 0.
func (c *Cluster) Pid(component string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.procs[component]; p != nil {
		if done, _ := p.exited(); !done {
			return p.Pid()
		}
	}
	return 0
}

// Pids returns the process id of every running component started by the
// cluster, extra kwok processes included, by log name (e.g. "kwok-extra-1").
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for name, p := range c.procs {
		if done, _ := p.exited(); !done {
			pids[name] = p.Pid()
		}
	}
	return pids
}

// Binaries returns the path of each component's binary, by component name,
// and of each real node's processes, by their name (as in Pids).
func (c *Cluster) Binaries() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.bins)
}

// LogFile returns the path of a component's log.
func (c *Cluster) LogFile(component string) string {
	return filepath.Join(c.LogDir, component+".log")
}

// Stop stops every process the cluster started (the real nodes first, see
// RealNode, then kwok and the controllers, then the API server, then etcd):
// SIGTERM to its process group, then SIGKILL after a few seconds. It then
// removes Dir, unless it is kept or a real node left a mount in it that
// would not go (Stop's error says which). It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		untrack(c)
		nodesErr := c.stopRealNodes()
		c.mu.Lock()
		c.stopped = true
		procs := c.procs
		c.mu.Unlock()

		// Everything that talks to the API server, at once; then the API
		// server; then its storage.
		var first []*process
		for name, p := range procs {
			if name != KubeAPIServer && name != Etcd {
				first = append(first, p)
			}
		}
		var wg sync.WaitGroup
		for _, p := range first {
			wg.Go(func() { p.stop(5 * time.Second) })
		}
		wg.Wait()
		if p := procs[KubeAPIServer]; p != nil {
			p.stop(apiServerStopGrace)
		}
		if p := procs[Etcd]; p != nil {
			p.stop(10 * time.Second)
		}
		if nodesErr != nil {
			// A mount left in Dir may hold anything: never remove through it.
			c.stopErr = fmt.Errorf("stop real nodes (cluster data kept in %s): %w", c.Dir, nodesErr)
			return
		}
		if !c.keep {
			if err := os.RemoveAll(c.Dir); err != nil {
				c.stopErr = fmt.Errorf("remove cluster data %s: %w", c.Dir, err)
			}
		}
	})
	return c.stopErr
}

// locate returns the directories of the binaries and of the kwok stages.
func (o Options) locate() (binDir, stagesDir string, err error) {
	binDir, stagesDir = o.BinDir, o.StagesDir
	if binDir == "" {
		binDir = os.Getenv(BinDirEnv)
	}
	if binDir != "" && stagesDir != "" {
		return binDir, stagesDir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	if binDir == "" {
		binDir = filepath.Join(root, "_output", "bin")
	}
	if stagesDir == "" {
		stagesDir = filepath.Join(root, "hack", "kwok", "stages")
	}
	return binDir, stagesDir, nil
}

// modulePath is the podtrace module, whose go.mod marks the repository root.
const modulePath = "github.com/podtrace/podtrace"

// repoRoot finds the podtrace repository from the working directory up.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for line := range strings.Lines(string(data)) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
					return dir, nil
				}
			}
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("cannot find the podtrace repository (go.mod of %s) in %s or above; run from the repository or set Options.BinDir and Options.StagesDir", modulePath, wd)
		}
	}
}

// makeDir creates the cluster directory: dir if given (it must not exist or be
// empty), else a new temporary one.
func makeDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "podtrace-cluster-")
		if err != nil {
			return "", fmt.Errorf("create cluster directory: %w", err)
		}
		return d, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", fmt.Errorf("create cluster directory: %w", err)
		}
	case err != nil:
		return "", fmt.Errorf("cluster directory: %w", err)
	case len(entries) > 0:
		return "", fmt.Errorf("cluster directory %s is not empty; remove it or choose another Options.Dir", abs)
	}
	return abs, nil
}

// prepare writes the certificates, kubeconfigs and audit policy, and builds
// the admin client.
func (c *Cluster) prepare() error {
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return err
	}
	p, err := newPKI(filepath.Join(c.Dir, "pki"), serviceIP)
	if err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	c.pki = p
	for file, user := range map[string]string{
		"admin": adminUser, KubeControllerManager: kcmUser, KubeScheduler: schedulerUser, Kwok: KwokUser,
	} {
		data := kubeconfig(c.Server, p.serverCA.certPEM, p.clients[file], user)
		if err := os.WriteFile(filepath.Join(c.Dir, file+".kubeconfig"), data, 0o600); err != nil {
			return err
		}
	}
	if c.opts.AuditPolicy != "" {
		if err := os.WriteFile(filepath.Join(c.Dir, "audit-policy.yaml"), []byte(c.opts.AuditPolicy), 0o644); err != nil {
			return err
		}
		c.AuditLog = filepath.Join(c.LogDir, "audit.log")
	}
	c.restConfig = &rest.Config{
		Host: c.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.serverCA.certPEM,
			CertData: p.clients["admin"].certPEM,
			KeyData:  p.clients["admin"].keyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
	c.client, err = kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}
	return nil
}

// setupClient is the client the cluster uses for its own objects (RBAC,
// nodes), so that they show up as made by "podtrace-cluster".
func (c *Cluster) setupClient() kubernetes.Interface {
	cfg := rest.CopyConfig(c.restConfig)
	cfg.UserAgent = "podtrace-cluster"
	return kubernetes.NewForConfigOrDie(cfg)
}

// start starts a component and records it for Stop. Starting a component
// again (RestartAPIServer) replaces its process, which must have been reaped.
func (c *Cluster) start(name, bin string, args, env []string) (*process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("start %s: the cluster is stopped", name)
	}
	p, err := startProcess(name, bin, args, env, c.LogFile(name))
	if err != nil {
		return nil, err
	}
	if _, again := c.procs[name]; !again {
		c.order = append(c.order, name)
	}
	c.procs[name] = p
	if _, known := c.bins[name]; !known {
		c.bins[name] = bin
	}
	c.opts.Logf("cluster: started %s (pid %d)", name, p.Pid())
	return p, nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client := "http://" + hostPort(c.Ports.EtcdClient)
	peer := "http://" + hostPort(c.Ports.EtcdPeer)
	_, err := c.start(Etcd, c.bins[Etcd], []string{
		"--name", "podtrace",
		"--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "podtrace=" + peer,
		"--initial-cluster-state", "new",
		// A test cluster's data need not survive a power cut.
		"--unsafe-no-fsync",
	}, nil)
	if err != nil {
		return err
	}
	return c.waitUntil(ctx, Etcd, "etcd /health", func(ctx context.Context) (bool, error) {
		body, err := httpGet(ctx, http.DefaultClient, client+"/health")
		return err == nil && strings.Contains(body, `"health":"true"`), err
	})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	p := c.pki
	args := []string{
		"--etcd-servers", "http://" + hostPort(c.Ports.EtcdClient),
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(c.Ports.APIServer),
		// A loopback advertise address is refused by the endpoint reconciler.
		"--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(c.Dir, KubeAPIServer),
		"--tls-cert-file", p.apiserver.certFile,
		"--tls-private-key-file", p.apiserver.keyFile,
		"--client-ca-file", p.clientCA.certFile,
		"--requestheader-client-ca-file", p.frontProxyCA.certFile,
		"--requestheader-allowed-names", frontProxyUser,
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", p.frontProxyClient.certFile,
		"--proxy-client-key-file", p.frontProxyClient.keyFile,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p.saPub,
		"--service-account-signing-key-file", p.saKey,
		"--service-cluster-ip-range", serviceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--allow-privileged",
		// logs, exec and port-forward on real nodes: the API server calls
		// the kubelet at the node's InternalIP (its hostname resolves to
		// nothing), as the cluster's client CA vouches for.
		"--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-client-certificate", p.clients[kubeletClient].certFile,
		"--kubelet-client-key", p.clients[kubeletClient].keyFile,
	}
	if c.AuditLog != "" {
		args = append(args,
			"--audit-policy-file", filepath.Join(c.Dir, "audit-policy.yaml"),
			"--audit-log-path", c.AuditLog,
			"--audit-log-maxage", "0",
		)
	}
	args = append(args, c.opts.APIServerFlags...)
	if _, err := c.start(KubeAPIServer, c.bins[KubeAPIServer], args, nil); err != nil {
		return err
	}
	return c.waitAPIServerReady(ctx)
}

// waitAPIServerReady waits until the API server answers /readyz.
func (c *Cluster) waitAPIServerReady(ctx context.Context) error {
	return c.waitUntil(ctx, KubeAPIServer, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		_, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	})
}

// apiServerStopGrace is how long the API server has to exit after SIGTERM
// before it gets SIGKILL (Stop, RestartAPIServer).
const apiServerStopGrace = 10 * time.Second

// RestartAPIServer stops kube-apiserver and starts it again with the same
// command line (same port, certificates, etcd and flags), and returns once
// it answers /readyz, or with an error when it does not within ctx and
// Options.Timeout. The stop is Stop's: SIGTERM to its process group, SIGKILL
// if it has not exited after 10s, and the old process is reaped before the
// new one starts, so the port is free. An API server that already died (a
// test killed it) is simply started again. The new process appends to the
// same log, and Pid, Pids and Stop refer to it from then on. kube-apiserver's
// own graceful shutdown waits for open watches up to its request timeout
// (60s), and the cluster's components keep watches open, so in practice it
// stops listening at once and gets SIGKILL after the 10s: a restart takes
// 10s plus a start (about 13s in all on a quiet machine).
//
// The cluster's data survives in etcd; what a restart loses is the API
// server's memory. Every client's connections drop: the controllers, kwok
// and informers reconnect by themselves (kwok's leases and the node
// monitor's grace period outlast a restart). The new API server's watch
// cache starts from etcd's current revision, so a watch resuming from a
// resourceVersion older than the restart is answered 410 Gone ("too old
// resource version") and its informer relists: objects deleted while it was
// not watching then reach it as cache.DeletedFinalStateUnknown tombstones.
//
// It fails when the cluster is stopped, also when Stop runs meanwhile (the
// API server then stays stopped). Calls are serialized.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	c.mu.Lock()
	old, stopped := c.procs[KubeAPIServer], c.stopped
	c.mu.Unlock()
	switch {
	case stopped:
		return fmt.Errorf("restart %s: the cluster is stopped", KubeAPIServer)
	case old == nil:
		return fmt.Errorf("restart %s: it was never started", KubeAPIServer)
	}

	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	began := time.Now()
	old.stop(apiServerStopGrace)
	_, waitErr := old.exited()
	c.opts.Logf("cluster: stopped %s (pid %d, %v) in %s", KubeAPIServer, old.Pid(), waitErr, time.Since(began).Round(time.Millisecond))
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("restart %s: %w", KubeAPIServer, err)
	}
	// The same binary and arguments; start checks, under c.mu, that Stop
	// has not run meanwhile, so that Stop always sees the running process.
	if _, err := c.start(KubeAPIServer, old.path, old.args, nil); err != nil {
		return err
	}
	if err := c.waitAPIServerReady(ctx); err != nil {
		return err
	}
	c.opts.Logf("cluster: restarted %s in %s", KubeAPIServer, time.Since(began).Round(time.Millisecond))
	return nil
}

// startControllers starts kube-controller-manager, kube-scheduler and kwok,
// and waits for them to be healthy.
func (c *Cluster) startControllers(ctx context.Context) error {
	p := c.pki
	kcmConfig := filepath.Join(c.Dir, KubeControllerManager+".kubeconfig")
	kcmArgs := []string{
		"--kubeconfig", kcmConfig,
		"--authentication-kubeconfig", kcmConfig,
		"--authorization-kubeconfig", kcmConfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(c.Ports.ControllerManager),
		"--cert-dir", filepath.Join(c.Dir, KubeControllerManager),
		"--leader-elect=false",
		"--use-service-account-credentials",
		"--root-ca-file", p.serverCA.certFile,
		"--service-account-private-key-file", p.saKey,
		"--cluster-signing-cert-file", p.clientCA.certFile,
		"--cluster-signing-key-file", p.clientCA.keyFile,
		"--service-cluster-ip-range", serviceCIDR,
	}
	if g := c.opts.NodeMonitorGracePeriod; g > 0 {
		kcmArgs = append(kcmArgs, "--node-monitor-grace-period", g.String())
	}
	kcmArgs = append(kcmArgs, c.opts.ControllerManagerFlags...)
	if _, err := c.start(KubeControllerManager, c.bins[KubeControllerManager], kcmArgs, nil); err != nil {
		return err
	}

	schedConfig := filepath.Join(c.Dir, KubeScheduler+".kubeconfig")
	schedArgs := append([]string{
		"--kubeconfig", schedConfig,
		"--authentication-kubeconfig", schedConfig,
		"--authorization-kubeconfig", schedConfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(c.Ports.Scheduler),
		"--cert-dir", filepath.Join(c.Dir, KubeScheduler),
		"--leader-elect=false",
	}, c.opts.SchedulerFlags...)
	if _, err := c.start(KubeScheduler, c.bins[KubeScheduler], schedArgs, nil); err != nil {
		return err
	}

	if _, err := c.startKwok(ctx, Kwok, mainKwok, c.Ports.Kwok); err != nil {
		return err
	}

	insecure := &http.Client{Transport: &http.Transport{
		// kube-controller-manager and kube-scheduler serve /healthz with a
		// self-signed certificate they generate at start; this is loopback.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	healthz := func(component, url string, client *http.Client) error {
		return c.waitUntil(ctx, component, component+" /healthz", func(ctx context.Context) (bool, error) {
			body, err := httpGet(ctx, client, url)
			return err == nil && strings.TrimSpace(body) == "ok", err
		})
	}
	if err := healthz(KubeControllerManager, "https://"+hostPort(c.Ports.ControllerManager)+"/healthz", insecure); err != nil {
		return err
	}
	if err := healthz(KubeScheduler, "https://"+hostPort(c.Ports.Scheduler)+"/healthz", insecure); err != nil {
		return err
	}
	// The ServiceAccount admission plugin rejects pods until the default
	// ServiceAccount exists: the controller manager's first visible work.
	return c.waitUntil(ctx, KubeControllerManager, "ServiceAccount default/default", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// waitUntil polls check every 100ms until it reports true. It fails early
// when a started process exits, and on ctx's end with the last error and the
// tail of component's log.
func (c *Cluster) waitUntil(ctx context.Context, component, what string, check func(context.Context) (bool, error)) error {
	began := time.Now()
	var last error
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.checkProcesses(); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ok, err := check(cctx)
		cancel()
		if ok {
			c.opts.Logf("cluster: %s ok after %s", what, time.Since(began).Round(time.Millisecond))
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("%s: timed out after %s waiting for %s", component, time.Since(began).Round(time.Second), what)
			if last != nil {
				msg += fmt.Sprintf(" (last error: %v)", last)
			}
			return errors.New(msg + logTail(c.LogFile(component), tailLines))
		case <-tick.C:
		}
	}
}

// checkProcesses returns an error for the first started process that exited.
func (c *Cluster) checkProcesses() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.order {
		if c.procs[name].stopRequested.Load() {
			continue
		}
		if done, _ := c.procs[name].exited(); done {
			return c.procs[name].earlyExitError()
		}
	}
	return nil
}

// httpGet returns the body of a 200 answer to GET url.
func httpGet(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// defaultAllocatable is a node's capacity unless Options.NodeAllocatable says
// otherwise.
func defaultAllocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// notReadyTaints are the taints the node lifecycle controller puts on nodes
// that are not (yet) Ready.
var notReadyTaints = []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}

func nodeReady(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if slices.Contains(notReadyTaints, t.Key) {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
