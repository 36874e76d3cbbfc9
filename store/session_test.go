package store

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A session that never stops ends, for readers, at its last flush: the
// Writer stamps Alive with every flush and at least every AliveEvery
// while idle; never at the reader's clock.
func TestWriterStampsAlive(t *testing.T) {
	path := tracePath(t)
	w, err := NewWriter(path, Options{Timeout: time.Second, NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }
	started := clock
	s, err := w.BeginSession(Session{Server: "https://127.0.0.1:6443", Started: started})
	if err != nil {
		t.Fatal(err)
	}
	alive := func() time.Time {
		t.Helper()
		db := openDB(t, path, Options{ReadOnly: true})
		defer db.Close()
		ss, err := db.Sessions()
		if err != nil || len(ss) != 1 {
			t.Fatalf("Sessions: %v, %v", ss, err)
		}
		return ss[0].Alive
	}

	clock = clock.Add(time.Second)
	w.Add(onePod(2)...)
	if n, err := w.Flush(); n != 2 || err != nil {
		t.Fatalf("Flush: %d, %v", n, err)
	}
	if got, want := alive(), clock; !got.Equal(want) {
		t.Errorf("after a flush of records, Alive = %v, want %v", got, want)
	}
	// Idle, within AliveEvery: no write at all.
	clock = clock.Add(AliveEvery / 2)
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := alive(), started.Add(time.Second); !got.Equal(want) {
		t.Errorf("idle flush within AliveEvery moved Alive to %v, want %v", got, want)
	}
	// Idle past AliveEvery: the stamp alone.
	clock = clock.Add(AliveEvery)
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := alive(), clock; !got.Equal(want) {
		t.Errorf("idle flush past AliveEvery: Alive = %v, want %v", got, want)
	}
	// Killed here: no EndSession. The session ends at its last sign of life.
	db := openDB(t, path, Options{ReadOnly: true})
	ss, err := db.Sessions()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !ss[0].Open() || !ss[0].End().Equal(clock) {
		t.Errorf("killed session: Open %v, End %v; want open, ending %v", ss[0].Open(), ss[0].End(), clock)
	}
	_ = s
}

// A new session after an interrupted one records the time between them as
// a recorder-down gap; gaps added through the Writer are written with the
// next flush.
func TestSessionGaps(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{})
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s1, err := db.BeginSession(Session{Started: t0, Alive: t0.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := db.BeginSession(Session{Started: t0.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(s2.ID, t0.Add(11*time.Minute)); err != nil {
		t.Fatal(err)
	}
	s3, err := db.BeginSession(Session{Started: t0.Add(12 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	w, err := NewWriter(path, Options{Timeout: time.Second, NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	outage := Gap{Session: s3.ID, Cause: GapAPIServer, Start: t0.Add(13 * time.Minute), End: t0.Add(14 * time.Minute), Detail: "connection refused"}
	w.AddGap(outage)
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	got, err := db.Gaps()
	if err != nil {
		t.Fatal(err)
	}
	want := []Gap{
		{Session: s2.ID, Cause: GapRecorderDown, Start: t0.Add(time.Minute), End: t0.Add(10 * time.Minute)},
		{Session: s3.ID, Cause: GapRecorderDown, Start: t0.Add(11 * time.Minute), End: t0.Add(12 * time.Minute), Detail: "session 2 stopped"},
		outage,
	}
	if len(got) > 0 && !strings.Contains(got[0].Detail, "session 1 was interrupted") {
		t.Errorf("first gap's detail %q does not say session 1 was interrupted", got[0].Detail)
	}
	if len(got) > 0 {
		want[0].Detail = got[0].Detail
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Gaps (-want +got):\n%s", d)
	}
	_ = s1
}

// A recorder restarting into a trace reconciles it with its first lists:
// what the trace holds as alive and the list lacks was deleted while no one
// watched, and gets a DeletedUnknown record with its last state. Objects of
// other kinds, namespaces, or out of the list's scope are left alone.
func TestReconcile(t *testing.T) {
	path := tracePath(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(session uint32, at time.Time, typ EventType, kind, ns, name, uid, rv, obj string) Record {
		return Record{Session: session, Observed: at, Type: typ, APIVersion: "v1", Kind: kind, Namespace: ns, Name: name,
			UID: uid, ResourceVersion: rv, Object: []byte(obj)}
	}
	db := openDB(t, path, Options{})
	if _, err := db.BeginSession(Session{Started: t0, Alive: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := db.Write([]Record{
		rec(1, t0, Initial, "Pod", "ci", "kept", "u-kept", "1", `{"metadata":{"labels":{"app":"a"}}}`),
		rec(1, t0, Initial, "Pod", "ci", "gone", "u-gone", "2", `{"metadata":{"labels":{"app":"a"}}}`),
		rec(1, t0.Add(time.Second), Updated, "Pod", "ci", "gone", "u-gone", "5", `{"metadata":{"labels":{"app":"a"},"deletionTimestamp":"x"}}`),
		rec(1, t0, Initial, "Pod", "ci", "unlabelled", "u-other", "3", `{"metadata":{"labels":{"app":"b"}}}`),
		rec(1, t0, Initial, "Pod", "web", "elsewhere", "u-web", "4", `{}`),
		rec(1, t0, Initial, "ConfigMap", "ci", "cm", "u-cm", "6", `{}`),
		rec(1, t0, Initial, "Pod", "ci", "deleted", "u-del", "7", `{}`),
		rec(1, t0.Add(time.Second), Deleted, "Pod", "ci", "deleted", "u-del", "8", `{}`),
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	w, err := NewWriter(path, Options{Timeout: time.Second, NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := w.BeginSession(Session{Started: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	listed := t0.Add(time.Hour + time.Second)
	w.Reconcile(Listing{APIVersion: "v1", Kind: "Pod", Namespace: "ci", At: listed,
		UIDs: map[string]struct{}{"u-kept": {}},
		InScope: func(last Record) bool {
			return !bytes.Contains(last.Object, []byte(`"app":"b"`))
		}})
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	for uid, wantGone := range map[string]bool{"u-kept": false, "u-gone": true, "u-other": false, "u-web": false, "u-cm": false} {
		h, err := db.History(uid)
		if err != nil {
			t.Fatal(err)
		}
		last := h[len(h)-1]
		if got := last.Type == DeletedUnknown; got != wantGone {
			t.Errorf("%s: last record %s, want gone %v", uid, last.Type, wantGone)
			continue
		}
		if !wantGone {
			continue
		}
		if last.Session != s2.ID || !last.Observed.Equal(listed) || last.ResourceVersion != "5" ||
			!bytes.Equal(last.Object, h[len(h)-2].Object) {
			t.Errorf("%s: gone record %+v, want session %d, observed %v, the last state (rv 5)", uid, last, s2.ID, listed)
		}
	}
	if h, _ := db.History("u-del"); len(h) != 2 {
		t.Errorf("a pod deleted while watched got %d records, want its 2", len(h))
	}
}
