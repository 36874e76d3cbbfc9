package otlp

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// render draws spans as the tests compare them: each span with its time
// (seconds after t0), its parent and status, then its events in time
// order, on which span each one lands.
func render(spans tracetest.SpanStubs) string {
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	off := func(t time.Time) string { return fmt.Sprintf("%gs", t.Sub(t0).Seconds()) }
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "%s %s..%s", s.Name, off(s.StartTime), off(s.EndTime))
		if s.Parent.IsValid() {
			fmt.Fprintf(&b, " in %s", names[s.Parent.SpanID().String()])
		}
		if s.Status.Code == codes.Error {
			b.WriteString(" ERROR")
		}
		b.WriteString("\n")
		evs := slices.Clone(s.Events)
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time.Before(evs[j].Time) })
		for _, e := range evs {
			fmt.Fprintf(&b, "  %s %s\n", off(e.Time), e.Name)
		}
	}
	return b.String()
}

func attr(attrs []attribute.KeyValue, key string) (string, bool) {
	for _, a := range attrs {
		if string(a.Key) == key {
			return a.Value.Emit(), true
		}
	}
	return "", false
}

func actor(who string, basis diff.Basis) []diff.Actor { return []diff.Actor{{Who: who, Basis: basis}} }

// stuckPod is a ReplicaSet's pod, scheduled, started, then deleted with a
// grace period of 0 and held by a finalizer until the recording ended.
func stuckPod() Pod {
	lc := &diff.Lifecycle{
		Namespace: "default", Name: "web-7d9-abc", UID: "5a9c0a53-1f0e-4c55-9d7e-0c3c2a3b9f10", Node: "node-a",
		Outcome: "Terminating", RecordingEnd: at(60), Terminating: diff.Duration(50 * time.Second),
		Steps: []diff.Step{
			{Seq: 1, Time: at(0.5), Type: store.Added, ResourceVersion: "10", Actors: actor("kube-controller-manager", diff.BasisManagedFields),
				Changes: []diff.Change{
					{Path: "metadata.labels[app]", Op: diff.OpAdd, New: "web"},
					{Path: "spec.containers[app]", Op: diff.OpAdd, New: `{"name":"app","image":"nginx:1.27"}`},
					{Path: "spec.dnsPolicy", Op: diff.OpAdd, New: "ClusterFirst"},
				}, Phases: []string{diff.PhaseCreated}},
			{Seq: 2, Time: at(1), Type: store.Updated, ResourceVersion: "11", Actors: actor("the scheduler default-scheduler", diff.BasisFieldSemantics),
				Changes: []diff.Change{{Path: "spec.nodeName", Op: diff.OpAdd, New: "node-a"}}, Phases: []string{diff.PhaseScheduled}},
			{Seq: 5, Time: at(5), Type: store.Updated, ResourceVersion: "14", Actors: actor("the kubelet", diff.BasisManagedFields),
				Changes: []diff.Change{{Path: "status.phase", Op: diff.OpChange, Old: "Pending", New: "Running"}}, Phases: []string{diff.PhaseStarted, diff.PhaseReady}},
			{Seq: 9, Time: at(10), Type: store.Updated, ResourceVersion: "20", Actors: actor("a DELETE request", diff.BasisFieldSemantics),
				Changes: []diff.Change{{Path: "metadata.deletionTimestamp", Op: diff.OpAdd, New: "2026-12-01T10:00:10Z"}}, Phases: []string{diff.PhaseDeletionRequested}},
		},
		Phases: []diff.Phase{
			{Name: diff.PhaseCreated, Time: at(0.5), Seq: 1, Actor: "kube-controller-manager (managedFields)"},
			{Name: diff.PhaseScheduled, Time: at(1), Seq: 2, Detail: "to node node-a"},
			{Name: diff.PhaseStarted, Time: at(5), Seq: 5},
			{Name: diff.PhaseReady, Time: at(5), Seq: 5},
			{Name: diff.PhaseDeletionRequested, Time: at(10), Seq: 9, Detail: "grace period 0s, finalizers [example.com/hold], propagation Background"},
			{Name: diff.PhaseStillPresent, Time: at(60), Seq: 9, Detail: "terminating for 50s"},
		},
		Events: []diff.Event{
			{Seq: 3, Time: at(2), Type: "Normal", Reason: "Pulling", Message: "pulling nginx:1.27"},
			{Seq: 4, Time: at(3), Type: "Normal", Reason: "Pulling", Message: "pulling nginx:1.27 again", Count: 2},
			{Seq: 6, Time: at(5.5), Type: "Normal", Reason: "Started", Message: "started"},
		},
	}
	return Pod{
		Lifecycle: &explain.Lifecycle{Lifecycle: lc, Findings: []explain.Finding{
			{ID: "stuck-finalizer", Severity: explain.Critical, Headline: `deletion blocked for 50s: finalizer "example.com/hold" never removed`,
				Evidence: []explain.Evidence{{Seq: 9, Time: at(10), Text: "deletion requested"}, {Text: "no revision after this one"}},
				Suspects: []admission.Webhook{{Kind: "ValidatingWebhookConfiguration", Configuration: "guard", Name: "guard.example.com", FailurePolicy: "Fail", Rules: "[UPDATE] [pods]"}},
				Next:     []string{"find the controller that handles example.com/hold"}},
			{ID: "ended", Severity: explain.Info, Headline: "deleted by a DELETE request", Mechanism: "delete"},
		}},
		Owners:     []Owner{{Kind: "ReplicaSet", Name: "web-7d9", UID: "rs-uid"}, {Kind: "Deployment", Name: "web", UID: "deploy-uid"}},
		Labels:     map[string]string{"app": "web", "pod-template-hash": "7d9"},
		Created:    t0,
		Phase:      "Running",
		GraceEnd:   at(10),
		Finalizers: []string{"example.com/hold"},
	}
}

func TestSpansStuckPod(t *testing.T) {
	p := stuckPod()
	spans := Spans(p, Options{Cluster: "prod-eu", Version: "v1.2.3"})
	want := `pod default/web-7d9-abc 0s..60s ERROR
  60s finding ended (info)
  60s finding stuck-finalizer (critical)
scheduling 0.5s..1s in pod default/web-7d9-abc
  0.5s phase created
  0.5s pod created #1
image pull and start 1s..5s in pod default/web-7d9-abc
  1s phase scheduled
  1s pod updated #2
  2s event Normal Pulling #3
  3s event Normal Pulling #4
running 5s..10s in pod default/web-7d9-abc
  5s phase containers started
  5s phase ready
  5s pod updated #5
  5.5s event Normal Started #6
terminating 10s..60s in pod default/web-7d9-abc
  10s phase deletion requested
  10s pod updated #9
stuck 10s..60s in terminating ERROR
  60s phase still present when the recording ended
`
	if diff := cmp.Diff(want, render(spans)); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}

	root := spans[0]
	if root.SpanContext.TraceID().String() != "5a9c0a531f0e4c559d7e0c3c2a3b9f10" {
		t.Errorf("trace id %s, want the pod's UID", root.SpanContext.TraceID())
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("span %s has trace id %s, the root %s", s.Name, s.SpanContext.TraceID(), root.SpanContext.TraceID())
		}
		if s.Resource != root.Resource {
			t.Errorf("span %s has a resource of its own", s.Name)
		}
	}
	if !strings.Contains(root.Status.Description, "stuck-finalizer") {
		t.Errorf("root status %q, want the critical finding", root.Status.Description)
	}
	for key, want := range map[string]string{
		"podtrace.outcome":       "Terminating",
		"podtrace.finding":       "stuck-finalizer",
		"podtrace.severity":      "critical",
		"podtrace.terminating":   "50s",
		"k8s.pod.status.phase":   "Running",
		"podtrace.revisions":     "4",
		"podtrace.recording_end": "2026-12-01T10:01:00Z",
	} {
		if got, _ := attr(root.Attributes, key); got != want {
			t.Errorf("root %s = %q, want %q", key, got, want)
		}
	}
	res := root.Resource.Attributes()
	for key, want := range map[string]string{
		"service.name":                    ServiceName,
		"k8s.cluster.name":                "prod-eu",
		"k8s.namespace.name":              "default",
		"k8s.pod.name":                    "web-7d9-abc",
		"k8s.pod.uid":                     "5a9c0a53-1f0e-4c55-9d7e-0c3c2a3b9f10",
		"k8s.node.name":                   "node-a",
		"k8s.replicaset.name":             "web-7d9",
		"k8s.deployment.name":             "web",
		"k8s.deployment.uid":              "deploy-uid",
		"k8s.pod.label.app":               "web",
		"k8s.pod.label.pod-template-hash": "7d9",
	} {
		if got, _ := attr(res, key); got != want {
			t.Errorf("resource %s = %q, want %q", key, got, want)
		}
	}

	// The finding, as an event: its severity, evidence, suspects, next.
	var finding map[string]string
	for _, e := range root.Events {
		if e.Name == "finding stuck-finalizer (critical)" {
			finding = map[string]string{}
			for _, a := range e.Attributes {
				finding[string(a.Key)] = a.Value.Emit()
			}
		}
	}
	for key, want := range map[string]string{
		"podtrace.finding":          "stuck-finalizer",
		"podtrace.finding.severity": "critical",
		"podtrace.finding.evidence": `["2026-12-01T10:00:10Z #9 deletion requested","no revision after this one"]`,
		"podtrace.finding.suspects": `["ValidatingWebhook \"guard.example.com\" (configuration guard): failurePolicy Fail, [UPDATE] [pods]"]`,
		"podtrace.finding.next":     `["find the controller that handles example.com/hold"]`,
	} {
		if finding[key] != want {
			t.Errorf("finding event %s = %q, want %q", key, finding[key], want)
		}
	}

	// A revision's event: its changes, actor and basis; at creation only
	// the fields that tell the story.
	var created map[string]string
	for _, e := range spans[1].Events {
		if e.Name == "pod created #1" {
			created = map[string]string{}
			for _, a := range e.Attributes {
				created[string(a.Key)] = a.Value.Emit()
			}
		}
	}
	for key, want := range map[string]string{
		"podtrace.actor":         "kube-controller-manager (managedFields)",
		"podtrace.actor.basis":   `["managedFields"]`,
		"podtrace.changes":       `["+ metadata.labels[app]  web","+ spec.containers[app].image  nginx:1.27","(1 more fields changed; podtrace diff --all-fields shows them)"]`,
		"podtrace.changes.count": "3",
		"podtrace.seq":           "1",
	} {
		if created[key] != want {
			t.Errorf("creation event %s = %q, want %q", key, created[key], want)
		}
	}
}

// TestSpansCanonical: the same pod gives the same spans, in the order
// Jaeger stores them: attributes by key, events by name, names unique.
func TestSpansCanonical(t *testing.T) {
	a := Spans(stuckPod(), Options{Cluster: "c"})
	b := Spans(stuckPod(), Options{Cluster: "c"})
	if diff := cmp.Diff(render(a), render(b)); diff != "" {
		t.Fatalf("two calls differ (-first +second):\n%s", diff)
	}
	for i := range a {
		if !a[i].SpanContext.Equal(b[i].SpanContext) || !slices.Equal(a[i].Attributes, b[i].Attributes) {
			t.Errorf("span %s differs between calls", a[i].Name)
		}
		if !sort.SliceIsSorted(a[i].Attributes, func(x, y int) bool { return a[i].Attributes[x].Key < a[i].Attributes[y].Key }) {
			t.Errorf("span %s: attributes not in key order", a[i].Name)
		}
		seen := map[string]bool{}
		for j, e := range a[i].Events {
			if seen[e.Name] {
				t.Errorf("span %s: two events named %q", a[i].Name, e.Name)
			}
			seen[e.Name] = true
			if j > 0 && a[i].Events[j-1].Name > e.Name {
				t.Errorf("span %s: event %q before %q", a[i].Name, a[i].Events[j-1].Name, e.Name)
			}
		}
	}
}

func TestSpansOtherLives(t *testing.T) {
	deleted := func() Pod {
		p := stuckPod()
		lc := p.Lifecycle.Lifecycle
		lc.Outcome, lc.Terminating = "Deleted", 0
		lc.Steps = append(lc.Steps, diff.Step{Seq: 12, Time: at(20), Type: store.Deleted, Actors: actor("the API server", diff.BasisFieldSemantics),
			Changes: []diff.Change{{Path: "metadata.finalizers[example.com/hold]", Op: diff.OpRemove}}, Phases: []string{diff.PhaseDeleted}})
		lc.Phases = append(lc.Phases[:5], diff.Phase{Name: diff.PhaseDeleted, Time: at(20), Seq: 12})
		p.Lifecycle.Findings = p.Lifecycle.Findings[1:]
		return p
	}
	pending := func() Pod {
		p := stuckPod()
		lc := p.Lifecycle.Lifecycle
		lc.Outcome, lc.Terminating, lc.Node = "Pending", 0, ""
		lc.Steps = lc.Steps[:1]
		lc.Events = []diff.Event{{Seq: 3, Time: at(2), Type: "Warning", Reason: "FailedScheduling", Message: "0/3 nodes are available"}}
		lc.Phases = []diff.Phase{lc.Phases[0], {Name: diff.PhaseStillPresent, Time: at(60), Seq: 1, Detail: "phase Pending"}}
		p.Lifecycle.Findings = []explain.Finding{{ID: "unschedulable", Severity: explain.Warning, Headline: "never scheduled"}}
		p.GraceEnd, p.Phase = time.Time{}, "Pending"
		return p
	}
	present := func() Pod {
		// Already present when the recording began: its phases' times are
		// its conditions', before the first revision.
		p := stuckPod()
		lc := p.Lifecycle.Lifecycle
		lc.Outcome, lc.Terminating = "Running", 0
		lc.Steps = []diff.Step{{Seq: 1, Time: at(30), Type: store.Initial, Actors: actor("no one", diff.BasisFieldSemantics)}}
		lc.Events = nil
		lc.Phases = []diff.Phase{
			{Name: diff.PhaseAlreadyPresent, Time: t0, Seq: 1, Detail: "created 2026-12-01T10:00:00Z, before the recording began"},
			{Name: diff.PhaseScheduled, Time: at(1), Seq: 1},
			{Name: diff.PhaseStarted, Time: at(4), Seq: 1},
			{Name: diff.PhaseStillPresent, Time: at(60), Seq: 1, Detail: "phase Running"},
		}
		p.Lifecycle.Findings = nil
		p.GraceEnd = time.Time{}
		return p
	}
	tests := []struct {
		name string
		pod  Pod
		want string
		open string // the span that was still open when the recording ended
	}{
		{name: "deleted: the root ends at the deletion, nothing is stuck", pod: deleted(), want: `pod default/web-7d9-abc 0s..20s
  20s finding ended (info)
scheduling 0.5s..1s in pod default/web-7d9-abc
  0.5s phase created
  0.5s pod created #1
image pull and start 1s..5s in pod default/web-7d9-abc
  1s phase scheduled
  1s pod updated #2
  2s event Normal Pulling #3
  3s event Normal Pulling #4
running 5s..10s in pod default/web-7d9-abc
  5s phase containers started
  5s phase ready
  5s pod updated #5
  5.5s event Normal Started #6
terminating 10s..20s in pod default/web-7d9-abc
  10s phase deletion requested
  10s pod updated #9
  20s phase deleted
  20s pod deleted #12
`},
		{name: "never scheduled: scheduling runs to the end of the recording", pod: pending(), open: StageScheduling, want: `pod default/web-7d9-abc 0s..60s
  60s finding unschedulable (warning)
scheduling 0.5s..60s in pod default/web-7d9-abc
  0.5s phase created
  0.5s pod created #1
  2s event Warning FailedScheduling #3
  60s phase still present when the recording ended
`},
		{name: "already present: stages from its conditions, the revision where it was seen", pod: present(), open: StageRunning, want: `pod default/web-7d9-abc 0s..60s
scheduling 0s..1s in pod default/web-7d9-abc
  0s phase already present
image pull and start 1s..4s in pod default/web-7d9-abc
  1s phase scheduled
running 4s..60s in pod default/web-7d9-abc
  4s phase containers started
  30s pod already present #1
  60s phase still present when the recording ended
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans := Spans(tt.pod, Options{})
			if diff := cmp.Diff(tt.want, render(spans)); diff != "" {
				t.Errorf("spans (-want +got):\n%s", diff)
			}
			if spans[0].Status.Code != codes.Unset {
				t.Errorf("root status %v, want unset: no finding is critical", spans[0].Status)
			}
			for _, s := range spans {
				_, open := attr(s.Attributes, "podtrace.open")
				if open != (s.Name == tt.open) {
					t.Errorf("span %s: podtrace.open %v", s.Name, open)
				}
			}
			// A deleted pod's story ends at its deletion, however late it
			// is sent: the same spans from a recorder and from an export.
			if _, ok := attr(spans[0].Attributes, "podtrace.recording_end"); ok != (tt.pod.Lifecycle.Outcome != "Deleted") {
				t.Errorf("podtrace.recording_end on the root: %v, outcome %s", ok, tt.pod.Lifecycle.Outcome)
			}
			if _, ok := attr(spans[0].Resource.Attributes(), "k8s.cluster.name"); ok {
				t.Errorf("k8s.cluster.name set, with no cluster name given")
			}
		})
	}
}
