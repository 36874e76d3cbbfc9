package auditlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Format names where an audit event was read from: the API server's own
// log, or the export of a managed cluster's cloud.
type Format string

// The formats Unwrap and Source recognize, by content. Each provider file
// (gke.go, eks.go, aks.go) says which document describes its format.
const (
	// FormatAPIServer: a JSON line of kube-apiserver's log backend
	// (--audit-log-path), an audit.k8s.io Event as is.
	FormatAPIServer Format = "kube-apiserver audit log"
	// FormatGKE: a Cloud Logging LogEntry whose protoPayload is a
	// google.cloud.audit.AuditLog of serviceName k8s.io.
	FormatGKE Format = "GKE Cloud Logging entry"
	// FormatEKS: a CloudWatch Logs event of an EKS kube-apiserver-audit
	// stream, its message the audit.k8s.io Event.
	FormatEKS Format = "EKS CloudWatch Logs event"
	// FormatEKSS3: a line of a CloudWatch Logs export to S3: a timestamp,
	// a space, the event's message.
	FormatEKSS3 Format = "EKS CloudWatch Logs export to S3"
	// FormatAKSStorage: an Azure resource log record of category kube-audit
	// or kube-audit-admin, its properties.log the audit.k8s.io Event as a
	// string.
	FormatAKSStorage Format = "AKS diagnostic log record"
	// FormatAKSTable: a Log Analytics row of the AKSAudit or AKSAuditAdmin
	// table, the event's fields as columns.
	FormatAKSTable Format = "AKS Log Analytics row (AKSAudit)"
	// FormatAKSDiagnostics: a Log Analytics row of the AzureDiagnostics
	// table, its log_s column the audit.k8s.io Event as a string.
	FormatAKSDiagnostics Format = "AKS Log Analytics row (AzureDiagnostics)"
)

// ExportField is the top-level field of an audit event that Unwrap built
// from the fields of an export (GKE, AKS's AKSAudit table) rather than
// found whole: what it was built from and what that export did not carry.
// Readers of audit records (diff) read it so that their findings say which
// evidence is missing instead of taking a zero for a value.
const ExportField = "podtraceExport"

// Export is the value of ExportField.
type Export struct {
	// Format is the export the event was built from.
	Format Format `json:"format"`
	// Lacks are the fields of the audit.k8s.io/v1 Event that the export
	// did not carry for this event (responseStatus.code,
	// impersonatedUser, requestObject...): absent from the event, not
	// empty.
	Lacks []string `json:"lacks,omitempty"`
	// Failed says the request failed, by the export's own status, when
	// responseStatus.code is among Lacks (a request that failed with an
	// HTTP code the export does not keep).
	Failed bool `json:"failed,omitempty"`
	// Status is the export's own status of the request when it stands in
	// for the HTTP code (GKE: the google.rpc.Code, "INVALID_ARGUMENT (3)").
	Status string `json:"status,omitempty"`
}

// Unwrapped is an audit event read out of a record of an export.
type Unwrapped struct {
	// Event is an audit event as JSON: the record itself (a kube-apiserver
	// line), the event the envelope holds, unchanged (EKS, AKS storage),
	// or one built from the export's fields with an ExportField (GKE, AKS
	// Log Analytics).
	Event  []byte
	Format Format
	// Lacks are the Event fields the export did not carry (as in Export).
	Lacks []string
}

// notExport is the reason of a record that is neither an audit event nor
// the envelope of one.
const notExport = "not an audit event nor a known export of one"

// Unwrap reads one record of a file: a JSON object (a line, or an element
// of a JSON document) or an S3 export line. It returns the audit event the
// record is or holds, or why it does not hold one: a Skip with a Warning
// when the record is damaged or of a format podtrace does not know, without
// one when it is a known export's record about something else (another log
// stream, another service).
func Unwrap(rec []byte) (Unwrapped, *Skip) {
	b := bytes.TrimSpace(rec)
	if len(b) == 0 {
		return Unwrapped{}, &Skip{Reason: "empty line"}
	}
	if b[0] >= '0' && b[0] <= '9' {
		return unwrapS3Line(b)
	}
	if b[0] != '{' {
		return Unwrapped{}, &Skip{Reason: notExport, Warning: fmt.Sprintf("%s; skipped", describeRecord(b))}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return Unwrapped{}, &Skip{Reason: "malformed JSON", Warning: fmt.Sprintf("not a JSON audit event or export record (%v); skipped", err)}
	}
	switch {
	case top["protoPayload"] != nil:
		return unwrapGKE(b)
	case top["properties"] != nil && top["category"] != nil:
		return unwrapAKSRecord(top)
	case top["AuditId"] != nil:
		return unwrapAKSRow(top)
	case top["log_s"] != nil:
		return unwrapAKSDiagnostics(top)
	case top["message"] != nil && top["timestamp"] != nil:
		return unwrapCloudWatch(top)
	}
	var tm struct{ Kind, APIVersion string }
	_ = json.Unmarshal(b, &tm)
	if tm.Kind == Kind && strings.HasPrefix(tm.APIVersion, "audit.k8s.io/") {
		return Unwrapped{Event: b, Format: FormatAPIServer}, nil
	}
	return Unwrapped{}, &Skip{Reason: notExport, Warning: describe(tm.APIVersion, tm.Kind) + ": not an audit.k8s.io Event nor a GKE, EKS or AKS export record; skipped"}
}

// describeRecord quotes the start of a record that is not JSON.
func describeRecord(b []byte) string {
	if len(b) > 60 {
		b = append(b[:57:57], "..."...)
	}
	return fmt.Sprintf("not JSON: %q", b)
}

// rawString reads a JSON value that holds a string.
func rawString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// builtEvent is an audit.k8s.io/v1 Event built from an export's fields, in
// the field order kube-apiserver writes.
type builtEvent struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level,omitempty"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI,omitempty"`
	Verb                     string            `json:"verb"`
	User                     json.RawMessage   `json:"user,omitempty"`
	ImpersonatedUser         json.RawMessage   `json:"impersonatedUser,omitempty"`
	SourceIPs                json.RawMessage   `json:"sourceIPs,omitempty"`
	UserAgent                string            `json:"userAgent,omitempty"`
	ObjectRef                json.RawMessage   `json:"objectRef,omitempty"`
	ResponseStatus           json.RawMessage   `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp,omitempty"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
	Export                   *Export           `json:"podtraceExport,omitempty"`
}

// marshal writes the event, its ExportField listing what it lacks.
func (ev *builtEvent) marshal(format Format, lacks []string) (Unwrapped, *Skip) {
	ev.Kind, ev.APIVersion = Kind, APIVersion
	if ev.Export == nil {
		ev.Export = &Export{}
	}
	ev.Export.Format, ev.Export.Lacks = format, lacks
	b, err := json.Marshal(ev)
	if err != nil {
		return Unwrapped{}, &Skip{Reason: "unreadable " + string(format), Warning: fmt.Sprintf("%s: %v; skipped", format, err)}
	}
	return Unwrapped{Event: b, Format: format, Lacks: lacks}, nil
}

// microTime writes t as kube-apiserver writes its timestamps.
func microTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

// userJSON is a user.username object.
func userJSON(name string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Username string `json:"username"`
	}{name})
	return b
}
