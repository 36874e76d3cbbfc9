package cluster

import (
	"os"
	"strings"
	"testing"
)

// TestAuditPolicyFile: the sample policy users get is the one the tests
// run with.
func TestAuditPolicyFile(t *testing.T) {
	b, err := os.ReadFile("../../hack/audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, "#") && l != "" {
			lines = append(lines, l)
		}
	}
	if got := strings.Join(lines, ""); got != PodAuditPolicy {
		t.Errorf("hack/audit-policy.yaml without its comments differs from PodAuditPolicy:\n%s\nwant:\n%s", got, PodAuditPolicy)
	}
}
