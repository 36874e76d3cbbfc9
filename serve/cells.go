package serve

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// typedCells are the cells of the kinds whose columns the API server's
// printers define beyond a pod's and NAME and AGE (columns), computed as
// those printers compute them (printDeployment, printReplicaSet, printNode,
// ... in k8s.io/kubernetes/pkg/printers/internalversion) from the recorded
// object, at the moment t: an age is the time from then, never the
// reader's clock. ok is false for a kind it does not know.
func typedCells(apiVersion, kind string, raw []byte, t time.Time) (cells []any, ok bool, err error) {
	decode := func(v any) error {
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		return nil
	}
	age := func(m metav1.ObjectMeta) string { return since(m.CreationTimestamp.Time, t) }
	switch apiVersion + " " + kind {
	case "v1 Event":
		var e corev1.Event
		if err := decode(&e); err != nil {
			return nil, true, err
		}
		return eventRow(&e, t), true, nil
	case "apps/v1 Deployment":
		var d appsv1.Deployment
		if err := decode(&d); err != nil {
			return nil, true, err
		}
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		sel := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			sel = s.String()
		}
		return []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas), age(d.ObjectMeta), names, images, sel}, true, nil
	case "apps/v1 ReplicaSet":
		var r appsv1.ReplicaSet
		if err := decode(&r); err != nil {
			return nil, true, err
		}
		names, images := containerCells(r.Spec.Template.Spec.Containers)
		return []any{r.Name, int64(replicas(r.Spec.Replicas)), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas), age(r.ObjectMeta),
			names, images, metav1.FormatLabelSelector(r.Spec.Selector)}, true, nil
	case "apps/v1 StatefulSet":
		var s appsv1.StatefulSet
		if err := decode(&s); err != nil {
			return nil, true, err
		}
		names, images := containerCells(s.Spec.Template.Spec.Containers)
		return []any{s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, replicas(s.Spec.Replicas)), age(s.ObjectMeta), names, images}, true, nil
	case "apps/v1 DaemonSet":
		var d appsv1.DaemonSet
		if err := decode(&d); err != nil {
			return nil, true, err
		}
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		st := d.Status
		return []any{d.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady), int64(st.UpdatedNumberScheduled),
			int64(st.NumberAvailable), labels.FormatLabels(d.Spec.Template.Spec.NodeSelector), age(d.ObjectMeta),
			names, images, metav1.FormatLabelSelector(d.Spec.Selector)}, true, nil
	case "batch/v1 Job":
		var j batchv1.Job
		if err := decode(&j); err != nil {
			return nil, true, err
		}
		names, images := containerCells(j.Spec.Template.Spec.Containers)
		return []any{j.Name, jobStatus(&j), jobCompletions(&j), jobDuration(&j, t), age(j.ObjectMeta),
			names, images, metav1.FormatLabelSelector(j.Spec.Selector)}, true, nil
	case "batch/v1 CronJob":
		var c batchv1.CronJob
		if err := decode(&c); err != nil {
			return nil, true, err
		}
		last := "<none>"
		if c.Status.LastScheduleTime != nil {
			last = since(c.Status.LastScheduleTime.Time, t)
		}
		zone := "<none>"
		if c.Spec.TimeZone != nil {
			zone = *c.Spec.TimeZone
		}
		suspend := "<unset>"
		switch {
		case c.Spec.Suspend == nil:
		case *c.Spec.Suspend:
			suspend = "True"
		default:
			suspend = "False"
		}
		names, images := containerCells(c.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []any{c.Name, c.Spec.Schedule, zone, suspend, int64(len(c.Status.Active)), last, age(c.ObjectMeta),
			names, images, metav1.FormatLabelSelector(c.Spec.JobTemplate.Spec.Selector)}, true, nil
	case "v1 Service":
		var s corev1.Service
		if err := decode(&s); err != nil {
			return nil, true, err
		}
		ip := "<none>"
		if len(s.Spec.ClusterIPs) > 0 {
			ip = s.Spec.ClusterIPs[0]
		}
		ports := servicePorts(s.Spec.Ports)
		if ports == "" {
			ports = "<none>"
		}
		return []any{s.Name, string(s.Spec.Type), ip, serviceExternalIP(&s), ports, age(s.ObjectMeta), labels.FormatLabels(s.Spec.Selector)}, true, nil
	case "v1 Node":
		var n corev1.Node
		if err := decode(&n); err != nil {
			return nil, true, err
		}
		return nodeRow(&n, t), true, nil
	case "v1 Namespace":
		var n corev1.Namespace
		if err := decode(&n); err != nil {
			return nil, true, err
		}
		return []any{n.Name, string(n.Status.Phase), age(n.ObjectMeta)}, true, nil
	case "v1 Secret", "v1 ConfigMap":
		// Recorded as metadata alone: what the other columns show is not
		// in the trace.
		var m metav1.PartialObjectMetadata
		if err := decode(&m); err != nil {
			return nil, true, err
		}
		if kind == "Secret" {
			return []any{m.Name, "<unknown>", "<unknown>", age(m.ObjectMeta)}, true, nil
		}
		return []any{m.Name, "<unknown>", age(m.ObjectMeta)}, true, nil
	case "v1 PersistentVolumeClaim":
		var c corev1.PersistentVolumeClaim
		if err := decode(&c); err != nil {
			return nil, true, err
		}
		return claimRow(&c, t), true, nil
	case "storage.k8s.io/v1 StorageClass":
		// The API server marks the effective default class of a list
		// "(default)"; a row here is made alone, unmarked.
		var c storagev1.StorageClass
		if err := decode(&c); err != nil {
			return nil, true, err
		}
		reclaim, binding := string(corev1.PersistentVolumeReclaimDelete), string(storagev1.VolumeBindingImmediate)
		if c.ReclaimPolicy != nil {
			reclaim = string(*c.ReclaimPolicy)
		}
		if c.VolumeBindingMode != nil {
			binding = string(*c.VolumeBindingMode)
		}
		expand := c.AllowVolumeExpansion != nil && *c.AllowVolumeExpansion
		return []any{c.Name, c.Provisioner, reclaim, binding, expand, age(c.ObjectMeta)}, true, nil
	case "admissionregistration.k8s.io/v1 MutatingWebhookConfiguration":
		var c admissionv1.MutatingWebhookConfiguration
		if err := decode(&c); err != nil {
			return nil, true, err
		}
		return []any{c.Name, int64(len(c.Webhooks)), age(c.ObjectMeta)}, true, nil
	case "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration":
		var c admissionv1.ValidatingWebhookConfiguration
		if err := decode(&c); err != nil {
			return nil, true, err
		}
		return []any{c.Name, int64(len(c.Webhooks)), age(c.ObjectMeta)}, true, nil
	}
	return nil, false, nil
}

// claimRow is printPersistentVolumeClaim's row.
func claimRow(c *corev1.PersistentVolumeClaim, t time.Time) []any {
	phase := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	vac, mode := "<unset>", "<unset>"
	if c.Spec.VolumeAttributesClassName != nil {
		vac = *c.Spec.VolumeAttributesClassName
	}
	if c.Spec.VolumeMode != nil {
		mode = string(*c.Spec.VolumeMode)
	}
	var capacity, modes string
	if c.Spec.VolumeName != "" {
		var m []string
		for _, want := range []struct {
			mode  corev1.PersistentVolumeAccessMode
			short string
		}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
			for _, have := range c.Status.AccessModes {
				if have == want.mode {
					m = append(m, want.short)
					break
				}
			}
		}
		modes = strings.Join(m, ",")
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
	}
	class := ""
	if v, ok := c.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		class = v
	} else if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	return []any{c.Name, phase, c.Spec.VolumeName, capacity, modes, class, vac, since(c.CreationTimestamp.Time, t), mode}
}

// replicas is a spec's replicas, defaulted as the API server does (1).
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func containerCells(cs []corev1.Container) (names, images string) {
	n := make([]string, len(cs))
	im := make([]string, len(cs))
	for i, c := range cs {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

func hasJobCondition(j *batchv1.Job, c batchv1.JobConditionType) bool {
	for _, cond := range j.Status.Conditions {
		if cond.Type == c && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobStatus(j *batchv1.Job) string {
	switch {
	case hasJobCondition(j, batchv1.JobComplete):
		return "Complete"
	case hasJobCondition(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case hasJobCondition(j, batchv1.JobSuspended):
		return "Suspended"
	case hasJobCondition(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	case hasJobCondition(j, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func jobCompletions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// jobDuration is how long the job ran, up to the moment t while it runs.
func jobDuration(j *batchv1.Job, t time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(t.Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}

func servicePorts(ports []corev1.ServicePort) string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.NodePort > 0 {
			out[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		}
	}
	return strings.Join(out, ",")
}

// serviceExternalIP is getServiceExternalIP of the printers, wide.
func serviceExternalIP(s *corev1.Service) string {
	switch s.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(s.Spec.ExternalIPs, ",")
		}
		return "<none>"
	case corev1.ServiceTypeLoadBalancer:
		seen := map[string]bool{}
		var lb []string
		for _, in := range s.Status.LoadBalancer.Ingress {
			a := in.IP
			if a == "" {
				a = in.Hostname
			}
			if a != "" && !seen[a] {
				seen[a] = true
				lb = append(lb, a)
			}
		}
		sort.Strings(lb)
		if len(s.Spec.ExternalIPs) > 0 {
			return strings.Join(append(lb, s.Spec.ExternalIPs...), ",")
		}
		if len(lb) > 0 {
			return strings.Join(lb, ",")
		}
		return "<pending>"
	case corev1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

// nodeRow is printNode's row, wide.
func nodeRow(n *corev1.Node, t time.Time) []any {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			status = append(status, "Ready")
		} else {
			status = append(status, "NotReady")
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roleSet := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roleSet[r] = true
			}
		case k == "kubernetes.io/role" && v != "":
			roleSet[v] = true
		}
	}
	roles := make([]string, 0, len(roleSet))
	for r := range roleSet {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	rolesText := strings.Join(roles, ",")
	if rolesText == "" {
		rolesText = "<none>"
	}
	info := n.Status.NodeInfo
	unknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	kernel := unknown(info.KernelVersion)
	if info.Architecture != "" {
		kernel += " (" + info.Architecture + ")"
	}
	address := func(typ corev1.NodeAddressType) string {
		for _, a := range n.Status.Addresses {
			if a.Type == typ {
				return a.Address
			}
		}
		return "<none>"
	}
	return []any{n.Name, strings.Join(status, ","), rolesText, since(n.CreationTimestamp.Time, t), info.KubeletVersion,
		address(corev1.NodeInternalIP), address(corev1.NodeExternalIP), unknown(info.OSImage), kernel, unknown(info.ContainerRuntimeVersion)}
}

// eventRow is printEvent's row, wide, its times from the moment t.
func eventRow(e *corev1.Event, t time.Time) []any {
	first := since(e.FirstTimestamp.Time, t)
	if e.FirstTimestamp.IsZero() {
		first = since(e.EventTime.Time, t)
	}
	last := since(e.LastTimestamp.Time, t)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = since(e.Series.LastObservedTime.Time, t)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	source := component
	if host != "" {
		source += ", " + host
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source, strings.TrimSpace(e.Message), first, int64(count), e.Name}
}
