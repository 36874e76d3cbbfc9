package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/test/cloudexport"
)

// testdata/cloudaudit holds a scenario recorded on the local control plane
// (test/e2e TestCloudAuditExports, see test/cloudexport): local/trace.db,
// the trace; local/audit.log, the API server's audit log about its
// namespaces; and the same events as GKE, EKS and AKS export them,
// generated from it (test/cloudexport/cmd/fixtures). Each provider's
// README cites its format's documents.
const cloudFixtures = "testdata/cloudaudit"

// cloudTrace copies the scenario's trace.
func cloudTrace(t *testing.T) string {
	t.Helper()
	return copyTraceFrom(t, filepath.Join(cloudFixtures, "local", "trace.db"))
}

func runner(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := Run(context.Background(), append([]string{"podtrace"}, args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), err
}

// cloudEvidence imports a log into a copy of the scenario's trace and
// reads the evidence about its pods.
func cloudEvidence(t *testing.T, log string) (map[string]*cloudexport.PodEvidence, string) {
	t.Helper()
	db := cloudTrace(t)
	out, errOut, err := runPodtrace(t, "import", "--audit-log", log, "--db", db)
	if err != nil {
		t.Fatalf("import %s: %v\n%s", log, err, errOut)
	}
	ev, err := cloudexport.Collect(db, cloudexport.Pods, runner)
	if err != nil {
		t.Fatal(err)
	}
	return ev, out
}

// TestCloudAuditFixtures: each provider's export of the scenario gives the
// evidence the API server's log gives (the webhook that denied the garbage
// collector, how often, the deleting user and its impersonator, the
// refused eviction), except for the fields the export says it lacks,
// which the findings name.
func TestCloudAuditFixtures(t *testing.T) {
	local, _ := cloudEvidence(t, filepath.Join(cloudFixtures, cloudexport.LocalLog))
	for _, d := range cloudexport.DefaultScenario.Check(local) {
		t.Errorf("from the API server's log: %s", d)
	}
	// What each export lacks, by its format's documents: the summary of
	// the import says so.
	lacks := map[string]string{
		"gke/entries.json":       "its format does not carry: HTTP status code",
		"aks/aksauditadmin.json": "its format does not carry: impersonated user",
	}
	for _, exp := range cloudexport.Exports {
		t.Run(exp, func(t *testing.T) {
			got, summary := cloudEvidence(t, filepath.Join(cloudFixtures, exp))
			for _, d := range cloudexport.Compare(local, got) {
				t.Error(d)
			}
			if want := lacks[exp]; want != "" && !strings.Contains(summary, want) || want == "" && strings.Contains(summary, "does not carry") {
				t.Errorf("summary, want %q:\n%s", want, summary)
			}
			if !strings.Contains(summary, ": 36 events kept") {
				t.Errorf("summary, want the 36 events of the log kept:\n%s", summary)
			}
		})
	}
}

// TestCloudAuditExplain reads what explain says of the seed case and the
// impersonated deletion from GKE's and AKS's Log Analytics exports: the
// webhook named and confirmed, the denied attempts counted, and what the
// export does not say said.
func TestCloudAuditExplain(t *testing.T) {
	for _, tc := range []struct {
		export string
		want   map[string][]string // pod -> texts
	}{
		{"gke/entries.json", map[string][]string{
			"ci/runner-job-1": {`next: confirmed by the audit log: webhook "digester.podtrace.dev" denied`, "attempts by system:serviceaccount:kube-system:generic-garbage-collector denied (500)",
				"audit log from an export: GKE Cloud Logging entry (", "the HTTP status code (shown as 0) for"},
			"ops/cache-flush": {"flush-controller (impersonated by podtrace-admin)", "audit log from an export: GKE Cloud Logging entry"},
		}},
		{"aks/aksauditadmin.json", map[string][]string{
			"ci/runner-job-1": {`next: confirmed by the audit log: webhook "digester.podtrace.dev" denied`, "denied (500)"},
			"ops/cache-flush": {"DELETE by podtrace-admin, cache-flusher (200)", "the export does not say whether the request impersonated another user",
				"does not carry: the impersonated user (a request made with impersonation reads as its impersonator's)"},
		}},
	} {
		db := cloudTrace(t)
		if _, errOut, err := runPodtrace(t, "import", "--audit-log", filepath.Join(cloudFixtures, tc.export), "--db", db); err != nil {
			t.Fatalf("import: %v\n%s", err, errOut)
		}
		for pod, wants := range tc.want {
			ns, name, _ := strings.Cut(pod, "/")
			// --show-info: the evidence of how cache-flush ended (an info
			// finding) is what is checked.
			out, _, err := runPodtrace(t, "explain", name, "-n", ns, "--db", db, "--color", "never", "--show-info")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range wants {
				if !strings.Contains(out, w) {
					t.Errorf("%s: explain %s lacks %q:\n%s", tc.export, pod, w, out)
				}
			}
		}
	}
}

// TestCloudAuditFixturesGenerated: the providers' files are what the
// generator makes of local/audit.log, no more, no less.
func TestCloudAuditFixturesGenerated(t *testing.T) {
	f, err := os.Open(filepath.Join(cloudFixtures, cloudexport.LocalLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := cloudexport.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cloudexport.Files(events)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for _, exp := range cloudexport.Exports {
		root := filepath.Join(cloudFixtures, exp)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(cloudFixtures, p)
			b, err := os.ReadFile(p)
			got[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var wantNames, gotNames []string
	for p := range want {
		wantNames = append(wantNames, p)
	}
	for p := range got {
		gotNames = append(gotNames, p)
	}
	sort.Strings(wantNames)
	sort.Strings(gotNames)
	if d := cmp.Diff(wantNames, gotNames); d != "" {
		t.Fatalf("fixture files (-generated +present); regenerate with go run ./test/cloudexport/cmd/fixtures:\n%s", d)
	}
	for p := range want {
		if !bytes.Equal(want[p], got[p]) {
			t.Errorf("%s is not the generator's output; regenerate with go run ./test/cloudexport/cmd/fixtures", p)
		}
	}
}

// TestImportDamagedExports imports damaged and mixed files, in a
// directory and from standard input: each damage is a warning naming the
// file and line, the records before it are kept, and importing the whole
// files afterwards adds exactly what was missing.
func TestImportDamagedExports(t *testing.T) {
	dir := t.TempDir()
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join(cloudFixtures, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(p string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gke := read("gke/entries.json")
	local := read(cloudexport.LocalLog)
	localLines := strings.SplitAfter(strings.TrimSpace(string(local)), "\n")
	// A JSON array cut in the middle of an entry.
	write("gke-truncated.json", gke[:len(gke)/3])
	// A JSON array with a syntax error in an entry.
	entries := strings.SplitAfter(string(gke), "\n  },\n")
	if len(entries) < 5 {
		t.Fatalf("gke/entries.json has %d entries split, want many", len(entries))
	}
	damaged := strings.Join(entries[:3], "")
	damagedLine := strings.Count(damaged, "\n") + 1
	write("gke-damaged.json", []byte(damaged+`  {"insertId": "x" "timestamp": 1},`+"\n"+strings.Join(entries[3:], "")))
	// A file of JSON lines mixing kube-apiserver lines, GKE's sink
	// lines, an EKS S3 line and garbage.
	var sink bytes.Buffer
	f, err := os.Open(filepath.Join(cloudFixtures, cloudexport.LocalLog))
	if err != nil {
		t.Fatal(err)
	}
	events, err := cloudexport.Read(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := cloudexport.DefaultGKE.WriteLines(&sink, events[5:8]); err != nil {
		t.Fatal(err)
	}
	mixed := strings.Join(localLines[:5], "") + sink.String() + "not json at all\n" + "2026-12-07T02:00:00.000Z " + localLines[8]
	write("mixed.log", []byte(mixed))
	// The S3 export, its gzip stream cut.
	z := read("eks/s3/" + s3Rel(t))
	write("000000.gz", z[:len(z)/3])

	db := cloudTrace(t)
	var out, errOut bytes.Buffer
	err = Run(context.Background(), []string{"podtrace", "import", "--audit-log", dir, "--audit-log", "-", "--db", db},
		Streams{In: bytes.NewReader(read("aks/aksauditadmin.json")[:2000]), Out: &out, ErrOut: &errOut})
	if err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	t.Logf("import:\n%s%s", out.String(), errOut.String())
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`gke-truncated\.json:\d+: the JSON document ends in the middle of a value \(truncated\?\); the \d+ records before it are kept`),
		regexp.MustCompile(`gke-damaged\.json:` + strconv.Itoa(damagedLine) + `: invalid character '"' after object key:value pair; the 3 records before it are kept`),
		regexp.MustCompile(`mixed\.log:9: not JSON: "not json at all"; skipped`),
		regexp.MustCompile(`000000\.gz: gzip stream truncated or damaged after line \d+`),
		regexp.MustCompile(`standard input:\d+: the JSON document ends in the middle of a value`),
	} {
		if !want.MatchString(errOut.String()) {
			t.Errorf("warnings lack %s:\n%s", want, errOut.String())
		}
	}
	if !strings.Contains(out.String(), "mixed.log: JSON lines, 10 lines (EKS CloudWatch Logs export to S3: 1, GKE Cloud Logging entry: 3, kube-apiserver audit log: 5)") {
		t.Errorf("summary lacks the mixed file's formats:\n%s", out.String())
	}
	first := len(auditRecords(t, db))
	if first == 0 || first >= 36 {
		t.Fatalf("%d events kept from the damaged files, want some but not all 36", first)
	}
	// The whole log afterwards: only the rest is added.
	out.Reset()
	errOut.Reset()
	if err := Run(context.Background(), []string{"podtrace", "import", "--audit-log", filepath.Join(cloudFixtures, cloudexport.LocalLog), "--db", db},
		Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatal(err)
	}
	if n := len(auditRecords(t, db)); n != 36 {
		t.Errorf("%d events after importing the whole log, want 36", n)
	}
	if want := regexp.MustCompile(`: (\d+) events? kept`).FindStringSubmatch(out.String()); want == nil || want[1] != strconv.Itoa(36-first) {
		t.Errorf("second import kept %v, want %d:\n%s", want, 36-first, out.String())
	}
}

// s3Rel is the path of the S3 export's file under eks/s3.
func s3Rel(t *testing.T) string {
	t.Helper()
	var rel string
	root := filepath.Join(cloudFixtures, "eks", "s3")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ = filepath.Rel(root, p)
		}
		return err
	})
	if rel == "" {
		t.Fatal("no file under eks/s3")
	}
	// It is gzip.
	b, _ := os.ReadFile(filepath.Join(root, rel))
	if _, err := gzip.NewReader(bytes.NewReader(b)); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return filepath.ToSlash(rel)
}

// TestCloudAuditCompareCanFail: the comparison finds a count, a user or a
// code that differs, a field missing without the export saying it lacks
// it, and a lacked field the findings do not name.
func TestCloudAuditCompareCanFail(t *testing.T) {
	local, _ := cloudEvidence(t, filepath.Join(cloudFixtures, cloudexport.LocalLog))
	aks, _ := cloudEvidence(t, filepath.Join(cloudFixtures, "aks/aksauditadmin.json"))
	clone := func(ev map[string]*cloudexport.PodEvidence) map[string]*cloudexport.PodEvidence {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]*cloudexport.PodEvidence
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		from   map[string]*cloudexport.PodEvidence
		change func(map[string]*cloudexport.PodEvidence)
	}{
		{"a denied attempt less", local, func(ev map[string]*cloudexport.PodEvidence) {
			ev["ci/runner-job-1"].Lifecycle.Audit.Denied[0].Count--
		}},
		{"the impersonated user dropped, not said lacking", local, func(ev map[string]*cloudexport.PodEvidence) {
			for i := range ev["ops/cache-flush"].Requests {
				ev["ops/cache-flush"].Requests[i].ImpersonatedUser = ""
			}
		}},
		{"a refused eviction's code changed", local, func(ev map[string]*cloudexport.PodEvidence) {
			ev["web/web-0"].Failed[0].Code = 403
		}},
		{"the note on what the export lacks dropped", aks, func(ev map[string]*cloudexport.PodEvidence) {
			for i := range ev["ops/cache-flush"].Lifecycle.Findings {
				f := &ev["ops/cache-flush"].Lifecycle.Findings[i]
				var kept []explain.Evidence
				for _, e := range f.Evidence {
					if !strings.HasPrefix(e.Text, "audit log from an export: ") {
						kept = append(kept, e)
					}
				}
				f.Evidence = kept
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cloudexport.Compare(local, tc.from); len(d) != 0 {
				t.Fatalf("unchanged evidence differs: %v", d)
			}
			changed := clone(tc.from)
			if d := cloudexport.Compare(local, changed); len(d) != 0 {
				t.Fatalf("a copy of the evidence differs: %v", d)
			}
			tc.change(changed)
			if d := cloudexport.Compare(local, changed); len(d) == 0 {
				t.Errorf("the change is not found")
			}
		})
	}
}
