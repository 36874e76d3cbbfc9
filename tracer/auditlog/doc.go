// Package auditlog reads kube-apiserver audit logs (the log backend's JSON
// lines, audit.k8s.io/v1) into store.Records: the evidence no informer sees,
// such as the requests an admission webhook denied.
//
// # One parser
//
// Parse decides, for one line, whether podtrace keeps it and what it is
// about; `podtrace import` (whole files, afterwards) and `podtrace record
// --audit-log` (a live log, while recording) both call it, so both keep the
// same events:
//
//   - ResponseComplete events of audit.k8s.io/v1 (RequestReceived and
//     ResponseStarted repeat the same request);
//   - about pods (core group, a name set), or a deletecollection of a
//     namespace's pods (no name: Event.Collection, with the selectors of
//     its request URI and the pods its response listed);
//   - every verb but the reads (get, list, watch), on the pod itself or
//     any subresource: create, update, patch, delete; binding, status,
//     eviction (refused ones too: a PodDisruptionBudget's 429),
//     ephemeralcontainers, resize; exec, attach, portforward.
//
// Everything else is a Skip with a reason that summaries count; malformed
// lines, other audit API versions and kept events without auditID or
// stageTimestamp also carry a warning. The caller may skip pods by
// namespace and name (Want). Linking a kept event to the recorded pod is the
// caller's: by the UID the event names (Event.UID), else by namespace, name
// and time; a collection's, to the pods it listed, else to those of its
// namespace present then that its selectors match.
//
// Most lines are skipped, and cheaply: a header pass (header.go) reads kind,
// apiVersion, stage, verb and objectRef with a byte scan that skips over the
// request and response objects, and only the lines it cannot reject (or
// cannot read) are decoded in full with encoding/json, which validates them.
//
// A kept event becomes a Record (Event.Record): apiVersion audit.k8s.io/v1,
// kind Event, name and UID the auditID, refs the pod's UID, the line itself
// as the object.
//
// # Exports of managed clusters
//
// On GKE, EKS and AKS nobody reads the API server's log file: the cloud
// exports the same events in an envelope of its own. Unwrap (export.go)
// takes one record of such an export and returns the audit event it holds,
// as JSON that Parse reads like a kube-apiserver line: the message of an
// EKS CloudWatch Logs event or S3 export line (eks.go), the properties.log
// of an AKS storage record or the log_s of an AzureDiagnostics row
// (aks.go), each unchanged; or an event built from the fields of a GKE
// Cloud Logging entry (gke.go) or an AKSAudit row (aks.go), which carries
// an ExportField naming the export and the event fields it did not carry
// (responseStatus.code, impersonatedUser...), so that no reader takes a
// missing value for a zero. Each provider file cites the documents of its
// format and says what they leave undocumented.
//
// A Source (source.go) reads one file, gunzipped, whatever its shape:
// JSON lines (a file of kube-apiserver lines goes to Parse line by line
// as before, and only lines Parse cannot read are tried as an export's),
// or JSON documents (gcloud's array, aws's {"events": [...]}, az's array
// of rows), read with a streaming decoder. Each record comes with the line
// it starts on; damage in a JSON document ends the file after the records
// before it.
//
// # Following a live log
//
// A Tailer follows one file as `tail -F` does, by polling: it reads the open
// file to its end, holds a last line that has no newline yet, and notices
// when the path names another file (kube-apiserver's own rotation renames
// audit.log to audit-TIME.log and creates a new audit.log) or the file got
// shorter (logrotate's copytruncate). It then finishes the old file and
// reads the new one from its start. A path that vanishes for a while is a
// warning, not an error. By default a Tailer starts at the end of the file:
// the older lines are for `podtrace import`.
package auditlog
