package diff

import (
	"flag"
	"os"
	"path/filepath"
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
