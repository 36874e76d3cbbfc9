package diff

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/store"
)

// Admission is what happened to the pod between the request that created it
// and the object the API server stored.
type Admission struct {
	// Source says what the stored pod was compared against: "template of
	// ReplicaSet web-7d9", "last-applied-configuration", or "managedFields"
	// (the fields no client sent).
	Source string `json:"source"`
	// Changes made at admission, each with who could have made it.
	Changes []AdmissionChange `json:"changes,omitempty"`
	// Defaults counts the changes hidden as defaulting or as the owning
	// controller's own additions (shown with ShowDefaults).
	Defaults int `json:"defaultsHidden,omitempty"`
	// Webhooks are the admission webhooks that intercepted the pod's CREATE,
	// as configured when it was created.
	Webhooks []admission.Webhook `json:"webhooks,omitempty"`
	// Notes are observations that bear on admission but prove nothing alone.
	Notes []string `json:"notes,omitempty"`
}

// AdmissionChange is one field that differs between what was asked for and
// what was stored.
type AdmissionChange struct {
	Change
	// By names who could have made it: an admission plugin by name, "a
	// mutating webhook or admission plugin", "defaulting", "the controller".
	By string `json:"by"`
	// Certainty says how sure the attribution is: "certain" (named by the
	// audit log), "likely" (the evidence points one way), "possible".
	Certainty string `json:"certainty"`
}

// AdmissionOptions control what the admission comparison shows.
type AdmissionOptions struct {
	// ShowDefaults keeps the changes that defaulting or the owning
	// controller made.
	ShowDefaults bool
}

// Who changed a field at admission, as far as the evidence tells.
const (
	byWebhookOrPlugin = "a mutating webhook or admission plugin"
	byDefaulting      = "defaulting"
	byController      = "the controller that created the pod"
)

// builtinAdmission recognizes the fields that the API server's built-in
// admission plugins set on pods.
func builtinAdmission(c Change, pod *corev1.Pod) (string, bool) {
	switch {
	case strings.HasPrefix(c.Path, "spec.volumes[kube-api-access-"),
		strings.Contains(c.Path, ".volumeMounts[/var/run/secrets/kubernetes.io/serviceaccount]"):
		return "the ServiceAccount admission plugin (API token volume)", true
	case c.Path == "spec.serviceAccountName" || c.Path == "spec.serviceAccount":
		return "the ServiceAccount admission plugin", true
	case strings.HasPrefix(c.Path, "spec.tolerations[") &&
		(strings.Contains(c.Path, corev1.TaintNodeNotReady) || strings.Contains(c.Path, corev1.TaintNodeUnreachable)) &&
		strings.Contains(c.Path, `"tolerationSeconds":300`):
		return "the DefaultTolerationSeconds admission plugin", true
	case c.Path == "spec.priority" || c.Path == "spec.preemptionPolicy" || c.Path == "spec.priorityClassName":
		return "the Priority admission plugin", true
	case c.Path == "spec.enableServiceLinks" || c.Path == "spec.schedulerName" || c.Path == "spec.dnsPolicy" ||
		c.Path == "spec.restartPolicy" || c.Path == "spec.terminationGracePeriodSeconds" || c.Path == "spec.securityContext":
		return byDefaulting, true
	}
	return "", false
}

// replayAdmission compares the first revision with what was asked for.
func replayAdmission(lc *Lifecycle, in Input, opts AdmissionOptions) *Admission {
	if len(lc.pods) == 0 {
		return nil
	}
	pod := lc.pods[0]
	first := lc.Steps[0]
	created := pod.CreationTimestamp.Time
	if first.Type != store.Initial {
		created = first.Time
	}
	adm := &Admission{}
	nsRecs := in.RelatedNamed("Namespace", lc.Namespace)
	adm.Webhooks = admission.MatchWebhooks(in.Webhooks, created, admission.PodRequest(admissionv1.Create, "", nil, pod, nsRecs, created))

	asked, source := askedFor(pod, in, created)
	creator := creatorFields(pod)
	if asked != nil {
		adm.Source = source
		for _, c := range ComparePods(asked, restrict(pod)) {
			ac := AdmissionChange{Change: c}
			owned := creator.owns(c.fields)
			if by, ok := builtinAdmission(c, pod); ok {
				ac.By, ac.Certainty = by, "likely"
			} else if !owned {
				ac.By, ac.Certainty = byWebhookOrPlugin, "likely"
			} else if c.Op == OpChange {
				// The client sent this field, with a value other than the
				// template's: a controller copies templates verbatim, so a
				// webhook most likely rewrote it.
				ac.By, ac.Certainty = byWebhookOrPlugin, "possible"
				if strings.HasPrefix(source, "template") {
					ac.Certainty = "likely"
				}
			} else {
				ac.By, ac.Certainty = byController, "possible"
			}
			if !opts.ShowDefaults && (ac.By == byDefaulting || ac.By == byController) {
				adm.Defaults++
				continue
			}
			adm.Changes = append(adm.Changes, ac)
		}
	} else {
		// No record of the request: the fields no manager owns were set by
		// the API server at admission, not sent by the client.
		adm.Source = "managedFields (fields no client sent)"
		for _, c := range ComparePods(nil, restrict(pod)) {
			if creator == nil || creator.owns(c.fields) {
				continue
			}
			ac := AdmissionChange{Change: c, By: byWebhookOrPlugin, Certainty: "possible"}
			if by, ok := builtinAdmission(c, pod); ok {
				ac.By, ac.Certainty = by, "likely"
			}
			if !opts.ShowDefaults && ac.By == byDefaulting {
				adm.Defaults++
				continue
			}
			adm.Changes = append(adm.Changes, ac)
		}
		if creator == nil {
			adm.Notes = append(adm.Notes, "the pod has no managedFields: what the client sent cannot be told from the stored object")
		}
	}
	if pinned := digestImages(pod); len(pinned) > 0 && len(adm.Webhooks) > 0 && asked == nil {
		adm.Notes = append(adm.Notes, fmt.Sprintf("images stored pinned by digest (%s) while mutating webhooks intercepted the CREATE: a webhook may have resolved tags to digests; the API server's audit log (its patch.webhook.admission.k8s.io annotations) tells for sure",
			strings.Join(pinned, ", ")))
	}
	return adm
}

// restrict keeps the parts of a pod that a request sets: labels,
// annotations and spec, without the fields set after creation. It leaves p
// as it is.
func restrict(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: p.Labels, Annotations: maps.Clone(p.Annotations)}, Spec: *p.Spec.DeepCopy()}
	out.Spec.NodeName = ""
	delete(out.Annotations, corev1.LastAppliedConfigAnnotation)
	return out
}

// ownerTemplate is an owner revision's pod template, or nil.
type ownerTemplate *corev1.PodTemplateSpec

// askedFor returns the pod as its creator asked for it, when the recording
// holds that: the owner's pod template (as it stood at creation), or the
// last-applied-configuration annotation.
func askedFor(pod *corev1.Pod, in Input, at time.Time) (*corev1.Pod, string) {
	for _, o := range pod.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		recs, ok := in.Related[string(o.UID)]
		if !ok {
			continue
		}
		rec, ok := admission.RevisionAt(recs, at)
		if !ok {
			continue
		}
		// Decoded once per command: the pods of a ReplicaSet were made
		// from a few of its revisions.
		t := Memo(in.Histories, []store.Record{rec}, func() ownerTemplate {
			var owner struct {
				Spec struct {
					Template *corev1.PodTemplateSpec `json:"template"`
				} `json:"spec"`
			}
			if json.Unmarshal(rec.Object, &owner) != nil {
				return nil
			}
			return owner.Spec.Template
		})
		if t == nil {
			continue
		}
		return restrict(&corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}), fmt.Sprintf("template of %s %s", o.Kind, o.Name)
	}
	if la := pod.Annotations[corev1.LastAppliedConfigAnnotation]; la != "" {
		var p corev1.Pod
		if json.Unmarshal([]byte(la), &p) == nil {
			return restrict(&p), "last-applied-configuration"
		}
	}
	return nil, ""
}

// creatorFields returns the fields the creating request owned.
func creatorFields(p *corev1.Pod) fieldSet {
	var merged fieldSet
	for _, m := range p.ManagedFields {
		if m.Subresource != "" {
			continue
		}
		if !m.Time.IsZero() && !p.CreationTimestamp.IsZero() && m.Time.After(p.CreationTimestamp.Add(time.Second)) {
			continue // a later update, not the creation
		}
		merged = mergeFields(merged, parseFields(m.FieldsV1))
	}
	return merged
}

func mergeFields(a, b fieldSet) fieldSet {
	if a == nil {
		return b
	}
	for k, v := range b {
		av, ok := a[k].(map[string]any)
		bv, _ := v.(map[string]any)
		if ok && bv != nil {
			a[k] = map[string]any(mergeFields(av, bv))
		} else if !ok {
			a[k] = v
		}
	}
	return a
}

func digestImages(p *corev1.Pod) []string {
	var out []string
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if strings.Contains(c.Image, "@sha256:") {
			out = append(out, c.Name)
		}
	}
	return out
}
