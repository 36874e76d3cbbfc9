package diff

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Audit events imported from a managed cluster's export (GKE's Cloud
// Logging entries, AKS's AKSAudit rows) are built by the importer from the
// export's fields, and carry a podtraceExport field (written by package
// tracer/auditlog, its Export type) that names the export and the event
// fields it did not carry. The replay keeps that: a missing HTTP code is
// not a 0, a missing impersonatedUser is not "no impersonation". Events
// that an export holds whole (EKS, AKS's storage records) carry no such
// field: they are the API server's own.

// auditExport is the podtraceExport field of an audit event.
type auditExport struct {
	Format string   `json:"format"`
	Lacks  []string `json:"lacks"`
	// Failed: the request failed by the export's own status, its HTTP
	// code not known.
	Failed bool `json:"failed"`
	// Status is the export's own status of the request, when the HTTP
	// code is not known: "INVALID_ARGUMENT (3)".
	Status string `json:"status"`
}

// AuditSource is an export that built some of the pod's audit events, and
// what it did not carry.
type AuditSource struct {
	Format string `json:"format"`
	Events int    `json:"events"`
	// Lacks counts the events that lack each field (responseStatus.code,
	// impersonatedUser...).
	Lacks map[string]int `json:"lacks,omitempty"`
}

// Fields an export may not carry, as findings name them.
const (
	lacksCode         = "responseStatus.code"
	lacksStatus       = "responseStatus"
	lacksImpersonated = "impersonatedUser"
)

// lacksText says what an event field an export did not carry is.
var lacksText = map[string]string{
	lacksCode:                  "the HTTP status code (shown as 0)",
	lacksStatus:                "whether the request succeeded (no status at all)",
	"requestObject":            "the request body (the pod as sent is not known)",
	"responseObject":           "the response body (the pod as stored and its resourceVersion are not known)",
	lacksImpersonated:          "the impersonated user (a request made with impersonation reads as its impersonator's)",
	"requestReceivedTimestamp": "the time the request was received (its one timestamp is read as the time it completed)",
	"user":                     "the user who made the request",
}

// LacksText says what an event field that an export did not carry is.
func LacksText(field string) string {
	if t, ok := lacksText[field]; ok {
		return t
	}
	return field
}

// failed reports whether the request failed: a response code of 400 or
// more, or, when the export did not carry the code, its own status.
func (ev *auditEvent) failed() bool {
	return ev.ResponseStatus.Code >= 400 || ev.Export != nil && ev.Export.Failed
}

// lacks returns the fields the event's export did not carry.
func (ev *auditEvent) lacks() []string {
	if ev.Export == nil {
		return nil
	}
	return ev.Export.Lacks
}

// exportStatus is the export's own status, when it stands for the code.
func (ev *auditEvent) exportStatus() string {
	if ev.Export == nil {
		return ""
	}
	return ev.Export.Status
}

// addSource counts an event among the exports that built the pod's events.
func (a *Audit) addSource(ev *auditEvent) {
	if ev.Export == nil {
		return
	}
	var s *AuditSource
	for i := range a.Sources {
		if a.Sources[i].Format == ev.Export.Format {
			s = &a.Sources[i]
		}
	}
	if s == nil {
		a.Sources = append(a.Sources, AuditSource{Format: ev.Export.Format, Lacks: map[string]int{}})
		s = &a.Sources[len(a.Sources)-1]
	}
	s.Events++
	for _, f := range ev.Export.Lacks {
		s.Lacks[f]++
	}
}

// Summary says in one line what the export did not carry: "GKE Cloud
// Logging entry (7 events) does not carry: the HTTP status code (shown as
// 0) for 5, ...".
func (s AuditSource) Summary() string {
	fields := make([]string, 0, len(s.Lacks))
	for f := range s.Lacks {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var lacks []string
	for _, f := range fields {
		lacks = append(lacks, fmt.Sprintf("%s for %d", LacksText(f), s.Lacks[f]))
	}
	what := fmt.Sprintf("%s (%d event", s.Format, s.Events)
	if s.Events != 1 {
		what += "s"
	}
	if len(lacks) == 0 {
		return what + ") carries every field podtrace reads"
	}
	return what + ") does not carry: " + strings.Join(lacks, "; ")
}

// codeText writes a response code, or says the export did not carry it.
func codeText(code int, lacks []string, status string) string {
	if code != 0 || !lacksField(lacks, lacksCode) && !lacksField(lacks, lacksStatus) {
		return strconv.Itoa(code)
	}
	if status != "" {
		return "HTTP code not in the export, its status " + status
	}
	return "HTTP code not in the export"
}

func lacksField(lacks []string, field string) bool {
	for _, f := range lacks {
		if f == field {
			return true
		}
	}
	return false
}

// CodeText is the request's response code, or why it is not known.
func (r AuditRequest) CodeText() string { return codeText(r.Code, r.Lacks, r.ExportStatus) }

// CodeText is the requests' response code, or why it is not known.
func (d DeniedRequests) CodeText() string { return codeText(d.Code, d.Lacks, d.ExportStatus) }
