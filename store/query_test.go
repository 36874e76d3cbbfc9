package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

func TestObjectsOf(t *testing.T) {
	// ObjectsOf returns for each filter what Objects returns for it.
	db, recs := objectsTrace(t, 2000)
	i := len(recs) / 2
	for recs[i].Kind != "Pod" {
		i++
	}
	pod := recs[i]
	sets := [][]ObjectFilter{
		{},
		{{}},
		{{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, {Kind: "MutatingWebhookConfiguration"}, {Kind: "ValidatingWebhookConfiguration"}, {Kind: "Namespace"}, {Kind: "Node"}},
		{{Kind: "Pod", Name: pod.Name}, {Kind: "Pod", Name: pod.Name}, {Name: "no-such"}, {Kind: "Event", Namespace: "ns-3"}},
		{{UID: pod.UID}, {UID: pod.UID, Kind: "Node"}, {UID: "no-such"}},
		{{UID: pod.UID}, {Kind: "Node", Name: "kwok-node-7"}, {}},
	}
	for _, filters := range sets {
		var want [][]Object
		for _, f := range filters {
			objs, err := db.Objects(f)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, objs)
		}
		got, err := db.ObjectsOf(filters...)
		if err != nil {
			t.Fatalf("ObjectsOf(%+v): %v", filters, err)
		}
		if len(want) == 0 {
			want = [][]Object{}
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("ObjectsOf(%+v) (-Objects +ObjectsOf):\n%s", filters, cmp.Diff(want, got, cmp.AllowUnexported(Object{})))
		}
	}
}

func TestObjectsOfCorrupt(t *testing.T) {
	// A damaged summary is ErrCorrupt for a scan, whatever the filters.
	path := filepath.Join(t.TempDir(), "trace.db")
	db := openDB(t, path, Options{})
	writeAll(t, db, objectMix(60), 20)
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketObjects)
		k, v := b.Cursor().Last()
		return b.Put(bytes.Clone(k), v[:len(v)-3])
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, filters := range [][]ObjectFilter{{{}}, {{Kind: "Pod"}}, {{Name: "no-such"}, {Kind: "Node"}}} {
		if got, err := db.ObjectsOf(filters...); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ObjectsOf(%+v) with a damaged summary: %v, error %v; want ErrCorrupt", filters, got, err)
		}
	}
}
