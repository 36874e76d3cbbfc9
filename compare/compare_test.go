package compare_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var t0 = time.Date(2026, 12, 1, 4, 30, 0, 0, time.UTC)

const (
	hook     = "digester.podtrace.dev"
	gc       = "system:serviceaccount:kube-system:generic-garbage-collector"
	selector = "digest-resolution=enabled"
)

// job is a hand-made lifecycle of the runner's job pod: created, scheduled,
// started, completed, deleted with the propagation given; held by its
// finalizer when stuck, else gone (the finalizer, if any, removed by the
// garbage collector).
type job struct {
	ns, name, uid string
	node          string
	propagation   string // Foreground or Background
	stuck         bool
	denied        int // denied updates by the garbage collector, from the audit log
	audit         bool
	at            time.Time // creation
	pinned        bool      // images rewritten at admission by the webhook
	// owner is the controller, "Kind/name"; generateName the prefix the
	// name was made from.
	owner, generateName string
	running             bool // never deleted: still running at the end
}

func (j job) lifecycle() *explain.Lifecycle {
	at := func(s float64) time.Time { return j.at.Add(time.Duration(s * float64(time.Second))) }
	ts := func(s float64) string { return `"` + at(s).Format(time.RFC3339) + `"` }
	client := []diff.Actor{{Who: "podtrace-admin", Basis: diff.BasisAuditLog}}
	kwok := []diff.Actor{{Manager: "kwok", Subresource: "status", Who: "the kubelet (kwok), status update", Basis: diff.BasisManagedFields}}
	image := "alpine:3.20"
	if j.pinned {
		image = "alpine@sha256:d3dfed77bb64"
	}
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: j.ns, Name: j.name, UID: j.uid, Node: j.node, RecordingEnd: at(30)}}
	lc.Steps = []diff.Step{
		{Seq: 1, Time: at(0), Type: store.Added, Actors: client, Phases: []string{diff.PhaseCreated}, Changes: []diff.Change{
			{Path: "metadata.name", Op: diff.OpAdd, New: j.name},
			{Path: "metadata.namespace", Op: diff.OpAdd, New: j.ns},
			{Path: "metadata.uid", Op: diff.OpAdd, New: j.uid},
			{Path: "metadata.creationTimestamp", Op: diff.OpAdd, New: ts(0)},
			{Path: "metadata.labels", Op: diff.OpAdd, New: `{"podtrace.dev/job":"` + j.name + `"}`},
			{Path: "spec.containers[build]", Op: diff.OpAdd, New: `{"name":"build","image":"` + image + `"}`},
			{Path: "spec.imagePullSecrets[" + j.name + "-pull]", Op: diff.OpAdd, New: `{"name":"` + j.name + `-pull"}`},
			{Path: "spec.volumes[kube-api-access-" + j.uid[:5] + "]", Op: diff.OpAdd, New: `{"name":"kube-api-access-` + j.uid[:5] + `"}`},
		}},
		{Seq: 2, Time: at(0.1), Type: store.Updated, Actors: []diff.Actor{{Subresource: "binding", Who: "the scheduler default-scheduler", Basis: diff.BasisFieldSemantics}},
			Phases: []string{diff.PhaseScheduled}, Changes: []diff.Change{{Path: "spec.nodeName", Op: diff.OpAdd, New: j.node}}},
		{Seq: 3, Time: at(1), Type: store.Updated, Actors: kwok, Phases: []string{diff.PhaseStarted}, Changes: []diff.Change{
			{Path: "status.podIP", Op: diff.OpAdd, New: "10.244.0." + j.uid[:1]},
			{Path: "status.containerStatuses[build].state.running", Op: diff.OpAdd, New: `{"startedAt":` + ts(1) + `}`},
			{Path: "status.phase", Op: diff.OpChange, Old: "Pending", New: "Running"},
		}},
		{Seq: 4, Time: at(2), Type: store.Updated, Actors: kwok, Phases: []string{diff.PhaseSucceeded}, Changes: []diff.Change{
			{Path: "status.containerStatuses[build].state.terminated", Op: diff.OpAdd, New: `{"exitCode":0,"reason":"Completed","finishedAt":` + ts(2) + `}`},
			{Path: "status.phase", Op: diff.OpChange, Old: "Running", New: "Succeeded"},
		}},
	}
	del := diff.Step{Seq: 5, Time: at(3), Type: store.Updated, Actors: client, Phases: []string{diff.PhaseDeletionRequested}, Changes: []diff.Change{
		{Path: "metadata.deletionGracePeriodSeconds", Op: diff.OpAdd, New: "0"},
		{Path: "metadata.deletionTimestamp", Op: diff.OpAdd, New: ts(3)},
	}}
	if j.propagation == "Foreground" {
		del.Changes = append(del.Changes, diff.Change{Path: "metadata.finalizers[foregroundDeletion]", Op: diff.OpAdd})
	}
	if j.owner != "" {
		kind, name, _ := strings.Cut(j.owner, "/")
		lc.Steps[0].Changes = append(lc.Steps[0].Changes, diff.Change{Path: "metadata.ownerReferences[uid-" + name + "]", Op: diff.OpAdd,
			New: `{"apiVersion":"apps/v1","kind":"` + kind + `","name":"` + name + `","uid":"uid-` + name + `","controller":true,"blockOwnerDeletion":true}`})
	}
	if j.generateName != "" {
		lc.Steps[0].Changes = append(lc.Steps[0].Changes, diff.Change{Path: "metadata.generateName", Op: diff.OpAdd, New: j.generateName})
	}
	if j.running {
		lc.Steps = lc.Steps[:3]
		lc.Outcome = "Running"
		lc.Phases = []diff.Phase{{Name: diff.PhaseCreated, Time: at(0), Seq: 1}, {Name: diff.PhaseScheduled, Time: at(0.1), Seq: 2}, {Name: diff.PhaseStarted, Time: at(1), Seq: 3}}
		return lc
	}
	lc.Steps = append(lc.Steps, del)
	lc.Phases = []diff.Phase{
		{Name: diff.PhaseCreated, Time: at(0), Seq: 1},
		{Name: diff.PhaseScheduled, Time: at(0.1), Seq: 2, Detail: "to node " + j.node},
		{Name: diff.PhaseStarted, Time: at(1), Seq: 3},
		{Name: diff.PhaseSucceeded, Time: at(2), Seq: 4, Detail: "build exited 0 (Completed)"},
		{Name: diff.PhaseDeletionRequested, Time: at(3), Seq: 5},
	}
	lc.Dependents = []diff.Dependent{{Kind: "Secret", Name: j.name + "-pull", UID: "s-" + j.uid, Since: at(0.2), Deleted: at(3.1)}}
	if j.stuck {
		lc.Outcome, lc.Terminating = "Terminating", diff.Duration(27*time.Second)
		lc.Phases = append(lc.Phases, diff.Phase{Name: diff.PhaseStillPresent, Time: at(30), Seq: 5})
		lc.Findings = []explain.Finding{{ID: "stuck-finalizer", Severity: explain.Critical, Headline: `deletion blocked for 27s: finalizer "foregroundDeletion" never removed`,
			Suspects: []admission.Webhook{{Kind: "MutatingWebhookConfiguration", Configuration: "digester.example.com", Name: hook, FailurePolicy: "Fail", NamespaceSelector: selector}}}}
	} else {
		last := diff.Step{Seq: 6, Time: at(3.2), Type: store.Deleted, Actors: []diff.Actor{{Who: "the API server", Basis: diff.BasisFieldSemantics}}, Phases: []string{diff.PhaseDeleted}}
		if j.propagation == "Foreground" {
			last.Actors = []diff.Actor{{Who: gc, Basis: diff.BasisAuditLog}}
			last.Changes = []diff.Change{{Path: "metadata.finalizers[foregroundDeletion]", Op: diff.OpRemove}}
		}
		lc.Steps = append(lc.Steps, last)
		lc.Outcome = "Deleted"
		lc.Phases = append(lc.Phases, diff.Phase{Name: diff.PhaseDeleted, Time: at(3.2), Seq: 6})
	}
	lc.Admission = &diff.Admission{Source: "audit log"}
	if j.pinned {
		lc.Admission.Webhooks = []admission.Webhook{{Kind: "MutatingWebhookConfiguration", Configuration: "digester.example.com", Name: hook, FailurePolicy: "Fail", NamespaceSelector: selector}}
		lc.Admission.Changes = []diff.AdmissionChange{{Change: diff.Change{Path: "spec.containers[build].image", Op: diff.OpChange, Old: "alpine:3.20", New: image}, By: "mutating webhook " + hook, Certainty: "certain"}}
	}
	if j.audit {
		lc.Audit = &diff.Audit{}
		if j.denied > 0 {
			lc.Audit.Denied = []diff.DeniedRequests{{User: gc, Verb: "patch", Code: 500, Count: j.denied, First: at(3.2), Last: at(29), Webhook: hook,
				Message: `Internal error occurred: admission webhook "` + hook + `" denied the request: failed to create keychain: secrets "` + j.name + `-pull" not found`}}
		}
	}
	return lc
}

// namespace is the recorded Namespace, labelled for the webhook or not.
func namespace(name string, digest bool) []store.Record {
	labels := map[string]string{"kubernetes.io/metadata.name": name}
	if digest {
		labels["digest-resolution"] = "enabled"
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}})
	return []store.Record{{Seq: 1, Observed: t0.Add(-time.Hour), Type: store.Initial, Kind: "Namespace", Name: name, UID: "ns-" + name, Object: b}}
}

// webhooks is the digester's configuration: pod CREATE and UPDATE in the
// namespaces labelled digest-resolution=enabled.
func webhooks() map[string][]store.Record {
	b := []byte(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingWebhookConfiguration","metadata":{"name":"digester.example.com"},
"webhooks":[{"name":"` + hook + `","failurePolicy":"Fail","sideEffects":"None","admissionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:1"},
"rules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["pods"]}],
"namespaceSelector":{"matchLabels":{"digest-resolution":"enabled"}}}]}`)
	return map[string][]store.Record{"wh": {{Seq: 1, Observed: t0.Add(-time.Hour), Type: store.Initial, Kind: "MutatingWebhookConfiguration", Name: "digester.example.com", UID: "wh", Object: b}}}
}

func side(j job, digest bool) compare.Side {
	return compare.Side{Lifecycle: j.lifecycle(), Webhooks: webhooks(), Namespace: namespace(j.ns, digest)}
}

var (
	stuck = job{ns: "ci", name: "runner-job-1", uid: "7a1b2c3d-0000-4000-8000-000000000001", node: "kwok-node-0", propagation: "Foreground",
		stuck: true, denied: 12, audit: true, at: t0, pinned: true}
	labelOff = job{ns: "ci-off", name: "runner-job-1", uid: "4e5f6a7b-0000-4000-8000-000000000002", node: "kwok-node-0", propagation: "Foreground",
		audit: true, at: t0.Add(40 * time.Second)}
	background = job{ns: "ci", name: "runner-job-2", uid: "9c8d7e6f-0000-4000-8000-000000000003", node: "kwok-node-0", propagation: "Background",
		audit: true, at: t0.Add(80 * time.Second), pinned: true}
	healthy1 = job{ns: "ci-off", name: "runner-job-3", uid: "1a2b3c4d-0000-4000-8000-000000000004", node: "kwok-node-0", propagation: "Background", audit: true, at: t0.Add(120 * time.Second)}
	healthy2 = job{ns: "ci-off", name: "runner-job-4", uid: "2b3c4d5e-0000-4000-8000-000000000005", node: "kwok-node-0", propagation: "Background", audit: true, at: t0.Add(160 * time.Second)}
)

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name           string
		a, b           compare.Side
		first          string // the first decisive difference's subject contains it
		verdict        []string
		noDecisive     bool
		ignoredAtLeast int
	}{{
		name: "namespace label off vs on", a: side(labelOff, false), b: side(stuck, true),
		first: "denied requests: patch by " + gc + ", denied by webhook " + hook,
		verdict: []string{
			"Both deletions asked for Foreground propagation and got foregroundDeletion; A's was removed by " + gc,
			"B's finalizer removal was denied 12 times by webhook " + hook + ", which does not match A's namespace (namespaceSelector " + selector + "; ci-off has labels kubernetes.io/metadata.name=ci-off)",
		},
		ignoredAtLeast: 5,
	}, {
		name: "Background vs Foreground", a: side(background, true), b: side(stuck, true),
		first: "deletion propagation",
		verdict: []string{
			"B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
			"B's finalizer removal was denied 12 times by webhook " + hook + ", which intercepts A's pod UPDATEs too, but A's deletion left no finalizer to remove.",
		},
		ignoredAtLeast: 5,
	}, {
		name: "the bad one first", a: side(stuck, true), b: side(background, true),
		first:   "deletion propagation",
		verdict: []string{"A got foregroundDeletion because its deletion asked for Foreground propagation; B's asked for Background."},
	}, {
		name: "identical healthy pods", a: side(healthy1, false), b: side(healthy2, false),
		verdict: []string{compare.NoDecisiveDifference}, noDecisive: true, ignoredAtLeast: 5,
	}, {
		name: "without the trace's webhooks or audit", a: compare.Side{Lifecycle: job{ns: "ci", name: "a", uid: "3c4d5e6f-0000-4000-8000-000000000006", node: "n", propagation: "Background", at: t0}.lifecycle()},
		b:     compare.Side{Lifecycle: job{ns: "ci", name: "b", uid: "4d5e6f7a-0000-4000-8000-000000000007", node: "n", propagation: "Foreground", stuck: true, at: t0}.lifecycle()},
		first: "deletion propagation",
		verdict: []string{
			"B got foregroundDeletion because its deletion asked for Foreground propagation; A's asked for Background.",
			"B's finalizer removal is an UPDATE of the pod that webhook " + hook + " intercepts",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := compare.Compare(tc.a, tc.b)
			var text bytes.Buffer
			if err := report.Compare(&text, r, report.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.noDecisive != (len(r.Decisive) == 0) {
				t.Fatalf("%d decisive differences, want none: %v\n%s", len(r.Decisive), !tc.noDecisive, text.String())
			}
			if tc.first != "" && !strings.Contains(r.Decisive[0].Subject, tc.first) {
				t.Errorf("first decisive difference %q, want %q\n%s", r.Decisive[0].Subject, tc.first, text.String())
			}
			for _, v := range tc.verdict {
				if !strings.Contains(r.Verdict, v) {
					t.Errorf("verdict lacks %q:\n%s", v, r.Verdict)
				}
			}
			if r.Ignored < tc.ignoredAtLeast {
				t.Errorf("ignored %d, want at least %d: %v", r.Ignored, tc.ignoredAtLeast, r.IgnoredBy)
			}
		})
	}
}

// TestGolden renders the comparisons as text, markdown and JSON and
// compares them with the golden files in testdata/.
func TestGolden(t *testing.T) {
	cases := map[string][2]compare.Side{
		"label":       {side(labelOff, false), side(stuck, true)},
		"propagation": {side(background, true), side(stuck, true)},
		"healthy":     {side(healthy1, false), side(healthy2, false)},
	}
	for name, c := range cases {
		r := compare.Compare(c[0], c[1])
		for _, format := range []string{"txt", "md", "json", "html"} {
			t.Run(name+"."+format, func(t *testing.T) {
				var b bytes.Buffer
				var err error
				switch format {
				case "txt":
					err = report.Compare(&b, r, report.TextOptions{})
				case "md":
					err = report.CompareMarkdown(&b, r, report.TextOptions{})
				case "html":
					err = report.CompareHTML(&b, r)
				case "json":
					enc := json.NewEncoder(&b)
					enc.SetIndent("", "  ")
					err = enc.Encode(r)
				}
				if err != nil {
					t.Fatal(err)
				}
				if format == "html" {
					elideViewStyle(t, &b)
				}
				path := filepath.Join("testdata", fmt.Sprintf("compare-%s.%s", name, format))
				if *update {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./compare -update)", err)
				}
				if d := cmp.Diff(string(want), b.String()); d != "" {
					t.Errorf("%s differs (-want +got); if intended, run go test ./compare -update:\n%s", path, d)
				}
			})
		}
	}
}

// elideViewStyle replaces the compare view's style in a page, which must
// be report/html/compare.css as it is, by its name: the goldens hold the
// page, not the style.
func elideViewStyle(t *testing.T, b *bytes.Buffer) {
	t.Helper()
	css, err := os.ReadFile("../report/html/compare.css")
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, string(css)) {
		t.Fatalf("the page's style lacks report/html/compare.css as it is")
	}
	b.Reset()
	b.WriteString(strings.Replace(page, string(css), "/* report/html/compare.css */\n", 1))
}

func TestCohorts(t *testing.T) {
	stuck2 := stuck
	stuck2.name, stuck2.uid, stuck2.at = "runner-job-5", "5e6f7a8b-0000-4000-8000-000000000008", t0.Add(200*time.Second)
	c := compare.Cohorts("podtrace.dev/job", []compare.Side{side(stuck, true), side(background, true), side(stuck2, true)})
	var got []string
	for _, g := range c.Groups {
		got = append(got, fmt.Sprintf("%s: %d, typical %s", g.Ending, len(g.Members), g.Typical.Name))
	}
	want := []string{"Deleted: 1, typical runner-job-2", "Terminating, held by finalizer foregroundDeletion: 2, typical runner-job-1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	if len(c.Comparisons) != 1 || c.Comparisons[0].Decisive[0].Subject != "deletion propagation" {
		t.Fatalf("comparisons: %+v", c.Comparisons)
	}
	var b bytes.Buffer
	if err := report.Cohort(&b, c, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Cohort podtrace.dev/job: 3 pods, 2 ways of ending") {
		t.Errorf("cohort text:\n%s", b.String())
	}
}

// TestCompareHTMLRunsNothing puts markup in what a pod's record carries
// (a denial's message) and checks the page escapes it and allows no
// script.
func TestCompareHTMLRunsNothing(t *testing.T) {
	a, b := side(background, true), side(stuck, true)
	b.Lifecycle.Audit.Denied[0].Message = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	var out bytes.Buffer
	if err := report.CompareHTML(&out, compare.Compare(a, b)); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, bad := range []string{"<script", "<img", "script-src", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the message is not shown escaped")
	}
}

// TestDivided groups a trace's pods by owner, a controller or else a
// generateName in a namespace, and keeps the cohorts whose pods ended in
// more than one way, one of them badly.
func TestDivided(t *testing.T) {
	mk := func(j job, name, uid string, at time.Duration) compare.Member {
		j.name, j.uid, j.at = name, uid, t0.Add(at)
		return compare.MemberOf(j.lifecycle())
	}
	rs := job{ns: "shop", node: "n", propagation: "Background", owner: "ReplicaSet/web-7d9f8c6b5d"}
	rsStuck := rs
	rsStuck.propagation, rsStuck.stuck = "Foreground", true
	rsRunning := rs
	rsRunning.running = true
	gen := job{ns: "ci", node: "n", propagation: "Background", generateName: "runner-"}
	genStuck := gen
	genStuck.propagation, genStuck.stuck = "Foreground", true
	genOther := gen
	genOther.ns = "ci-off"
	plain := job{ns: "ci", node: "n", propagation: "Foreground", stuck: true}
	for _, tc := range []struct {
		name    string
		members []compare.Member
		want    []string // cohort: groups
	}{{
		name: "healthy: each cohort ended one way",
		members: []compare.Member{
			mk(rs, "web-7d9f8c6b5d-a1", "00000000-0000-4000-8000-0000000000a1", 0),
			mk(rs, "web-7d9f8c6b5d-a2", "00000000-0000-4000-8000-0000000000a2", time.Second),
			mk(gen, "runner-x1", "00000000-0000-4000-8000-0000000000b1", 0),
		},
	}, {
		name: "scaled down: deleted beside running is not divided",
		members: []compare.Member{
			mk(rs, "web-7d9f8c6b5d-a1", "00000000-0000-4000-8000-0000000000a1", 0),
			mk(rsRunning, "web-7d9f8c6b5d-a2", "00000000-0000-4000-8000-0000000000a2", time.Second),
		},
	}, {
		name: "pods without owner or generateName are no cohort",
		members: []compare.Member{
			mk(plain, "runner-job-1", "00000000-0000-4000-8000-0000000000c1", 0),
			mk(job{ns: "ci", node: "n", propagation: "Background"}, "runner-job-2", "00000000-0000-4000-8000-0000000000c2", time.Second),
		},
	}, {
		name: "a generateName is per namespace",
		members: []compare.Member{
			mk(genStuck, "runner-x1", "00000000-0000-4000-8000-0000000000b1", 0),
			mk(genOther, "runner-x2", "00000000-0000-4000-8000-0000000000b2", time.Second),
		},
	}, {
		name: "divided cohorts, the worst first, typical members the median",
		members: []compare.Member{
			mk(gen, "runner-x1", "00000000-0000-4000-8000-0000000000b1", 0),
			mk(genStuck, "runner-x2", "00000000-0000-4000-8000-0000000000b2", time.Second),
			mk(rsStuck, "web-7d9f8c6b5d-a1", "00000000-0000-4000-8000-0000000000a1", 0),
			mk(rsStuck, "web-7d9f8c6b5d-a2", "00000000-0000-4000-8000-0000000000a2", 2*time.Second),
			mk(rsStuck, "web-7d9f8c6b5d-a3", "00000000-0000-4000-8000-0000000000a3", time.Second),
			mk(rsRunning, "web-7d9f8c6b5d-a4", "00000000-0000-4000-8000-0000000000a4", 3*time.Second),
			mk(rsRunning, "web-7d9f8c6b5d-a5", "00000000-0000-4000-8000-0000000000a5", 4*time.Second),
		},
		want: []string{
			"ReplicaSet shop/web-7d9f8c6b5d: Running: 2, typical web-7d9f8c6b5d-a4; Terminating, held by finalizer foregroundDeletion: 3, typical web-7d9f8c6b5d-a3",
			"generateName ci/runner-: Deleted: 1, typical runner-x1; Terminating, held by finalizer foregroundDeletion: 1, typical runner-x2",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range compare.Divided(tc.members) {
				var gs []string
				for _, g := range c.Groups {
					gs = append(gs, fmt.Sprintf("%s: %d, typical %s", g.Ending, len(g.Members), g.Typical.Name))
				}
				got = append(got, c.Name()+": "+strings.Join(gs, "; "))
				if c.Comparisons != nil {
					t.Errorf("Divided compared %s: that is CompareTypical's", c.Name())
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("cohorts (-want +got):\n%s", d)
			}
		})
	}
}

// TestCompareTypical compares the typical members with the sides it is
// given, and stops at the first error.
func TestCompareTypical(t *testing.T) {
	a, b := background, stuck
	a.generateName, b.generateName = "runner-", "runner-"
	sides := map[string]compare.Side{a.uid: side(a, true), b.uid: side(b, true)}
	cs := compare.Divided([]compare.Member{compare.MemberOf(sides[a.uid].Lifecycle), compare.MemberOf(sides[b.uid].Lifecycle)})
	if len(cs) != 1 {
		t.Fatalf("%d cohorts, want 1", len(cs))
	}
	var asked []string
	err := cs[0].CompareTypical(func(p compare.Pod) (compare.Side, error) {
		asked = append(asked, p.Name)
		return sides[p.UID], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{a.name, b.name}, asked); d != "" {
		t.Errorf("sides asked for (-want +got):\n%s", d)
	}
	if len(cs[0].Comparisons) != 1 || cs[0].Comparisons[0].Decisive[0].Subject != "deletion propagation" {
		t.Errorf("comparisons %+v, want one naming the deletion propagation first", cs[0].Comparisons)
	}
	// A group that ended well (running) is listed, not compared.
	running := a
	running.name, running.uid, running.running = "runner-r", "00000000-0000-4000-8000-0000000000d1", true
	sides[running.uid] = side(running, true)
	cs = compare.Divided([]compare.Member{compare.MemberOf(sides[a.uid].Lifecycle), compare.MemberOf(sides[b.uid].Lifecycle), compare.MemberOf(sides[running.uid].Lifecycle)})
	asked = nil
	if err := cs[0].CompareTypical(func(p compare.Pod) (compare.Side, error) { asked = append(asked, p.Name); return sides[p.UID], nil }); err != nil {
		t.Fatal(err)
	}
	if len(cs[0].Groups) != 3 || len(cs[0].Comparisons) != 1 || cs[0].Comparisons[0].B.Name != b.name {
		t.Errorf("groups %d, comparisons %+v: want the stuck group alone compared with the best", len(cs[0].Groups), cs[0].Comparisons)
	}
	if d := cmp.Diff([]string{a.name, b.name}, asked); d != "" {
		t.Errorf("sides asked for, a running group beside (-want +got):\n%s", d)
	}
	boom := fmt.Errorf("boom")
	if err := cs[0].CompareTypical(func(compare.Pod) (compare.Side, error) { return compare.Side{}, boom }); err != boom {
		t.Errorf("CompareTypical returned %v, want the side's error", err)
	}
}

// TestGeneratedNamesAreNoise: two pods of one generateName whose pull
// Secrets got names from it too (as the runner's do) differ in those
// names only by the API server's suffixes: noise, not a dependent that
// one has and the other not.
func TestGeneratedNamesAreNoise(t *testing.T) {
	a, b := background, stuck
	a.generateName, b.generateName = "runner-gen-", "runner-gen-"
	a.name, b.name = "runner-gen-b2c4d", "runner-gen-f5g6h"
	sa, sb := side(a, true), side(b, true)
	sa.Lifecycle.Dependents[0].Name, sb.Lifecycle.Dependents[0].Name = "runner-gen-k8m9n", "runner-gen-q2r4s"
	r := compare.Compare(sa, sb)
	for _, d := range append(r.Decisive, r.Other...) {
		if d.Kind == "dependent" || strings.Contains(d.Subject, "runner-gen-") {
			t.Errorf("difference %q: the generated names are noise", d.Summary())
		}
	}
	if r.IgnoredBy["generated suffixes"] < 2 {
		t.Errorf("ignored %v, want the pods' and their Secrets' generated suffixes", r.IgnoredBy)
	}
	if r.Decisive[0].Subject != "deletion propagation" {
		t.Errorf("first decisive difference %q, want the deletion propagation", r.Decisive[0].Subject)
	}
}

// TestEqualValuesAreNoDifference: a value both pods had alike is no
// difference, though it names one of them (pod held and pod released,
// both labelled app=held: normalizing B's own name made B's label look
// different from A's).
func TestEqualValuesAreNoDifference(t *testing.T) {
	a, b := healthy1, healthy2
	a.name, b.name = "released", "held"
	sa, sb := side(a, false), side(b, false)
	for _, s := range []compare.Side{sa, sb} {
		for i, c := range s.Lifecycle.Steps[0].Changes {
			if c.Path == "metadata.labels" {
				s.Lifecycle.Steps[0].Changes[i].New = `{"app":"held"}`
			}
		}
	}
	r := compare.Compare(sa, sb)
	for _, d := range append(r.Decisive, r.Other...) {
		if d.A == d.B {
			t.Errorf("difference %q: A and B are the same", d.Summary())
		}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"a":"{\"app\":\"held\"}"`) {
		t.Errorf("-o json lists the label as a difference:\n%s", raw)
	}
}
