package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	bolt "go.etcd.io/bbolt"
)

// mixedRecords returns records that exercise every field of a value: pods
// over several revisions and batches, events, refs that change, a custom
// event type, zero and local times, identity changes, tiny and large JSON.
func mixedRecords() []Record {
	rv := 5000
	var recs []Record
	pods := []*fakePod{newFakePod(1, "ci", &rv), newFakePod(2, "ci", &rv), newFakePod(3, "web", &rv)}
	for r := 0; r < 12; r++ {
		for i, p := range pods {
			rec := p.record(1)
			switch {
			case r == 3 && i == 0:
				rec.Refs = append(rec.Refs, "extra-owner-uid") // refs grow
			case r == 5 && i == 0:
				rec.Refs = nil // and vanish
			case r == 7 && i == 1:
				rec.Type = "Bookmark" // a type without a code
			case r == 8 && i == 1:
				rec.Observed = time.Time{} // unknown
			case r == 9 && i == 2:
				rec.Observed = time.Date(2025, 12, 1, 3, 4, 5, 6, time.FixedZone("CET", 3600))
			case r == 10 && i == 2:
				rec.Name = "renamed" // identity differs from the summary
			case r == 11:
				rec.Type = Deleted
			}
			recs = append(recs, rec)
			if r%4 == 1 {
				recs = append(recs, fakeEvent(p, r*10+i, 1))
			}
		}
	}
	big := bytes.Repeat([]byte(`{"k":"`+strings.Repeat("x", 1000)+`"},`), 200) // 200 KB: overflow pages
	recs = append(recs,
		Record{Session: 2, Type: Initial, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "tiny", UID: "tiny-uid", ResourceVersion: "1", Object: []byte(`{}`)},
		Record{Session: 2, Type: Updated, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "tiny", UID: "tiny-uid", ResourceVersion: "2", Object: []byte(`{"a":1}`)},
		Record{Session: 2, Type: Initial, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "big", UID: "big-uid", ResourceVersion: "3", Object: big},
		Record{Session: 2, Type: DeletedUnknown, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "big", UID: "big-uid", ResourceVersion: "3", Object: append(bytes.Clone(big), '!')},
	)
	return recs
}

func TestRoundTrip(t *testing.T) {
	for _, batch := range []int{1, 7, 1000} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			db := openDB(t, tracePath(t), Options{})
			want := writeAll(t, db, mixedRecords(), batch)
			for i, r := range want {
				if r.Seq != uint64(i+1) {
					t.Fatalf("record %d got Seq %d, want %d", i, r.Seq, i+1)
				}
			}
			checkHistories(t, db, want)
			if diff := diffRecords(want, scanAll(t, db)); diff != "" {
				t.Errorf("Scan (-want +got):\n%s", diff)
			}
			if n := payloads(t, db)[payloadDelta]; n == 0 {
				t.Errorf("no record was stored as a delta")
			}
		})
	}
}

func TestRoundTripReopen(t *testing.T) {
	// Seq continues across opens and read-only DBs read what was written.
	path := tracePath(t)
	recs := mixedRecords()
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := writeAll(t, db, recs[:40], 10)
	db.Close()
	db = openDB(t, path, Options{})
	second := writeAll(t, db, recs[40:], 10)
	if first[len(first)-1].Seq+1 != second[0].Seq {
		t.Fatalf("Seq after reopen: %d then %d", first[len(first)-1].Seq, second[0].Seq)
	}
	db.Close()
	ro := openDB(t, path, Options{ReadOnly: true})
	want := append(first, second...)
	checkHistories(t, ro, want)
	if diff := diffRecords(want, scanAll(t, ro)); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
}

// onePod returns n revisions of one pod.
func onePod(n int) []Record {
	rv := 100
	p := newFakePod(9, "ci", &rv)
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = p.record(1)
	}
	return recs
}

func TestDeltaChains(t *testing.T) {
	const n = 100 // more than three snapshot intervals
	db := openDB(t, tracePath(t), Options{})
	want := writeAll(t, db, onePod(n), 7)
	checkHistories(t, db, want)

	// Snapshots come at least every snapshotEvery revisions, and the rest
	// are deltas.
	var kinds []byte
	db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			kinds = append(kinds, v[1]&payloadMask)
			return nil
		})
	})
	run, deltas := 0, 0
	for i, k := range kinds {
		if k != payloadDelta {
			run = 0
			continue
		}
		deltas++
		if run++; run >= snapshotEvery {
			t.Fatalf("revision %d is delta number %d in a row", i, run)
		}
	}
	if kinds[0] == payloadDelta {
		t.Errorf("the first revision is a delta")
	}
	if deltas < n*3/4 {
		t.Errorf("%d of %d revisions are deltas, want most", deltas, n)
	}

	// Scan with a cache too small to hold a revision rebuilds each delta
	// from the snapshot before it.
	db.opts.CacheBytes = 1
	if diff := diffRecords(want, scanAll(t, db)); diff != "" {
		t.Errorf("Scan without cache (-want +got):\n%s", diff)
	}
}

func TestWriteCacheMiss(t *testing.T) {
	// A writer whose cache cannot hold a revision reads the last one back
	// from the file: it writes the same deltas as one with a cache.
	recs := onePod(40)
	cached := openDB(t, tracePath(t), Options{})
	writeAll(t, cached, slices.Clone(recs), 5)
	db := openDB(t, tracePath(t), Options{CacheBytes: 1})
	want := writeAll(t, db, slices.Clone(recs), 5)
	checkHistories(t, db, want)
	if got, want := payloads(t, db), payloads(t, cached); !cmp.Equal(got, want) {
		t.Errorf("payload kinds without cache %v, with cache %v", got, want)
	}
	if db.enc.reloads != 40/5-1 {
		t.Errorf("%d revisions read back, want one per batch after the first: %d", db.enc.reloads, 40/5-1)
	}
	i := 0
	db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			if i > 0 && i%5 == 0 && v[1]&payloadMask != payloadDelta {
				t.Errorf("record %d, the first of its batch, is not a delta", i)
			}
			i++
			return nil
		})
	})
}

func TestTwoWritersStaleCache(t *testing.T) {
	// Two writers take turns on one file: each one's cache misses the
	// revisions the other wrote, and must not write a delta against a
	// revision that is no longer the object's last.
	path := tracePath(t)
	// Two Writers of one file are refused (ErrRecording), and a leased
	// Writer holds the file open between its flushes; a and b go without
	// the lease, as writers that do not know of it would, and close the
	// file after each flush.
	a, err := newWriter(path, Options{NoCompact: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newWriter(path, Options{NoCompact: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	recs := onePod(60)
	for i, r := range recs {
		w := a
		if i/3%2 == 1 {
			w = b
		}
		w.Add(r)
		if n, err := w.Flush(); n != 1 || err != nil {
			t.Fatalf("Flush of record %d: %d, %v", i, n, err)
		}
	}
	if err := errors.Join(a.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	checkHistories(t, db, recs)
	if n := payloads(t, db)[payloadDelta]; n == 0 {
		t.Errorf("no deltas: the writers' caches were never used")
	}
}

func TestObjectsAndRefs(t *testing.T) {
	rv := 1
	pod := newFakePod(1, "ci", &rv)
	owned := func(kind, name, uid string) Record {
		return Record{Session: 1, Type: Added, APIVersion: "v1", Kind: kind, Namespace: "ci", Name: name, UID: uid,
			ResourceVersion: "7", Refs: []string{pod.uid},
			Object: []byte(`{"kind":"` + kind + `","metadata":{"name":"` + name + `","ownerReferences":[{"uid":"` + pod.uid + `"}]}}`)}
	}
	at := func(r Record, sec int) Record {
		r.Observed = genEpoch.Add(time.Duration(sec) * time.Second)
		return r
	}
	recs := []Record{
		at(pod.record(1), 1),
		at(fakeEvent(pod, 1, 1), 2),
		at(owned("Secret", "pull", "secret-uid"), 3),
		at(pod.record(1), 4),
		at(owned("ConfigMap", "env", "cm-uid"), 5),
		at(fakeEvent(pod, 2, 1), 6),
		at(owned("Secret", "pull", "secret-uid"), 7),
	}
	recs[6].Type = Deleted
	db := openDB(t, tracePath(t), Options{})
	recs = writeAll(t, db, recs, 3)

	objs, err := db.Objects(ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Object{{
		UID: pod.uid, APIVersion: "v1", Kind: "Pod", Namespace: "ci", Name: pod.name,
		FirstSeq: 1, LastSeq: 4, FirstObserved: recs[0].Observed, LastObserved: recs[3].Observed,
		Revisions: 2, Refs: []string{pod.rsUID},
	}}
	if diff := cmp.Diff(want, objs, cmpopts.IgnoreUnexported(Object{})); diff != "" {
		t.Errorf("Objects(Pod) (-want +got):\n%s", diff)
	}

	names := func(objs []Object) []string {
		var s []string
		for _, o := range objs {
			s = append(s, o.Kind+"/"+o.Name)
		}
		return s
	}
	for _, tc := range []struct {
		filter ObjectFilter
		want   []string
	}{
		{ObjectFilter{}, []string{"ConfigMap/env", "Event/" + min(recs[1].Name, recs[5].Name), "Event/" + max(recs[1].Name, recs[5].Name), "Pod/" + pod.name, "Secret/pull"}},
		{ObjectFilter{Kind: "Secret"}, []string{"Secret/pull"}},
		{ObjectFilter{Namespace: "other"}, nil},
		{ObjectFilter{Name: "env"}, []string{"ConfigMap/env"}},
		{ObjectFilter{UID: "secret-uid"}, []string{"Secret/pull"}},
		{ObjectFilter{UID: "secret-uid", Kind: "Pod"}, nil},
		{ObjectFilter{UID: "no-such-uid"}, nil},
	} {
		got, err := db.Objects(tc.filter)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, names(got)); diff != "" {
			t.Errorf("Objects(%+v) (-want +got):\n%s", tc.filter, diff)
		}
	}
	secret, _ := db.Objects(ObjectFilter{UID: "secret-uid"})
	if !secret[0].Deleted || secret[0].Revisions != 2 {
		t.Errorf("secret summary %+v: want Deleted and 2 revisions", secret[0])
	}

	// Referring lists what refers to the pod in the order it was first seen.
	got, err := db.Referring(pod.uid)
	if err != nil {
		t.Fatal(err)
	}
	wantRefs := []string{"Event/" + recs[1].Name, "Secret/pull", "ConfigMap/env", "Event/" + recs[5].Name}
	if diff := cmp.Diff(wantRefs, names(got)); diff != "" {
		t.Errorf("Referring(pod) (-want +got):\n%s", diff)
	}
	// The ReplicaSet was not recorded; the pod still refers to it.
	got, err = db.Referring(pod.rsUID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Pod/" + pod.name}, names(got)); diff != "" {
		t.Errorf("Referring(replicaset) (-want +got):\n%s", diff)
	}
	if got, err := db.Referring("no-such-uid"); err != nil || len(got) != 0 {
		t.Errorf("Referring(unknown) = %v, %v; want nothing", names(got), err)
	}

	_, err = db.History("no-such-uid")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("History(unknown) error %v, want ErrNotFound", err)
	}
}

func TestSessions(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	start := time.Date(2025, 12, 1, 2, 0, 0, 0, time.UTC)
	s1, err := db.BeginSession(Session{Server: "https://127.0.0.1:6443", ServerVersion: "v1.37.2", Started: start, Args: []string{"podtrace", "record"}, Version: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := db.BeginSession(Session{Server: "https://127.0.0.1:6443", Namespace: "ci", Started: start.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID != 1 || s2.ID != 2 {
		t.Fatalf("session IDs %d, %d; want 1, 2", s1.ID, s2.ID)
	}
	if err := db.EndSession(s1.ID, start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := db.EndSession(7, start); err == nil || !strings.Contains(err.Error(), "no session 7") {
		t.Errorf("EndSession(7) error %v, want no session 7", err)
	}
	s1.Stopped = start.Add(time.Minute)
	got, err := db.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Session{s1, s2}, got); diff != "" {
		t.Errorf("Sessions (-want +got):\n%s", diff)
	}
}

func TestWriteRejects(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{})
	good := onePod(1)[0]
	for _, tc := range []struct {
		name string
		edit func(*Record)
		want string
	}{
		{"no UID", func(r *Record) { r.UID = "" }, "has no UID"},
		{"NUL in UID", func(r *Record) { r.UID = "a\x00b" }, "not usable as a key"},
		{"no kind", func(r *Record) { r.Kind = "" }, "has no kind"},
		{"no JSON", func(r *Record) { r.Object = nil }, "has no object JSON"},
		{"empty ref", func(r *Record) { r.Refs = []string{""} }, "not a usable UID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			tc.edit(&bad)
			recs := []Record{good, bad}
			err := db.Write(recs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write error %v, want %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidRecord) {
				t.Errorf("Write error %v is not ErrInvalidRecord", err)
			}
			if recs[0].Seq != 0 {
				t.Errorf("a rejected batch set Seq %d", recs[0].Seq)
			}
		})
	}
	if st, err := db.Stats(); err != nil || st.Records != 0 {
		t.Errorf("Stats after rejected writes: %+v, %v; want no records", st, err)
	}
	db.Close()
	ro := openDB(t, path, Options{ReadOnly: true})
	if err := ro.Write([]Record{good}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Write to a read-only DB: %v", err)
	}
	if _, err := ro.BeginSession(Session{}); err == nil {
		t.Errorf("BeginSession on a read-only DB succeeded")
	}
}

func TestStats(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	recs := writeAll(t, db, mixedRecords(), 50)
	db.BeginSession(Session{})
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	objects := len(byUID(recs))
	if st.Records != uint64(len(recs)) || st.Objects != uint64(objects) || st.Sessions != 1 ||
		st.JSONBytes != uint64(jsonBytes(recs)) || st.DataBytes <= 0 || st.FileBytes < st.DataBytes {
		t.Errorf("Stats = %+v; want %d records, %d objects, 1 session, %d JSON bytes", st, len(recs), objects, jsonBytes(recs))
	}
}

func TestScanStops(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	writeAll(t, db, mixedRecords(), 100)
	stop := errors.New("stop")
	n := 0
	err := db.Scan(func(Record) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("Scan returned %v after %d records; want the callback's error after 3", err, n)
	}
}

func TestCompact(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{})
	w := newWorkload(7, 2)
	var want []Record
	for range 10 {
		want = append(want, writeAll(t, db, w.batch(500), 500)...)
	}
	db.Close()
	before, after, err := Compact(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if after >= before {
		t.Errorf("Compact: %d bytes before, %d after", before, after)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	checkHistories(t, db, want)
	if diff := diffRecords(want, scanAll(t, db)); diff != "" {
		t.Errorf("Scan after Compact (-want +got):\n%s", diff)
	}
	db.Close()
	// A compacted trace takes more records, and Seq goes on.
	db = openDB(t, path, Options{})
	more := writeAll(t, db, w.batch(100), 100)
	if more[0].Seq != want[len(want)-1].Seq+1 {
		t.Errorf("first Seq after Compact %d, want %d", more[0].Seq, want[len(want)-1].Seq+1)
	}
	checkHistories(t, db, append(want, more...))
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := make([]byte, 16<<10)
	rand.NewChaCha8([32]byte{1}).Read(garbage)
	garbagePath := write("garbage.db", garbage)
	emptyPath := write("empty.db", nil)
	foreignPath := filepath.Join(dir, "foreign.db")
	foreign, err := bolt.Open(foreignPath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	foreign.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("etcd")); return err })
	foreign.Close()
	missing := filepath.Join(dir, "missing.db")

	for _, tc := range []struct {
		name     string
		path     string
		readOnly bool
		is       error
		msg      string
	}{
		{"missing", missing, true, fs.ErrNotExist,
			fmt.Sprintf("no trace file %q: record one with `podtrace record --db FILE`", missing)},
		{"garbage", garbagePath, true, ErrCorrupt, "is not a podtrace trace or is corrupt: invalid database"},
		{"garbage for writing", garbagePath, false, ErrCorrupt, "is not a podtrace trace or is corrupt: invalid database"},
		{"empty", emptyPath, true, ErrCorrupt, "is not a podtrace trace or is corrupt: the file is empty"},
		// touch FILE or mktemp, then podtrace record --db FILE: not a trace
		// to take over.
		{"empty for writing", emptyPath, false, ErrCorrupt, "is empty, not a podtrace trace: remove it (a writer creates the trace), or name a new file"},
		{"directory", dir, true, ErrCorrupt, "it is a directory"},
		{"other bbolt database", foreignPath, true, ErrCorrupt, "a bbolt database without podtrace's meta bucket"},
		{"other bbolt database for writing", foreignPath, false, ErrCorrupt, "a bbolt database without podtrace's meta bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			db, err := Open(tc.path, Options{ReadOnly: tc.readOnly, Timeout: time.Second})
			if err == nil {
				db.Close()
				t.Fatalf("Open succeeded")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			if after, _ := os.ReadFile(tc.path); !bytes.Equal(before, after) {
				t.Errorf("the failed Open changed the file")
			}
		})
	}
	if _, _, err := Compact(missing, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Compact(missing): %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only Open or Compact created %s", missing)
	}

	if _, err := NewWriter(emptyPath, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("NewWriter(empty): %v, want ErrCorrupt saying it is empty", err)
	}
	if fi, err := os.Stat(emptyPath); err != nil || fi.Size() != 0 {
		t.Errorf("NewWriter(empty) changed the file: %v, %v", fi, err)
	}
	if _, err := os.Stat(emptyPath + LockSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("NewWriter(empty) left a lock file: %v", err)
	}
}

func TestTruncatedTrace(t *testing.T) {
	// A trace cut short (a full disk, a partial copy) fails with ErrCorrupt
	// when opened or when read; it does not crash the reader.
	path := tracePath(t)
	db := openDB(t, path, Options{})
	w := newWorkload(7, 2)
	for range 5 {
		writeAll(t, db, w.batch(1000), 1000)
	}
	st, err := db.Stats()
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	cut := filepath.Join(t.TempDir(), "cut.db")
	data, _ := os.ReadFile(path)
	// bbolt grows the file ahead of its pages: cut what holds data.
	for _, size := range []int64{st.DataBytes * 3 / 4, st.DataBytes / 2, st.DataBytes / 8, 3 * 4096} {
		if err := os.WriteFile(cut, data[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(cut, Options{ReadOnly: true})
		if err == nil {
			err = db.Scan(func(Record) error { return nil })
			db.Close()
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("trace cut to %d of %d bytes: %v, want ErrCorrupt", size, st.DataBytes, err)
		}
	}
}

func TestNewerSchema(t *testing.T) {
	path := tracePath(t)
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(metaSchema, []byte(fmt.Sprint(SchemaVersion+1)))
	})
	bdb.Close()
	want := fmt.Sprintf("trace %q was written by a newer podtrace (schema %d, this build reads up to %d): upgrade podtrace",
		path, SchemaVersion+1, SchemaVersion)
	for _, ro := range []bool{true, false} {
		_, err := Open(path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrNewerSchema) {
			t.Errorf("Open(ReadOnly: %v) error %v, want ErrNewerSchema", ro, err)
		}
		if err != nil && err.Error() != want {
			t.Errorf("Open(ReadOnly: %v) error\n%q, want\n%q", ro, err, want)
		}
	}
	if _, err := NewWriter(path, Options{}); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("NewWriter error %v, want ErrNewerSchema", err)
	}
}

func TestLocked(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{}) // holds the lock for writing
	_, err := Open(path, Options{ReadOnly: true, Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while a writer holds the file: %v, want ErrLocked", err)
	}
	for _, want := range []string{path, "held open for writing", "podtrace record", "200ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	db.Close()
	ro := openDB(t, path, Options{ReadOnly: true})
	_, err = Open(path, Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "reader") {
		t.Errorf("Open for writing while a reader holds the file: %v, want ErrLocked naming a reader", err)
	}
	ro.Close()
}

func TestCorruptValues(t *testing.T) {
	// Damaged values are reported as ErrCorrupt, never a panic or wrong JSON.
	for _, tc := range []struct {
		name   string
		damage func(v []byte) []byte
	}{
		{"truncated", func(v []byte) []byte { return v[:len(v)/2] }},
		{"unknown format", func(v []byte) []byte { v = bytes.Clone(v); v[0] = 9; return v }},
		{"delta overrun", func(v []byte) []byte {
			// The last op of the delta copies past the source.
			return append(bytes.Clone(v), 0xfe, 0xff, 0x03, 0x7f)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tracePath(t) // bbolt's pages stay sound: only values are damaged
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := writeAll(t, db, onePod(5), 5)
			err = db.bolt.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketRecords)
				k, v := b.Cursor().Last() // a delta
				return b.Put(bytes.Clone(k), tc.damage(v))
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.History(want[0].UID)
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("History of a damaged record: %d records, error %v; want ErrCorrupt", len(got), err)
			}
			err = db.Scan(func(Record) error { return nil })
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Scan of a damaged record: %v, want ErrCorrupt", err)
			}
			db.Close()
		})
	}
}

func TestWriteForgetsDeleted(t *testing.T) {
	// The writer's cache keeps the last revision of live objects only: a
	// deleted object has no next revision to be a delta against it.
	db := openDB(t, tracePath(t), Options{})
	recs := onePod(3)
	recs[2].Type = Deleted
	writeAll(t, db, recs[:2], 2)
	if _, ok := db.enc.last.items[recs[0].UID]; !ok {
		t.Fatalf("the live pod's last revision is not cached")
	}
	writeAll(t, db, recs[2:], 1)
	if _, ok := db.enc.last.items[recs[0].UID]; ok {
		t.Errorf("the deleted pod's last revision is still cached")
	}
	if db.enc.last.used != 0 {
		t.Errorf("cache holds %d bytes after the only object was deleted, want 0", db.enc.last.used)
	}
}

func TestWriteNumsCacheFollowsBudget(t *testing.T) {
	// A writer with a small cache also keeps few UID numbers: podtrace
	// import writes a new UID per audit event.
	db := openDB(t, tracePath(t), Options{CacheBytes: 1 << 17})
	if db.enc.maxNums != 1024 {
		t.Fatalf("maxNums = %d for a 128 KiB budget, want 1024", db.enc.maxNums)
	}
	for b := range 5 {
		recs := make([]Record, 1000)
		for i := range recs {
			uid := fmt.Sprintf("audit-%d-%d", b, i)
			recs[i] = Record{Observed: time.Unix(int64(b*1000+i), 0), Type: Added, APIVersion: "audit.k8s.io/v1", Kind: "Event",
				Name: uid, UID: uid, Object: []byte(`{"auditID":"` + uid + `"}`)}
		}
		if err := db.Write(recs); err != nil {
			t.Fatal(err)
		}
		if n := len(db.enc.nums); n > 1024+1000 {
			t.Fatalf("after %d batches the writer caches %d UID numbers, want at most %d", b+1, n, 1024+1000)
		}
	}
	if got := openDB(t, tracePath(t), Options{}).enc.maxNums; got != min(DefaultWriteCacheBytes/128, maxNums) {
		t.Errorf("maxNums = %d with the default budget, want %d", got, min(DefaultWriteCacheBytes/128, maxNums))
	}
}

func TestDeletedUnknownWithoutObject(t *testing.T) {
	// A deletion the recorder inferred from a relist may come without the
	// object: the store keeps the object as last recorded, from the same
	// batch, from its cache, or read back from the file.
	tombstone := func(r Record) Record {
		r.Type, r.Object, r.Refs = DeletedUnknown, nil, nil
		return r
	}
	for _, tc := range []struct {
		name       string
		cacheBytes int
		batch      int // records per Write
	}{
		{"same batch", 0, 10},
		{"cached", 0, 1},
		{"read back", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, tracePath(t), Options{CacheBytes: tc.cacheBytes})
			recs := onePod(3)
			recs = append(recs, tombstone(recs[2]))
			got := writeAll(t, db, recs, tc.batch)
			want := slices.Clone(got)
			want[3].Object = recs[2].Object
			if string(got[3].Object) != string(recs[2].Object) {
				t.Errorf("Write set the tombstone's object to %s, want the last revision's", got[3].Object)
			}
			checkHistories(t, db, want)
		})
	}

	// An object the trace never saw: its identity alone.
	db := openDB(t, tracePath(t), Options{})
	r := tombstone(onePod(1)[0])
	recs := []Record{r}
	if err := db.Write(recs); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"` + r.Namespace + `","name":"` + r.Name + `","uid":"` + r.UID + `","resourceVersion":"` + r.ResourceVersion + `"}}`
	if string(recs[0].Object) != wantJSON {
		t.Errorf("object of an unseen tombstone:\n got %s\nwant %s", recs[0].Object, wantJSON)
	}
	checkHistories(t, db, recs)

	// Other records still need their object.
	if err := db.Write([]Record{{UID: "u", Kind: "Pod", Type: Deleted}}); err == nil || !strings.Contains(err.Error(), "has no object JSON") {
		t.Errorf("a Deleted record without object: %v", err)
	}
}

func TestWriteCacheChurn(t *testing.T) {
	// A cache that holds a few of the pods being written evicts and reuses
	// its revisions' memory batch after batch: every revision reads back as
	// written, and the file holds the same payloads as with a cache that
	// holds them all.
	rv := 0
	pods := make([]*fakePod, 40)
	for i := range pods {
		pods[i] = newFakePod(i, "default", &rv)
	}
	var recs []Record
	for round := range 12 {
		for i, p := range pods {
			if (i+round)%3 != 0 { // each batch touches a changing part of them
				recs = append(recs, p.record(1))
			}
		}
	}
	big := openDB(t, tracePath(t), Options{})
	writeAll(t, big, slices.Clone(recs), 50)
	rev := len(recs[0].Object)
	small := openDB(t, tracePath(t), Options{CacheBytes: 6 * (rev + 200)})
	want := writeAll(t, small, slices.Clone(recs), 50)
	checkHistories(t, small, want)
	if got, want := payloads(t, small), payloads(t, big); !cmp.Equal(got, want) {
		t.Errorf("payload kinds with a small cache %v, with a big one %v", got, want)
	}
	if small.enc.reloads == 0 {
		t.Error("no revision read back: the cache held every pod, the test does not churn it")
	}
}
