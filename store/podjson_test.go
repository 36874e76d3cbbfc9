package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
)

// protoPods returns n revisions of each of pods fake pods as the recorder
// hands them (Proto), in the order they would come, and the same records
// with the JSON a read must return.
func protoPods(t testing.TB, pods, n int) (proto, want []Record) {
	t.Helper()
	rv := 0
	gen := make([]*fakePod, pods)
	for i := range gen {
		gen[i] = newFakePod(i, "ns", &rv)
	}
	for range n {
		for _, g := range gen {
			r := g.record(1)
			p, pb, err := podProto(r.Object)
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			w := r
			w.Object = js
			r.Object, r.Proto = pb, true
			proto, want = append(proto, r), append(want, w)
		}
	}
	return proto, want
}

func schemaOf(t testing.TB, db *DB) string {
	t.Helper()
	var s string
	if err := db.view(func(tx *bolt.Tx) error {
		s = string(tx.Bucket(bucketMeta).Get(metaSchema))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPodProto writes pods as protobuf, in batches small enough and with a
// cache small enough that deltas are made against revisions read back from
// the file, and reads them back through every query as the JSON of their
// revisions: History, Scan and At. The schema turns 2 with the first.
func TestPodProto(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{CacheBytes: 64 << 10})
	// A JSON object first: the schema stays 1 until a protobuf pod comes.
	cm := Record{Observed: genEpoch, Type: Added, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "c", UID: "uid-cm", ResourceVersion: "1",
		Object: json.RawMessage(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","namespace":"ns","uid":"uid-cm","resourceVersion":"1"}}`)}
	writeAll(t, db, []Record{cm}, 1)
	if s := schemaOf(t, db); s != "1" {
		t.Fatalf("schema %q with JSON alone, want 1", s)
	}

	proto, want := protoPods(t, 40, 6)
	got := writeAll(t, db, proto, 7)
	for i := range want {
		want[i].Seq = got[i].Seq
	}
	if s := schemaOf(t, db); s != "2" {
		t.Errorf("schema %q after protobuf pods, want 2", s)
	}
	if n := payloads(t, db)[payloadDelta]; n < len(want)/2 {
		t.Errorf("%d deltas among %d protobuf revisions", n, len(want))
	}
	checkHistories(t, db, want)

	scanned := scanAll(t, db)
	if diff := diffRecords(want, scanned[1:]); diff != "" {
		t.Errorf("Scan (-want +got):\n%s", diff)
	}
	for _, r := range scanned {
		if r.Proto {
			t.Fatalf("Scan returned %s/%d with Proto set", r.UID, r.Seq)
		}
	}

	// At the third round of revisions: each pod's third revision.
	objs, err := db.Objects(ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	third := want[2*40 : 3*40]
	at, err := db.At(objs, third[len(third)-1].Observed)
	if err != nil {
		t.Fatal(err)
	}
	byUIDWant := byUID(third)
	for _, rev := range at {
		w := byUIDWant[rev.UID]
		if len(w) != 1 {
			t.Fatalf("At returned %s, not a pod of the third round", rev.UID)
		}
		if diff := diffRecords(w, []Record{rev.Record}); diff != "" {
			t.Errorf("At (-want +got):\n%s", diff)
		}
	}
	if len(at) != 40 {
		t.Errorf("At: %d pods, want 40", len(at))
	}
}

// TestPodProtoTombstone: a DeletedFinalStateUnknown that comes without an
// object takes the pod's last revision, protobuf, from the batch or from the
// file, and reads back as its JSON.
func TestPodProtoTombstone(t *testing.T) {
	// With the write cache's revision, and with the one read back from the
	// file when the cache is too small to keep it.
	for _, cache := range []int{0, 1 << 10} {
		t.Run(fmt.Sprintf("cache=%d", cache), func(t *testing.T) {
			// A Writer, as the recorder's: its encoder and cache live
			// across flushes.
			path := tracePath(t)
			w, err := NewWriter(path, Options{CacheBytes: cache})
			if err != nil {
				t.Fatal(err)
			}
			proto, want := protoPods(t, 2, 3)
			// Pod 0: its tombstone in the batch after its last revision;
			// pod 1: its last revision in this batch, its tombstone in the
			// next.
			tomb := func(r Record) Record {
				r.Type, r.Object, r.Proto, r.Observed = DeletedUnknown, nil, false, r.Observed.Add(time.Second)
				return r
			}
			for _, batch := range [][]Record{proto[:4], {proto[4], tomb(proto[4]), proto[5]}, {tomb(proto[5])}} {
				w.Add(batch...)
				if _, err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			db := openDB(t, path, Options{ReadOnly: true})
			for i, p := range []Record{want[4], want[5]} {
				h, err := db.History(p.UID)
				if err != nil {
					t.Fatal(err)
				}
				last := h[len(h)-1]
				if last.Type != DeletedUnknown || string(last.Object) != string(p.Object) || last.ResourceVersion != p.ResourceVersion {
					t.Errorf("pod %d: last record %s rv=%s %.80s, want the tombstone with rv=%s %.80s", i, last.Type, last.ResourceVersion, last.Object, p.ResourceVersion, p.Object)
				}
			}
		})
	}
}

// TestPodProtoRegistered: a registered transcoder is the one reads use,
// and nil gives the store's own back.
func TestPodProtoRegistered(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	proto, want := protoPods(t, 1, 2)
	writeAll(t, db, proto, 2)
	RegisterPodJSON(func(dst []byte, r *Record) ([]byte, error) {
		return append(dst, `{"transcoded":true}`...), nil
	})
	h, err := db.History(proto[0].UID)
	RegisterPodJSON(nil)
	if err != nil || len(h) != 2 || string(h[1].Object) != `{"transcoded":true}` {
		t.Fatalf("History with a registered transcoder: %v %+v", err, h)
	}
	if h, err = db.History(proto[0].UID); err != nil || string(h[1].Object) != string(want[1].Object) {
		t.Fatalf("History after RegisterPodJSON(nil): %v %.80s", err, h[1].Object)
	}
	RegisterPodJSON(func([]byte, *Record) ([]byte, error) { return nil, errors.New("no") })
	_, err = db.History(proto[0].UID)
	RegisterPodJSON(nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "protobuf") {
		t.Errorf("History when the protobuf does not decode: %v", err)
	}
}

// TestPodProtoOnlyPods: the store refuses protobuf of any other kind.
func TestPodProtoOnlyPods(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	r := Record{Observed: genEpoch, Type: Added, APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "uid-c", Object: []byte{0x0a, 0x00}, Proto: true}
	if err := db.Write([]Record{r}); err == nil || !strings.Contains(err.Error(), "only of v1 Pods") {
		t.Errorf("Write of a ConfigMap as protobuf: %v", err)
	}
}

// podProto decodes a pod's JSON into its typed pod and marshals that to
// protobuf, as the API server sends it and record hands it to the store.
func podProto(js []byte) (*corev1.Pod, []byte, error) {
	var p corev1.Pod
	if err := json.Unmarshal(js, &p); err != nil {
		return nil, nil, err
	}
	pb, err := p.Marshal()
	return &p, pb, err
}
