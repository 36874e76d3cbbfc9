package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/store"
)

// testdata/audit holds the digester case recorded on the local control
// plane (trace.db) and a hand-cut piece of its audit log (audit.log): the
// CREATE with the webhook's patch, the binding, the DELETE, two of the garbage
// collector's denied PATCHes, a ResponseStarted duplicate, a Secret with
// data, a malformed line and an audit.k8s.io/v1beta1 event.

func copyTrace(t *testing.T) string {
	t.Helper()
	return copyTraceFrom(t, "testdata/audit/trace.db")
}

// copyTraceFrom copies a trace into the test's temporary directory.
func copyTraceFrom(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "trace.db")
	if err := os.WriteFile(db, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return db
}

func runPodtrace(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), append([]string{"podtrace"}, args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), err
}

func gzipFile(t *testing.T, src, dst string, truncate bool) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	z := buf.Bytes()
	if truncate {
		z = z[:len(z)*2/3]
	}
	if err := os.WriteFile(dst, z, 0o644); err != nil {
		t.Fatal(err)
	}
}

// auditRecords returns the audit records the trace holds.
func auditRecords(t *testing.T, path string) []store.Record {
	t.Helper()
	db, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	objs, err := db.Objects(store.ObjectFilter{Kind: auditKind})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Record
	for _, o := range objs {
		if !isAudit(o) {
			continue
		}
		recs, err := db.History(o.UID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func TestImportAuditLog(t *testing.T) {
	db := copyTrace(t)
	out, errOut, err := runPodtrace(t, "import", "--audit-log", "testdata/audit/audit.log", "--db", db)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	for _, want := range []string{"1 file, 9 lines", ": 5 events kept", "skipped 1: malformed JSON", "skipped 1: not an audit.k8s.io/v1 Event",
		"skipped 1: stage ResponseStarted", "skipped 1: not about a pod"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"audit.log:4: not a JSON audit event", "audit.log:5: apiVersion audit.k8s.io/v1beta1, kind Event: only audit.k8s.io/v1 Events are read"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("warnings lack %q:\n%s", want, errOut)
		}
	}
	// The file is the trace's pages, not bbolt's allocation 16 MiB ahead
	// of them (the demo's trace of 164 KB was a file of 17 MB).
	if fi, err := os.Stat(db); err != nil || fi.Size() > 1<<20 {
		t.Errorf("trace after the import: %v, %v; want its pages alone, under 1 MiB", fi.Size(), err)
	}
	recs := auditRecords(t, db)
	if len(recs) != 5 {
		t.Fatalf("%d audit records in the trace, want 5", len(recs))
	}
	for _, r := range recs {
		if r.APIVersion != auditAPIVersion || len(r.Refs) != 1 || r.Refs[0] != "87d9cb75-b045-4dd1-8c75-c93d921b4f0c" || r.Namespace != "ci" {
			t.Errorf("record %s: apiVersion %s refs %v namespace %s, want audit.k8s.io/v1 about the pod", r.UID, r.APIVersion, r.Refs, r.Namespace)
		}
		if bytes.Contains(r.Object, []byte("c2VjcmV0LXZhbHVl")) {
			t.Errorf("record %s holds the Secret's data", r.UID)
		}
		if !json.Valid(r.Object) {
			t.Errorf("record %s: object is not JSON", r.UID)
		}
	}

	// Importing again, plain and gzip, adds nothing.
	gz := filepath.Join(t.TempDir(), "audit.log.gz")
	gzipFile(t, "testdata/audit/audit.log", gz, false)
	out, errOut, err = runPodtrace(t, "import", "--audit-log", "testdata/audit/audit.log", "--audit-log", gz, "--db", db)
	if err != nil {
		t.Fatalf("second import: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "2 files, 18 lines") || !strings.Contains(out, ": 0 events kept") || !strings.Contains(out, "skipped 10: already in the trace") {
		t.Errorf("second import summary:\n%s", out)
	}
	if n := len(auditRecords(t, db)); n != 5 {
		t.Errorf("%d audit records after a second import, want 5", n)
	}
}

func TestImportGzipAndTruncated(t *testing.T) {
	dir := t.TempDir()
	gz, bad := filepath.Join(dir, "audit.log.1.gz"), filepath.Join(dir, "audit.log.2.gz")
	gzipFile(t, "testdata/audit/audit.log", gz, false)
	gzipFile(t, "testdata/audit/audit.log", bad, true)

	db := copyTrace(t)
	out, errOut, err := runPodtrace(t, "import", "--audit-log", gz, "--db", db)
	if err != nil || !strings.Contains(out, ": 5 events kept") {
		t.Fatalf("import gzip: %v\n%s%s", err, out, errOut)
	}

	db = copyTrace(t)
	out, errOut, err = runPodtrace(t, "import", "--audit-log", bad, "--db", db)
	if err != nil {
		t.Fatalf("a truncated gzip must not fail the import: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "skipped 1: truncated or damaged gzip stream") || !strings.Contains(errOut, "audit.log.2.gz: gzip stream truncated") {
		t.Errorf("truncation not reported:\n%s%s", out, errOut)
	}
	kept := len(auditRecords(t, db))
	if kept == 0 || kept >= 5 {
		t.Errorf("%d records kept from the truncated file, want the whole lines before the damage (1 to 4)", kept)
	}
}

// TestImportBatches imports a log that takes several batches, by count and
// by bytes, and a line larger than a batch: every event is stored with its
// own line (the batch buffer is reused only after a write), and events
// repeated within a batch or after one are kept once.
func TestImportBatches(t *testing.T) {
	b, err := os.ReadFile("testdata/audit/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	// A denied PATCH by the garbage collector, about the recorded pod.
	denied := strings.Split(string(b), "\n")[7]
	const id = `"auditID":"2bf814bc-81d9-4a4f-bafd-313f36111ccf"`
	if !strings.Contains(denied, id) {
		t.Fatalf("line 8 of the sample is not the denied PATCH %s", id)
	}
	line := func(i, pad int) string {
		return strings.Replace(denied, id, fmt.Sprintf(`"auditID":"bulk-%05d","padding":%q`, i, strings.Repeat("x", pad)), 1)
	}
	// Small lines first (batches by count), then large ones (by bytes).
	var log strings.Builder
	want := map[string]string{} // auditID -> line
	n := 4*importBatch + 10
	for i := range n {
		l := line(i, 0)
		if i >= 2*importBatch {
			l = line(i, (i%7)*importBatchBytes/importBatch)
		}
		if i == 3*importBatch {
			l = line(i, importBatchBytes+1000)
		}
		want[fmt.Sprintf("bulk-%05d", i)] = l
		log.WriteString(l + "\n")
		if i == 1 || i == n-1 {
			log.WriteString(want["bulk-00000"] + "\n") // once in the batch, once after it
		}
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if log.Len() < 4*importBatchBytes {
		t.Fatalf("the log is %d bytes, too small to take several batches by bytes", log.Len())
	}

	db := copyTrace(t)
	out, errOut, err := runPodtrace(t, "import", "--audit-log", path, "--db", db)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, fmt.Sprintf(": %d events kept", n)) || !strings.Contains(out, "skipped 2: already in the trace") {
		t.Errorf("summary, want %d events kept and 2 already in the trace:\n%s", n, out)
	}
	got := map[string]string{}
	for _, r := range auditRecords(t, db) {
		got[r.UID] = string(r.Object)
	}
	if len(got) != len(want) {
		t.Errorf("%d audit records in the trace, want %d", len(got), len(want))
	}
	for id, l := range want {
		if got[id] != l {
			t.Errorf("record %s: object of %d bytes is not its line (%d bytes)", id, len(got[id]), len(l))
		}
	}
}

func TestImportUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--db", "x.db"}, "--audit-log is required"},
		{[]string{"import", "--audit-log", "testdata/audit/audit.log", "--db", filepath.Join(t.TempDir(), "none.db")}, "record one first"},
		{[]string{"import", "--audit-log", "no-such.log", "--db", "testdata/audit/trace.db"}, "--audit-log no-such.log"},
	} {
		_, _, err := runPodtrace(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestImportThenExplain checks the audit evidence end to end on the sample:
// explain quotes the denial, names and confirms the webhook; diff
// attributes the image rewrite to it.
func TestImportThenExplain(t *testing.T) {
	db := copyTrace(t)
	before, _, err := runPodtrace(t, "explain", "runner-job-1", "-n", "ci", "--db", db, "--color", "never")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "inferred without the API server's audit log") {
		t.Errorf("explain without audit records does not say it infers:\n%s", before)
	}
	if _, errOut, err := runPodtrace(t, "import", "--audit-log", "testdata/audit/audit.log", "--db", db); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	explain, _, err := runPodtrace(t, "explain", "runner-job-1", "-n", "ci", "--db", db, "--color", "never")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`audit log: 2 patch attempts by system:serviceaccount:kube-system:generic-garbage-collector denied (500): admission webhook "digester.podtrace.dev" denied the request: failed to create keychain: secrets "runner-job-1-pull" not found`,
		`next: confirmed by the audit log: webhook "digester.podtrace.dev" denied 2 patch attempts`,
	} {
		if !strings.Contains(explain, want) {
			t.Errorf("explain lacks %q:\n%s", want, explain)
		}
	}
	if strings.Contains(explain, "inferred without") {
		t.Errorf("explain still says it infers without the audit log")
	}
	out, _, err := runPodtrace(t, "diff", "runner-job-1", "-n", "ci", "--db", db, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var lc diff.Lifecycle
	if err := json.Unmarshal([]byte(out), &lc); err != nil {
		t.Fatal(err)
	}
	if lc.Admission == nil || lc.Admission.Source != "audit log" {
		t.Fatalf("admission source: %+v", lc.Admission)
	}
	var got []string
	for _, c := range lc.Admission.Changes {
		if strings.HasSuffix(c.Path, ".image") {
			got = append(got, c.Path+" by "+c.By+" ("+c.Certainty+")")
		}
	}
	want := []string{
		"spec.containers[build].image by mutating webhook digester.podtrace.dev (certain)",
		"spec.containers[helper].image by mutating webhook digester.podtrace.dev (certain)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("image changes at admission (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
	if lc.Audit == nil || len(lc.Audit.Denied) != 1 || lc.Audit.Denied[0].Count != 2 || lc.Audit.Denied[0].Webhook != "digester.podtrace.dev" {
		t.Errorf("audit denied: %+v", lc.Audit)
	}
}

// TestImportDeleteCollection: a deletecollection of pods names none in its
// objectRef. It is tied to the pods its response listed; without a
// response, to the recorded pods of its namespace present then that match
// its selectors (read from the trace); to none, and skipped, otherwise.
func TestImportDeleteCollection(t *testing.T) {
	const uid = "87d9cb75-b045-4dd1-8c75-c93d921b4f0c"
	line := func(id, uri, resp string) string {
		l := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"` + uri +
			`","verb":"deletecollection","user":{"username":"system:serviceaccount:kube-system:namespace-controller"},"userAgent":"kube-controller-manager/v1.37.2",` +
			`"objectRef":{"resource":"pods","namespace":"ci","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},` +
			`"requestReceivedTimestamp":"2026-12-01T04:04:50.000000Z","stageTimestamp":"2026-12-01T04:04:50.100000Z"`
		if resp != "" {
			l += `,"responseObject":` + resp
		}
		return l + "}"
	}
	for _, tc := range []struct {
		name, line string
		kept       bool
	}{
		{"listed in the response", line("dc-1", "/api/v1/namespaces/ci/pods", `{"kind":"PartialObjectMetadataList","items":[{"metadata":{"name":"runner-job-1","uid":"`+uid+`","resourceVersion":"999"}}]}`), true},
		{"no response: the namespace's pods then", line("dc-2", "/api/v1/namespaces/ci/pods", ""), true},
		{"no response; a label selector that matches", line("dc-3", "/api/v1/namespaces/ci/pods?labelSelector=podtrace.dev%2Fjob%3Drunner-job-1", ""), true},
		{"no response; a field selector that matches", line("dc-4", "/api/v1/namespaces/ci/pods?fieldSelector=metadata.name%3Drunner-job-1", ""), true},
		{"no response; a label selector that does not match", line("dc-5", "/api/v1/namespaces/ci/pods?labelSelector=app%3Dother", ""), false},
		{"listed pods not recorded", line("dc-6", "/api/v1/namespaces/ci/pods", `{"kind":"PodList","items":[{"metadata":{"name":"x","uid":"u-x"}}]}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := copyTrace(t)
			path := filepath.Join(t.TempDir(), "audit.log")
			if err := os.WriteFile(path, []byte(tc.line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runPodtrace(t, "import", "--audit-log", path, "--db", db)
			if err != nil {
				t.Fatalf("import: %v\n%s", err, errOut)
			}
			recs := auditRecords(t, db)
			if !tc.kept {
				if len(recs) != 0 || !strings.Contains(out, "skipped 1: deletecollection of no recorded pod") {
					t.Errorf("kept %d records:\n%s", len(recs), out)
				}
				return
			}
			if len(recs) != 1 || len(recs[0].Refs) != 1 || recs[0].Refs[0] != uid {
				t.Fatalf("records %+v, want one about pod %s:\n%s", recs, uid, out)
			}
		})
	}
}
