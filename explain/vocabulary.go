package explain

// Kubernetes' vocabulary: every reason the kubelet, the scheduler and the
// controllers of the pinned Kubernetes (hack/kube/go.mod) write about a
// pod or the objects of its story, each mapped to the findings whose rules
// read it, or marked benign with why. TestVocabularyComplete reads the
// reasons from the module's source and fails on one this table lacks.

import "slices"

// Where says where Kubernetes writes a reason.
type Where string

const (
	// WhereEvent: an Event's reason (about the pod, its node, its claims).
	WhereEvent Where = "event"
	// WhereWaiting: a container's state.waiting.reason.
	WhereWaiting Where = "waiting"
	// WhereTerminated: a container's state.terminated.reason.
	WhereTerminated Where = "terminated"
	// WhereCondition: a pod condition's reason.
	WhereCondition Where = "condition"
	// WherePodStatus: the pod's status.reason.
	WherePodStatus Where = "pod-status"
)

// Reason is one reason Kubernetes writes, and how explain reads it.
type Reason struct {
	Where  Where  `json:"where"`
	Reason string `json:"reason"`
	// Findings are the ids of the findings whose rules read it.
	Findings []string `json:"findings,omitempty"`
	// Benign says why it needs no finding: a normal step, or about
	// another object than the pod.
	Benign string `json:"benign,omitempty"`
	// Means says what a Warning event's reason means, for the
	// event-warning finding, and Check what to check.
	Means string `json:"means,omitempty"`
	Check string `json:"check,omitempty"`
}

// The benign reasons' whys, shared.
const (
	normalStep   = "a normal step of the pod's life"
	onNode       = "recorded on the Node, not on pods: the node's state is evidence in the findings about the pod"
	onClaim      = "recorded on a PersistentVolumeClaim or PersistentVolume: the volume finding quotes the claim's events"
	onController = "recorded on a controller's own object (a PodDisruptionBudget, a ReplicaSet), not on the pod"
	podFinished  = "Ready is False because the pod finished: its phase tells how (failed reads Failed)"
	resizeNote   = "an in-place resize the kubelet defers, cannot make or failed: the pod runs on with its resources as they were"
)

func ev(reason string, findings ...string) Reason {
	return Reason{Where: WhereEvent, Reason: reason, Findings: findings}
}
func evBenign(reason, why string) Reason {
	return Reason{Where: WhereEvent, Reason: reason, Benign: why}
}
func evMeans(reason, means, check string) Reason {
	return Reason{Where: WhereEvent, Reason: reason, Findings: []string{"event-warning"}, Means: means, Check: check}
}
func reason(w Where, r string, findings ...string) Reason {
	return Reason{Where: w, Reason: r, Findings: findings}
}
func benign(w Where, r, why string) Reason { return Reason{Where: w, Reason: r, Benign: why} }

// admissionRejected reads a pod the kubelet refused at admission: it fails
// with the reason (pkg/kubelet/lifecycle).
var admissionRejected = []string{"failed"}

// Vocabulary is every reason, by where it is written.
var Vocabulary = []Reason{
	// Events: the kubelet's (pkg/kubelet/events), the scheduler's, the
	// controllers' and the volume code's.
	ev("BackOff", "image-pull", "crash-loop"),
	ev("Failed", "image-pull", "container-error"),
	ev("ErrImageNeverPull", "image-pull"),
	ev("InspectFailed", "image-pull"),
	evMeans("InvalidImageID", "the kubelet found an image whose ID it cannot parse", "the container runtime's images on the node (crictl images)"),
	evBenign("Pulling", normalStep),
	evBenign("Pulled", normalStep),
	evBenign("Created", normalStep),
	evBenign("Started", normalStep),
	evBenign("Scheduled", normalStep),
	ev("Killing", "deletion-stuck", "deletion-slow", "restarted", "crash-loop"),
	ev("Preempting", "ended", "preempted"),
	ev("Preempted", "ended"),
	ev("ExceededGracePeriod", "deletion-stuck", "deletion-slow"),
	ev("FailedKillPod", "deletion-stuck", "deletion-slow"),
	ev("FailedPreStopHook", "deletion-stuck", "deletion-slow"),
	ev("FailedPostStartHook", "container-error"),
	ev("FailedCreatePodContainer", "container-error"),
	ev("Unhealthy", "not-ready", "probe-failed", "restarted", "crash-loop"),
	ev("ProbeWarning", "not-ready", "probe-failed"),
	ev("FailedScheduling", "unschedulable"),
	ev("BindingConditionsPending", "unschedulable"),
	ev("Evicted", "evicted", "ended"),
	ev("DeadlineExceeded", "deadline-exceeded"),
	ev("TaintManagerEviction", "ended"),
	ev("DeviceTaintManagerEviction", "ended"),
	ev("NodeControllerEviction", "ended"),
	ev("FailedMount", "volume"),
	ev("FailedAttachVolume", "volume"),
	ev("FailedMapVolume", "volume"),
	ev("FailedMountOnFilesystemMismatch", "volume"),
	ev("VolumeResizeFailed", "volume"),
	ev("FileSystemResizeFailed", "volume"),
	ev("FailedBinding", "volume"),
	ev("ProvisioningFailed", "volume"),
	ev("ClaimLost", "volume"),
	ev("ClaimMisbound", "volume"),
	ev("ExternalProvisioning", "volume"),
	ev("VolumeMismatch", "volume"),
	evBenign("ProvisioningSucceeded", onClaim),
	evBenign("ProvisioningCleanupFailed", onClaim),
	evBenign("ExternalExpanding", onClaim),
	evBenign("VolumeDelete", onClaim),
	evBenign("VolumeFailedDelete", onClaim),
	evBenign("VolumeFailedRecycle", onClaim),
	evBenign("VolumeRecycled", onClaim),
	evBenign("VolumeUnknownReclaimPolicy", onClaim),
	evBenign("SuccessfulAttachVolume", normalStep),
	evBenign("SuccessfulMountVolume", normalStep),
	evBenign("VolumeResizeSuccessful", normalStep),
	evBenign("FileSystemResizeSuccessful", normalStep),
	evMeans("AlreadyMountedVolume", "the kubelet found a local volume already mounted", "the volume's mount on the node"),
	evMeans("VolumePermissionChangeInProgress", "the kubelet is changing the ownership of a large volume (fsGroup), which delays the start", "the pod's fsGroupChangePolicy (OnRootMismatch skips it when the volume's root is right)"),
	evMeans("FailedCreatePodSandBox", "the kubelet could not create the pod's sandbox (its network namespace and pause container): the container runtime or the CNI plugin failed", "the CNI plugin's configuration and the container runtime on the node"),
	evMeans("FailedPodSandBoxStatus", "the kubelet could not read the status of the pod's sandbox from the container runtime", "the container runtime on the node"),
	evMeans("NetworkNotReady", "the node's network (its CNI plugin) is not ready: pods cannot get a sandbox", "the CNI plugin on the node"),
	evBenign("SandboxChanged", "Normal: the kubelet recreates a changed sandbox; the container restarts it causes are read by restarted"),
	evMeans("FailedSync", "the kubelet failed to sync the pod", "the kubelet's log on the node"),
	evMeans("FailedValidation", "the kubelet refused a static pod's manifest", "the static pod's manifest on the node"),
	evMeans("FailedNodeDeclaredFeaturesCheck", "the pod needs a feature its node does not declare", "the node's declared features against the pod's spec"),
	evMeans("FailedPrepareDynamicResources", "the kubelet could not prepare the pod's dynamic resources (a DRA driver failed)", "the DRA driver on the node and the pod's ResourceClaims"),
	evMeans("FailedResourceClaimCreation", "the resource claim controller could not create the pod's ResourceClaim from its template", "the pod's resourceClaims and their templates"),
	evMeans("FailedToRetrieveImagePullSecret", "the kubelet could not read an imagePullSecret the pod names: it pulls without it", "that the Secrets in the pod's imagePullSecrets exist in its namespace"),
	evMeans("HostIPsIPFamilyMismatch", "the node's IP families do not match what the kubelet expects for the pod's host IPs", "the node's addresses and the kubelet's --node-ip"),
	evMeans("DNSConfigForming", "the kubelet cut the pod's DNS configuration to what resolv.conf allows (nameservers or search domains)", "the node's resolv.conf and the pod's dnsConfig"),
	evMeans("MissingClusterDNS", "the pod asks for cluster DNS (dnsPolicy ClusterFirst) and the kubelet has none configured: it falls back to the node's DNS", "the kubelet's clusterDNS setting, or the pod's dnsPolicy"),
	evMeans("CheckLimitsForResolvConf", "the node's resolv.conf holds more than the kubelet passes on", "the node's resolv.conf"),
	evMeans("LifecycleHTTPFallback", "an HTTPS lifecycle hook fell back to HTTP", "the container's lifecycle hook's scheme"),
	evMeans("CertificateExpired", "a pod certificate the kubelet projects expired", "the signer of the pod's podCertificate volume"),
	evMeans("CertificateOverdueForRefresh", "a pod certificate the kubelet projects is overdue for its refresh", "the signer of the pod's podCertificate volume"),
	evMeans("Denied", "a pod certificate request for the pod's podCertificate volume was denied", "the signer and its policy"),
	evMeans("ResizeError", resizeNote, "the pod's resize status and the kubelet's log"),
	evMeans("ResizeInfeasible", resizeNote, "the node's allocatable against the resize asked for"),
	evBenign("ResizeDeferred", resizeNote),
	evBenign("ResizeStarted", normalStep),
	evBenign("ResizeCompleted", normalStep),
	evMeans("MultiplePodDisruptionBudgets", "more than one PodDisruptionBudget selects the pod: the Eviction API refuses to evict it", "the PodDisruptionBudgets of its namespace and their selectors"),
	// The SELinux warning controller's conflicts (its reasons are held in
	// variables: pkg/controller/volume/selinuxwarning/cache).
	evMeans("SELinuxChangePolicyConflict", "the pod shares a volume with a pod of another seLinuxChangePolicy", "the pods' securityContext.seLinuxChangePolicy and their volumes"),
	evMeans("SELinuxLabelConflict", "the pod shares a volume with a pod of another SELinux label", "the pods' seLinuxOptions and their volumes"),
	evMeans("MultipleSELinuxLabels", "the pod shares a volume with a pod of another SELinux label", "the pods' seLinuxOptions and their volumes"),
	evBenign("NotDeleted", onController),
	evBenign("NoPods", onController),
	evBenign("UnmanagedPods", onController),
	evBenign("CalculateExpectedPodCountFailed", onController),
	evMeans("PossibleMemoryBackedVolumesOnDisk", "the kubelet found memory-backed volumes (emptyDir medium Memory) it may have put on disk", "the node's swap and the kubelet's log"),
	ev("NodeNotReady", "node-not-ready", "node-lost"),
	evBenign("NodeReady", onNode),
	evBenign("NodeSchedulable", onNode),
	evBenign("NodeNotSchedulable", onNode),
	evBenign("NodeAllocatableEnforced", onNode),
	evBenign("FailedNodeAllocatableEnforcement", onNode),
	evBenign("Starting", onNode),
	evBenign("KubeletSetupFailed", onNode),
	evBenign("Rebooted", onNode),
	evBenign("Shutdown", onNode),
	evBenign("ContainerGCFailed", onNode),
	evBenign("ImageGCFailed", onNode),
	evBenign("InvalidDiskCapacity", onNode),
	evBenign("FreeDiskSpaceFailed", onNode),
	evBenign("EvictionThresholdMet", onNode),
	evBenign("SystemOOM", onNode),
	evBenign("CgroupV1", onNode),

	// Container waiting reasons: the kubelet's (pkg/kubelet/images,
	// container, kuberuntime, kubelet_pods.go).
	benign(WhereWaiting, "ContainerCreating", "the normal start-up: sandbox, volumes, image"),
	benign(WhereWaiting, "PodInitializing", "the normal start-up: the init containers run first (their failures are read from their own statuses)"),
	benign(WhereWaiting, "RestartingAllContainers", "the kubelet restarting every container after one exited under a RestartAllContainers rule: that exit is read by restarted and exited"),
	reason(WhereWaiting, "ErrImagePull", "image-pull"),
	reason(WhereWaiting, "ImagePullBackOff", "image-pull"),
	reason(WhereWaiting, "InvalidImageName", "image-pull"),
	reason(WhereWaiting, "ErrImageNeverPull", "image-pull"),
	reason(WhereWaiting, "ImageInspectError", "image-pull"),
	reason(WhereWaiting, "CrashLoopBackOff", "crash-loop"),
	reason(WhereWaiting, "CreateContainerConfigError", "container-error"),
	reason(WhereWaiting, "CreateContainerError", "container-error"),
	reason(WhereWaiting, "RunContainerError", "container-error"),
	reason(WhereWaiting, "PreCreateHookError", "container-error"),
	reason(WhereWaiting, "PreStartHookError", "container-error"),
	reason(WhereWaiting, "PostStartHookError", "container-error"),
	reason(WhereWaiting, "CreatePodSandboxError", "container-error"),
	reason(WhereWaiting, "ConfigPodSandboxError", "container-error"),
	reason(WhereWaiting, "KillPodSandboxError", "container-error"),
	reason(WhereWaiting, "KillContainerError", "container-error"),
	reason(WhereWaiting, "RemoveContainerError", "container-error"),
	reason(WhereWaiting, "ResizePodInPlaceError", "container-error"),

	// Container terminated reasons: the kubelet's own, and the container
	// runtime's (containerd and CRI-O write these; they are not in the
	// Kubernetes source).
	reason(WhereTerminated, "ContainerStatusUnknown", "exited", "failed"),
	benign(WhereTerminated, "Completed", "exit code 0"),
	reason(WhereTerminated, "Error", "exited", "failed", "crash-loop", "restarted"),
	reason(WhereTerminated, "OOMKilled", "oom-killed"),
	reason(WhereTerminated, "ContainerCannotRun", "exited", "failed", "crash-loop", "restarted"),
	reason(WhereTerminated, "StartError", "exited", "failed", "crash-loop", "restarted"),

	// Pod condition reasons (k8s.io/api PodReason*, pkg/kubelet/status).
	reason(WhereCondition, "Unschedulable", "unschedulable"),
	reason(WhereCondition, "SchedulerError", "unschedulable"),
	reason(WhereCondition, "SchedulingGated", "unschedulable"),
	reason(WhereCondition, "ContainersNotReady", "not-ready"),
	reason(WhereCondition, "ReadinessGatesNotReady", "not-ready"),
	reason(WhereCondition, "UnknownContainerStatuses", "not-ready"),
	benign(WhereCondition, "ContainersNotInitialized", "the init containers have not all completed: normal at start-up; their failures are read from their statuses"),
	benign(WhereCondition, "PodCompleted", podFinished),
	benign(WhereCondition, "PodFailed", podFinished),
	reason(WhereCondition, "PreemptionByScheduler", "ended", "preempted"),
	reason(WhereCondition, "TerminationByKubelet", "ended"),
	benign(WhereCondition, "Deferred", resizeNote),
	benign(WhereCondition, "Infeasible", resizeNote),
	benign(WhereCondition, "Error", resizeNote),
	benign(WhereCondition, "RestartAllContainersStarted", "the kubelet began restarting every container under a RestartAllContainers rule: the exit that caused it is read by restarted and exited"),

	// The pod's status.reason: eviction, node shutdown, the active
	// deadline, and the kubelet's admission, which fails a pod it refuses.
	reason(WherePodStatus, "Evicted", "evicted", "ended"),
	reason(WherePodStatus, "Terminated", "ended"),
	reason(WherePodStatus, "DeadlineExceeded", "deadline-exceeded"),
	reason(WherePodStatus, "NodeShutdown", admissionRejected...),
	reason(WherePodStatus, "AppArmor", admissionRejected...),
	reason(WherePodStatus, "PodLevelResourcesNotSupported", admissionRejected...),
	reason(WherePodStatus, "PodFeatureUnsupported", admissionRejected...),
	reason(WherePodStatus, "InvalidNodeInfo", admissionRejected...),
	reason(WherePodStatus, "InitContainerRestartPolicyForbidden", admissionRejected...),
	reason(WherePodStatus, "PodOSNotSupported", admissionRejected...),
	reason(WherePodStatus, "PodOSSelectorNodeLabelDoesNotMatch", admissionRejected...),
	reason(WherePodStatus, "SupplementalGroupsPolicyNotSupported", admissionRejected...),
	reason(WherePodStatus, "UnexpectedAdmissionError", admissionRejected...),
	reason(WherePodStatus, "UnexpectedPredicateFailureType", admissionRejected...),
	reason(WherePodStatus, "UnknownReason", admissionRejected...),
	reason(WherePodStatus, "EmptyPodSharedPoolError", admissionRejected...),
	// "OutOf" and the resource: OutOfcpu, OutOfmemory, OutOfpods, and any
	// extended resource's.
	reason(WherePodStatus, "OutOf", admissionRejected...),
	reason(WherePodStatus, "OutOfcpu", admissionRejected...),
	reason(WherePodStatus, "OutOfmemory", admissionRejected...),
	reason(WherePodStatus, "OutOfpods", admissionRejected...),
}

// VocabularyOf returns the vocabulary's entry for a reason written there.
func VocabularyOf(w Where, r string) (Reason, bool) {
	i := slices.IndexFunc(Vocabulary, func(v Reason) bool { return v.Where == w && v.Reason == r })
	if i < 0 {
		return Reason{}, false
	}
	return Vocabulary[i], true
}
