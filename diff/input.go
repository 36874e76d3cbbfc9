package diff

import (
	"time"

	"github.com/podtrace/podtrace/store"
)

// Input is everything recorded about one pod incarnation, as loaded from a
// trace by the caller.
type Input struct {
	// Pod holds the pod's revisions in Seq order.
	Pod []store.Record
	// Events holds the revisions of core/v1 Events about the pod.
	Events []store.Record
	// Related holds the revisions of the objects in the pod's story, keyed by
	// UID: its dependents (objects whose ownerReferences name the pod), its
	// owners, its node and namespace.
	Related map[string][]store.Record
	// Webhooks holds the revisions of Mutating- and
	// ValidatingWebhookConfigurations recorded in the trace.
	Webhooks map[string][]store.Record
	// Audit holds the audit.k8s.io/v1 Events about the pod imported from the
	// API server's audit log (podtrace import --audit-log), oldest first.
	Audit []store.Record
	// Sessions are the recording sessions of the trace; the last one's end
	// (or, while recording, End) is when the recording ended.
	Sessions []store.Session
	// End is when the recording ended, or now when it is still running. Zero
	// means the time of the last record.
	End time.Time
}
