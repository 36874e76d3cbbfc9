package auditlog

import (
	"encoding/json"
	"fmt"
	"time"
)

// AKS sends the API server's audit events through a diagnostic setting of
// the cluster with the category kube-audit (every event) or
// kube-audit-admin (without get and list). Documents:
//
//   - https://learn.microsoft.com/azure/aks/monitor-aks-reference (the
//     categories) and https://learn.microsoft.com/azure/aks/monitor-apiserver;
//   - https://learn.microsoft.com/azure/azure-monitor/essentials/resource-logs#send-to-azure-storage
//     (to a storage account: blobs insights-logs-CATEGORY/.../PT1H.json of
//     JSON lines {"time", "resourceId", "category", "operationName",
//     "properties"}; for AKS, properties.log holding the audit event as a
//     string is not shown by a Microsoft document we found: it is the
//     record AzureDiagnostics flattens into log_s, whose rows hold the
//     event that way);
//   - https://learn.microsoft.com/azure/azure-monitor/reference/tables/aksaudit
//     and .../aksauditadmin (to Log Analytics in resource-specific mode:
//     the event's fields as columns AuditId, Verb, User, ObjectRef,
//     ResponseStatus, RequestObject, ResponseObject, Annotations,
//     StageReceivedTime...; `az monitor log-analytics query -o json`
//     prints the rows as a JSON array of objects, dynamic columns as JSON
//     text);
//   - https://learn.microsoft.com/azure/azure-monitor/reference/tables/azurediagnostics
//     (Log Analytics in Azure diagnostics mode: the event in log_s).
//
// The storage record and the AzureDiagnostics row hold the whole event.
// The AKSAudit table has no column for the event's impersonatedUser: a
// request made with impersonation reads as its impersonator's, and podtrace
// says the export lacks it. RequestObject and ResponseObject may be the
// string "skipped-too-big-size-object" instead of the object.

// aksAuditCategory says whether a resource log category holds audit events.
func aksAuditCategory(c string) bool { return c == "kube-audit" || c == "kube-audit-admin" }

// unwrapAKSRecord reads the audit event of a resource log record in a
// storage account.
func unwrapAKSRecord(top map[string]json.RawMessage) (Unwrapped, *Skip) {
	category, _ := rawString(top["category"])
	if !aksAuditCategory(category) {
		return Unwrapped{}, &Skip{Reason: "Azure resource log of another category than kube-audit or kube-audit-admin"}
	}
	var props struct {
		Log *string `json:"log"`
	}
	if json.Unmarshal(top["properties"], &props) != nil || props.Log == nil {
		return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatAKSStorage), Warning: string(FormatAKSStorage) + " without properties.log as a string; skipped"}
	}
	return Unwrapped{Event: []byte(*props.Log), Format: FormatAKSStorage}, nil
}

// unwrapAKSDiagnostics reads the audit event of an AzureDiagnostics row.
func unwrapAKSDiagnostics(top map[string]json.RawMessage) (Unwrapped, *Skip) {
	if category, ok := rawString(top["Category"]); ok && !aksAuditCategory(category) {
		return Unwrapped{}, &Skip{Reason: "AzureDiagnostics row of another category than kube-audit or kube-audit-admin"}
	}
	log, ok := rawString(top["log_s"])
	if !ok {
		return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatAKSDiagnostics), Warning: string(FormatAKSDiagnostics) + " whose log_s is not a string; skipped"}
	}
	return Unwrapped{Event: []byte(log), Format: FormatAKSDiagnostics}, nil
}

// aksTooBig is what AKSAudit holds instead of a large request or response
// object.
const aksTooBig = "skipped-too-big-size-object"

// unwrapAKSRow builds the audit event of an AKSAudit or AKSAuditAdmin row.
func unwrapAKSRow(top map[string]json.RawMessage) (Unwrapped, *Skip) {
	str := func(k string) string { s, _ := rawString(top[k]); return s }
	var ev builtEvent
	ev.AuditID, ev.Level, ev.Stage, ev.RequestURI, ev.Verb, ev.UserAgent = str("AuditId"), str("Level"), str("Stage"), str("RequestUri"), str("Verb"), str("UserAgent")
	var lacks []string
	for _, c := range []struct {
		column string
		field  string
		dst    *json.RawMessage
	}{
		{"User", "user", &ev.User},
		{"SourceIps", "sourceIPs", &ev.SourceIPs},
		{"ObjectRef", "objectRef", &ev.ObjectRef},
		{"ResponseStatus", "responseStatus", &ev.ResponseStatus},
		{"RequestObject", "requestObject", &ev.RequestObject},
		{"ResponseObject", "responseObject", &ev.ResponseObject},
	} {
		v, tooBig, err := dynamic(top[c.column])
		if err != nil {
			return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatAKSTable), Warning: fmt.Sprintf("%s %s: column %s: %v; skipped", FormatAKSTable, ev.AuditID, c.column, err)}
		}
		*c.dst = v
		if tooBig {
			lacks = append(lacks, c.field)
		}
	}
	if ann, _, err := dynamic(top["Annotations"]); err == nil && ann != nil {
		_ = json.Unmarshal(ann, &ev.Annotations)
	}
	for _, t := range []struct {
		column string
		dst    *string
	}{{"StageReceivedTime", &ev.StageTimestamp}, {"RequestReceivedTime", &ev.RequestReceivedTimestamp}} {
		if s := str(t.column); s != "" {
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatAKSTable), Warning: fmt.Sprintf("%s %s: column %s: %v; skipped", FormatAKSTable, ev.AuditID, t.column, err)}
			}
			*t.dst = microTime(at)
		}
	}
	if ev.AuditID == "" || ev.StageTimestamp == "" {
		return Unwrapped{}, &Skip{Reason: "no auditID or stageTimestamp", Warning: string(FormatAKSTable) + " without AuditId or StageReceivedTime; skipped"}
	}
	// The table has no column for it: whether the request impersonated
	// someone is not known.
	lacks = append(lacks, "impersonatedUser")
	return ev.marshal(FormatAKSTable, lacks)
}

// dynamic reads a Log Analytics dynamic column: JSON text in a string (as
// the query API returns it) or the value itself. tooBig says AKS left the
// object out for its size.
func dynamic(raw json.RawMessage) (v json.RawMessage, tooBig bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	if raw[0] != '"' {
		return raw, false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false, err
	}
	switch {
	case s == "":
		return nil, false, nil
	case s == aksTooBig:
		return nil, true, nil
	case !json.Valid([]byte(s)):
		return nil, false, fmt.Errorf("not JSON: %.60q", s)
	}
	return json.RawMessage(s), false, nil
}
