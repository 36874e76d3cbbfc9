// Package cluster runs a real, local Kubernetes control plane for podtrace's
// integration tests and demo: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok, all listening on 127.0.0.1 only, with their data in
// one temporary directory.
//
// # Why a real control plane
//
// podtrace exists to show what a fake clientset cannot: admission mutations,
// the garbage collector, defaulting, finalizers, who changed what. So its
// user-facing behaviour is proven against a real API server. kwok stands in for
// the kubelets: it runs the pods bound to its nodes through the stages in
// hack/kwok/stages (Pending, Running and Ready; completion; image pull failure;
// termination on deletion; removal once no finalizer is left).
//
// # Real nodes
//
// Options.RealNodes adds nodes run by a real kubelet with containerd and runc
// (see [RealNode]): real containers, cgroups, OOM kills, probes, graceful
// termination, the kubelet's own identity (client certificate
// CN=system:node:NAME, O=system:nodes) and its final DELETE. They need Linux,
// root and cgroups ([New] skips the test and says why otherwise: see
// [RealNodeSupport]), the Debian packages runc and containernetworking-plugins,
// and `make node-binaries`. Pods run the images [BusyboxImage] and
// [PauseImage], imported into containerd at start; nothing is pulled. Stop
// deletes their pods first, so that the CNI plugin tears their network down,
// then stops the kubelet and containerd and undoes what they changed on the
// machine (mounts, cgroups, bridge, sysctls, paths outside Dir); a run that
// was killed is cleaned up by the next one ([CleanStaleNodes]).
//
// # Binaries
//
// The binaries are built from the Go module proxy by hack/build.sh (`make
// cluster-binaries`) into _output/bin. [Start] fails with [ErrMissingBinaries]
// and says so when one is missing. Options.BinDir or PODTRACE_CLUSTER_BIN point
// elsewhere.
//
// # Identities
//
// Each component has its own client certificate, so that a recording or an
// audit log attributes each change to the component that made it:
//
//	admin                          O=system:masters (the tests, Cluster.Client)
//	system:kube-controller-manager with --use-service-account-credentials: each
//	                               controller acts as its own service account,
//	                               e.g. system:serviceaccount:kube-system:generic-garbage-collector
//	system:kube-scheduler          the pod bindings
//	kwok                           the "kubelet": pod and node status, events,
//	                               node leases, final pod deletion; bound to the
//	                               ClusterRole podtrace:kwok
//
// # Layout of the data directory
//
//	pki/          CAs, serving and client certificates, service account key
//	*.kubeconfig  admin (Cluster.Kubeconfig), kube-controller-manager,
//	              kube-scheduler, kwok
//	etcd/         etcd data
//	logs/         one log per process (etcd.log, kube-apiserver.log, ...,
//	              kubelet-real-node-0.log), audit.log when Options.AuditPolicy
//	              is set
//	node-<i>/     a real node's state: containerd, kubelet, CNI, certificates
//
// The directory is removed by [Cluster.Stop] unless Options.KeepDir is set or
// PODTRACE_KEEP_CLUSTER=1.
//
// # Processes
//
// Every process is started in its own process group, with a parent-death signal
// (SIGKILL, Linux) so that it dies with the test binary, and is stopped by
// [Cluster.Stop] with SIGTERM, then SIGKILL after a few seconds. A SIGINT or
// SIGTERM received by the test binary stops the running clusters first. Only
// processes started by this package are ever signalled.
package cluster
