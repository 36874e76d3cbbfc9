package store

import (
	"errors"
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
