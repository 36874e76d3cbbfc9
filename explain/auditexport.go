package explain

import (
	"github.com/podtrace/podtrace/diff"
)

// auditReaders are the findings whose rules read the pod's audit events
// (Rules: stuck-finalizer and finalizer-not-removed with auditFindings,
// ended with its DELETE and eviction requests).
var auditReaders = map[string]bool{"stuck-finalizer": true, "finalizer-not-removed": true, "ended": true}

// auditExportNotes says, in each finding that reads the audit log, which
// exports built the pod's audit events and which fields they did not
// carry: a code shown as 0, a request without its impersonated user, a
// CREATE without the pod as sent are the export's silence, not the API
// server's answer. Events held whole by their export (EKS, AKS storage)
// need no note.
func auditExportNotes(fs []Finding, lc *diff.Lifecycle) {
	if lc.Audit == nil {
		return
	}
	var notes []Evidence
	for _, s := range lc.Audit.Sources {
		if len(s.Lacks) > 0 {
			notes = append(notes, Evidence{Text: "audit log from an export: " + s.Summary() + "; the evidence above claims none of these"})
		}
	}
	if len(notes) == 0 {
		return
	}
	for i := range fs {
		if auditReaders[fs[i].ID] {
			fs[i].Evidence = append(fs[i].Evidence, notes...)
		}
	}
}
