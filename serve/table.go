package serve

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// wantsTable reports whether the client asked for a meta.k8s.io Table, as
// kubectl get does.
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		_, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && params["as"] == "Table" && params["g"] == "meta.k8s.io" {
			return true
		}
	}
	return false
}

// The columns of each kind's Table, as the API server's printers define
// them (AddHandlers in k8s.io/kubernetes/pkg/printers/internalversion), the
// wide ones (Priority 1) included: kubectl shows them with -o wide.
var (
	nameColumn       = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the object"}
	ageColumn        = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: "Time since creation, at the moment served"}
	containersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	imagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
	selectorColumn   = metav1.TableColumnDefinition{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector"}

	podColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Ready containers of all"},
		{Name: "Status", Type: "string", Description: "The pod's status, as kubectl computes it"},
		{Name: "Restarts", Type: "string", Description: "Container restarts"},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1},
		{Name: "Node", Type: "string", Priority: 1},
		{Name: "Nominated Node", Type: "string", Priority: 1},
		{Name: "Readiness Gates", Type: "string", Priority: 1},
	}
	eventColumns = []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string"},
		{Name: "Type", Type: "string"},
		{Name: "Reason", Type: "string"},
		{Name: "Object", Type: "string"},
		{Name: "Subobject", Type: "string", Priority: 1},
		{Name: "Source", Type: "string", Priority: 1},
		{Name: "Message", Type: "string"},
		{Name: "First Seen", Type: "string", Priority: 1},
		{Name: "Count", Type: "string", Priority: 1},
		{Name: "Name", Type: "string", Format: "name", Priority: 1},
	}
	columns = map[string][]metav1.TableColumnDefinition{
		"v1 Pod":   podColumns,
		"v1 Event": eventColumns,
		"apps/v1 Deployment": {nameColumn,
			{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
			{Name: "Up-to-date", Type: "string", Description: "Total number of non-terminating pods targeted by this deployment that have the desired template spec."},
			{Name: "Available", Type: "string", Description: "Total number of available non-terminating pods targeted by this deployment."},
			ageColumn, containersColumn, imagesColumn, selectorColumn},
		"apps/v1 ReplicaSet": {nameColumn,
			{Name: "Desired", Type: "integer", Description: "Replicas is the number of desired pods."},
			{Name: "Current", Type: "integer", Description: "Replicas is the most recently observed number of non-terminating pods."},
			{Name: "Ready", Type: "integer", Description: "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."},
			ageColumn, containersColumn, imagesColumn, selectorColumn},
		"apps/v1 StatefulSet": {nameColumn,
			{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
			ageColumn, containersColumn, imagesColumn},
		"apps/v1 DaemonSet": {nameColumn,
			{Name: "Desired", Type: "integer"}, {Name: "Current", Type: "integer"}, {Name: "Ready", Type: "integer"},
			{Name: "Up-to-date", Type: "integer"}, {Name: "Available", Type: "integer"}, {Name: "Node Selector", Type: "string"},
			ageColumn, containersColumn, imagesColumn, selectorColumn},
		"batch/v1 Job": {nameColumn,
			{Name: "Status", Type: "string", Description: "Status of the job."},
			{Name: "Completions", Type: "string"},
			{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
			ageColumn, containersColumn, imagesColumn, selectorColumn},
		"batch/v1 CronJob": {nameColumn,
			{Name: "Schedule", Type: "string"}, {Name: "Timezone", Type: "string"}, {Name: "Suspend", Type: "boolean"},
			{Name: "Active", Type: "integer"}, {Name: "Last Schedule", Type: "string"},
			ageColumn, containersColumn, imagesColumn, selectorColumn},
		"v1 Service": {nameColumn,
			{Name: "Type", Type: "string"}, {Name: "Cluster-IP", Type: "string"}, {Name: "External-IP", Type: "string"},
			{Name: "Port(s)", Type: "string"}, ageColumn,
			{Name: "Selector", Type: "string", Priority: 1}},
		"v1 Node": {nameColumn,
			{Name: "Status", Type: "string", Description: "The status of the node"},
			{Name: "Roles", Type: "string", Description: "The roles of the node"},
			ageColumn,
			{Name: "Version", Type: "string"},
			{Name: "Internal-IP", Type: "string", Priority: 1}, {Name: "External-IP", Type: "string", Priority: 1},
			{Name: "OS-Image", Type: "string", Priority: 1}, {Name: "Kernel-Version", Type: "string", Priority: 1},
			{Name: "Container-Runtime", Type: "string", Priority: 1}},
		"v1 Namespace": {nameColumn, {Name: "Status", Type: "string", Description: "The status of the namespace"}, ageColumn},
		// Recorded as metadata: the type and the data are not in the trace.
		"v1 Secret":                {nameColumn, {Name: "Type", Type: "string"}, {Name: "Data", Type: "string"}, ageColumn},
		"v1 ConfigMap":             {nameColumn, {Name: "Data", Type: "string"}, ageColumn},
		"v1 PersistentVolumeClaim": {nameColumn, {Name: "Status", Type: "string"}, {Name: "Volume", Type: "string"}, {Name: "Capacity", Type: "string"}, {Name: "Access Modes", Type: "string"}, {Name: "StorageClass", Type: "string"}, {Name: "VolumeAttributesClass", Type: "string"}, ageColumn, {Name: "VolumeMode", Type: "string", Priority: 1}},
		"storage.k8s.io/v1 StorageClass": {nameColumn, {Name: "Provisioner", Type: "string"}, {Name: "ReclaimPolicy", Type: "string"},
			{Name: "VolumeBindingMode", Type: "string"}, {Name: "AllowVolumeExpansion", Type: "string"}, ageColumn},
		"admissionregistration.k8s.io/v1 MutatingWebhookConfiguration":   {nameColumn, {Name: "Webhooks", Type: "integer"}, ageColumn},
		"admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration": {nameColumn, {Name: "Webhooks", Type: "integer"}, ageColumn},
	}
)

// columnsOf are the Table columns of apiVersion and kind: NAME and AGE for
// a kind the API server's printers do not know.
func columnsOf(apiVersion, kind string) []metav1.TableColumnDefinition {
	if c, ok := columns[apiVersion+" "+kind]; ok {
		return c
	}
	return []metav1.TableColumnDefinition{nameColumn, ageColumn}
}

// since is kubectl's age of a time at the moment t.
func since(ts time.Time, t time.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(t.Sub(ts))
}

// podCells are kubectl's columns of a pod (printPod in
// k8s.io/kubernetes/pkg/printers/internalversion), at the moment t.
func podCells(pod *corev1.Pod, t time.Time) []any {
	restarts, restartableInit := 0, 0
	var lastRestart time.Time
	total := len(pod.Spec.Containers)
	ready := 0
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	sidecar := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			total++
		}
	}
	noteRestart := func(cs corev1.ContainerStatus) {
		if term := cs.LastTerminationState.Terminated; term != nil && term.FinishedAt.Time.After(lastRestart) {
			lastRestart = term.FinishedAt.Time
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		noteRestart(c)
		if sidecar[c.Name] {
			restartableInit += int(c.RestartCount)
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podInitialized(pod) {
		restarts = restartableInit
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			noteRestart(c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				running = true
				ready++
			}
		}
		if reason == "Completed" && running {
			reason = "NotReady"
			if podReady(pod) {
				reason = "Running"
			}
		}
	}
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}
	restartsText := fmt.Sprint(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsText = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, t))
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					trueGates++
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, n)
	}
	return []any{
		pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsText, since(pod.CreationTimestamp.Time, t),
		orNone(pod.Status.PodIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func podInitialized(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodInitialized && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
