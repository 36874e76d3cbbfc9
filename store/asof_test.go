package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestAt(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	rv := 0
	var recs []Record
	pods := []*fakePod{newFakePod(0, "ci", &rv), newFakePod(1, "ci", &rv), newFakePod(2, "web", &rv)}
	for i := 0; i < 70; i++ {
		for j, p := range pods {
			if j == 2 && i >= 40 {
				continue
			}
			r := p.record(1)
			if j == 2 && i == 39 {
				r.Type = Deleted
			}
			recs = append(recs, r)
		}
	}
	recs = writeAll(t, db, recs, 50)
	objs, err := db.Objects(ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	all := scanAll(t, db)
	first, last := all[0].Observed, all[len(all)-1].Observed
	moments := []time.Time{first.Add(-time.Second), first, first.Add(37 * time.Second), all[100].Observed, last, last.Add(time.Hour)}
	for _, m := range moments {
		t.Run(m.Format(time.RFC3339Nano), func(t *testing.T) {
			want := map[string]Record{}
			next := map[string]uint64{}
			for _, r := range all {
				if !r.Observed.After(m) {
					want[r.UID] = r
				} else if next[r.UID] == 0 {
					next[r.UID] = r.Seq
				}
			}
			got, err := db.At(objs, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("At(%s): %d revisions, want %d", m, len(got), len(want))
			}
			for _, g := range got {
				w := want[g.UID]
				if diff := diffRecords([]Record{w}, []Record{g.Record}); diff != "" {
					t.Errorf("At(%s) of %s (-want +got):\n%s", m, g.Name, diff)
				}
				if g.NextSeq != next[g.UID] {
					t.Errorf("At(%s) of %s: NextSeq %d, want %d", m, g.Name, g.NextSeq, next[g.UID])
				}
			}
		})
	}

	// ScanAfter: what Scan yields after a Seq, of the objects matched.
	var got []Record
	err = db.ScanAfter(all[50].Seq, func(o *Object) bool { return o.Namespace == "ci" }, func(r Record) error {
		got = append(got, r)
		if len(got) == 30 {
			return ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []Record
	for _, r := range all[51:] {
		if r.Namespace == "ci" && len(want) < 30 {
			want = append(want, r)
		}
	}
	if diff := diffRecords(want, got); diff != "" {
		t.Errorf("ScanAfter (-want +got):\n%s", diff)
	}
	boom := errors.New("boom")
	if err := db.ScanAfter(0, func(*Object) bool { return true }, func(Record) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("ScanAfter with a failing callback: %v, want boom", err)
	}
}

// TestObjectsAt: the objects present at a moment, the last gone by then
// and the first seen after, as the summaries tell them, for filters with
// and without a UID.
func TestObjectsAt(t *testing.T) {
	db := openDB(t, tracePath(t), Options{})
	rv := 0
	var recs []Record
	var pods []*fakePod
	for i := range 6 {
		pods = append(pods, newFakePod(i, []string{"ci", "web"}[i%2], &rv))
	}
	nodeSeen := time.Date(2025, 12, 1, 1, 0, 0, 0, time.UTC)
	// Pod i lives from step 3i to step 3i+8 (pods 4 and 5 are never
	// deleted); a ConfigMap beside them is never listed with them.
	for step := range 30 {
		for i, p := range pods {
			switch {
			case step < 3*i || i < 4 && step > 3*i+8:
				continue
			}
			r := p.record(1)
			if i < 4 && step == 3*i+8 {
				r.Type = Deleted
			}
			recs = append(recs, r)
		}
		if step == 2 {
			recs = append(recs, Record{Session: 1, Type: Added, APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "cm", UID: "cm-uid",
				ResourceVersion: "1", Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ci","uid":"cm-uid"}}`)},
				Record{Session: 1, Observed: nodeSeen, Type: Added, APIVersion: "v1", Kind: "Node", Name: "n", UID: "node-uid",
					ResourceVersion: "2", Object: []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n","uid":"node-uid"}}`)})
		}
	}
	recs = writeAll(t, db, recs, 7)
	objs, err := db.Objects(ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := db.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, r := range recs {
		if r.Kind == "Pod" && r.Observed.After(last) {
			last = r.Observed
		}
	}
	if got := fmt.Sprint(kinds); got != fmt.Sprintf("[{v1 ConfigMap true %s} {v1 Node false %s} {v1 Pod true %s}]", time.Time{}, nodeSeen, last) {
		t.Errorf("Kinds: %s", got)
	}
	var moments []time.Time
	for i := 0; i < len(recs); i += 5 {
		moments = append(moments, recs[i].Observed)
	}
	moments = append(moments, recs[0].Observed.Add(-time.Second), recs[len(recs)-1].Observed.Add(time.Second))
	for _, m := range moments {
		for _, f := range []ObjectFilter{{Kind: "Pod"}, {Kind: "Pod", APIVersion: "v1", Namespace: "web"}, {Kind: "Pod", APIVersion: "apps/v1"}, {UID: objs[3].UID, Kind: "Pod"}} {
			var want Present
			var wantNames []string
			for i := range objs {
				o := &objs[i]
				if !f.match(o) {
					continue
				}
				switch {
				case o.FirstObserved.After(m):
					if want.FirstAfter == 0 || o.FirstSeq < want.FirstAfter {
						want.FirstAfter = o.FirstSeq
					}
				case o.Deleted && !o.LastObserved.After(m):
					if want.Gone == nil || o.LastSeq > want.Gone.LastSeq {
						want.Gone = o
					}
				default:
					wantNames = append(wantNames, o.Name)
				}
			}
			got, err := db.ObjectsAt(f, m)
			if err != nil {
				t.Fatal(err)
			}
			var gotNames []string
			for _, o := range got.Objects {
				gotNames = append(gotNames, o.Name)
			}
			name := func(o *Object) string {
				if o == nil {
					return "<nil>"
				}
				return o.Name
			}
			if fmt.Sprint(gotNames) != fmt.Sprint(wantNames) || name(got.Gone) != name(want.Gone) || got.FirstAfter != want.FirstAfter {
				t.Errorf("ObjectsAt(%+v, %s) = %v, gone %s, first after %d; want %v, gone %s, first after %d",
					f, m.Format(time.RFC3339Nano), gotNames, name(got.Gone), got.FirstAfter, wantNames, name(want.Gone), want.FirstAfter)
			}
		}
	}
}
