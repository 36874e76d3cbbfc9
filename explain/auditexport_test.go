package explain

import (
	"strings"
	"testing"

	"github.com/podtrace/podtrace/diff"
)

// TestAuditExportNotes: the findings that read the audit log say what the
// export that built its events did not carry; others, and events an
// export held whole, get no note.
func TestAuditExportNotes(t *testing.T) {
	fs := func() []Finding { return []Finding{{ID: "stuck-finalizer"}, {ID: "ended"}, {ID: "image-pull"}} }
	lacking := &diff.Lifecycle{Audit: &diff.Audit{Sources: []diff.AuditSource{{Format: "AKS Log Analytics row (AKSAudit)", Events: 4, Lacks: map[string]int{"impersonatedUser": 4}}}}}
	got := fs()
	auditExportNotes(got, lacking)
	for _, f := range got {
		noted := len(f.Evidence) == 1 && strings.Contains(f.Evidence[0].Text, "AKS Log Analytics row (AKSAudit) (4 events) does not carry: the impersonated user")
		if noted != (f.ID != "image-pull") {
			t.Errorf("finding %s: evidence %+v", f.ID, f.Evidence)
		}
	}
	for _, lc := range []*diff.Lifecycle{
		{},
		{Audit: &diff.Audit{}},
		{Audit: &diff.Audit{Sources: []diff.AuditSource{{Format: "X", Events: 1}}}},
	} {
		got := fs()
		auditExportNotes(got, lc)
		for _, f := range got {
			if len(f.Evidence) > 0 {
				t.Errorf("finding %s got a note without anything lacking: %+v", f.ID, f.Evidence)
			}
		}
	}
}
