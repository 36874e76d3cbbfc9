package explain

// Volumes: a volume the kubelet could not attach or mount (volume), named
// with its source, a ConfigMap, a Secret or a claim, and the claim's
// recorded state; a pod the scheduler cannot place for a claim that is not
// bound (schedule.go names the claim).

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// defaultClassAnnotation marks the default StorageClass
// (storageutil.IsDefaultAnnotation).
const defaultClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// volumeTrouble explains the kubelet's failures to attach or mount the
// pod's volumes, and a claim not bound once the pod was scheduled.
func volumeTrouble(lc *diff.Lifecycle, in diff.Input) []Finding {
	pod := lc.Pods()[len(lc.Pods())-1]
	var groups []warningGroup
	for _, g := range warningGroups(lc) {
		if v, ok := VocabularyOf(WhereEvent, g.reason); ok && slices.Contains(v.Findings, "volume") {
			groups = append(groups, g)
		}
	}
	var unbound []claimState
	if lc.Node != "" {
		for _, c := range claimStates(lc, in) {
			if c.blocking != "" {
				unbound = append(unbound, c)
			}
		}
	}
	if len(groups) == 0 && len(unbound) == 0 {
		return nil
	}
	f := Finding{ID: "volume", Severity: Warning}
	// The volumes the events name ("MountVolume.SetUp failed for volume
	// \"config\" : ..."), else every volume of the pod.
	named := map[string]bool{}
	for _, g := range groups {
		f.Evidence = append(f.Evidence, groupEvidence(g)...)
		for _, m := range volumeInMessage.FindAllStringSubmatch(g.message, -1) {
			named[m[1]] = true
		}
	}
	var sources []string
	for _, v := range pod.Spec.Volumes {
		if len(named) > 0 && !named[v.Name] {
			continue
		}
		src, text := volumeSource(lc, in, pod, v)
		if src == "" && named[v.Name] {
			src = volumeKind(v)
		}
		if src == "" {
			continue
		}
		sources = append(sources, fmt.Sprintf("volume %q (%s)", v.Name, src))
		if text != "" {
			f.Evidence = append(f.Evidence, Evidence{Text: text})
		}
	}
	for _, c := range unbound {
		f.Evidence = append(f.Evidence, c.evidence...)
	}
	switch {
	case len(groups) > 0:
		g := groups[len(groups)-1]
		what := "a volume"
		if len(sources) > 0 {
			what = strings.Join(sources, ", ")
		}
		f.Headline = fmt.Sprintf("%s: %s", what, shorten(g.reason+": "+g.message, 200))
	default:
		f.Headline = unbound[0].blocking
	}
	f.Next = []string{"the kubelet retries the mount while the pod waits: create what the volume names (the ConfigMap, Secret or claim), or fix the volume's spec; kubectl describe pod -n " + lc.Namespace + " " + lc.Name + " shows its latest attempt"}
	return []Finding{f}
}

// volumeInMessage finds the volume a kubelet's volume message names
// (pkg/volume/util/operationexecutor: `for volume "NAME"`).
var volumeInMessage = regexp.MustCompile(`volume "([^"]+)"`)

// volumeSource names a volume's source and says what the recording holds
// of it: a claim's state, whether a ConfigMap or Secret was recorded (only
// those a pod owns are).
func volumeSource(lc *diff.Lifecycle, in diff.Input, pod *corev1.Pod, v corev1.Volume) (string, string) {
	notRecorded := func(kind, name string) string {
		for _, recs := range in.Related {
			if len(recs) > 0 && recs[0].Kind == kind && recs[0].Name == name && recs[0].Namespace == lc.Namespace {
				last := recs[len(recs)-1]
				if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
					return fmt.Sprintf("%s %s (owned by the pod) was deleted at %s", kind, name, stamp(last.Observed))
				}
				return fmt.Sprintf("%s %s (owned by the pod) was recorded, last at %s", kind, name, stamp(last.Observed))
			}
		}
		return fmt.Sprintf("%s %s: podtrace records ConfigMaps and Secrets only when a pod owns them, so whether it existed is not in the trace", kind, name)
	}
	switch {
	case v.ConfigMap != nil:
		return "ConfigMap " + v.ConfigMap.Name, notRecorded("ConfigMap", v.ConfigMap.Name)
	case v.Secret != nil:
		return "Secret " + v.Secret.SecretName, notRecorded("Secret", v.Secret.SecretName)
	case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
		name := pod.Name + "-" + v.Name
		if v.PersistentVolumeClaim != nil {
			name = v.PersistentVolumeClaim.ClaimName
		}
		c := claimState{name: name}
		c.read(lc, in)
		texts := make([]string, 0, len(c.evidence))
		for _, e := range c.evidence {
			texts = append(texts, e.Text)
		}
		return "PersistentVolumeClaim " + name, strings.Join(texts, "; ")
	case v.Projected != nil:
		var parts []string
		for _, s := range v.Projected.Sources {
			switch {
			case s.ConfigMap != nil:
				parts = append(parts, "ConfigMap "+s.ConfigMap.Name)
			case s.Secret != nil:
				parts = append(parts, "Secret "+s.Secret.Name)
			}
		}
		if len(parts) == 0 {
			return "", "" // a service account token and its CA: the kubelet's own
		}
		return "projected " + strings.Join(parts, ", "), ""
	}
	return "", ""
}

// volumeKind says what a volume is when volumeSource has nothing to
// look up: a hostPath's path and type, a CSI driver, an NFS export, else
// the kind the API names it by.
func volumeKind(v corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		s := "hostPath " + v.HostPath.Path
		if v.HostPath.Type != nil && *v.HostPath.Type != "" {
			s += ", type " + string(*v.HostPath.Type)
		}
		return s
	case v.CSI != nil:
		return "CSI driver " + v.CSI.Driver
	case v.NFS != nil:
		return "NFS " + v.NFS.Server + ":" + v.NFS.Path
	case v.EmptyDir != nil:
		return "emptyDir"
	case v.Projected != nil:
		return "projected"
	case v.DownwardAPI != nil:
		return "downwardAPI"
	case v.Image != nil:
		return "image " + v.Image.Reference
	}
	// The other sources by their field's name in the API.
	b, err := json.Marshal(v.VolumeSource)
	if err != nil {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	for k := range m {
		return k
	}
	return ""
}

// claimState is what the recording says of a claim a pod's volume names.
type claimState struct {
	name string
	// blocking, if not "", is why the claim holds the pod: "", once bound.
	blocking string
	evidence []Evidence
}

// claimStates reads the claims the pod's volumes name.
func claimStates(lc *diff.Lifecycle, in diff.Input) []claimState {
	pod := lc.Pods()[len(lc.Pods())-1]
	var out []claimState
	for _, v := range pod.Spec.Volumes {
		name := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name = pod.Name + "-" + v.Name
		default:
			continue
		}
		c := claimState{name: name}
		c.read(lc, in)
		out = append(out, c)
	}
	return out
}

// read fills c from the claim's recorded revisions and events, and the
// StorageClasses recorded.
func (c *claimState) read(lc *diff.Lifecycle, in diff.Input) {
	var recs []store.Record
	for _, r := range in.Claims {
		if len(r) > 0 && r[0].Name == c.name && r[0].Namespace == lc.Namespace {
			recs = r
		}
	}
	said := schedulerSaysMissing(lc, c.name)
	if len(recs) == 0 {
		text := fmt.Sprintf("PersistentVolumeClaim %s was not recorded: it did not exist while recording, or the recorder did not record claims", c.name)
		if said != "" {
			text = fmt.Sprintf("PersistentVolumeClaim %s does not exist: the scheduler says %s", c.name, said)
			c.blocking = fmt.Sprintf("PersistentVolumeClaim %s does not exist", c.name)
		}
		c.evidence = append(c.evidence, Evidence{Text: text})
		return
	}
	last := recs[len(recs)-1]
	var pvc corev1.PersistentVolumeClaim
	if json.Unmarshal(last.Object, &pvc) != nil {
		return
	}
	if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
		c.evidence = append(c.evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("PersistentVolumeClaim %s deleted", c.name)})
		c.blocking = fmt.Sprintf("PersistentVolumeClaim %s was deleted", c.name)
		return
	}
	if pvc.Status.Phase == "" && pvc.Spec.StorageClassName == nil && len(pvc.Spec.AccessModes) == 0 {
		c.evidence = append(c.evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: fmt.Sprintf("PersistentVolumeClaim %s was recorded as metadata only: its phase and class are not known", c.name)})
		return
	}
	class := "no storageClassName (the default StorageClass applies)"
	if pvc.Spec.StorageClassName != nil {
		class = fmt.Sprintf("storageClassName %q", *pvc.Spec.StorageClassName)
	}
	state := fmt.Sprintf("PersistentVolumeClaim %s as last recorded: phase %s, %s", c.name, orUnknown(string(pvc.Status.Phase)), class)
	if pvc.Spec.VolumeName != "" {
		state += ", volume " + pvc.Spec.VolumeName
	}
	c.evidence = append(c.evidence, Evidence{Seq: last.Seq, Time: last.Observed, Text: state})
	if pvc.Status.Phase == corev1.ClaimBound {
		return
	}
	why := fmt.Sprintf("PersistentVolumeClaim %s is %s", c.name, orUnknown(string(pvc.Status.Phase)))
	classText, classWhy, waits := storageClassState(in, pvc.Spec.StorageClassName)
	if classText != "" {
		c.evidence = append(c.evidence, Evidence{Text: classText})
	}
	// What the volume controllers said on the claim.
	var claimSaid string
	for _, uid := range sortedKeys(in.ClaimEvents) {
		if recs := in.Claims[uid]; len(recs) == 0 || recs[0].Name != c.name {
			continue
		}
		for _, e := range diff.ReplayEvents(in.ClaimEvents[uid]) {
			e := e
			c.evidence = append(c.evidence, Evidence{Seq: e.Seq, Time: e.Time, Text: "on the claim: " + eventText(&e)})
			if e.Type == corev1.EventTypeWarning {
				claimSaid = e.Reason + ": " + e.Message
			}
		}
	}
	switch {
	case claimSaid != "":
		why += ": " + shorten(claimSaid, 160)
	case classWhy != "":
		why += ": " + classWhy
	case waits:
		// WaitForFirstConsumer: the claim binds once the pod is placed;
		// Pending until then is the design, not the cause.
		return
	}
	c.blocking = why
}

// schedulerSaysMissing returns the scheduler's word that the claim does
// not exist (`persistentvolumeclaim "NAME" not found`), or "".
func schedulerSaysMissing(lc *diff.Lifecycle, name string) string {
	want := fmt.Sprintf(`persistentvolumeclaim "%s" not found`, name)
	for _, e := range lc.Events {
		if e.Reason == "FailedScheduling" && strings.Contains(e.Message, want) {
			return want
		}
	}
	return ""
}

// storageClassState says what the recorded StorageClasses say of the class
// a claim names (nil: the default one): a text for the evidence, why the
// claim cannot bind for it ("" when the class exists), and whether the
// class binds its claims only once a pod using them is scheduled
// (WaitForFirstConsumer).
func storageClassState(in diff.Input, name *string) (text, why string, waits bool) {
	var classes []storagev1.StorageClass
	for _, uid := range sortedKeys(in.StorageClasses) {
		recs := in.StorageClasses[uid]
		last := recs[len(recs)-1]
		if last.Type == store.Deleted || last.Type == store.DeletedUnknown {
			continue
		}
		var sc storagev1.StorageClass
		if json.Unmarshal(last.Object, &sc) == nil {
			classes = append(classes, sc)
		}
	}
	if len(classes) == 0 {
		return "no StorageClass was recorded: none existed, or the recorder did not record them", "", false
	}
	describe := func(sc storagev1.StorageClass) (string, string, bool) {
		mode := storagev1.VolumeBindingImmediate
		if sc.VolumeBindingMode != nil {
			mode = *sc.VolumeBindingMode
		}
		return fmt.Sprintf("StorageClass %s: provisioner %s, volumeBindingMode %s", sc.Name, sc.Provisioner, mode), "", mode == storagev1.VolumeBindingWaitForFirstConsumer
	}
	if name == nil {
		for _, sc := range classes {
			if sc.Annotations[defaultClassAnnotation] == "true" {
				text, why, waits := describe(sc)
				return text + " (the default)", why, waits
			}
		}
		return fmt.Sprintf("no StorageClass of the %d recorded is the default", len(classes)), "it names no StorageClass and none is the default", false
	}
	if *name == "" {
		return `storageClassName "": only a PersistentVolume without a class binds it, none is provisioned`, "", false
	}
	for _, sc := range classes {
		if sc.Name == *name {
			return describe(sc)
		}
	}
	var names []string
	for _, sc := range classes {
		names = append(names, sc.Name)
	}
	return fmt.Sprintf("no StorageClass %q among those recorded (%s)", *name, strings.Join(names, ", ")), fmt.Sprintf("StorageClass %q does not exist", *name), false
}
