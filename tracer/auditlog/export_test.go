package auditlog

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// localEvent is an audit event as kube-apiserver writes it: a PATCH of a
// pod that a webhook denied.
const localEvent = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ci/pods/p","verb":"patch",` +
	`"user":{"username":"system:serviceaccount:kube-system:generic-garbage-collector"},"sourceIPs":["127.0.0.1"],"userAgent":"kube-controller-manager/v1.37.2",` +
	`"objectRef":{"resource":"pods","namespace":"ci","name":"p","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"admission webhook \"w.example\" denied the request: no","code":500},` +
	`"requestObject":{"metadata":{"finalizers":null}},"responseObject":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"admission webhook \"w.example\" denied the request: no","code":500},` +
	`"requestReceivedTimestamp":"2026-01-02T03:04:05.100000Z","stageTimestamp":"2026-01-02T03:04:05.123456Z","annotations":{"authorization.k8s.io/decision":"allow"}}`

// event is the part of a built audit event the tests compare.
type event struct {
	AuditID, Stage, Verb, UserAgent string
	User                            *struct{ Username string }
	ImpersonatedUser                *struct{ Username string }
	ObjectRef                       *struct{ Resource, Namespace, Name, APIGroup, Subresource string }
	ResponseStatus                  *struct {
		Code    int
		Message string
	}
	RequestObject, ResponseObject json.RawMessage
	StageTimestamp                time.Time
	Annotations                   map[string]string
	Export                        *Export `json:"podtraceExport"`
}

func decodeEvent(t *testing.T, b []byte) event {
	t.Helper()
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatalf("built event is not JSON: %v\n%s", err, b)
	}
	return ev
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestUnwrapWholeEvents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rec    string
		format Format
	}{
		{"kube-apiserver line", localEvent, FormatAPIServer},
		{"CloudWatch event", mustJSON(map[string]any{"logStreamName": "kube-apiserver-audit-0123abcd", "timestamp": 1767323045123, "message": localEvent, "ingestionTime": 1767323046000, "eventId": "1"}), FormatEKS},
		{"get-log-events event", mustJSON(map[string]any{"timestamp": 1767323045123, "message": localEvent, "ingestionTime": 1767323046000}), FormatEKS},
		{"S3 export line", "2026-01-02T03:04:05.123Z " + localEvent, FormatEKSS3},
		{"AKS storage record", mustJSON(map[string]any{"time": "2026-01-02T03:04:05.1234560Z", "resourceId": "/SUBSCRIPTIONS/S/RESOURCEGROUPS/G/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/C", "category": "kube-audit-admin",
			"operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read", "properties": map[string]any{"log": localEvent, "stream": "stdout", "pod": "kube-apiserver-1"}}), FormatAKSStorage},
		{"AzureDiagnostics row", mustJSON(map[string]any{"TimeGenerated": "2026-01-02T03:04:05.123Z", "Category": "kube-audit", "log_s": localEvent, "pod_s": "kube-apiserver-1"}), FormatAKSDiagnostics},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, skip := Unwrap([]byte(tc.rec))
			if skip != nil {
				t.Fatalf("skipped: %+v", skip)
			}
			if u.Format != tc.format || string(u.Event) != localEvent || len(u.Lacks) != 0 {
				t.Errorf("unwrapped %s lacking %v:\n%s\nwant %s, the event unchanged", u.Format, u.Lacks, u.Event, tc.format)
			}
		})
	}
}

func TestUnwrapSkips(t *testing.T) {
	for _, tc := range []struct {
		name, rec, reason string
		warn              bool
	}{
		{"another CloudWatch stream", mustJSON(map[string]any{"logStreamName": "kube-apiserver-0123", "timestamp": 1, "message": "I0102 03:04:05 started"}), "CloudWatch Logs event of another stream than kube-apiserver-audit-*", false},
		{"another AKS category", mustJSON(map[string]any{"category": "kube-apiserver", "properties": map[string]any{"log": "I0102 started"}}), "Azure resource log of another category than kube-audit or kube-audit-admin", false},
		{"another GKE service", mustJSON(map[string]any{"insertId": "x", "timestamp": "2026-01-02T03:04:05Z", "protoPayload": map[string]any{"@type": auditLogType, "serviceName": "container.googleapis.com", "methodName": "google.container.v1.ClusterManager.GetCluster"}}), "GKE audit entry of another service than the Kubernetes API (serviceName container.googleapis.com)", false},
		{"a GKE entry of an unknown resource name", mustJSON(map[string]any{"insertId": "x", "timestamp": "2026-01-02T03:04:05Z", "protoPayload": map[string]any{"@type": auditLogType, "serviceName": "k8s.io", "methodName": "io.k8s.core.v1.pods.delete", "resourceName": "pods"}}), "GKE entry of an unknown method or resource name", true},
		{"a GKE entry about another resource than its method", mustJSON(map[string]any{"insertId": "x", "timestamp": "2026-01-02T03:04:05Z", "protoPayload": map[string]any{"@type": auditLogType, "serviceName": "k8s.io", "methodName": "io.k8s.core.v1.secrets.delete", "resourceName": "core/v1/namespaces/ci/pods/p"}}), "GKE entry of an unknown method or resource name", true},
		{"an AKS row without time", mustJSON(map[string]any{"AuditId": "x", "Verb": "delete"}), "no auditID or stageTimestamp", true},
		{"an AKS row with a damaged column", mustJSON(map[string]any{"AuditId": "x", "Verb": "delete", "User": "{\"username\":"}), "unreadable " + string(FormatAKSTable), true},
		{"a core Event", `{"kind":"Event","apiVersion":"v1","reason":"Scheduled"}`, notExport, true},
		{"YAML", "apiVersion: audit.k8s.io/v1", notExport, true},
		{"an S3 line of text", "2026-01-02T03:04:05.123Z I0102 started", "CloudWatch Logs export line that is not an audit event", true},
		{"a number", "12", notExport, true},
		{"damaged", `{"protoPayload":`, "malformed JSON", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, skip := Unwrap([]byte(tc.rec))
			if skip == nil {
				t.Fatalf("unwrapped %s: %s", u.Format, u.Event)
			}
			if skip.Reason != tc.reason || (skip.Warning != "") != tc.warn {
				t.Errorf("skip %+v, want reason %q, warning %v", skip, tc.reason, tc.warn)
			}
		})
	}
}

// gkeEntryOf is a GKE LogEntry as documented, around the parts given.
func gkeEntryOf(method, resource string, payload map[string]any, labels map[string]string) string {
	p := map[string]any{"@type": auditLogType, "serviceName": "k8s.io", "methodName": method, "resourceName": resource,
		"authenticationInfo": map[string]any{"principalEmail": "system:serviceaccount:kube-system:generic-garbage-collector"},
		"authorizationInfo":  []any{map[string]any{"granted": true, "permission": method, "resource": resource}},
		"requestMetadata":    map[string]any{"callerIp": "10.0.0.2", "callerSuppliedUserAgent": "kube-controller-manager/v1.37.2"}}
	for k, v := range payload {
		p[k] = v
	}
	return mustJSON(map[string]any{"insertId": "a-1", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Factivity",
		"operation":    map[string]any{"id": "a-1", "producer": "k8s.io", "first": true, "last": true},
		"protoPayload": p, "labels": labels, "receiveTimestamp": "2026-01-02T03:04:09.5Z",
		"resource":  map[string]any{"type": "k8s_cluster", "labels": map[string]any{"cluster_name": "c", "location": "europe-west1", "project_id": "p"}},
		"timestamp": "2026-01-02T03:04:05.123456Z"})
}

func TestUnwrapGKE(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	status := map[string]any{"@type": "core.k8s.io/v1.Status", "apiVersion": "v1", "kind": "Status", "metadata": map[string]any{}, "status": "Failure", "message": `admission webhook "w.example" denied the request: no`, "code": 500}
	for _, tc := range []struct {
		name  string
		entry string
		want  event
		lacks []string
	}{
		{
			name: "a denied patch: the HTTP code from the response's Status",
			entry: gkeEntryOf("io.k8s.core.v1.pods.patch", "core/v1/namespaces/ci/pods/p",
				map[string]any{"request": map[string]any{"@type": "k8s.io/Patch", "metadata": map[string]any{"finalizers": nil}}, "response": status, "status": map[string]any{"code": 13, "message": `admission webhook "w.example" denied the request: no`}},
				map[string]string{"authorization.k8s.io/decision": "allow"}),
			want: event{AuditID: "a-1", Stage: "ResponseComplete", Verb: "patch", UserAgent: "kube-controller-manager/v1.37.2",
				User:      &struct{ Username string }{"system:serviceaccount:kube-system:generic-garbage-collector"},
				ObjectRef: &struct{ Resource, Namespace, Name, APIGroup, Subresource string }{Resource: "pods", Namespace: "ci", Name: "p"},
				ResponseStatus: &struct {
					Code    int
					Message string
				}{500, `admission webhook "w.example" denied the request: no`},
				RequestObject:  json.RawMessage(`{"metadata":{"finalizers":null}}`),
				ResponseObject: json.RawMessage(`{"apiVersion":"v1","code":500,"kind":"Status","message":"admission webhook \"w.example\" denied the request: no","metadata":{},"status":"Failure"}`),
				StageTimestamp: at, Annotations: map[string]string{"authorization.k8s.io/decision": "allow"}},
			lacks: []string{"requestReceivedTimestamp"},
		},
		{
			name: "an impersonated delete that succeeded: no HTTP code",
			entry: gkeEntryOf("io.k8s.core.v1.pods.delete", "core/v1/namespaces/ci/pods/p",
				map[string]any{"authenticationInfo": map[string]any{"principalEmail": "admin@example.com", "authoritySelector": "flush-controller"},
					"request": map[string]any{"@type": "meta.k8s.io/v1.DeleteOptions", "propagationPolicy": "Background"}, "response": map[string]any{"@type": "core.k8s.io/v1.Pod", "kind": "Pod", "metadata": map[string]any{"uid": "u-1"}}, "status": map[string]any{}},
				nil),
			want: event{AuditID: "a-1", Stage: "ResponseComplete", Verb: "delete", UserAgent: "kube-controller-manager/v1.37.2",
				User: &struct{ Username string }{"admin@example.com"}, ImpersonatedUser: &struct{ Username string }{"flush-controller"},
				ObjectRef:      &struct{ Resource, Namespace, Name, APIGroup, Subresource string }{Resource: "pods", Namespace: "ci", Name: "p"},
				RequestObject:  json.RawMessage(`{"propagationPolicy":"Background"}`),
				ResponseObject: json.RawMessage(`{"kind":"Pod","metadata":{"uid":"u-1"}}`),
				StageTimestamp: at},
			lacks: []string{"requestReceivedTimestamp", "responseStatus.code"},
		},
		{
			name: "a refused eviction without its response: failed by the gRPC status",
			entry: gkeEntryOf("io.k8s.core.v1.pods.eviction.create", "core/v1/namespaces/ci/pods/p/eviction",
				map[string]any{"status": map[string]any{"code": 8, "message": "Cannot evict pod as it would violate the pod's disruption budget."}}, nil),
			want: event{AuditID: "a-1", Stage: "ResponseComplete", Verb: "create", UserAgent: "kube-controller-manager/v1.37.2",
				User:      &struct{ Username string }{"system:serviceaccount:kube-system:generic-garbage-collector"},
				ObjectRef: &struct{ Resource, Namespace, Name, APIGroup, Subresource string }{Resource: "pods", Namespace: "ci", Name: "p", Subresource: "eviction"},
				ResponseStatus: &struct {
					Code    int
					Message string
				}{0, "Cannot evict pod as it would violate the pod's disruption budget."},
				StageTimestamp: at},
			lacks: []string{"requestReceivedTimestamp", "requestObject", "responseObject", "responseStatus.code"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, skip := Unwrap([]byte(tc.entry))
			if skip != nil {
				t.Fatalf("skipped: %+v", skip)
			}
			got := decodeEvent(t, u.Event)
			if got.Export == nil || got.Export.Format != FormatGKE {
				t.Fatalf("no %s of format %s: %+v", ExportField, FormatGKE, got.Export)
			}
			if diff := cmp.Diff(tc.lacks, got.Export.Lacks); diff != "" {
				t.Errorf("lacks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lacks, u.Lacks); diff != "" {
				t.Errorf("Unwrapped.Lacks (-want +got):\n%s", diff)
			}
			got.Export = nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
			// Parse reads it as it reads kube-apiserver's events.
			ev, skip := Parse(u.Event, nil)
			if skip != nil || ev.AuditID != "a-1" || ev.Name != "p" || ev.Namespace != "ci" || !ev.Time.Equal(at) {
				t.Errorf("Parse: %+v, %+v", ev, skip)
			}
		})
	}
	// The gRPC status of a failure without its response is kept.
	u, _ := Unwrap([]byte(gkeEntryOf("io.k8s.core.v1.pods.eviction.create", "core/v1/namespaces/ci/pods/p/eviction", map[string]any{"status": map[string]any{"code": 8}}, nil)))
	if got := decodeEvent(t, u.Event).Export; !got.Failed || got.Status != "RESOURCE_EXHAUSTED (8)" {
		t.Errorf("export %+v, want failed with status RESOURCE_EXHAUSTED (8)", got)
	}
}

func TestGKERequest(t *testing.T) {
	for _, tc := range []struct {
		method, resource, verb, ref string
	}{
		{"io.k8s.core.v1.pods.create", "core/v1/namespaces/ci/pods/p", "create", `{"resource":"pods","namespace":"ci","name":"p","apiVersion":"v1"}`},
		{"io.k8s.core.v1.pods.status.patch", "core/v1/namespaces/ci/pods/p/status", "patch", `{"resource":"pods","namespace":"ci","name":"p","apiVersion":"v1","subresource":"status"}`},
		{"io.k8s.core.v1.pods.list", "core/v1/namespaces/ci/pods", "list", `{"resource":"pods","namespace":"ci","apiVersion":"v1"}`},
		{"io.k8s.core.v1.nodes.update", "core/v1/nodes/n1", "update", `{"resource":"nodes","name":"n1","apiVersion":"v1"}`},
		{"io.k8s.core.v1.namespaces.delete", "core/v1/namespaces/ci", "delete", `{"resource":"namespaces","name":"ci","apiVersion":"v1"}`},
		{"io.k8s.apps.v1.deployments.update", "apps/v1/namespaces/ci/deployments/d", "update", `{"resource":"deployments","namespace":"ci","name":"d","apiGroup":"apps","apiVersion":"v1"}`},
		{"io.k8s.authorization.rbac.v1.roles.create", "rbac.authorization.k8s.io/v1/namespaces/ci/roles/r", "create", `{"resource":"roles","namespace":"ci","name":"r","apiGroup":"rbac.authorization.k8s.io","apiVersion":"v1"}`},
	} {
		ref, verb, err := gkeRequest(tc.method, tc.resource)
		if err != nil || verb != tc.verb || string(ref) != tc.ref {
			t.Errorf("gkeRequest(%q, %q) = %s, %q, %v; want %s, %q", tc.method, tc.resource, ref, verb, err, tc.ref, tc.verb)
		}
	}
}

func TestUnwrapAKSRow(t *testing.T) {
	var local map[string]json.RawMessage
	if err := json.Unmarshal([]byte(localEvent), &local); err != nil {
		t.Fatal(err)
	}
	text := func(k string) string { return string(local[k]) } // dynamic columns come as JSON text
	row := map[string]any{"TenantId": "w", "TimeGenerated": "2026-01-02T03:04:06.0000000Z", "Level": "RequestResponse", "AuditId": "a-1", "Stage": "ResponseComplete",
		"RequestUri": "/api/v1/namespaces/ci/pods/p", "Verb": "patch", "User": text("user"), "SourceIps": text("sourceIPs"), "UserAgent": "kube-controller-manager/v1.37.2",
		"ObjectRef": text("objectRef"), "ResponseStatus": text("responseStatus"), "RequestObject": aksTooBig, "ResponseObject": local["responseObject"],
		"RequestReceivedTime": "2026-01-02T03:04:05.1Z", "StageReceivedTime": "2026-01-02T03:04:05.123456Z", "Annotations": text("annotations"),
		"PodName": "kube-apiserver-1", "Type": "AKSAuditAdmin", "_ResourceId": "/subscriptions/s/resourcegroups/g/providers/microsoft.containerservice/managedclusters/c"}
	u, skip := Unwrap([]byte(mustJSON(row)))
	if skip != nil {
		t.Fatalf("skipped: %+v", skip)
	}
	if diff := cmp.Diff([]string{"requestObject", "impersonatedUser"}, u.Lacks); diff != "" {
		t.Errorf("lacks (-want +got):\n%s", diff)
	}
	got, want := decodeEvent(t, u.Event), decodeEvent(t, []byte(localEvent))
	want.RequestObject = nil
	got.Export = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

// TestSource reads the records of each shape of file, with the line each
// starts on.
func TestSource(t *testing.T) {
	other := strings.Replace(localEvent, `"auditID":"a-1"`, `"auditID":"a-2"`, 1)
	cw := func(msg string) map[string]any {
		return map[string]any{"logStreamName": "kube-apiserver-audit-01", "timestamp": 1767323045123, "message": msg, "ingestionTime": 1767323046000, "eventId": "1"}
	}
	pretty := func(v any) string {
		b, _ := json.MarshalIndent(v, "", "    ")
		return string(b)
	}
	type rec struct {
		Where, ID string
		Format    Format
		Skip      string
	}
	for _, tc := range []struct {
		name, file string
		shape      string
		want       []rec
		err        string
	}{
		{
			name: "kube-apiserver lines, one of an export among them", shape: "JSON lines",
			file: localEvent + "\n\n" + `{"kind":` + "\n" + "2026-01-02T03:04:05.123Z " + other + "\n",
			want: []rec{{"1", "a-1", FormatAPIServer, ""}, {"2", "", "", "empty line"}, {"3", "", "", "malformed JSON"}, {"4", "a-2", FormatEKSS3, ""}},
		},
		{
			name: "filter-log-events output", shape: "JSON document",
			file: pretty(map[string]any{"events": []any{cw(localEvent), cw(other)}, "searchedLogStreams": []any{}}),
			want: []rec{{"3 (entry 1)", "a-1", FormatEKS, ""}, {"10 (entry 2)", "a-2", FormatEKS, ""}},
		},
		{
			name: "a JSON array of AKS storage records after a byte order mark", shape: "JSON document",
			file: "\xef\xbb\xbf" + pretty([]any{map[string]any{"category": "kube-audit", "properties": map[string]any{"log": localEvent}}, map[string]any{"category": "guard", "properties": map[string]any{"log": "x"}}}),
			want: []rec{{"2 (entry 1)", "a-1", FormatAKSStorage, ""}, {"8 (entry 2)", "", "", "Azure resource log of another category than kube-audit or kube-audit-admin"}},
		},
		{
			name: "a pretty-printed single record, then another", shape: "JSON document",
			file: pretty(cw(localEvent)) + "\n" + pretty(cw(other)),
			want: []rec{{"1 (entry 1)", "a-1", FormatEKS, ""}, {"8 (entry 2)", "a-2", FormatEKS, ""}},
		},
		{
			name: "a compact document on one line, between JSON lines", shape: "JSON lines",
			file: mustJSON(cw(localEvent)) + "\n" + mustJSON(map[string]any{"events": []any{cw(other), cw(localEvent)}}) + "\n",
			want: []rec{{"1", "a-1", FormatEKS, ""}, {"2 (entry 1)", "a-2", FormatEKS, ""}, {"2 (entry 2)", "a-1", FormatEKS, ""}},
		},
		{
			name: "a truncated document", shape: "JSON document",
			file: func() string { d := pretty([]any{cw(localEvent), cw(other)}); return d[:len(d)-100] }(),
			want: []rec{{"2 (entry 1)", "a-1", FormatEKS, ""}},
			err:  "the JSON document ends in the middle of a value (truncated?)",
		},
		{
			name: "a document damaged in its second record", shape: "JSON document",
			file: "[\n" + mustJSON(cw(localEvent)) + ",\n" + `{"message": "x" "timestamp": 1}` + "\n]",
			want: []rec{{"2 (entry 1)", "a-1", FormatEKS, ""}},
			err:  "line 3: invalid character",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSource(strings.NewReader(tc.file))
			if s.Shape() != tc.shape {
				t.Errorf("shape %q, want %q", s.Shape(), tc.shape)
			}
			var got []rec
			var err error
			for {
				var e Entry
				e, err = s.Next(nil)
				if err != nil {
					break
				}
				r := rec{Where: e.Where(), ID: e.Event.AuditID, Format: e.Format}
				if e.Skip != nil {
					r = rec{Where: e.Where(), Skip: e.Skip.Reason}
				}
				got = append(got, r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			switch {
			case tc.err == "" && err != io.EOF:
				t.Errorf("ended with %v, want io.EOF", err)
			case tc.err != "":
				var de *DocumentError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ended with %v, want a DocumentError %q", err, tc.err)
				}
			}
		})
	}
}
