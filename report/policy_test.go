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

// policySuspect is a ValidatingAdmissionPolicy that intercepts a pod
// UPDATE through its binding, with a paramed, conditioned policy.
var policySuspect = admission.Webhook{
	Kind: admission.KindValidatingPolicy, Name: "keep-finalizers", Configuration: "keep-finalizers-ci",
	FailurePolicy: "Fail", ValidationActions: []string{"Deny", "Audit"},
	Rules: "[UPDATE] [pods] [core]/[v1] (scope *)", NamespaceSelector: "binding policy=strict",
	MatchConditions: []string{"not-admin: request.userInfo.username != 'admin'"},
	Validations:     []string{"object.metadata.finalizers.size() >= oldObject.metadata.finalizers.size() (message: finalizers stay)"},
	Params:          "paramKind v1/ConfigMap, params not recorded",
}

// TestPolicySuspects: the text and markdown reports name a policy suspect
// with its binding, actions, validations and what was not evaluated.
func TestPolicySuspects(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", Outcome: "Terminating", RecordingEnd: t0.Add(time.Minute),
		Steps: []diff.Step{{Seq: 1, Time: t0, Type: "Added", ResourceVersion: "100"}}}, Findings: []explain.Finding{{ID: "stuck-finalizer", Severity: explain.Critical, Headline: "deletion blocked",
		Suspects: []admission.Webhook{policySuspect}}}}
	var text bytes.Buffer
	if err := Explain(&text, lc, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := Markdown(&md, &Trace{Pods: []*explain.Lifecycle{lc}}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		text.String(): {
			`suspect ValidatingAdmissionPolicy "keep-finalizers" (binding keep-finalizers-ci): validationActions Deny, Audit, failurePolicy Fail, [UPDATE] [pods] [core]/[v1] (scope *), namespaceSelector binding policy=strict`,
			"matchCondition (not evaluated) not-admin: request.userInfo.username != 'admin'",
			"validation (not evaluated) object.metadata.finalizers.size() >= oldObject.metadata.finalizers.size() (message: finalizers stay)",
			"params: paramKind v1/ConfigMap, params not recorded",
		},
		md.String(): {
			"Suspects, admission webhooks and policies that intercept this request:",
			"- ValidatingAdmissionPolicy keep-finalizers (binding keep-finalizers-ci): validationActions Deny, Audit, failurePolicy Fail, rules",
			"; validation (not evaluated) ",
			"; params: paramKind v1/ConfigMap, params not recorded",
		},
	} {
		for _, w := range want {
			if !strings.Contains(name, w) {
				t.Errorf("report lacks %q:\n%s", w, name)
			}
		}
	}
}

// TestPolicySuspectHTML: the page's data carries a policy suspect's
// binding, actions and validations for the script to show.
func TestPolicySuspectHTML(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", Outcome: "Terminating", RecordingEnd: t0.Add(time.Minute),
		Steps: []diff.Step{{Seq: 1, Time: t0, Type: "Added", ResourceVersion: "100"}}}, Findings: []explain.Finding{{ID: "stuck-finalizer", Severity: explain.Critical, Headline: "deletion blocked",
		Suspects: []admission.Webhook{policySuspect}}}}
	var page bytes.Buffer
	if err := HTML(&page, &Trace{Pods: []*explain.Lifecycle{lc}}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"kind":"ValidatingAdmissionPolicy"`, `"configuration":"keep-finalizers-ci"`, `"validationActions":["Deny","Audit"]`, `"validations":[`} {
		if !strings.Contains(page.String(), w) {
			t.Errorf("page data lacks %s", w)
		}
	}
}

// TestPolicySuspectHTMLWithoutScript: the page's findings, readable
// without JavaScript, name a policy suspect with its binding and actions.
func TestPolicySuspectHTMLWithoutScript(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci", Name: "job", Outcome: "Terminating", RecordingEnd: t0.Add(time.Minute),
		Steps: []diff.Step{{Seq: 1, Time: t0, Type: "Added", ResourceVersion: "100"}}}, Findings: []explain.Finding{{ID: "stuck-finalizer", Severity: explain.Critical, Headline: "deletion blocked",
		Suspects: []admission.Webhook{policySuspect}}}}
	var page bytes.Buffer
	if err := HTML(&page, &Trace{Pods: []*explain.Lifecycle{lc}}, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `<span class="muted">ValidatingAdmissionPolicy, binding keep-finalizers-ci</span><br>validationActions <b>Deny, Audit</b>, failurePolicy <b>Fail</b>`
	if !strings.Contains(page.String(), want) {
		t.Errorf("page lacks %s", want)
	}
	if !strings.Contains(page.String(), "<br>validation (not evaluated) <code>") {
		t.Errorf("page lacks the policy's validation")
	}
}
