package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// objectMix returns one record per object of a cluster of about n objects,
// in the proportions of a recording: namespaces, nodes, webhook
// configurations, ReplicaSets, pods (some re-created under the same name,
// some deleted) and, most of all, events about the pods.
func objectMix(n int) []Record {
	var recs []Record
	at := genEpoch
	add := func(typ EventType, apiVersion, kind, ns, name, uid string, refs ...string) {
		at = at.Add(100 * time.Millisecond)
		recs = append(recs, Record{Session: 1, Observed: at, Type: typ, APIVersion: apiVersion, Kind: kind,
			Namespace: ns, Name: name, UID: uid, ResourceVersion: strconv.Itoa(len(recs) + 1), Refs: refs,
			Object: []byte(`{"kind":"` + kind + `","metadata":{"name":"` + name + `","uid":"` + uid + `"}}`)})
	}
	uid := func() string { return fakeUID(uint64(len(recs)) + 1<<45) }
	for i := range 20 {
		add(Initial, "v1", "Namespace", "", "ns-"+strconv.Itoa(i), uid())
	}
	for i := range 30 {
		add(Initial, "v1", "Node", "", "kwok-node-"+strconv.Itoa(i), uid())
	}
	add(Initial, "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "digester", uid())
	add(Initial, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "policy", uid())
	var rsUID string
	for i := 0; len(recs) < n; i++ {
		ns := "ns-" + strconv.Itoa(i%20)
		if i%100 == 0 {
			rsUID = uid()
			add(Initial, "apps/v1", "ReplicaSet", ns, "web-"+strconv.Itoa(i/100), rsUID)
		}
		// Every tenth pod reuses the name of the one ten before: a
		// StatefulSet's pod re-created.
		name := fmt.Sprintf("web-%d-%05x", i/100, i*7919%1048573)
		if i%10 == 9 {
			name = fmt.Sprintf("web-%d-%05x", (i-9)/100, (i-9)*7919%1048573)
			ns = "ns-" + strconv.Itoa((i-9)%20)
		}
		podUID := uid()
		typ := Added
		if i%7 == 0 {
			typ = Deleted
		}
		add(typ, "v1", "Pod", ns, name, podUID, rsUID)
		for e := range 3 {
			add(Added, "v1", "Event", ns, name+"."+strconv.Itoa(e), uid(), podUID)
		}
	}
	return recs
}

// objectsTrace writes objectMix(n) to a new trace and opens it read-only.
func objectsTrace(tb testing.TB, n int) (*DB, []Record) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "trace.db")
	db, err := Open(path, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	recs := objectMix(n)
	for i := 0; i < len(recs); i += BatchSize {
		if err := db.Write(recs[i:min(i+BatchSize, len(recs))]); err != nil {
			tb.Fatal(err)
		}
	}
	// A second revision of some objects: their summaries are not those of
	// their first record.
	var more []Record
	for i := 0; i < len(recs); i += 97 {
		r := recs[i]
		r.Observed = r.Observed.Add(time.Hour)
		r.Type = Updated
		more = append(more, r)
	}
	if err := db.Write(more); err != nil {
		tb.Fatal(err)
	}
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ro.Close() })
	return ro, recs
}

func TestObjectsFilter(t *testing.T) {
	// Objects with a filter returns exactly the objects of the full list
	// that match it, in the same order, whatever fields the filter sets.
	db, recs := objectsTrace(t, 3000)
	all, err := db.Objects(ObjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(recs) {
		t.Fatalf("Objects({}): %d objects, want %d", len(all), len(recs))
	}
	// For a sample of objects, every combination of their fields (which
	// selects at least them), and the same with one field changed: cut
	// short, made longer, or another object's.
	fields := func(f *ObjectFilter) [4]*string { return [4]*string{&f.Kind, &f.Namespace, &f.Name, &f.UID} }
	var filters []ObjectFilter
	for s := 0; s < len(all); s += len(all) / 25 {
		o := all[s]
		full := ObjectFilter{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID}
		for set := range 16 {
			var f ObjectFilter
			for i, p := range fields(&f) {
				if set&(1<<i) != 0 {
					*p = *fields(&full)[i]
				}
			}
			filters = append(filters, f)
			for i, p := range fields(&f) {
				if *p == "" {
					continue
				}
				g := f
				q := fields(&g)[i]
				switch (s + set + i) % 3 {
				case 0:
					*q = (*p)[:len(*p)-1]
				case 1:
					*q += "x"
				case 2:
					other := all[(s*7+set*13+1)%len(all)]
					*q = *fields(&ObjectFilter{Kind: other.Kind, Namespace: other.Namespace, Name: other.Name, UID: other.UID})[i]
				}
				filters = append(filters, g)
			}
		}
	}
	filters = append(filters,
		ObjectFilter{Kind: "Secret"}, ObjectFilter{Kind: "pod"}, ObjectFilter{Namespace: "ns-1"},
		ObjectFilter{Kind: "Node", Name: "kwok-node-7"}, ObjectFilter{Kind: "Namespace", Name: "ns-3"},
		ObjectFilter{Kind: "MutatingWebhookConfiguration"}, ObjectFilter{Name: "no-such"})
	nonEmpty := 0
	for _, f := range filters {
		var want []Object
		for _, o := range all {
			if (f.Kind == "" || o.Kind == f.Kind) && (f.Namespace == "" || o.Namespace == f.Namespace) &&
				(f.Name == "" || o.Name == f.Name) && (f.UID == "" || o.UID == f.UID) {
				want = append(want, o)
			}
		}
		got, err := db.Objects(f)
		if err != nil {
			t.Fatalf("Objects(%+v): %v", f, err)
		}
		// Both lists come from the same file: they are deeply equal, object
		// numbers included. cmp.Diff, slow on thousands, says how not.
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Objects(%+v) (-want +got):\n%s", f, cmp.Diff(want, got, cmp.AllowUnexported(Object{})))
		}
		if len(want) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < len(filters)/3 || nonEmpty == len(filters) {
		t.Errorf("%d of %d filters select an object: the test proves little", nonEmpty, len(filters))
	}
}

func TestObjectsFilterCorrupt(t *testing.T) {
	// A damaged object summary is ErrCorrupt for every scan of the objects,
	// also one whose filter the damaged object does not match.
	for _, tc := range []struct {
		name   string
		damage func(v []byte) []byte
	}{
		{"trailing byte", func(v []byte) []byte { return append(bytes.Clone(v), 0) }},
		{"truncated refs", func(v []byte) []byte { return v[:len(v)-3] }},
		{"truncated name", func(v []byte) []byte { return v[:40] }},
		{"unknown format", func(v []byte) []byte { v = bytes.Clone(v); v[0] = 9; return v }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "trace.db") // the indexes disagree: no checkTrace
			db := openDB(t, path, Options{})
			recs := writeAll(t, db, objectMix(60), 20)
			err := db.bolt.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketObjects)
				k, v := b.Cursor().Last() // an Event with one ref
				return b.Put(bytes.Clone(k), tc.damage(v))
			})
			if err != nil {
				t.Fatal(err)
			}
			pod := recs[len(recs)-4]
			for _, f := range []ObjectFilter{{}, {Kind: "Pod"}, {Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, {Kind: "Event"}, {Name: "no-such"}} {
				got, err := db.Objects(f)
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("Objects(%+v) with a damaged summary: %d objects, error %v; want ErrCorrupt", f, len(got), err)
				}
			}
		})
	}
}

// BenchmarkObjects measures Objects over a trace of about 25,000 objects
// (what a recording of 1,000,000 revisions holds) with the filters podtrace
// diff uses: a pod by namespace and name, a kind of webhook configuration, a
// node by name; and with none.
func BenchmarkObjects(b *testing.B) {
	db, recs := objectsTrace(b, 25_000)
	i := len(recs) / 2
	for recs[i].Kind != "Pod" {
		i++
	}
	pod := recs[i]
	for _, tc := range []struct {
		name   string
		filter ObjectFilter
		want   int
	}{
		{"pod", ObjectFilter{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, -1},
		{"webhooks", ObjectFilter{Kind: "MutatingWebhookConfiguration"}, 1},
		{"node", ObjectFilter{Kind: "Node", Name: "kwok-node-7"}, 1},
		{"pods-of-namespace", ObjectFilter{Kind: "Pod", Namespace: "ns-3"}, -1},
		{"uid", ObjectFilter{UID: pod.UID}, 1},
		{"all", ObjectFilter{}, len(recs)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				objs, err := db.Objects(tc.filter)
				if err != nil {
					b.Fatal(err)
				}
				if len(objs) == 0 || tc.want >= 0 && len(objs) != tc.want {
					b.Fatalf("Objects(%+v): %d objects, want %d", tc.filter, len(objs), tc.want)
				}
			}
		})
	}
}

func TestMatchValue(t *testing.T) {
	// matchValue agrees with parseObject and match on every value, also
	// damaged ones: when it reads a value it is one parseObject parses, and
	// it matches what match matches.
	db, recs := objectsTrace(t, 200)
	var values [][]byte
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketObjects).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(values) < 12 || bytes.Equal(k, numKey(uint32(len(recs)))) {
				values = append(values, bytes.Clone(v))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := recs[len(recs)-4]
	filters := []ObjectFilter{{}, {Kind: "Namespace"}, {Kind: "Namespace", Name: "ns-1"}, {Name: "ns-2"},
		{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}, {UID: recs[0].UID}, {Namespace: pod.Namespace},
		{APIVersion: "v1", Kind: "Pod"}, {APIVersion: "apps/v1"}}
	check := func(what string, v []byte) {
		o, perr := parseObject(1, v)
		if id, ok := skimObject(v); ok && perr == nil {
			// What ObjectsAt reads in place is what parseObject reads.
			want := identityOf(&o)
			if id.deleted != want.deleted || id.firstSeq != want.firstSeq || id.lastSeq != want.lastSeq ||
				id.firstObserved != want.firstObserved || id.lastObserved != want.lastObserved || string(id.apiVersion) != o.APIVersion {
				t.Fatalf("%s %x: skimObject read %+v, parseObject %+v", what, v, id, want)
			}
		}
		for _, f := range filters {
			match, ok := f.matchValue(v)
			if ok && perr != nil {
				t.Fatalf("%s %x: matchValue reads it, parseObject: %v", what, v, perr)
			}
			if ok && match != f.match(&o) {
				t.Fatalf("%s %x: matchValue(%+v) = %v, match = %v", what, v, f, match, !match)
			}
			if !ok && perr == nil && what == "value" { // a damaged one may have a long varint
				t.Fatalf("%s %x: parseObject reads it, matchValue does not", what, v)
			}
		}
	}
	for _, v := range values {
		check("value", v)
		for n := range v {
			check("value cut short", v[:n])
			for _, c := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
				w := bytes.Clone(v)
				w[n] = c
				check("damaged value", w)
			}
		}
		check("value with a trailing byte", append(bytes.Clone(v), 0))
	}
}

// matchValue is how a scan matches a filter on an objects value in place:
// skimObject, then matchIdentity. ok is false when skimObject cannot read v.
func (f ObjectFilter) matchValue(v []byte) (match, ok bool) {
	id, ok := skimObject(v)
	if !ok {
		return false, false
	}
	return f.matchIdentity(&id), true
}
