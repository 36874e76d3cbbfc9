package tracetest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
)

// PrunedTrace writes, in dir, a trace recorded with --retain 7d over ten
// days up to now: three pods of namespace ci (old-0, old-1, old-2) created
// at gone-1h and deleted at gone, gone+1m and gone+2m, nine days ago, which
// retention pruned, and one pod, live, there all along. It returns the
// trace's path and gone.
func PrunedTrace(t testing.TB, dir string) (path string, gone time.Time) {
	t.Helper()
	path = filepath.Join(dir, "trace.db")
	now := time.Now().UTC()
	gone = now.Add(-9 * 24 * time.Hour)
	w, err := store.NewWriter(path, store.Options{NoCompact: true, Retention: store.Retention{Age: 7 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := w.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Started: now.Add(-10 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name string, typ store.EventType, rv int, at time.Time) store.Record {
		uid := "uid-" + name
		js := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"ci","uid":%q,"resourceVersion":"%d"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`, name, uid, rv)
		return store.Record{Session: s.ID, Observed: at, Type: typ, APIVersion: "v1", Kind: "Pod", Namespace: "ci", Name: name, UID: uid, ResourceVersion: fmt.Sprint(rv), Object: []byte(js)}
	}
	for i := range 3 {
		name := fmt.Sprintf("old-%d", i)
		w.Add(pod(name, store.Added, 10*i+1, gone.Add(-time.Hour)), pod(name, store.Deleted, 10*i+2, gone.Add(time.Duration(i)*time.Minute)))
	}
	w.Add(pod("live", store.Added, 100, now.Add(-10*24*time.Hour)), pod("live", store.Updated, 101, now))
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.EndSession(s.ID, now); err != nil {
		t.Fatal(err)
	}
	if ps := w.PruneStats(); ps.Age.Pods != 3 {
		t.Fatalf("PruneStats %+v, want 3 pods pruned", ps)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, gone
}
