package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// CorpusOutEnv names a directory: when set, TestRealNodeCorpus copies the
// traces it recorded there, realnode.db (the recording alone) and
// realnode-audit.db (with the API server's audit log imported), for other
// tests and for people to read.
const CorpusOutEnv = "PODTRACE_CORPUS_OUT"

// realCase is one lifecycle of the real-node corpus, played in a namespace
// of its own: run plays it while the recorder runs; check asserts what the
// trace holds and what podtrace already says about it, from the recording
// alone (audited false) and with the audit log imported (audited true).
type realCase struct {
	name  string
	ns    string
	run   func(t *testing.T)
	check func(t *testing.T, tr *realTrace, audited bool)
}

// realTrace is a recorded trace and the real node it was recorded on.
type realTrace struct {
	db   string
	node string // the real node's name
}

// kubeletUser is the kubelet's identity in the audit log.
func (tr *realTrace) kubeletUser() string { return "system:node:" + tr.node }

// TestRealNodeCorpus plays lifecycles that only a real kubelet writes, on
// one real node (kubelet, containerd, runc), each case in its own namespace
// and at the same time, records them with podtrace record, imports the
// audit log into a copy of the trace, and checks both traces: the
// container states, exit codes and reasons as the kubelet wrote them, its
// field manager and identity, its final DELETE, and the findings podtrace
// gives for them. The deletion that the kubelet never confirms stops the
// kubelet, so it is played last.
func TestRealNodeCorpus(t *testing.T) {
	began := time.Now()
	// Registered first, so run last: after the cluster stopped, with the
	// kubelet already stopped by the last case, nothing of the node is left.
	var node *cluster.RealNode
	t.Cleanup(func() {
		if node != nil {
			if left := node.Leftovers(); len(left) > 0 {
				t.Errorf("left on the machine by %s:\n%s", node.Name, strings.Join(left, "\n"))
			}
		}
	})
	c, client := newCluster(t, cluster.Options{Nodes: -1, RealNodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	node = c.RealNodes[0]
	rec := startRecorder(t, c)

	cases := []*realCase{
		gracefulCase(client, node.Name, "rn-term", "exits on SIGTERM", `trap 'exit 0' TERM; while true; do sleep 1; done`, 0, "Completed"),
		gracefulCase(client, node.Name, "rn-kill", "ignores SIGTERM", `trap '' TERM; while true; do sleep 1; done`, 137, "Error"),
		oomCase(client, node.Name, "rn-oom-never", corev1.RestartPolicyNever),
		oomCase(client, node.Name, "rn-oom-always", corev1.RestartPolicyAlways),
		crashLoopCase(client, node.Name),
		realImagePullCase(client, node.Name),
		initFailCase(client, node.Name),
		realNeverReadyCase(client, node.Name),
		realHealthyCase(client, node.Name),
	}
	t.Run("run", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tc.run(t)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	unconfirmed := unconfirmedCase(client, node)
	t.Run("run", func(t *testing.T) {
		t.Run(unconfirmed.name, unconfirmed.run)
	})
	if t.Failed() {
		t.FailNow()
	}
	cases = append(cases, unconfirmed)
	time.Sleep(2 * time.Second) // let the watches deliver the last revisions
	rec.stop(t)
	t.Logf("corpus recorded %s after the test began", time.Since(began).Round(time.Second))

	audited := filepath.Join(t.TempDir(), "realnode-audit.db")
	copyFile(t, rec.db, audited)
	podtrace(t, "import", "--audit-log", c.AuditLog, "--db", audited)
	if dir := os.Getenv(CorpusOutEnv); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, rec.db, filepath.Join(dir, "realnode.db"))
		copyFile(t, audited, filepath.Join(dir, "realnode-audit.db"))
		t.Logf("traces copied to %s: realnode.db, realnode-audit.db", dir)
	}

	for _, v := range []struct {
		name    string
		db      string
		audited bool
	}{{"recording", rec.db, false}, {"with audit log", audited, true}} {
		tr := &realTrace{db: v.db, node: node.Name}
		t.Run(v.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) { tc.check(t, tr, v.audited) })
			}
		})
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// realPod is a pod on the real node running busybox's sh -c script in a
// container named app, with no cluster DNS (none runs).
func realPod(ns, name, node, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
		Spec:       realPodSpec(node, script),
	}
}

func realPodSpec(node, script string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{"kubernetes.io/hostname": node},
		DNSPolicy:    corev1.DNSDefault,
		Containers: []corev1.Container{{
			Name: "app", Image: cluster.BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command: []string{"sh", "-c", script},
		}},
	}
}

// recordedPods returns every recorded revision of the pod ns/name (its
// first incarnation), decoded, in order.
func recordedPods(t *testing.T, db, ns, name string) []*corev1.Pod {
	t.Helper()
	tdb, err := store.Open(db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	objs, err := tdb.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatalf("pod %s/%s not in the trace", ns, name)
	}
	h, err := tdb.History(objs[0].UID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*corev1.Pod
	for _, r := range h {
		var p corev1.Pod
		if err := json.Unmarshal(r.Object, &p); err != nil {
			t.Fatalf("decode revision %d of %s/%s: %v", r.Seq, ns, name, err)
		}
		out = append(out, &p)
	}
	return out
}

// statusesOf returns the pod's init container statuses, or its container
// statuses.
func statusesOf(p *corev1.Pod, init bool) []corev1.ContainerStatus {
	if init {
		return p.Status.InitContainerStatuses
	}
	return p.Status.ContainerStatuses
}

// terminatedSeen returns the first recorded termination of the container
// (state or last state) that matches want, or nil.
func terminatedSeen(pods []*corev1.Pod, init bool, container string, want func(*corev1.ContainerStateTerminated) bool) *corev1.ContainerStateTerminated {
	for _, p := range pods {
		for _, s := range statusesOf(p, init) {
			if s.Name != container {
				continue
			}
			for _, term := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
				if term != nil && want(term) {
					return term
				}
			}
		}
	}
	return nil
}

// wantTerminated checks that the container was recorded terminated with the
// exit code and reason.
func wantTerminated(t *testing.T, pods []*corev1.Pod, init bool, container string, code int32, reason string) {
	t.Helper()
	if terminatedSeen(pods, init, container, func(s *corev1.ContainerStateTerminated) bool {
		return s.ExitCode == code && s.Reason == reason
	}) == nil {
		t.Errorf("container %s never recorded terminated with exit code %d, reason %s; recorded: %s", container, code, reason, containerStates(pods, init, container))
	}
}

// wantWaiting checks that the container was recorded waiting with reason.
func wantWaiting(t *testing.T, pods []*corev1.Pod, init bool, container, reason string) {
	t.Helper()
	for _, p := range pods {
		for _, s := range statusesOf(p, init) {
			if s.Name == container && s.State.Waiting != nil && s.State.Waiting.Reason == reason {
				return
			}
		}
	}
	t.Errorf("container %s never recorded waiting with reason %s; recorded: %s", container, reason, containerStates(pods, init, container))
}

// containerStates describes the container's recorded states, deduplicated.
func containerStates(pods []*corev1.Pod, init bool, container string) string {
	var out []string
	for _, p := range pods {
		for _, s := range statusesOf(p, init) {
			if s.Name != container {
				continue
			}
			var d string
			switch st := s.State; {
			case st.Waiting != nil:
				d = "waiting/" + st.Waiting.Reason
			case st.Running != nil:
				d = "running"
			case st.Terminated != nil:
				d = fmt.Sprintf("terminated/%s/%d", st.Terminated.Reason, st.Terminated.ExitCode)
			}
			if lt := s.LastTerminationState.Terminated; lt != nil {
				d += fmt.Sprintf(" (last terminated/%s/%d)", lt.Reason, lt.ExitCode)
			}
			if len(out) == 0 || out[len(out)-1] != d {
				out = append(out, d)
			}
		}
	}
	return strings.Join(out, ", ")
}

// wantKubeletActor checks that the kubelet wrote the pod's status: its field
// manager in the recording (managedFields), and with the audit log its node
// identity, known from the audit log, for the status writes.
func wantKubeletActor(t *testing.T, tr *realTrace, lc *explain.Lifecycle, audited bool) {
	t.Helper()
	want := func(a diff.Actor) bool {
		return a.Manager == "kubelet" && a.Subresource == "status" && a.Basis == diff.BasisManagedFields
	}
	what := "the kubelet's field manager (kubelet, status, managedFields)"
	if audited {
		want = func(a diff.Actor) bool {
			return a.Who == tr.kubeletUser() && a.Subresource == "status" && a.Basis == diff.BasisAuditLog
		}
		what = tr.kubeletUser() + " (status, audit-log)"
	}
	if !slices.ContainsFunc(lc.Steps, func(s diff.Step) bool { return slices.ContainsFunc(s.Actors, want) }) {
		t.Errorf("no step written by %s; actors: %s", what, stepActors(lc))
	}
	if audited && (lc.Audit == nil || !slices.ContainsFunc(lc.Audit.Requests, func(r diff.AuditRequest) bool {
		return r.User == tr.kubeletUser() && r.Subresource == "status" && r.Verb == "patch"
	})) {
		t.Errorf("no status patch by %s in the audit log's requests: %s", tr.kubeletUser(), auditRequests(lc))
	}
}

// wantKubeletFinalDelete checks that the pod is recorded deleted after the
// kubelet's DELETE with grace period 0 (the confirmation that its
// containers stopped; with the audit log, made by the kubelet's identity
// after the client's DELETE), and that the deletion's actor is the client
// that asked: unknown from the recording alone, the client with the audit
// log, never the kubelet's confirmation.
func wantKubeletFinalDelete(t *testing.T, tr *realTrace, lc *explain.Lifecycle, audited bool) {
	t.Helper()
	if lc.Outcome != "Deleted" {
		t.Errorf("outcome %q, want Deleted", lc.Outcome)
	}
	// The DELETE with grace period 0 leaves a revision whose grace period
	// dropped to 0 (deletionTimestamp moves to its time, unless that is
	// still the same second).
	pods := recordedPods(t, tr.db, lc.Namespace, lc.Name)
	if !slices.ContainsFunc(pods[1:], func(p *corev1.Pod) bool {
		prev := pods[slices.Index(pods, p)-1]
		return p.DeletionTimestamp != nil && prev.DeletionGracePeriodSeconds != nil && *prev.DeletionGracePeriodSeconds > 0 &&
			(p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds == 0)
	}) {
		t.Errorf("no recorded revision made by a DELETE with grace period 0; actors: %s", stepActors(lc))
	}
	f := endedFinding(t, tr.db, lc.Namespace, lc.Name)
	if !audited {
		wantEnded(t, f, explain.MechanismDelete, explain.Info, diff.BasisUnknown, "unknown")
		return
	}
	auditedAs(t, f, explain.MechanismDelete, adminUser, "e2e-client")
	var deletes []diff.AuditRequest
	if lc.Audit != nil {
		for _, r := range lc.Audit.Requests {
			if r.Verb == "delete" {
				deletes = append(deletes, r)
			}
		}
	}
	// The client's DELETE starts the graceful deletion; the kubelet's
	// (grace period 0, once the containers stopped) ends it.
	if len(deletes) != 2 || deletes[1].User != tr.kubeletUser() || deletes[0].User != adminUser {
		t.Errorf("DELETE requests %+v, want the client's (%s) then the kubelet's (%s)", deletes, adminUser, tr.kubeletUser())
	}
}

// adminUser is the user of the cluster's admin client, which the tests use.
const adminUser = "podtrace-admin"

func stepActors(lc *explain.Lifecycle) string {
	var out []string
	for _, s := range lc.Steps {
		for _, a := range s.Actors {
			out = append(out, fmt.Sprintf("%s[%s %s %s]", a.Who, a.Manager, a.Subresource, a.Basis))
		}
	}
	return strings.Join(out, ", ")
}

func auditRequests(lc *explain.Lifecycle) string {
	if lc.Audit == nil {
		return "(no audit section)"
	}
	var out []string
	for _, r := range lc.Audit.Requests {
		out = append(out, fmt.Sprintf("%s %s by %s", r.Verb, r.Subresource, r.User))
	}
	return strings.Join(out, ", ")
}

// wantEvent checks that the pod's events include one of that type and
// reason whose message contains sub.
func wantEvent(t *testing.T, lc *explain.Lifecycle, typ, reason, sub string) {
	t.Helper()
	var got []string
	for _, e := range lc.Events {
		if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, sub) {
			return
		}
		got = append(got, e.Type+"/"+e.Reason+": "+e.Message)
	}
	t.Errorf("no %s event %s mentioning %q; events:\n%s", typ, reason, sub, strings.Join(got, "\n"))
}

// wantNoWarnings checks that explain gives the pod no warning or critical
// finding.
func wantNoWarnings(t *testing.T, db, ns, pod string) {
	t.Helper()
	ex := explainPod(t, db, ns, pod)
	for _, f := range ex.Findings {
		if f.Severity >= explain.Warning {
			explainText(t, db, ns, pod)
			t.Errorf("%s/%s: %s finding %s: %s", ns, pod, f.Severity, f.ID, f.Headline)
		}
	}
}

// wantFinding checks that explain gives the pod the finding id, naming the
// container in its headline, and returns it.
func wantFinding(t *testing.T, db, ns, pod, id, container string) explain.Finding {
	t.Helper()
	ex := explainPod(t, db, ns, pod)
	f := findFinding(t, ex, id)
	if !strings.Contains(f.Headline, container) {
		t.Errorf("finding %s headline %q does not name container %s", id, f.Headline, container)
	}
	if f.Severity < explain.Warning {
		t.Errorf("finding %s severity %s, want warning or worse", id, f.Severity)
	}
	return f
}

// gracefulCase: a pod deleted with a 3 s grace period whose container exits
// on SIGTERM (exit 0, Completed) or ignores it and is killed when the grace
// period ends (exit 137, Error). Either way a healthy end.
func gracefulCase(client kubernetes.Interface, node, ns, what, script string, code int32, reason string) *realCase {
	const name = "worker"
	return &realCase{
		name: "graceful deletion, container " + what, ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node, script)
			grace := int64(3)
			p.Spec.TerminationGracePeriodSeconds = &grace
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "pod deleted", realWait, podGone(client, ns, name))
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			wantTerminated(t, pods, false, "app", code, reason)
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			wantKubeletFinalDelete(t, tr, lc, audited)
			wantEvent(t, lc, "Normal", "Killing", "Stopping container app")
			// Healthy either way: a container killed at the end of its grace
			// period during a deletion (exit 137, phase Failed) is not a failure.
			wantNoWarnings(t, tr.db, ns, name)
		},
	}
}

// oomLimit is the memory limit of the OOM cases; their container asks dd for
// a buffer four times as large.
const oomLimit = "16Mi"

// oomCase: a container that allocates past its memory limit, killed by the
// kernel's OOM killer (exit 137, OOMKilled), with restartPolicy Never (the
// pod fails) or Always (restarted: lastState OOMKilled).
func oomCase(client kubernetes.Interface, node, ns string, policy corev1.RestartPolicy) *realCase {
	const name = "hog"
	return &realCase{
		name: "OOM kill, restartPolicy " + string(policy), ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node, "exec dd if=/dev/zero of=/dev/null bs=64M count=1")
			p.Spec.RestartPolicy = policy
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(oomLimit)},
			}
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "OOMKilled", func(p *corev1.Pod) bool {
				for _, s := range p.Status.ContainerStatuses {
					for _, term := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
						if term != nil && term.Reason == "OOMKilled" {
							return policy == corev1.RestartPolicyNever || s.RestartCount > 0
						}
					}
				}
				return false
			})
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			wantTerminated(t, pods, false, "app", 137, "OOMKilled")
			last := pods[len(pods)-1]
			if got := last.Spec.Containers[0].Resources.Limits.Memory().String(); got != oomLimit {
				t.Errorf("recorded memory limit %s, want %s", got, oomLimit)
			}
			if policy == corev1.RestartPolicyNever && last.Status.Phase != corev1.PodFailed {
				t.Errorf("last recorded phase %s, want Failed", last.Status.Phase)
			}
			if policy == corev1.RestartPolicyAlways {
				if terminatedSeen(pods, false, "app", func(s *corev1.ContainerStateTerminated) bool { return s.Reason == "OOMKilled" }) == nil ||
					!slices.ContainsFunc(pods, func(p *corev1.Pod) bool {
						s := p.Status.ContainerStatuses
						return len(s) == 1 && s[0].RestartCount > 0 && s[0].LastTerminationState.Terminated != nil &&
							s[0].LastTerminationState.Terminated.Reason == "OOMKilled"
					}) {
					t.Errorf("never recorded restarted with lastState OOMKilled: %s", containerStates(pods, false, "app"))
				}
			}
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			f := wantFinding(t, tr.db, ns, name, "oom-killed", "app")
			wantEvidence(t, f, "OOMKilled (exit 137)")
			if !strings.Contains(f.Headline, "memory limit "+oomLimit) {
				t.Errorf("oom-killed headline %q does not name the memory limit %s", f.Headline, oomLimit)
			}
		},
	}
}

// crashLoopCase: a container that exits 3 at once, restarted with a
// growing back-off: terminated/Error and waiting/CrashLoopBackOff alternate.
func crashLoopCase(client kubernetes.Interface, node string) *realCase {
	const ns, name = "rn-crash", "crasher"
	return &realCase{
		name: "crash loop", ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			createPod(t, client, realPod(ns, name, node, "echo giving up; exit 3"))
			waitRealPod(t, client, ns, name, "in CrashLoopBackOff after a restart", func(p *corev1.Pod) bool {
				s := p.Status.ContainerStatuses
				return len(s) == 1 && s[0].RestartCount >= 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "CrashLoopBackOff"
			})
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			wantTerminated(t, pods, false, "app", 3, "Error")
			wantWaiting(t, pods, false, "app", "CrashLoopBackOff")
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			wantEvent(t, lc, "Warning", "BackOff", "Back-off restarting failed container app")
			f := wantFinding(t, tr.db, ns, name, "crash-loop", "app")
			wantEvidence(t, f, "CrashLoopBackOff")
		},
	}
}

// missingImage names a registry on a loopback port where nothing listens:
// the pull fails at once, and no traffic leaves the machine.
const missingImage = "127.0.0.1:1/podtrace/missing:1"

// realImagePullCase: an image that cannot be pulled: ErrImagePull, then
// ImagePullBackOff.
func realImagePullCase(client kubernetes.Interface, node string) *realCase {
	const ns, name = "rn-pull", "puller"
	return &realCase{
		name: "failed image pull", ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node, "true")
			p.Spec.Containers[0].Image = missingImage
			p.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "in ImagePullBackOff", func(p *corev1.Pod) bool {
				s := p.Status.ContainerStatuses
				return len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "ImagePullBackOff"
			})
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			wantWaiting(t, pods, false, "app", "ErrImagePull")
			wantWaiting(t, pods, false, "app", "ImagePullBackOff")
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			wantEvent(t, lc, "Warning", "Failed", missingImage)
			f := wantFinding(t, tr.db, ns, name, "image-pull", "app")
			wantEvidence(t, f, missingImage)
		},
	}
}

// initFailCase: an init container that exits 2, restartPolicy Never: the
// pod fails (Init:Error) and its main container never starts.
func initFailCase(client kubernetes.Interface, node string) *realCase {
	const ns, name = "rn-init", "setup-fails"
	return &realCase{
		name: "init container fails", ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node, "sleep 3600")
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.InitContainers = []corev1.Container{{
				Name: "setup", Image: cluster.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", "echo cannot set up; exit 2"},
			}}
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			wantTerminated(t, pods, true, "setup", 2, "Error")
			wantWaiting(t, pods, false, "app", "PodInitializing")
			if last := pods[len(pods)-1]; last.Status.Phase != corev1.PodFailed {
				t.Errorf("last recorded phase %s, want Failed", last.Status.Phase)
			}
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			f := wantFinding(t, tr.db, ns, name, "failed", "init container setup")
			if !strings.Contains(f.Headline, "exited 2 (Error)") {
				t.Errorf("failed headline %q does not give the init container's exit code and reason", f.Headline)
			}
		},
	}
}

// realNeverReadyCase: a container whose HTTP readiness probe answers 404 for
// ever: Running, never Ready, Unhealthy events.
func realNeverReadyCase(client kubernetes.Interface, node string) *realCase {
	const ns, name = "rn-unready", "unready"
	return &realCase{
		name: "readiness probe never passes", ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node, "mkdir -p /www && exec httpd -f -p 8080 -h /www")
			p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}},
				PeriodSeconds:    2,
				FailureThreshold: 1,
			}
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			waitFor(t, "three failed probes", realWait, func() (bool, error) {
				evs, err := client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=Unhealthy"})
				if err != nil {
					return false, err
				}
				n := int32(0)
				for _, e := range evs.Items {
					n += max(e.Count, 1)
				}
				return n >= 3, nil
			})
			if p := getPod(t, client, ns, name); podReady(p) {
				t.Fatalf("pod Ready although its probe fails")
			}
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			pods := recordedPods(t, tr.db, ns, name)
			for _, p := range pods {
				if podReady(p) {
					t.Errorf("recorded Ready at resourceVersion %s", p.ResourceVersion)
				}
			}
			last := pods[len(pods)-1]
			if last.Status.Phase != corev1.PodRunning {
				t.Errorf("last recorded phase %s, want Running", last.Status.Phase)
			}
			if !slices.ContainsFunc(last.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason == "ContainersNotReady"
			}) {
				t.Errorf("last recorded conditions %+v, want Ready False ContainersNotReady", last.Status.Conditions)
			}
			lc := lifecycle(t, tr.db, ns, name)
			wantKubeletActor(t, tr, lc, audited)
			wantEvent(t, lc, "Warning", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 404")
			f := findFinding(t, explainPod(t, tr.db, ns, name), "not-ready")
			if f.Severity < explain.Warning {
				t.Errorf("not-ready severity %s, want warning or worse", f.Severity)
			}
			wantEvidence(t, f, "/ready")
			wantEvidence(t, f, "statuscode: 404")
		},
	}
}

// realHealthyCase: a Deployment rolled out, rolled to a new template and
// scaled up and down, a Job that succeeds, and a pod deleted gracefully:
// nothing wrong with any of them.
func realHealthyCase(client kubernetes.Interface, node string) *realCase {
	const ns, web, job, bare = "rn-healthy", "web", "once", "bare"
	var mu sync.Mutex
	seen := map[string]bool{}
	note := func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range podNames(t, client, ns, "") {
			seen[p] = true
		}
	}
	script := `trap 'exit 0' TERM; while true; do sleep 1; done`
	return &realCase{
		name: "healthy group", ns: ns,
		run: func(t *testing.T) {
			ctx := t.Context()
			createNamespace(t, client, ns, nil)
			two := int32(2)
			grace := int64(5)
			spec := realPodSpec(node, script)
			spec.TerminationGracePeriodSeconds = &grace
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: web, Namespace: ns},
				Spec: appsv1.DeploymentSpec{
					Replicas: &two,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": web}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": web}}, Spec: spec},
				},
			}
			if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			createPod(t, client, realPod(ns, bare, node, script))
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: job, Namespace: ns},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: realPodSpec(node, "echo done")}}}
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitRolledOut(t, client, ns, web)
			note(t)
			updateDeployment(t, client, ns, web, func(d *appsv1.Deployment) {
				d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "VERSION", Value: "2"}}
			})
			waitRolledOut(t, client, ns, web)
			note(t)
			updateDeployment(t, client, ns, web, func(d *appsv1.Deployment) { n := int32(3); d.Spec.Replicas = &n })
			waitRolledOut(t, client, ns, web)
			note(t)
			updateDeployment(t, client, ns, web, func(d *appsv1.Deployment) { n := int32(1); d.Spec.Replicas = &n })
			waitRolledOut(t, client, ns, web)
			waitFor(t, "one web pod left", realWait, func() (bool, error) { return len(podNames(t, client, ns, "app="+web)) == 1, nil })
			waitJobComplete(t, client, ns, job)
			note(t)
			waitRealPod(t, client, ns, bare, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(ctx, bare, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "bare pod deleted", realWait, podGone(client, ns, bare))
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) < 6 {
				t.Fatalf("only %d pods seen: %v", len(seen), seen)
			}
			for _, p := range slices.Sorted(func(yield func(string) bool) {
				for p := range seen {
					if !yield(p) {
						return
					}
				}
			}) {
				t.Run(p, func(t *testing.T) {
					wantNoWarnings(t, tr.db, ns, p)
					lc := lifecycle(t, tr.db, ns, p)
					wantKubeletActor(t, tr, lc, audited)
				})
			}
			pods := recordedPods(t, tr.db, ns, bare)
			wantTerminated(t, pods, false, "app", 0, "Completed")
		},
	}
}

// unconfirmedCase: a pod deleted with a 5 s grace period whose kubelet is
// stopped right after the DELETE, while the node still reports Ready: no one
// confirms the deletion, and the pod stays Terminating past its grace
// period, with no finalizer. Played last: the kubelet stays stopped.
func unconfirmedCase(client kubernetes.Interface, node *cluster.RealNode) *realCase {
	const ns, name = "rn-unconfirmed", "stranded"
	const grace = 5
	return &realCase{
		name: "deletion the kubelet never confirms", ns: ns,
		run: func(t *testing.T) {
			createNamespace(t, client, ns, nil)
			p := realPod(ns, name, node.Name, `trap '' TERM; while true; do sleep 1; done`)
			g := int64(grace)
			p.Spec.TerminationGracePeriodSeconds = &g
			createPod(t, client, p)
			waitRealPod(t, client, ns, name, "Ready", podReady)
			if err := client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			node.StopKubelet()
			time.Sleep((grace + 10) * time.Second)
			p = getPod(t, client, ns, name)
			if p.DeletionTimestamp == nil || len(p.Finalizers) > 0 {
				t.Fatalf("pod not Terminating without finalizers: deletionTimestamp %v, finalizers %v", p.DeletionTimestamp, p.Finalizers)
			}
			n, err := client.CoreV1().Nodes().Get(t.Context(), node.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
				return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}) {
				t.Fatalf("node %s no longer Ready: %+v", node.Name, n.Status.Conditions)
			}
		},
		check: func(t *testing.T, tr *realTrace, audited bool) {
			lc := lifecycle(t, tr.db, ns, name)
			if lc.Outcome != "Terminating" {
				t.Errorf("outcome %q, want Terminating", lc.Outcome)
			}
			if got := time.Duration(lc.Terminating); got < grace*time.Second+5*time.Second {
				t.Errorf("terminating for %s when the recording ended, want more than the grace period (%ds) and 5s", got, grace)
			}
			pods := recordedPods(t, tr.db, ns, name)
			last := pods[len(pods)-1]
			if len(last.Finalizers) > 0 || last.DeletionGracePeriodSeconds == nil || *last.DeletionGracePeriodSeconds != grace {
				t.Errorf("last recorded finalizers %v, deletionGracePeriodSeconds %v; want none and %d", last.Finalizers, last.DeletionGracePeriodSeconds, grace)
			}
			// Terminating past its grace period with no finalizer, its node
			// Ready: the kubelet never confirmed.
			stuck := findFinding(t, explainPod(t, tr.db, ns, name), "deletion-stuck")
			if stuck.Severity < explain.Warning || !strings.Contains(stuck.Headline, fmt.Sprintf("grace period (%ds)", grace)) || !strings.Contains(stuck.Headline, tr.node) {
				t.Errorf("deletion-stuck %s %q: want a warning naming the %ds grace period and node %s", stuck.Severity, stuck.Headline, grace, tr.node)
			}
			// Who asked: the client, known only from the audit log.
			f := endedFinding(t, tr.db, ns, name)
			if !audited {
				wantEnded(t, f, explain.MechanismDelete, explain.Info, diff.BasisUnknown, "unknown")
				return
			}
			auditedAs(t, f, explain.MechanismDelete, adminUser, "e2e-client")
			if lc.Audit == nil || slices.ContainsFunc(lc.Audit.Requests, func(r diff.AuditRequest) bool {
				return r.Verb == "delete" && r.User == tr.kubeletUser()
			}) {
				t.Errorf("audit requests %s: want no DELETE by %s, which was stopped before it could confirm", auditRequests(lc), tr.kubeletUser())
			}
		},
	}
}

func getPod(t *testing.T, client kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return p
}

// realWait bounds a wait on the real node: a kubelet on a loaded 2-core
// machine, beside the other test packages, reports a container's state
// change tens of seconds late at times (a crash loop's second back-off
// was once not reported within a minute).
const realWait = 3 * time.Minute

// waitRealPod waits up to realWait for the pod to be as ok says, and on
// a timeout says what its containers were doing when it gave up.
func waitRealPod(t *testing.T, client kubernetes.Interface, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	deadline := time.Now().Add(realWait)
	for {
		var err error
		p, err = client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err == nil && ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("timed out after %s waiting for pod %s/%s %s: %v", realWait, ns, name, what, err)
			}
			b, _ := json.Marshal(p.Status)
			t.Fatalf("timed out after %s waiting for pod %s/%s %s; its status then: %s", realWait, ns, name, what, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
