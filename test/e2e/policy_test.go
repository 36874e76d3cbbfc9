package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cluster"
)

// The seed case as of 2026: no webhook, but a ValidatingAdmissionPolicy
// that refuses any pod UPDATE that removes a finalizer, bound to the
// namespaces labelled policyLabel=strict with Deny (and Audit, so that the
// audit log carries its structured validation_failure annotation). A
// second binding, Warn only, matches too and cannot block.
const (
	policyName    = "keep-finalizers"
	denyBinding   = "keep-finalizers-strict"
	warnBinding   = "keep-finalizers-warn"
	policyLabel   = "podtrace.dev/finalizer-policy"
	policyMessage = "finalizers may not be removed"
)

// TestPolicyCase plays the seed case with the policy in the webhook's
// place: a pod with owned dependents, deleted with propagationPolicy
// Foreground; the garbage collector deletes the dependents, then its PATCH
// that removes foregroundDeletion is denied by the policy, again and
// again. Without the audit log explain names the policy, through its Deny
// binding, as the suspect; with it, the denials confirm it.
func TestPolicyCase(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1, AuditPolicy: cluster.PodAuditPolicy})
	const ns, job = "ci-policy", "runner-job-1"
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{policyLabel: "strict"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startFinalizerPolicy(t, client)
	rec := startRecorder(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(rec.db); err == nil {
				_ = os.WriteFile(filepath.Join(c.LogDir, "trace.db"), b, 0o644)
			}
		}
	})
	time.Sleep(3 * time.Second) // the API server compiles the policy and picks up its bindings

	pod, err := digester.RunJob(ctx, client, digester.JobOptions{Namespace: ns, Name: job})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "job pod Succeeded", time.Minute, func() (bool, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded, err
	})
	if err := digester.DeleteJob(ctx, client, pod, metav1.DeletePropagationForeground); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second) // several of the garbage collector's retries
	p, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil || len(p.Finalizers) == 0 {
		t.Fatalf("the pod is gone or lost its finalizers: the case did not reproduce (%v)", err)
	}
	rec.stop(t)

	// Without the audit log: the policy named, through its Deny binding.
	lc := lifecycle(t, rec.db, ns, job)
	stuck := finding(t, lc, "stuck-finalizer")
	var suspect *admission.Webhook
	for i, w := range stuck.Suspects {
		if w.Kind == admission.KindValidatingPolicy && w.Name == policyName {
			if w.Configuration != denyBinding {
				t.Errorf("policy suspect through binding %q, want only %s (the Warn binding cannot block)", w.Configuration, denyBinding)
			}
			suspect = &stuck.Suspects[i]
		}
	}
	if suspect == nil {
		t.Fatalf("the policy is not a suspect: %+v", stuck.Suspects)
	}
	if strings.Join(suspect.ValidationActions, ",") != "Deny,Audit" || suspect.FailurePolicy != "Fail" || len(suspect.Validations) != 1 ||
		!strings.Contains(suspect.NamespaceSelector, policyLabel+"=strict") {
		t.Errorf("suspect %+v: want validationActions Deny, Audit, failurePolicy Fail, its validation and the binding's namespaceSelector", suspect)
	}
	explain := podtrace(t, "explain", job, "-n", ns, "--db", rec.db, "--color", "never")
	t.Logf("explain without the audit log:\n%s", explain)
	for _, s := range []string{
		`suspect ValidatingAdmissionPolicy "` + policyName + `" (binding ` + denyBinding + `): validationActions Deny, Audit, failurePolicy Fail`,
		"validation (not evaluated) ",
		"ValidatingAdmissionPolicy " + policyName + " (binding " + warnBinding + ") intercepts pod UPDATE here but cannot block it",
		"dependent ConfigMap " + digester.ConfigMapName(job) + " deleted after the deletion request",
	} {
		if !strings.Contains(explain, s) {
			t.Errorf("explain lacks %q", s)
		}
	}
	if strings.Contains(explain, "no recorded admission webhook or admission policy intercepts") {
		t.Errorf("explain says nothing intercepts pod UPDATE")
	}

	// With the audit log: the denials confirm the policy.
	out := podtrace(t, "import", "--audit-log", c.AuditLog, "--db", rec.db)
	if m := regexp.MustCompile(`(\d+) events? kept`).FindStringSubmatch(out); m == nil || m[1] == "0" {
		t.Fatalf("import kept no audit event:\n%s", out)
	}
	explain = podtrace(t, "explain", job, "-n", ns, "--db", rec.db, "--color", "never")
	t.Logf("explain with the audit log:\n%s", explain)
	m := regexp.MustCompile(`confirmed by the audit log: ValidatingAdmissionPolicy ` + policyName + ` \(binding ` + denyBinding +
		`\) denied (\d+) (?:update|patch) attempts by system:serviceaccount:kube-system:generic-garbage-collector \((\d+)\)`).FindStringSubmatch(explain)
	if m == nil {
		t.Fatalf("explain does not confirm the policy")
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("%d denied attempts, want at least 2 (the garbage collector retries)", n)
	}
	if m[2] != "403" && m[2] != "422" {
		t.Errorf("denials with code %s, want 403 or 422", m[2])
	}
	if !strings.Contains(explain, policyMessage) {
		t.Errorf("explain does not quote the policy's message %q", policyMessage)
	}
	lc = lifecycle(t, rec.db, ns, job)
	stuck = finding(t, lc, "stuck-finalizer")
	if len(stuck.Suspects) == 0 || stuck.Suspects[0].Name != policyName || stuck.Suspects[0].Rules == "(policy not recorded)" {
		t.Errorf("first suspect %+v, want the recorded policy, confirmed", stuck.Suspects)
	}
	var structured bool
	for _, d := range lc.Audit.Denied {
		if d.Policy == policyName && d.Binding == denyBinding {
			structured = true
		}
	}
	if !structured {
		t.Errorf("no denied request names the policy and its binding: %+v", lc.Audit.Denied)
	}
	var audited bool
	for _, pf := range lc.Audit.PolicyFailures {
		if pf.Policy == policyName && pf.Binding == denyBinding && pf.Denied && pf.Message == policyMessage {
			audited = true
		}
	}
	if !audited {
		t.Errorf("the validation_failure annotations were not read: %+v", lc.Audit.PolicyFailures)
	}
}

// startFinalizerPolicy creates the policy and its two bindings.
func startFinalizerPolicy(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	api := client.AdmissionregistrationV1()
	fail := admissionv1.Fail
	_, err := api.ValidatingAdmissionPolicies().Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(oldObject.metadata.finalizers) || has(object.metadata.finalizers) && size(object.metadata.finalizers) >= size(oldObject.metadata.finalizers)",
				Message:    policyMessage,
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	strict := &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{policyLabel: "strict"}}}
	for name, actions := range map[string][]admissionv1.ValidationAction{
		denyBinding: {admissionv1.Deny, admissionv1.Audit},
		warnBinding: {admissionv1.Warn},
	} {
		if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policyName, ValidationActions: actions, MatchResources: strict},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func finding(t *testing.T, lc *explain.Lifecycle, id string) *explain.Finding {
	t.Helper()
	for i := range lc.Findings {
		if lc.Findings[i].ID == id {
			return &lc.Findings[i]
		}
	}
	t.Fatalf("no %s finding; findings: %+v", id, lc.Findings)
	return nil
}
