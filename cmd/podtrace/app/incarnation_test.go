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

// TestNamespaceIncarnation: a namespace deleted with its pod in it, then
// created again under its name (as CI does). The pod's namespace is the
// one it was created in: its deletion reads as the namespace's, though
// the latest namespace of that name was never deleted.
func TestNamespaceIncarnation(t *testing.T) {
	db := writeTestTrace(t, func(session uint32, base time.Time) ([]store.Record, time.Time) {
		rec := func(at time.Duration, typ store.EventType, obj interface {
			GetNamespace() string
			GetName() string
			GetUID() types.UID
			GetResourceVersion() string
		}, kind string) store.Record {
			raw, _ := json.Marshal(obj)
			return store.Record{Session: session, Observed: base.Add(at), Type: typ, APIVersion: "v1", Kind: kind, Namespace: obj.GetNamespace(),
				Name: obj.GetName(), UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion(), Object: raw}
		}
		ns := func(uid, rv string, deleting bool) *corev1.Namespace {
			n := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "ci", UID: types.UID(uid), ResourceVersion: rv}}
			if deleting {
				ts := metav1.NewTime(base.Add(10 * time.Second))
				n.DeletionTimestamp, n.Status.Phase = &ts, corev1.NamespaceTerminating
			}
			return n
		}
		p := pod("ci", "job", "000000000001")
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Second))
		deleting := p.DeepCopy()
		deleting.ResourceVersion = "3"
		ts, grace := metav1.NewTime(base.Add(41*time.Second)), int64(30)
		deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &ts, &grace
		return []store.Record{
			rec(0, store.Added, ns("ns-1", "1", false), "Namespace"),
			rec(time.Second, store.Added, p, "Pod"),
			rec(10*time.Second, store.Updated, ns("ns-1", "2", true), "Namespace"),
			rec(11*time.Second, store.Updated, deleting, "Pod"),
			rec(12*time.Second, store.Deleted, deleting, "Pod"),
			rec(13*time.Second, store.Deleted, ns("ns-1", "2", true), "Namespace"),
			rec(20*time.Second, store.Added, ns("ns-2", "5", false), "Namespace"),
		}, base.Add(time.Minute)
	})
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"podtrace", "explain", "job", "-n", "ci", "--db", db, "-o", "json"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); err != nil {
		t.Fatalf("explain: %v\n%s", err, errOut.String())
	}
	var ex struct {
		Findings []struct {
			ID, Mechanism string
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &ex); err != nil {
		t.Fatal(err)
	}
	for _, f := range ex.Findings {
		if f.ID == "ended" {
			if f.Mechanism != "namespace-deletion" {
				t.Errorf("mechanism %q, want namespace-deletion: the pod's namespace is the one it was created in", f.Mechanism)
			}
			return
		}
	}
	t.Errorf("no ended finding: %s", out.String())
}
