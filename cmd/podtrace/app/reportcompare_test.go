package app

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

// writeCohortTrace writes a Job build whose pod build-a failed (exit 1)
// and whose pods build-b and build-c succeeded, a ReplicaSet web whose two
// pods run, and the namespace ci, labelled team-token=s3cr3t.
func writeCohortTrace(t *testing.T) string {
	t.Helper()
	return writeTestTrace(t, func(session uint32, base time.Time) ([]store.Record, time.Time) {
		return cohortRecords(t, session, base)
	})
}

func cohortRecords(t *testing.T, session uint32, base time.Time) ([]store.Record, time.Time) {
	var recs []store.Record
	at := base
	add := func(typ store.EventType, meta metav1.ObjectMeta, apiVersion, kind string, obj any) {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second)
		recs = append(recs, store.Record{Session: session, Observed: at, Type: typ, APIVersion: apiVersion, Kind: kind,
			Namespace: meta.Namespace, Name: meta.Name, UID: string(meta.UID), ResourceVersion: strconv.Itoa(100 + len(recs)), Object: raw})
	}
	ns := corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "ci", UID: "ns-ci", Labels: map[string]string{"team-token": "s3cr3t"}}}
	add(store.Initial, ns.ObjectMeta, "v1", "Namespace", &ns)
	ctrl := true
	pod := func(name, uid, ownerKind, owner, end string, exit int32) {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ci", Name: name, UID: types.UID(uid), CreationTimestamp: metav1.NewTime(at.Add(time.Second)),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: owner, UID: types.UID("uid-" + owner), Controller: &ctrl}}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}
		add(store.Added, p.ObjectMeta, "v1", "Pod", p)
		if end == "" {
			return
		}
		q := p.DeepCopy()
		q.Status.Phase = corev1.PodPhase(end)
		q.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: map[bool]string{true: "Completed", false: "Error"}[exit == 0]}}
		add(store.Updated, q.ObjectMeta, "v1", "Pod", q)
	}
	pod("build-a", "00000000-0000-4000-8000-00000000000a", "Job", "build", "Failed", 1)
	pod("build-b", "00000000-0000-4000-8000-00000000000b", "Job", "build", "Succeeded", 0)
	pod("build-c", "00000000-0000-4000-8000-00000000000c", "Job", "build", "Succeeded", 0)
	pod("web-1", "00000000-0000-4000-8000-000000000001", "ReplicaSet", "web", "", 0)
	pod("web-2", "00000000-0000-4000-8000-000000000002", "ReplicaSet", "web", "", 0)
	return recs, at.Add(time.Minute)
}

func runReport(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(append([]string{"podtrace", "report"}, args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

// TestReportCompare: report compares the typical pods of the Job whose
// pods ended two ways, in every format, and not the ReplicaSet whose pods
// all run; --compare adds the pair asked for.
func TestReportCompare(t *testing.T) {
	trace := writeCohortTrace(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"text", []string{"--color", "never"}, []string{
			"\nCompare\n",
			"Job ci/build: 3 pods, 2 ways of ending",
			"Succeeded (2), Failed (1)",
			"B ci/build-a (uid 00000000): Failed beside A ci/build-b (uid 00000000): Succeeded",
			"Verdict: A ended Succeeded, B Failed; the first decisive difference is ",
			"in full: podtrace compare ci/build-b ci/build-a --db " + trace,
		}, []string{"ReplicaSet ci/web", "First decisive difference: finding failed"}}, // the verdict names it
		{"markdown", []string{"-o", "markdown"}, []string{"### Compare", "**Job ci/build: 3 pods, 2 ways of ending**", "- **Verdict:** "}, []string{"ReplicaSet ci/web"}},
		{"html", []string{"--html"}, []string{`<section id="compare" class="card">`, "<h3>Job ci/build: 3 pods, 2 ways of ending</h3>", `<p class="cmp-verdict">`, "Timelines, aligned by phase"}, []string{"ReplicaSet ci/web"}},
		{"pair, repeated", []string{"--color", "never", "--compare", "ci/web-1", "--compare", "web-2", "-n", "ci"}, []string{
			"Job ci/build: 3 pods",
			"ci/web-1 beside ci/web-2, as asked (--compare)",
			"Verdict: no decisive difference",
		}, nil},
		{"pair, a list", []string{"--html", "--compare", "ci/web-1,ci/web-2"}, []string{"<h3>ci/web-1 beside ci/web-2, as asked (--compare)</h3>", `<p class="cmp-verdict cmp-same">`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runReport(t, append(tc.args, "--db", trace)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the report lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("the report has %q", w)
				}
			}
		})
	}
}

// TestReportCompareNothing: the sample trace (one pod) and a trace whose
// cohorts each ended one way get no Compare section and no warning.
func TestReportCompareNothing(t *testing.T) {
	healthy := writeTrace(t, pod("ci", "a", "000000000001"), pod("ci", "b", "000000000002"))
	for _, trace := range []string{sampleTrace, healthy} {
		for _, format := range []string{"text", "markdown", "html"} {
			out, errOut, code := runReport(t, "-o", format, "--color", "never", "--db", trace)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if strings.Contains(out, "\nCompare\n") || strings.Contains(out, "### Compare") || strings.Contains(out, `id="compare"`) {
				t.Errorf("%s report of %s has a Compare section", format, trace)
			}
			if errOut != "" {
				t.Errorf("%s report of %s warns: %s", format, trace, errOut)
			}
		}
	}
}

func TestReportCompareUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--compare", "ci/web-1"}, 2, "--compare takes two pods, as --compare A --compare B or --compare A,B (got 1: ci/web-1)"},
		{[]string{"--compare", "a,b,c"}, 2, "--compare takes two pods"},
		{[]string{"--compare", "ci/,ci/web-1"}, 2, `--compare "ci/" names no pod`},
		{[]string{"--compare", "ci/nosuch,ci/web-1"}, 1, `--compare: no pod named "nosuch" in namespace ci`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, errOut, code := runReport(t, append(tc.args, "--db", writeCohortTrace(t))...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.want)
			}
		})
	}
}

// TestCompareSideRedactsNamespace: the namespace compare reads is
// redacted as the pods are (--redact KEY names a label), without
// touching the trace context's copy.
func TestCompareSideRedactsNamespace(t *testing.T) {
	db, err := openTrace(writeCohortTrace(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tc, err := loadContext(db)
	if err != nil {
		t.Fatal(err)
	}
	red, err := redact.New([]string{"team-token"})
	if err != nil {
		t.Fatal(err)
	}
	lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Namespace: "ci"}}
	side, err := compareSide(db, tc, diff.Input{}, lc, red)
	if err != nil {
		t.Fatal(err)
	}
	if len(side.Namespace) != 1 || strings.Contains(string(side.Namespace[0].Object), "s3cr3t") || !strings.Contains(string(side.Namespace[0].Object), "team-token") {
		t.Errorf("namespace as compare reads it: %s", side.Namespace[0].Object)
	}
	plain, err := compareSide(db, tc, diff.Input{}, lc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(plain.Namespace[0].Object), "s3cr3t") {
		t.Errorf("the trace context's namespace was redacted in place: %s", plain.Namespace[0].Object)
	}
}
