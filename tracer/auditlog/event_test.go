package auditlog

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const head = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a-1",`
	const ts = `,"stageTimestamp":"2026-01-02T03:04:05.123456Z"`
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for _, tc := range []struct {
		name string
		line string
		want Event
		skip string
		warn bool
	}{
		{
			name: "create: the UID from the response",
			line: head + `"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","namespace":"ci","name":"p","apiVersion":"v1"},` +
				`"requestObject":{"kind":"Pod","metadata":{"name":"p"}},"responseObject":{"kind":"Pod","metadata":{"uid":"u-1","resourceVersion":"42"}}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "create", Namespace: "ci", Name: "p", UID: "u-1", ResourceVersion: "42", Time: at},
		},
		{
			name: "denied patch: no UID, no resourceVersion",
			line: head + `"stage":"ResponseComplete","verb":"patch","objectRef":{"resource":"pods","namespace":"ci","name":"p","apiVersion":"v1"},` +
				`"responseStatus":{"code":500},"requestObject":{"metadata":{"finalizers":null}},"responseObject":{"kind":"Status","code":500}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "patch", Namespace: "ci", Name: "p", Time: at},
		},
		{
			name: "update of status: the UID from objectRef first",
			line: head + `"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"pods","subresource":"status","namespace":"ci","name":"p","uid":"u-ref"},` +
				`"requestObject":{"kind":"Pod","metadata":{"uid":"u-req"}},"responseObject":{"kind":"Pod","metadata":{"uid":"u-resp","resourceVersion":"7"}}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "update", Subresource: "status", Namespace: "ci", Name: "p", UID: "u-ref", ResourceVersion: "7", Time: at},
		},
		{
			name: "denied update: the UID from the request",
			line: head + `"stage":"ResponseComplete","verb":"update","objectRef":{"resource":"pods","namespace":"ci","name":"p"},` +
				`"requestObject":{"kind":"Pod","metadata":{"uid":"u-req"}},"responseObject":{"kind":"Status"}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "update", Namespace: "ci", Name: "p", UID: "u-req", Time: at},
		},
		{name: "empty", line: "  ", skip: "empty line"},
		{name: "malformed", line: `{"kind":`, skip: "malformed JSON", warn: true},
		{name: "v1beta1", line: `{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1"}`, skip: "not an audit.k8s.io/v1 Event", warn: true},
		{name: "no auditID", line: `{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","name":"p"}}`, skip: "no auditID or stageTimestamp", warn: true},
		{name: "RequestReceived", line: head + `"stage":"RequestReceived","verb":"create","objectRef":{"resource":"pods","name":"p"}` + ts + `}`, skip: "stage RequestReceived (only ResponseComplete is kept)"},
		{name: "a secret", line: head + `"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"secrets","name":"s"}` + ts + `}`, skip: "not about a pod"},
		{name: "a list of pods", line: head + `"stage":"ResponseComplete","verb":"list","objectRef":{"resource":"pods","namespace":"ci"}` + ts + `}`, skip: "pod request not kept (reads: get, list, watch)"},
		{name: "a collection's status: no such request", line: head + `"stage":"ResponseComplete","verb":"deletecollection","objectRef":{"resource":"pods","subresource":"status","namespace":"ci"}` + ts + `}`, skip: "not about a pod"},
		{
			name: "deletecollection: the pods its response listed, its selectors",
			line: head + `"stage":"ResponseComplete","verb":"deletecollection","requestURI":"/api/v1/namespaces/ci/pods?labelSelector=app%3Dweb\u0026fieldSelector=spec.nodeName%3Dn1","objectRef":{"resource":"pods","namespace":"ci","apiVersion":"v1"},` +
				`"responseObject":{"kind":"PartialObjectMetadataList","items":[{"metadata":{"name":"a","uid":"u-a","resourceVersion":"5"}},{"metadata":{"name":"b","uid":"u-b","resourceVersion":"6"}}]}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "deletecollection", Namespace: "ci", Time: at, Collection: true, Selector: Selector{Labels: "app=web", Fields: "spec.nodeName=n1"},
				Listed: []ListedPod{{Name: "a", UID: "u-a", ResourceVersion: "5"}, {Name: "b", UID: "u-b", ResourceVersion: "6"}}},
		},
		{
			name: "deletecollection at Metadata level: no pods listed",
			line: head + `"stage":"ResponseComplete","verb":"deletecollection","requestURI":"/api/v1/namespaces/ci/pods","objectRef":{"resource":"pods","namespace":"ci","apiVersion":"v1"}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "deletecollection", Namespace: "ci", Time: at, Collection: true},
		},
		{name: "a pod in another group", line: head + `"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","apiGroup":"metrics.k8s.io","name":"p"}` + ts + `}`, skip: "not about a pod"},
		{name: "get", line: head + `"stage":"ResponseComplete","verb":"get","objectRef":{"resource":"pods","name":"p"}` + ts + `}`, skip: "pod request not kept (reads: get, list, watch)"},
		{name: "get of the log", line: head + `"stage":"ResponseComplete","verb":"get","objectRef":{"resource":"pods","subresource":"log","name":"p"}` + ts + `}`, skip: "pod request not kept (reads: get, list, watch)"},
		{
			name: "exec: who connected",
			line: head + `"stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","subresource":"exec","namespace":"ci","name":"p"}` + ts + `}`,
			want: Event{AuditID: "a-1", Verb: "create", Subresource: "exec", Namespace: "ci", Name: "p", Time: at},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, skip := Parse([]byte(tc.line), nil)
			switch {
			case tc.skip == "" && skip != nil:
				t.Fatalf("skipped: %+v", skip)
			case tc.skip != "" && skip == nil:
				t.Fatalf("kept %+v, want skipped for %q", ev, tc.skip)
			case tc.skip != "":
				if skip.Reason != tc.skip || (skip.Warning != "") != tc.warn {
					t.Errorf("skip %+v, want reason %q, warning %v", skip, tc.skip, tc.warn)
				}
				return
			}
			if diff := cmp.Diff(tc.want, ev); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
			r := ev.Record([]byte(" "+tc.line+"\n"), "pod-uid")
			if r.UID != "a-1" || r.Name != "a-1" || !IsRecord(r.APIVersion, r.Kind) || len(r.Refs) != 1 || r.Refs[0] != "pod-uid" || string(r.Object) != tc.line || !r.Observed.Equal(at) {
				t.Errorf("record %+v", r)
			}
		})
	}
}

// TestRecordCopies checks that Record copies the line and RecordOf does not:
// an importer reuses the buffer it gave RecordOf only after the write.
func TestRecordCopies(t *testing.T) {
	const line = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a-1","stage":"ResponseComplete","verb":"delete","objectRef":{"resource":"pods","namespace":"ns","name":"p"},"stageTimestamp":"2026-01-02T03:04:05Z"}`
	ev, skip := Parse([]byte(line), nil)
	if skip != nil {
		t.Fatalf("skipped: %+v", skip)
	}
	buf := []byte(" " + line + "\n")
	copied, shared := ev.Record(buf, "pod-uid"), ev.RecordOf(buf, "pod-uid")
	if string(copied.Object) != line || string(shared.Object) != line {
		t.Fatalf("objects %q and %q, want the trimmed line", copied.Object, shared.Object)
	}
	if diff := cmp.Diff(copied, shared); diff != "" {
		t.Errorf("RecordOf differs from Record (-Record +RecordOf):\n%s", diff)
	}
	copy(buf, strings.Repeat("x", len(buf)))
	if string(copied.Object) != line {
		t.Errorf("Record's object changed with the line: %q", copied.Object)
	}
	if string(shared.Object) == line {
		t.Errorf("RecordOf's object did not change with the line: it copied it")
	}
}

// TestHeaderSkipAgreesWithFullDecode checks the header pass against the
// full decode: whatever line it rejects, the full decode rejects for the
// same reason; lines it cannot judge are left to the full decode.
func TestHeaderSkipAgreesWithFullDecode(t *testing.T) {
	b, err := os.ReadFile("../../cmd/podtrace/app/testdata/audit/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var variants []string
	for _, l := range lines {
		variants = append(variants, l,
			strings.Replace(l, `"stage":"ResponseComplete"`, `"stage":"RequestReceived"`, 1),
			strings.Replace(l, `"resource":"pods"`, `"resource":"pods","apiGroup":"metrics.k8s.io"`, 1),
			strings.Replace(l, `"verb":"patch"`, `"verb":"get"`, 1),
			strings.Replace(l, `"objectRef":`, `"objectRef2":`, 1),
			strings.Replace(l, `"kind":"Event"`, `"kind":"Ev\u0065nt"`, 1),    // an escape: left to the full decode
			strings.Replace(l, `"userAgent":"`, `"userAgent":"x\"y\\`, 1),     // escapes the header pass skips over
			strings.Replace(l, `{"kind":"Event",`, `{`, 1)+`,"kind":"Event"}`, // damaged
			`{"stage":"ResponseComplete",`+strings.TrimPrefix(l, "{"),         // a key twice
			l[:len(l)/2]+"}",
		)
	}
	want := func(ns, name string) string {
		if name == "runner-job-1" {
			return ""
		}
		return "not wanted"
	}
	for _, l := range lines {
		variants = append(variants, strings.ReplaceAll(l, `"name":"runner-job-1"`, `"name":"runner-job-2"`))
	}
	judged := 0
	for i, l := range variants {
		line := []byte(strings.TrimSpace(l))
		if len(line) == 0 {
			continue
		}
		h := headerSkip(line, want)
		if h == nil {
			continue
		}
		judged++
		_, full := parseFull(line, want)
		if full == nil || full.Reason != h.Reason {
			t.Errorf("variant %d: header pass skips it for %q, the full decode says %+v:\n%.300s", i, h.Reason, full, l)
		}
	}
	if judged < len(lines) {
		t.Errorf("the header pass judged only %d of %d lines: it saves nothing", judged, len(variants))
	}
}

func TestIsEvent(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1","stage":"ResponseComplete"}`, true},
		{`{"apiVersion":"audit.k8s.io/v1beta1","kind":"Event"}`, true},
		{`  {"kind":"Event","apiVersion":"audit.k8s.io/v1","objectRef":{"name":"a\"b"}}  `, true},
		{`{"kind":"Event","apiVersion":"v1","reason":"Scheduled"}`, false}, // a core Event, not an audit event
		{`{"kind":"Pod","apiVersion":"v1"}`, false},
		{`{"kind":`, false},
		{`apiVersion: audit.k8s.io/v1`, false},
		{`kind: Event`, false},
		{``, false},
		{`[1,2]`, false},
	} {
		if got := IsEvent([]byte(tc.line)); got != tc.want {
			t.Errorf("IsEvent(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestSkipWarnings(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1"}`, "apiVersion audit.k8s.io/v1beta1, kind Event: only audit.k8s.io/v1 Events are read; skipped"},
		{`{"metadata":{}}`, "a JSON object without apiVersion or kind: only audit.k8s.io/v1 Events are read; skipped"},
		{`{"kind":"Pod"}`, "no apiVersion, kind Pod: only audit.k8s.io/v1 Events are read; skipped"},
	} {
		_, skip := Parse([]byte(tc.line), nil)
		if skip == nil || skip.Warning != tc.want {
			t.Errorf("Parse(%q) warning %+v, want %q", tc.line, skip, tc.want)
		}
	}
}
