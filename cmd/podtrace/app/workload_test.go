package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/store"
)

// writeWorkloadTrace writes a Deployment web with two ReplicaSets, the old
// one owning web-old-1 and the new one web-new-1 and web-new-2 (the
// newest), a StatefulSet db owning db-0, and a lone pod.
func writeWorkloadTrace(t *testing.T) string {
	t.Helper()
	return writeTestTrace(t, workloadRecords)
}

func workloadRecords(session uint32, base time.Time) ([]store.Record, time.Time) {
	var recs []store.Record
	at := base
	add := func(obj any, apiVersion, kind, name, uid string, owner string) {
		raw, _ := json.Marshal(obj)
		at = at.Add(time.Second)
		r := store.Record{Session: session, Observed: at, Type: store.Added, APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: name, UID: uid, ResourceVersion: "1", Object: raw}
		if owner != "" {
			r.Refs = []string{owner}
		}
		recs = append(recs, r)
	}
	meta := func(name, uid, ownerKind, ownerName, owner string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID(uid), ResourceVersion: "1", CreationTimestamp: metav1.NewTime(at.Add(time.Second))}
		if owner != "" {
			ctrl := true
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: ownerName, UID: types.UID(owner), Controller: &ctrl}}
		}
		return m
	}
	pod := func(name, uid, ownerKind, ownerName, owner string) {
		p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta(name, uid, ownerKind, ownerName, owner),
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		add(p, "v1", "Pod", name, uid, owner)
	}
	add(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("web", "dep-web", "", "", "")}, "apps/v1", "Deployment", "web", "dep-web", "")
	add(&appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: meta("web-old", "rs-old", "Deployment", "web", "dep-web")}, "apps/v1", "ReplicaSet", "web-old", "rs-old", "dep-web")
	pod("web-old-1", "pod-old-1", "ReplicaSet", "web-old", "rs-old")
	add(&appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"}, ObjectMeta: meta("web-new", "rs-new", "Deployment", "web", "dep-web")}, "apps/v1", "ReplicaSet", "web-new", "rs-new", "dep-web")
	pod("web-new-1", "pod-new-1", "ReplicaSet", "web-new", "rs-new")
	pod("web-new-2", "pod-new-2", "ReplicaSet", "web-new", "rs-new")
	add(&appsv1.StatefulSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, ObjectMeta: meta("db", "sts-db", "", "", "")}, "apps/v1", "StatefulSet", "db", "sts-db", "")
	pod("db-0", "pod-db-0", "StatefulSet", "db", "sts-db")
	pod("lone", "pod-lone", "", "", "")
	return recs, at.Add(time.Minute)
}

func TestWorkloadSelectors(t *testing.T) {
	trace := writeWorkloadTrace(t)
	for _, tc := range []struct {
		args   []string
		code   int
		uid    string // of the pod shown
		stderr string
	}{
		{args: []string{"diff", "deploy/web"}, uid: "pod-new-2",
			stderr: "podtrace: deploy/web owns 3 recorded pods: 3 Pending\npodtrace: showing web-new-2 (Pending), the newest; name another to see it: web-new-1, web-old-1\n"},
		{args: []string{"explain", "deployment/web", "-n", "shop"}, uid: "pod-new-2"},
		{args: []string{"diff", "rs/web-old"}, uid: "pod-old-1"},
		{args: []string{"diff", "sts/db"}, uid: "pod-db-0"},
		{args: []string{"diff", "po/lone"}, uid: "pod-lone"},
		{args: []string{"diff", "job/web"}, code: 1, stderr: `podtrace: error: no Job named "web" in the trace, and no Job at all was recorded there`},
		{args: []string{"diff", "deploy/nosuch"}, code: 1, stderr: `podtrace: error: no Deployment named "nosuch" in the trace; recorded: shop/web`},
		{args: []string{"diff", "cronjob/web"}, code: 2, stderr: `want a pod name or KIND/NAME, KIND one of deploy, rs, job, sts, ds`},
		{args: []string{"diff", "deploy/web", "--uid", "x"}, code: 2, stderr: `--uid picks an incarnation of a pod name`},
		// "did you mean" on a prefix, and on a workload's name.
		{args: []string{"diff", "web-new"}, code: 1, stderr: `podtrace: error: no pod named "web-new" in the trace; did you mean rs/web-new, shop/web-new-1, shop/web-new-2?`},
		{args: []string{"diff", "web", "-n", "shop"}, code: 1, stderr: `podtrace: error: no pod named "web" in namespace shop; did you mean deploy/web, web-new-1, web-new-2, web-old-1?`},
		{args: []string{"diff", "db", "-n", "shop"}, code: 1, stderr: `did you mean sts/db, db-0?`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"podtrace"}, append(tc.args, "--db", trace, "-o", "json")...)
			code := Main(args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut.String())
			}
			if tc.stderr != "" && !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut.String())
			}
			if tc.uid != "" {
				var shown struct{ UID string }
				if err := json.Unmarshal(out.Bytes(), &shown); err != nil {
					t.Fatalf("%v:\n%s", err, out.String())
				}
				if shown.UID != tc.uid {
					t.Errorf("shown uid %q, want %q", shown.UID, tc.uid)
				}
			}
		})
	}
}

// TestChooseWorkloadPod: the pod with the most severe finding, else the
// newest.
func TestChooseWorkloadPod(t *testing.T) {
	pod := func(name string, sev ...explain.Severity) replayed {
		lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Name: name, Outcome: "Running"}}
		for _, s := range sev {
			lc.Findings = append(lc.Findings, explain.Finding{ID: "f", Severity: s})
		}
		return replayed{obj: store.Object{Name: name}, lc: lc}
	}
	for _, tc := range []struct {
		pods []replayed
		want string
	}{
		{[]replayed{pod("new"), pod("old")}, "new"},
		{[]replayed{pod("new", explain.Info), pod("mid", explain.Critical), pod("old", explain.Warning)}, "mid"},
		{[]replayed{pod("new", explain.Warning), pod("old", explain.Warning)}, "new"},
	} {
		var notes bytes.Buffer
		if got := chooseWorkloadPod(tc.pods, "deploy/x", &notes).obj.Name; got != tc.want {
			t.Errorf("chose %s, want %s (%s)", got, tc.want, notes.String())
		}
	}
}

// TestWorkloadNoteIsShort: diff deploy/web on a workload of many pods says
// how they ended and names a few, on two short lines (it opened with one
// line of 600 characters listing every pod).
func TestWorkloadNoteIsShort(t *testing.T) {
	var pods []replayed
	for i := range 40 {
		outcome := "Deleted"
		if i%7 == 0 {
			outcome = "Running"
		}
		lc := &explain.Lifecycle{Lifecycle: &diff.Lifecycle{Name: fmt.Sprintf("web-7d9f8c6b5d-%05d", i), Outcome: outcome}}
		if i == 12 {
			lc.Findings = []explain.Finding{{ID: "crash-loop", Severity: explain.Warning}}
		}
		pods = append(pods, replayed{obj: store.Object{Name: lc.Name}, lc: lc})
	}
	var notes bytes.Buffer
	chooseWorkloadPod(pods, "deploy/web", &notes)
	want := "podtrace: deploy/web owns 40 recorded pods: 34 Deleted, 6 Running\n" +
		"podtrace: showing web-7d9f8c6b5d-00012 (Deleted, crash-loop), the most severe finding; name another to see it: web-7d9f8c6b5d-00000, web-7d9f8c6b5d-00001, web-7d9f8c6b5d-00002, and 36 more\n"
	if diff := cmp.Diff(want, notes.String()); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}
