package auditlog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// GKE writes the API server's audit events to Cloud Logging as LogEntry
// objects whose protoPayload is a google.cloud.audit.AuditLog of
// serviceName k8s.io (logs cloudaudit.googleapis.com/activity and, when
// enabled, /data_access). `gcloud logging read --format=json` prints a JSON
// array of them; a log sink to Cloud Storage writes one per line. Documents:
//
//   - https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging
//     (the LogEntry and its AuditLog protoPayload; methodName
//     io.k8s.GROUP.VERSION.RESOURCE[.SUBRESOURCE].VERB, resourceName
//     GROUP/VERSION/namespaces/NS/RESOURCE/NAME[/SUBRESOURCE]);
//   - https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog
//     (authenticationInfo, requestMetadata, request, response, status as a
//     google.rpc.Status);
//   - https://cloud.google.com/kubernetes-engine/docs/concepts/audit-policy
//     (the Kubernetes audit policy behind it).
//
// What the entry does not carry, and what podtrace therefore does not
// claim:
//
//   - responseStatus.code: status is a google.rpc.Status (0 for OK), not
//     the HTTP code. The HTTP code is kept only when the response is the
//     API server's Status object (failures logged with their response);
//     for a request that succeeded it is not known.
//   - requestReceivedTimestamp: the entry has one timestamp ("the time of
//     the audited operation"); it is read as the stageTimestamp.
//   - impersonatedUser: not documented. authenticationInfo.authoritySelector
//     has been seen holding the impersonated user, principalEmail the
//     impersonator (a public report of an impersonating proxy on GKE,
//     https://github.com/kyma-project/kyma/issues/2811), and
//     the AuditLog reference says it is "the authority selector specified
//     by the requestor"; podtrace reads it as the impersonated user.
//   - auditID: the entry's insertId, which is a UUID equal to
//     operation.id on GKE's entries; that it is the API server's auditID
//     is not documented.
//   - requestObject and responseObject when the entry has no request or
//     response (audit level Metadata or Request, or a body too large).

// gkeEntry is the part of a LogEntry Unwrap reads.
type gkeEntry struct {
	InsertID     string            `json:"insertId"`
	Timestamp    time.Time         `json:"timestamp"`
	Labels       map[string]string `json:"labels"`
	ProtoPayload *struct {
		Type               string `json:"@type"`
		ServiceName        string `json:"serviceName"`
		MethodName         string `json:"methodName"`
		ResourceName       string `json:"resourceName"`
		AuthenticationInfo struct {
			PrincipalEmail    string `json:"principalEmail"`
			AuthoritySelector string `json:"authoritySelector"`
		} `json:"authenticationInfo"`
		RequestMetadata struct {
			CallerIP                string `json:"callerIp"`
			CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
		} `json:"requestMetadata"`
		Request  json.RawMessage `json:"request"`
		Response json.RawMessage `json:"response"`
		Status   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
	} `json:"protoPayload"`
}

const auditLogType = "type.googleapis.com/google.cloud.audit.AuditLog"

// rpcCodes names the google.rpc.Code values
// (https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto).
var rpcCodes = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
	"PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
	"UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// RPCCodeName names a google.rpc.Code: "INVALID_ARGUMENT (3)".
func RPCCodeName(code int) string {
	if code >= 0 && code < len(rpcCodes) {
		return fmt.Sprintf("%s (%d)", rpcCodes[code], code)
	}
	return fmt.Sprintf("code %d", code)
}

// unwrapGKE builds the audit event of a GKE LogEntry.
func unwrapGKE(b []byte) (Unwrapped, *Skip) {
	var e gkeEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return Unwrapped{}, &Skip{Reason: "unreadable " + string(FormatGKE), Warning: fmt.Sprintf("%s with fields of the wrong type (%v); skipped", FormatGKE, err)}
	}
	p := e.ProtoPayload
	if p == nil || p.Type != auditLogType {
		return Unwrapped{}, &Skip{Reason: "Cloud Logging entry that is not an audit log entry"}
	}
	if p.ServiceName != "k8s.io" {
		return Unwrapped{}, &Skip{Reason: "GKE audit entry of another service than the Kubernetes API (serviceName " + p.ServiceName + ")"}
	}
	if e.InsertID == "" || e.Timestamp.IsZero() {
		return Unwrapped{}, &Skip{Reason: "no auditID or stageTimestamp", Warning: string(FormatGKE) + " without insertId or timestamp; skipped"}
	}
	ref, verb, err := gkeRequest(p.MethodName, p.ResourceName)
	if err != nil {
		return Unwrapped{}, &Skip{Reason: "GKE entry of an unknown method or resource name", Warning: fmt.Sprintf("%s %s: %v; skipped", FormatGKE, e.InsertID, err)}
	}
	ev := builtEvent{AuditID: e.InsertID, Stage: "ResponseComplete", Verb: verb, ObjectRef: ref,
		UserAgent: p.RequestMetadata.CallerSuppliedUserAgent, StageTimestamp: microTime(e.Timestamp), Annotations: e.Labels}
	lacks := []string{"requestReceivedTimestamp"}
	if p.AuthenticationInfo.PrincipalEmail != "" {
		ev.User = userJSON(p.AuthenticationInfo.PrincipalEmail)
	} else {
		lacks = append(lacks, "user")
	}
	if s := p.AuthenticationInfo.AuthoritySelector; s != "" {
		ev.ImpersonatedUser = userJSON(s)
	}
	if ip := p.RequestMetadata.CallerIP; ip != "" {
		ev.SourceIPs, _ = json.Marshal([]string{ip})
	}
	if ev.RequestObject = withoutType(p.Request); ev.RequestObject == nil {
		lacks = append(lacks, "requestObject")
	}
	if ev.ResponseObject = withoutType(p.Response); ev.ResponseObject == nil {
		lacks = append(lacks, "responseObject")
	}
	// The HTTP code: only the API server's own Status in the response has
	// it; status is the google.rpc.Status of the whole request.
	var st struct {
		Kind    string `json:"kind"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Reason  string `json:"reason"`
		Code    int    `json:"code"`
		// Details, as the API server's audit event's responseStatus
		// keeps them: an eviction's DisruptionBudget cause names the
		// budget that refused it.
		Details json.RawMessage `json:"details"`
	}
	_ = json.Unmarshal(ev.ResponseObject, &st)
	ev.Export = &Export{}
	switch {
	case st.Kind == "Status" && st.Code > 0:
		status := map[string]any{"metadata": map[string]any{}, "status": st.Status, "message": st.Message, "reason": st.Reason, "code": st.Code}
		if len(st.Details) > 0 && string(st.Details) != "null" {
			status["details"] = st.Details
		}
		ev.ResponseStatus, _ = json.Marshal(status)
	case p.Status == nil:
		// No status at all: whether the request succeeded is not known.
		lacks = append(lacks, "responseStatus")
	default:
		lacks = append(lacks, "responseStatus.code")
		ev.Export.Status = RPCCodeName(p.Status.Code)
		if p.Status.Code != 0 {
			ev.Export.Failed = true
			ev.ResponseStatus, _ = json.Marshal(map[string]any{"metadata": map[string]any{}, "status": "Failure", "message": p.Status.Message})
		}
	}
	return ev.marshal(FormatGKE, lacks)
}

// gkeRequest reads the object reference and the verb of a request from
// its methodName (io.k8s.core.v1.pods.eviction.create) and resourceName
// (core/v1/namespaces/ci/pods/p/eviction), which must agree.
func gkeRequest(method, resource string) (json.RawMessage, string, error) {
	parts := strings.Split(resource, "/")
	var ref struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace,omitempty"`
		Name        string `json:"name,omitempty"`
		APIGroup    string `json:"apiGroup,omitempty"`
		APIVersion  string `json:"apiVersion"`
		Subresource string `json:"subresource,omitempty"`
	}
	if len(parts) < 3 {
		return nil, "", fmt.Errorf("resourceName %q is not GROUP/VERSION/[namespaces/NAMESPACE/]RESOURCE[/NAME[/SUBRESOURCE]]", resource)
	}
	group, rest := parts[0], parts[2:]
	ref.APIVersion = parts[1]
	if group != "core" {
		ref.APIGroup = group
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		ref.Namespace, rest = rest[1], rest[2:]
	}
	switch len(rest) {
	case 3:
		ref.Subresource = rest[2]
		fallthrough
	case 2:
		ref.Name = rest[1]
		fallthrough
	case 1:
		ref.Resource = rest[0]
	default:
		return nil, "", fmt.Errorf("resourceName %q is not GROUP/VERSION/[namespaces/NAMESPACE/]RESOURCE[/NAME[/SUBRESOURCE]]", resource)
	}
	what := "io.k8s." + strings.ReplaceAll(group, ".", "_") + "." + ref.APIVersion + "." + ref.Resource + "."
	if ref.Subresource != "" {
		what += ref.Subresource + "."
	}
	verb, ok := strings.CutPrefix(method, what)
	if !ok {
		// Group names keep their dots in methodName (io.k8s.apps.v1...,
		// io.k8s.authorization.rbac.v1...): compare without the group.
		tail := "." + ref.APIVersion + "." + ref.Resource + "."
		if ref.Subresource != "" {
			tail += ref.Subresource + "."
		}
		i := strings.LastIndex(method, tail)
		if !strings.HasPrefix(method, "io.k8s.") || i < 0 {
			return nil, "", fmt.Errorf("methodName %q is not about resourceName %q", method, resource)
		}
		verb = method[i+len(tail):]
	}
	if verb == "" || strings.Contains(verb, ".") {
		return nil, "", fmt.Errorf("methodName %q names no verb for resourceName %q", method, resource)
	}
	b, err := json.Marshal(ref)
	return b, verb, err
}

// withoutType returns a request or response object without the @type Cloud
// Logging adds to it (core.k8s.io/v1.Pod), or nil if there is none.
func withoutType(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["@type"]; !ok {
		return raw
	}
	delete(m, "@type")
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}
