package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// goCmpChanges is how ComparePods found changes before it had a walker of
// its own: go-cmp over the whole pod, with podOptions and the reporter.
func goCmpChanges(old, new *corev1.Pod) []Change {
	if old == nil {
		old = &corev1.Pod{}
	}
	if new == nil {
		new = &corev1.Pod{}
	}
	var r reporter
	cmp.Equal(old, new, podOptions, cmp.Reporter(&r))
	sort.SliceStable(r.changes, func(i, j int) bool { return r.changes[i].Path < r.changes[j].Path })
	return r.changes
}

// checkSameChanges fails when ComparePods and go-cmp disagree on a pair, in
// either direction, managedFields paths included. Inside ordered lists
// (from the first i:N step of a path on) go-cmp's edit script is random by
// design (see ordered.go), so there they must only agree on which lists
// changed, and ComparePods must not report more changes for a list than
// go-cmp: its script is one of the fewest edits. TestOrderedScript and
// TestComparePodsOrderedLists hold its exact output.
func checkSameChanges(t *testing.T, name string, a, b *corev1.Pod) {
	t.Helper()
	for _, pair := range [][2]*corev1.Pod{{a, b}, {b, a}} {
		want := goCmpChanges(pair[0], pair[1])
		got := ComparePods(pair[0], pair[1])
		wantPlain, wantLists := splitOrdered(want)
		gotPlain, gotLists := splitOrdered(got)
		if diff := cmp.Diff(wantPlain, gotPlain, cmp.AllowUnexported(Change{})); diff != "" {
			t.Fatalf("%s: ComparePods differs from go-cmp (-want +got):\n%s", name, diff)
		}
		for list, w := range wantLists {
			g, ok := gotLists[list]
			switch {
			case !ok:
				t.Fatalf("%s: go-cmp finds ordered list %s changed, ComparePods does not: %+v", name, list, w)
			case len(g) > len(w):
				t.Fatalf("%s: ComparePods reports more changes than go-cmp in ordered list %s:\ngo-cmp: %+v\nComparePods: %+v", name, list, w, g)
			}
		}
		for list, g := range gotLists {
			if _, ok := wantLists[list]; !ok {
				t.Fatalf("%s: ComparePods finds ordered list %s changed, go-cmp does not: %+v", name, list, g)
			}
		}
	}
}

// splitOrdered splits changes into those outside ordered lists and, by the
// managedFields path of their list, those inside.
func splitOrdered(changes []Change) (plain []Change, lists map[string][]Change) {
	lists = map[string][]Change{}
	for _, c := range changes {
		i := slices.IndexFunc(c.fields, func(f string) bool { return strings.HasPrefix(f, "i:") })
		if i < 0 {
			plain = append(plain, c)
			continue
		}
		list := strings.Join(c.fields[:i], ".")
		lists[list] = append(lists[list], c)
	}
	return plain, lists
}

// richPod has a bit of everything the walker treats apart: keyed lists,
// sets, ordered lists, maps, quantities, times, pointers, nil and empty.
func richPod() *corev1.Pod {
	t0 := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	yes := true
	grace := int64(30)
	secs := int64(300)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "job", Namespace: "ci", UID: "uid-1", ResourceVersion: "10", CreationTimestamp: t0,
			Labels:          map[string]string{"app": "ci", "tier": ""},
			Annotations:     map[string]string{"note": "a <b> & c"},
			Finalizers:      []string{"example.com/hold", "foregroundDeletion"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "build", UID: "job-1", Controller: &yes}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "runner", Operation: metav1.ManagedFieldsOperationUpdate, Time: &t0}},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Command: []string{"sh", "-c", "true"}}},
			Containers: []corev1.Container{
				{
					Name: "build", Image: "alpine:3.20", Args: []string{"--a", "--b"},
					Env:          []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(80)}}},
				},
				{Name: "helper", Image: "helper:v1", Args: []string{}},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "a"}}}}},
			},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
				{Key: "b", Operator: corev1.TolerationOpExists},
			},
			NodeSelector:                  map[string]string{"disk": "ssd"},
			TerminationGracePeriodSeconds: &grace,
			SecurityContext:               &corev1.PodSecurityContext{},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}},
			}}},
			ReadinessGates:  []corev1.PodReadinessGate{{ConditionType: "example.com/gate"}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "wait"}},
		},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}},
			StartTime:  &t0,
			PodIPs:     []corev1.PodIP{{IP: "10.0.0.1"}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "build", RestartCount: 1, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: t0}}},
				{Name: "helper", Ready: true},
			},
		},
	}
}

// podMutations change one thing each, the way revisions and requests do.
var podMutations = []func(p *corev1.Pod, r *rand.Rand){
	func(p *corev1.Pod, r *rand.Rand) { p.ResourceVersion = fmt.Sprint(r.IntN(100)) },
	func(p *corev1.Pod, r *rand.Rand) {
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubelet"})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Labels = map[string]string{"app": fmt.Sprint(r.IntN(3))} },
	func(p *corev1.Pod, r *rand.Rand) { p.Labels = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Labels = map[string]string{} },
	func(p *corev1.Pod, r *rand.Rand) { delete(p.Labels, "tier") },
	func(p *corev1.Pod, r *rand.Rand) { p.Annotations = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Finalizers = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Finalizers = []string{} },
	func(p *corev1.Pod, r *rand.Rand) { p.Finalizers = []string{"foregroundDeletion", "example.com/hold"} },
	func(p *corev1.Pod, r *rand.Rand) { p.Finalizers = append(p.Finalizers, "", "orphan", "orphan") },
	func(p *corev1.Pod, r *rand.Rand) { p.OwnerReferences[0].Controller = nil },
	func(p *corev1.Pod, r *rand.Rand) {
		now := metav1.NewTime(time.Date(2026, 12, 1, 10, r.IntN(3), 0, 0, time.UTC))
		g := int64(r.IntN(2) * 30)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &now, &g
	},
	func(p *corev1.Pod, r *rand.Rand) { c := p.Spec.Containers; c[0], c[1] = c[1], c[0] },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Image = fmt.Sprintf("alpine:%d", r.IntN(3)) },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy:1"})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers = p.Spec.Containers[:1] },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers = append(p.Spec.Containers, corev1.Container{}) },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Args = []string{"--b", "--a", "--c"} },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Args[1] = fmt.Sprint("--", r.IntN(3)) },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Args = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[1].Args = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[1].Args = []string{"x"} },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "A", Value: "dup"})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Env[0].Value = fmt.Sprint(r.IntN(3)) },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers[0].Env[1].ValueFrom.FieldRef.FieldPath = "metadata.namespace"
	},
	func(p *corev1.Pod, r *rand.Rand) { e := p.Spec.Containers[0].Env; e[0], e[1] = e[1], e[0] },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].Ports[0].ContainerPort = int32(80 + r.IntN(2)) },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse([]string{"1", "1000m", "2"}[r.IntN(3)])
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	},
	func(p *corev1.Pod, r *rand.Rand) {
		delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("http")
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].ReadinessProbe = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Containers[0].VolumeMounts[0].ReadOnly = true },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Volumes[0].EmptyDir.SizeLimit = ptrTo(resource.MustParse("1Gi"))
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Volumes[1].ConfigMap.Items[0].Path = "b" },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.Volumes = p.Spec.Volumes[1:] },
	func(p *corev1.Pod, r *rand.Rand) { t := p.Spec.Tolerations; t[0], t[1] = t[1], t[0] },
	func(p *corev1.Pod, r *rand.Rand) {
		s := int64(r.IntN(2) * 600)
		p.Spec.Tolerations[0].TolerationSeconds = &s
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "c", Operator: corev1.TolerationOpEqual, Value: "<x>"})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.NodeName = fmt.Sprint("node-", r.IntN(2)) },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.NodeSelector = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.SecurityContext = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.SecurityContext.RunAsNonRoot = ptrTo(true) },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"b", "c"}
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.ReadinessGates = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Spec.SchedulingGates = nil },
	func(p *corev1.Pod, r *rand.Rand) { p.Status.Phase = corev1.PodSucceeded },
	func(p *corev1.Pod, r *rand.Rand) { p.Status.Conditions[1].Status = corev1.ConditionTrue },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.Conditions[1].LastTransitionTime = metav1.NewTime(time.Date(2026, 12, 1, 11, r.IntN(2), 0, 0, time.UTC))
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Status.StartTime = nil },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::1"})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Status.ContainerStatuses[0].RestartCount = int32(r.IntN(3)) },
	func(p *corev1.Pod, r *rand.Rand) { p.Status.ContainerStatuses[1].Ready = r.IntN(2) == 0 },
	func(p *corev1.Pod, r *rand.Rand) {
		s := &p.Status.ContainerStatuses[0]
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(r.IntN(2)), Reason: "Completed", StartedAt: s.State.Running.StartedAt}}
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(time.Date(2026, 12, 1, 12, r.IntN(2), 0, 0, time.UTC))
	},
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.ContainerStatuses[1].ContainerID = fmt.Sprintf("containerd://%064x", r.IntN(3))
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Status.ContainerStatuses = p.Status.ContainerStatuses[1:] },
	func(p *corev1.Pod, r *rand.Rand) {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{})
	},
	func(p *corev1.Pod, r *rand.Rand) { p.Status.ContainerStatuses = nil },
}

func ptrTo[T any](v T) *T { return &v }

// mutate applies n random mutations to p. A mutation that no longer fits
// (the container it edits is gone) is skipped.
func mutate(p *corev1.Pod, r *rand.Rand, n int) {
	for range n {
		func() {
			defer func() { _ = recover() }()
			podMutations[r.IntN(len(podMutations))](p, r)
		}()
	}
}

// randomPod applies n random mutations to a rich pod.
func randomPod(r *rand.Rand, n int) *corev1.Pod {
	p := richPod()
	mutate(p, r, n)
	return p
}

func TestComparePodsMatchesGoCmp(t *testing.T) {
	checkSameChanges(t, "nil and a rich pod", nil, richPod())
	checkSameChanges(t, "nil and an empty pod", nil, &corev1.Pod{})
	for i, m := range podMutations {
		r := rand.New(rand.NewPCG(1, uint64(i)))
		p := richPod()
		m(p, r)
		checkSameChanges(t, fmt.Sprintf("mutation %d", i), richPod(), p)
	}
	// JSON omits nil and empty alike: lists and maps of each kind, nil in
	// one pod and empty in the other, are no change.
	emptied := func(empty bool) *corev1.Pod {
		p := richPod()
		p.Labels, p.Annotations, p.Spec.NodeSelector = nil, nil, nil
		p.Finalizers, p.Spec.Tolerations, p.Status.Conditions, p.Spec.Containers[1].Args = nil, nil, nil, nil
		if empty {
			p.Labels, p.Annotations, p.Spec.NodeSelector = map[string]string{}, map[string]string{}, map[string]string{}
			p.Finalizers, p.Spec.Tolerations, p.Status.Conditions, p.Spec.Containers[1].Args = []string{}, []corev1.Toleration{}, []corev1.PodCondition{}, []string{}
		}
		return p
	}
	if got := ComparePods(emptied(false), emptied(true)); len(got) > 0 {
		t.Errorf("nil and empty lists and maps compare as changes: %+v", got)
	}
	checkSameChanges(t, "nil lists and maps", richPod(), emptied(false))
	checkSameChanges(t, "empty lists and maps", richPod(), emptied(true))

	pairs := 400
	if testing.Short() {
		pairs = 50
	}
	r := rand.New(rand.NewPCG(2, 2))
	for i := range pairs {
		checkSameChanges(t, fmt.Sprintf("random pair %d", i), randomPod(r, r.IntN(4)), randomPod(r, r.IntN(4)))
	}
}

// TestComparePodsSharedRevisions compares revisions decoded by the decoder,
// which share their unchanged parts, as Replay does.
func TestComparePodsSharedRevisions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var dec decoder
	var prev *corev1.Pod
	for i, rec := range podRevisions(t, r, 300) {
		pod, err := dec.decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			checkSameChanges(t, fmt.Sprintf("revision %d", i), prev, pod)
		}
		prev = pod
	}
}

// TestComparePodsPointeeToZero: a pointer to a scalar whose value goes to
// or from zero, both pointers set, is a change of value, not a field added
// or removed: the kubelet's DELETE with grace period 0 sets
// deletionGracePeriodSeconds 3 -> 0; a container's started goes false ->
// true. A nil pointer against a set one is still an addition or removal.
func TestComparePodsPointeeToZero(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	b := func(v bool) *bool { return &v }
	for _, tc := range []struct {
		name     string
		x, y     func(p *corev1.Pod)
		path     string
		op       Op
		old, new string
	}{
		{"grace period 3 -> 0", func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = i64(3) }, func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = i64(0) },
			"metadata.deletionGracePeriodSeconds", OpChange, "3", "0"},
		{"grace period 0 -> 30", func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = i64(0) }, func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = i64(30) },
			"metadata.deletionGracePeriodSeconds", OpChange, "0", "30"},
		{"grace period set", func(p *corev1.Pod) {}, func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = i64(0) },
			"metadata.deletionGracePeriodSeconds", OpAdd, "", "0"},
		{"started false -> true", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Started = b(false) }, func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Started = b(true) },
			"status.containerStatuses[app].started", OpChange, "false", "true"},
		{"started true -> unset", func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Started = b(true) }, func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Started = nil },
			"status.containerStatuses[app].started", OpRemove, "true", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := &corev1.Pod{}, &corev1.Pod{}
			for _, p := range []*corev1.Pod{x, y} {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app"}}
			}
			tc.x(x)
			tc.y(y)
			checkSameChanges(t, tc.name, x, y)
			got := ComparePods(x, y)
			if len(got) != 1 || got[0].Path != tc.path || got[0].Op != tc.op || got[0].Old != tc.old || got[0].New != tc.new {
				t.Errorf("changes %+v, want one %s at %s, %q -> %q", got, tc.op, tc.path, tc.old, tc.new)
			}
		})
	}
}
