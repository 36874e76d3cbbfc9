package cloudexport

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// AKS is where the AKS records are said to come from (placeholders).
type AKS struct {
	Subscription, ResourceGroup, Cluster, Workspace string
}

// DefaultAKS names a placeholder subscription, group and cluster.
var DefaultAKS = AKS{Subscription: "00000000-0000-0000-0000-000000000000", ResourceGroup: "podtrace-example", Cluster: "ci", Workspace: "11111111-1111-1111-1111-111111111111"}

// ResourceID is the cluster's resource ID, upper-cased as resource logs
// write it.
func (a AKS) ResourceID() string {
	return strings.ToUpper(fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerService/managedClusters/%s", a.Subscription, a.ResourceGroup, a.Cluster))
}

// BlobPath is where a diagnostic setting writes the hour of t's records
// in the storage account's container insights-logs-CATEGORY.
func (a AKS) BlobPath(category string, e Event) string {
	t := e.StageTimestamp.UTC()
	return fmt.Sprintf("insights-logs-%s/resourceId=%s/y=%04d/m=%02d/d=%02d/h=%02d/m=00/PT1H.json", category, a.ResourceID(), t.Year(), t.Month(), t.Day(), t.Hour())
}

// adminEvent: kube-audit-admin holds the events of kube-audit without the
// get and list verbs.
func adminEvent(e Event) bool { return e.Verb != "get" && e.Verb != "list" }

// storageRecord is a resource log record in a storage account, in the
// documented field order.
type storageRecord struct {
	Time          string `json:"time"`
	ResourceID    string `json:"resourceId"`
	Category      string `json:"category"`
	OperationName string `json:"operationName"`
	Properties    struct {
		Log    string `json:"log"`
		Stream string `json:"stream"`
		Pod    string `json:"pod"`
	} `json:"properties"`
}

// WriteStorage writes the kube-audit-admin records of the events as a
// diagnostic setting writes them to a storage account blob: JSON lines.
func (a AKS) WriteStorage(w io.Writer, events []Event) error {
	var out []storageRecord
	for _, e := range events {
		if !adminEvent(e) {
			continue
		}
		r := storageRecord{Time: e.StageTimestamp.UTC().Format("2006-01-02T15:04:05.0000000Z"), ResourceID: a.ResourceID(), Category: "kube-audit-admin",
			OperationName: "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read"}
		r.Properties.Log, r.Properties.Stream, r.Properties.Pod = string(e.Line), "stdout", "kube-apiserver-"+fmt.Sprintf("%08x", fnv(a.Cluster))[:8]
		out = append(out, r)
	}
	return lines(w, out)
}

// WriteTable writes the AKSAuditAdmin rows of the events as `az monitor
// log-analytics query --workspace ID --analytics-query 'AKSAuditAdmin |
// ...' --output json` prints them: a JSON array of objects, one key per
// column, dynamic columns as JSON text, times in UTC.
func (a AKS) WriteTable(w io.Writer, events []Event) error {
	text := func(v any) string {
		if v == nil {
			return ""
		}
		if raw, ok := v.(json.RawMessage); ok {
			if len(raw) == 0 {
				return ""
			}
			return string(raw)
		}
		b, _ := json.Marshal(v)
		if string(b) == "null" {
			return ""
		}
		return string(b)
	}
	var rows []map[string]any
	for _, e := range events {
		if !adminEvent(e) {
			continue
		}
		// The event's fields as the table's columns (the table has none
		// for impersonatedUser).
		var whole map[string]json.RawMessage
		if err := json.Unmarshal(e.Line, &whole); err != nil {
			return err
		}
		rows = append(rows, map[string]any{
			"TenantId":            a.Workspace,
			"TimeGenerated":       e.StageTimestamp.UTC().Format("2006-01-02T15:04:05.000Z"),
			"Level":               e.Level,
			"AuditId":             e.AuditID,
			"Stage":               e.Stage,
			"RequestUri":          e.RequestURI,
			"Verb":                e.Verb,
			"User":                text(whole["user"]),
			"SourceIps":           text(whole["sourceIPs"]),
			"UserAgent":           e.UserAgent,
			"ObjectRef":           text(whole["objectRef"]),
			"ResponseStatus":      text(whole["responseStatus"]),
			"RequestObject":       text(whole["requestObject"]),
			"ResponseObject":      text(whole["responseObject"]),
			"RequestReceivedTime": e.RequestReceivedTimestamp.UTC().Format(micro),
			"StageReceivedTime":   e.StageTimestamp.UTC().Format(micro),
			"Annotations":         text(whole["annotations"]),
			"PodName":             "kube-apiserver-" + fmt.Sprintf("%08x", fnv(a.Cluster))[:8],
			"SourceSystem":        "Azure",
			"Type":                "AKSAuditAdmin",
			"_ResourceId":         strings.ToLower(a.ResourceID()),
		})
	}
	return indent(w, rows, "  ")
}
