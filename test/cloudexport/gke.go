package cloudexport

import (
	"encoding/json"
	"io"
	"sort"
	"strings"
	"time"
)

// GKE is where the GKE entries are said to come from (placeholders).
type GKE struct {
	Project, Location, Cluster string
}

// DefaultGKE names a placeholder project and cluster.
var DefaultGKE = GKE{Project: "podtrace-example", Location: "europe-west1", Cluster: "ci"}

// httpToRPC maps an HTTP code to the google.rpc.Code that Google's API
// design guide pairs with it (https://cloud.google.com/apis/design/errors,
// "HTTP Mapping" of each code in google/rpc/code.proto). Which code GKE
// writes for a Kubernetes response is not documented; podtrace's import
// reads the HTTP code only from the response's Status, never from this.
func httpToRPC(code int, reason string) int {
	switch {
	case code < 400:
		return 0 // OK
	case code == 400 || code == 422:
		return 3 // INVALID_ARGUMENT
	case code == 401:
		return 16 // UNAUTHENTICATED
	case code == 403:
		return 7 // PERMISSION_DENIED
	case code == 404:
		return 5 // NOT_FOUND
	case code == 409 && reason == "AlreadyExists":
		return 6 // ALREADY_EXISTS
	case code == 409:
		return 10 // ABORTED
	case code == 429:
		return 8 // RESOURCE_EXHAUSTED
	case code == 499:
		return 1 // CANCELLED
	case code == 501:
		return 12 // UNIMPLEMENTED
	case code == 503:
		return 14 // UNAVAILABLE
	case code == 504:
		return 4 // DEADLINE_EXCEEDED
	case code >= 500:
		return 13 // INTERNAL
	}
	return 2 // UNKNOWN
}

// Entry returns the Cloud Logging entry of an event, as a map so that it
// prints with sorted keys as gcloud does.
func (g GKE) Entry(e Event) map[string]any {
	ref := e.ObjectRef
	group := ref.APIGroup
	if group == "" {
		group = "core"
	}
	resource := group + "/" + ref.APIVersion
	if ref.Namespace != "" {
		resource += "/namespaces/" + ref.Namespace
	}
	resource += "/" + ref.Resource
	method := "io.k8s." + group + "." + ref.APIVersion + "." + ref.Resource
	if ref.Name != "" {
		resource += "/" + ref.Name
	}
	if ref.Subresource != "" {
		resource += "/" + ref.Subresource
		method += "." + ref.Subresource
	}
	method += "." + e.Verb
	auth := map[string]any{"principalEmail": e.User.Username}
	if e.ImpersonatedUser != nil {
		auth["authoritySelector"] = e.ImpersonatedUser.Username
	}
	meta := map[string]any{"callerSuppliedUserAgent": e.UserAgent}
	if len(e.SourceIPs) > 0 {
		meta["callerIp"] = e.SourceIPs[0]
	}
	payload := map[string]any{
		"@type":              "type.googleapis.com/google.cloud.audit.AuditLog",
		"authenticationInfo": auth,
		"authorizationInfo":  []any{map[string]any{"granted": e.Annotations["authorization.k8s.io/decision"] != "forbid", "permission": method, "resource": resource}},
		"methodName":         method,
		"requestMetadata":    meta,
		"resourceName":       resource,
		"serviceName":        "k8s.io",
	}
	code, msg, reason := 200, "", ""
	if s := e.ResponseStatus; s != nil {
		code, msg, reason = s.Code, s.Message, s.Reason
	}
	if rpc := httpToRPC(code, reason); rpc != 0 {
		payload["status"] = map[string]any{"code": rpc, "message": msg}
	} else {
		payload["status"] = map[string]any{}
	}
	if r := typed(e.RequestObject); r != nil {
		payload["request"] = r
	}
	// GKE's Kubernetes audit policy logs the status updates of nodes at
	// level Request: no response (configure-helper.sh, which the
	// audit-policy document points to).
	if r := typed(e.ResponseObject); r != nil && !(ref.Subresource == "status" && nodeUser(e.User.Username)) {
		payload["response"] = r
	}
	log := "activity"
	if e.Verb == "get" || e.Verb == "list" || e.Verb == "watch" || ref.Subresource == "status" {
		log = "data_access" // ADMIN_READ, DATA_READ and DATA_WRITE (pod status) go there
	}
	labels := map[string]string{}
	for k, v := range e.Annotations {
		labels[k] = v
	}
	entry := map[string]any{
		"insertId":         e.AuditID,
		"logName":          "projects/" + g.Project + "/logs/cloudaudit.googleapis.com%2F" + log,
		"operation":        map[string]any{"id": e.AuditID, "producer": "k8s.io", "first": true, "last": true},
		"protoPayload":     payload,
		"receiveTimestamp": e.StageTimestamp.Add(2 * time.Second).Format(time.RFC3339Nano),
		"resource":         map[string]any{"type": "k8s_cluster", "labels": map[string]any{"cluster_name": g.Cluster, "location": g.Location, "project_id": g.Project}},
		"timestamp":        e.StageTimestamp.UTC().Format(micro),
	}
	if len(labels) > 0 {
		entry["labels"] = labels
	}
	return entry
}

// nodeUser: a kubelet's identity.
func nodeUser(name string) bool { return strings.HasPrefix(name, "system:node:") }

// typed returns a request or response object with the @type Cloud Logging
// gives it: "core.k8s.io/v1.Pod" for a core Pod, as seen in GKE's
// entries; none when the object names no kind (a merge patch).
func typed(raw json.RawMessage) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion != "" && kind != "" {
		group, version := "core.k8s.io", apiVersion
		if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
			group, version = apiVersion[:i], apiVersion[i+1:]
		}
		m["@type"] = group + "/" + version + "." + kind
	}
	return m
}

// WriteArray writes the entries as `gcloud logging read --format=json`
// prints them: a JSON array, newest first (its default order).
func (g GKE) WriteArray(w io.Writer, events []Event) error {
	sorted := append([]Event(nil), events...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].StageTimestamp.After(sorted[j].StageTimestamp) })
	out := make([]map[string]any, 0, len(sorted))
	for _, e := range sorted {
		out = append(out, g.Entry(e))
	}
	return indent(w, out, "  ")
}

// WriteLines writes the entries as a log sink writes them to Cloud
// Storage: one JSON entry per line, oldest first.
func (g GKE) WriteLines(w io.Writer, events []Event) error {
	out := make([]map[string]any, 0, len(events))
	for _, e := range events {
		out = append(out, g.Entry(e))
	}
	return lines(w, out)
}
