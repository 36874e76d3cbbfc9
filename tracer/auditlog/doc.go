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
