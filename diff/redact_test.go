package diff

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRedact(t *testing.T) {
	lc := &Lifecycle{Steps: []Step{{Changes: []Change{
		{Path: "spec.containers[app]", Op: OpAdd, New: `{"name":"app","image":"app:1","args":["--password","hunter2","--db-token=abc123","--verbose"],"env":[{"name":"DB_PASSWORD","value":"s3cret"},{"name":"FROM_SECRET","valueFrom":{"secretKeyRef":{"name":"db","key":"pw"}}},{"name":"CUSTOMER","value":"acme"}]}`},
		{Path: "spec.containers[app].env[LOG_LEVEL].value", Op: OpChange, Old: "info", New: "debug"},
		{Path: "spec.containers[app].env[API_URL]", Op: OpAdd, New: `{"name":"API_URL","value":"https://internal.example"}`},
		{Path: "metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]", Op: OpAdd, New: `{"apiVersion":"v1","kind":"Pod"}`},
		{Path: "metadata.annotations", Op: OpAdd, New: `{"team":"payments","billing/account":"4242","kubectl.kubernetes.io/last-applied-configuration":"{}"}`},
		{Path: "spec.containers[app].command", Op: OpAdd, New: `["sh","-c","curl -H 'Authorization: Bearer x' --token xyz https://svc?api_key=k1"]`},
		{Path: "metadata.labels[app]", Op: OpAdd, New: "web"},
		{Path: "status.phase", Op: OpChange, Old: "Pending", New: "Running"},
	}}}}
	r, err := NewRedactor([]string{"billing/account", "CUSTOMER", `acme-[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	counts := r.Redact(lc)
	got := ""
	for _, c := range lc.Steps[0].Changes {
		got += c.Path + "\n  old: " + c.Old + "\n  new: " + c.New + "\n"
	}
	got += "summary: " + Summary(counts) + "\n"
	path := filepath.Join("testdata", "redact.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./diff -update writes it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("redaction (-want +got), go test ./diff -update if intended:\n%s", d)
	}
	for _, secret := range []string{"hunter2", "abc123", "s3cret", "debug", "internal.example", "4242", "xyz", "k1", `"kind":"Pod"`} {
		if contains(got, secret) {
			t.Errorf("redacted output still carries %q", secret)
		}
	}
	for _, kept := range []string{"secretKeyRef", "DB_PASSWORD", "payments", "app:1", "Running", "--verbose"} {
		if !contains(got, kept) {
			t.Errorf("redaction lost %q, which is structure, not a secret", kept)
		}
	}
}

func TestNewRedactorBadPattern(t *testing.T) {
	if _, err := NewRedactor([]string{"(unclosed"}); err == nil {
		t.Error("NewRedactor accepted an invalid regular expression")
	}
}

func contains(s, sub string) bool {
	return len(sub) > 0 && len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

func TestRedactAuditAndEvents(t *testing.T) {
	lc := &Lifecycle{
		Events: []Event{{Reason: "Failed", Message: `pull failed: --token=abc123xyz`}},
		Audit: &Audit{
			Denied: []DeniedRequests{{Message: `denied: password=hunter2hunter2`}},
			Patches: []WebhookPatch{{Webhook: "inject", Ops: []PatchOp{
				{Op: "add", Path: "/spec/containers/-", Value: json.RawMessage(`{"name":"proxy","env":[{"name":"KEY","value":"sidecarsecret"}]}`)},
				{Op: "add", Path: "/spec/containers/0/env/1/value", Value: json.RawMessage(`"plainsecret"`)},
				{Op: "replace", Path: "/spec/containers/0/image", Value: json.RawMessage(`"alpine@sha256:abc"`)},
			}}},
		},
	}
	r, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Redact(lc)
	b, _ := json.Marshal(lc)
	for _, s := range []string{"abc123xyz", "hunter2hunter2", "sidecarsecret", "plainsecret"} {
		if strings.Contains(string(b), s) {
			t.Errorf("%q survived redaction: %s", s, b)
		}
	}
	for _, s := range []string{"alpine@sha256:abc", "proxy", "KEY", "pull failed"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("redaction lost %q: %s", s, b)
		}
	}
}
