package app

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
)

// writeTestTrace writes a trace of one session, started at base, holding
// the records records returns (given the session's ID), ended at end.
func writeTestTrace(t *testing.T, records func(session uint32, base time.Time) (recs []store.Record, end time.Time)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.db")
	db, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s, err := db.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Started: base})
	if err != nil {
		t.Fatal(err)
	}
	recs, end := records(s.ID, base)
	if err := db.Write(recs); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(s.ID, end); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTrace writes a trace holding the given pods, one Added and one
// Deleted record each, in order.
func writeTrace(t *testing.T, pods ...*corev1.Pod) string {
	t.Helper()
	return writeTestTrace(t, func(session uint32, base time.Time) ([]store.Record, time.Time) {
		var recs []store.Record
		for i, p := range pods {
			p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
			p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Minute))
			raw, _ := json.Marshal(p)
			for j, typ := range []store.EventType{store.Added, store.Deleted} {
				recs = append(recs, store.Record{Session: session, Observed: base.Add(time.Duration(i)*time.Minute + time.Duration(j)*time.Second),
					Type: typ, APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID),
					ResourceVersion: p.ResourceVersion, Object: raw})
			}
		}
		return recs, base.Add(time.Hour)
	})
}

func pod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("00000000-0000-0000-0000-" + uid), ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

func TestIncarnations(t *testing.T) {
	db := writeTrace(t, pod("ci", "job", "000000000001"), pod("ci", "job", "000000000002"), pod("other", "job", "000000000003"))
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), append([]string{"podtrace"}, append(args, "--db", db)...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		return out.String(), errOut.String(), err
	}

	// Two namespaces have a pod of that name: -n is needed.
	if _, _, err := run("diff", "job"); err == nil || !strings.Contains(err.Error(), "several namespaces (ci, other)") {
		t.Errorf("diff job without -n: %v, want an error naming both namespaces", err)
	}
	// Two incarnations in ci: the latest is shown, the others listed.
	out, notes, err := run("diff", "job", "-n", "ci", "--color", "never")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "000000000002") || !strings.Contains(notes, "2 incarnations") || !strings.Contains(notes, "--uid") {
		t.Errorf("latest incarnation not shown or others not listed:\nout: %s\nnotes: %s", out, notes)
	}
	// --uid picks one, by prefix too.
	out, _, err = run("diff", "job", "-n", "ci", "--uid", "00000000-0000-0000-0000-000000000001", "--color", "never")
	if err != nil || !strings.Contains(out, "000000000001") {
		t.Errorf("--uid did not pick the first incarnation: %v\n%s", err, out)
	}
	if _, _, err := run("diff", "job", "-n", "ci", "--uid", "ffff"); err == nil || !strings.Contains(err.Error(), "no incarnation") {
		t.Errorf("--uid of no incarnation: %v, want an error listing the incarnations", err)
	}
	// The one pod in namespace other is found without -n ... when asked by namespace.
	if out, _, err := run("diff", "job", "-n", "other", "--color", "never"); err != nil || !strings.Contains(out, "Pod other/job") {
		t.Errorf("diff job -n other: %v\n%s", err, out)
	}
}
