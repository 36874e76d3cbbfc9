package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

// TestDiffActorBasis: the timeline says how each actor is known, and a
// removal whose actor is unknown says so beside the change, unless the
// step's one actor, unknown, already does.
func TestDiffActorBasis(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	unknown := diff.Change{Path: "metadata.finalizers[example.com/cleanup]", Op: diff.OpRemove, Basis: diff.BasisUnknown}
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", Outcome: "Running", RecordingEnd: t0.Add(time.Minute), Steps: []diff.Step{
		{Seq: 1, Time: t0, Type: "Added", ResourceVersion: "100",
			Actors:  []diff.Actor{{Manager: "kubectl-client-side-apply", Who: "kubectl apply", Basis: diff.BasisManagedFields, Detail: "entry at creation"}},
			Changes: []diff.Change{{Path: "metadata.finalizers[example.com/cleanup]", Op: diff.OpAdd, Manager: "kubectl-client-side-apply", Basis: diff.BasisManagedFields}}},
		{Seq: 2, Time: t0.Add(time.Second), Type: "Updated", ResourceVersion: "101",
			Actors:  []diff.Actor{{Subresource: "binding", Who: "the scheduler default-scheduler", Basis: diff.BasisFieldSemantics, Detail: "binding"}},
			Changes: []diff.Change{{Path: "spec.nodeName", Op: diff.OpAdd, New: "node-1"}}},
		{Seq: 3, Time: t0.Add(2 * time.Second), Type: "Updated", ResourceVersion: "102",
			Actors:  []diff.Actor{{Who: "unknown", Basis: diff.BasisUnknown, Detail: "a request that left no field manager; the audit log names the client"}},
			Changes: []diff.Change{unknown}},
		{Seq: 4, Time: t0.Add(3 * time.Second), Type: "Updated", ResourceVersion: "103",
			Actors: []diff.Actor{
				{Manager: "kubelet", Who: "the kubelet, status update", Basis: diff.BasisManagedFields},
				{Manager: "cleaner", Who: "cleaner", Basis: diff.BasisManagedFields}},
			Changes: []diff.Change{
				{Path: "metadata.annotations[done]", Op: diff.OpAdd, New: "true", Manager: "cleaner", Basis: diff.BasisManagedFields},
				{Path: "metadata.finalizers[other]", Op: diff.OpRemove, Basis: diff.BasisUnknown, Candidates: []string{"kubelet", "cleaner"}}}},
		{Seq: 5, Time: t0.Add(4 * time.Second), Type: "Deleted", ResourceVersion: "104",
			Actors:  []diff.Actor{{Who: "the API server", Basis: diff.BasisFieldSemantics, Detail: "removing the pod: no finalizer left, grace period over"}},
			Changes: []diff.Change{{Path: "metadata.finalizers[last]", Op: diff.OpRemove, Basis: diff.BasisUnknown}}},
	}}}
	var out bytes.Buffer
	if err := Diff(&out, lc, TextOptions{AllFields: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"created rv 100 by kubectl apply (managedFields)\n",
		"updated rv 101 by the scheduler default-scheduler (binding)\n",
		"updated rv 102 by unknown (a request that left no field manager; the audit log names the client)\n" +
			"      - metadata.finalizers[example.com/cleanup]\n",
		"updated rv 103 by the kubelet, status update (managedFields) and cleaner (managedFields)\n" +
			"      + metadata.annotations[done]  true  (cleaner)\n" +
			"      - metadata.finalizers[other]  (unknown: one of kubelet, cleaner)\n",
		"deleted rv 104 by the API server (removing the pod: no finalizer left, grace period over)\n" +
			"      - metadata.finalizers[last]  (unknown: removed by a request that left no field manager)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the timeline lacks %q:\n%s", want, out.String())
		}
	}
}

// TestAdmissionHeading: no Admission heading without something under it;
// with only the webhooks to show, it says that no field changed.
func TestAdmissionHeading(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	webhook := admission.Webhook{Kind: "MutatingWebhookConfiguration", Name: "digester.example.com", Configuration: "digester", FailurePolicy: "Ignore"}
	for _, tc := range []struct {
		name      string
		admission *diff.Admission
		want      []string // in the text; none: no heading at all
	}{
		{"nothing", &diff.Admission{Source: "audit log"}, nil},
		{"only hidden defaults", &diff.Admission{Source: "audit log", Defaults: 4}, nil},
		{"only webhooks", &diff.Admission{Source: "audit log", Defaults: 1, Webhooks: []admission.Webhook{webhook}},
			[]string{"Admission (as asked for vs. as stored; compared with audit log)\n      no field changed at admission\n      (1 change by defaulting",
				`webhook MutatingWebhook "digester.example.com"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", Outcome: "Running", RecordingEnd: t0.Add(time.Minute), Admission: tc.admission,
				Steps: []diff.Step{{Seq: 1, Time: t0, Type: "Added", ResourceVersion: "1"}}}}
			var text, md bytes.Buffer
			if err := Diff(&text, lc, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := Markdown(&md, &Trace{Pods: []*explain.Lifecycle{lc}}, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if strings.Contains(text.String(), "Admission") || strings.Contains(md.String(), "Admission") {
					t.Errorf("an Admission heading with nothing under it:\n%s\n%s", text.String(), md.String())
				}
				return
			}
			for _, want := range tc.want {
				if !strings.Contains(text.String(), want) {
					t.Errorf("the text lacks %q:\n%s", want, text.String())
				}
			}
		})
	}
}
