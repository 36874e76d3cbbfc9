package store

import (
	"errors"
	"testing"
)

func TestHistoryOfUnrecordedOwner(t *testing.T) {
	// The pod's ReplicaSet was not recorded: its UID has a number (the
	// pod refers to it) but no summary. That is no object, not a corrupt
	// file.
	db := openDB(t, tracePath(t), Options{})
	rv := 1
	p := newFakePod(3, "ci", &rv)
	writeAll(t, db, []Record{p.record(1), p.record(1)}, 2)
	if _, err := db.History(p.rsUID); !errors.Is(err, ErrNotFound) {
		t.Errorf("History(unrecorded owner): %v, want ErrNotFound", err)
	}
	if got, err := db.ObjectsOf(ObjectFilter{UID: p.rsUID}); err != nil || len(got[0]) != 0 {
		t.Errorf("ObjectsOf(UID of an unrecorded owner) = %v, %v; want none", got, err)
	}
	if got, err := db.History(p.uid); err != nil || len(got) != 2 {
		t.Errorf("History(pod) = %d records, %v; want 2", len(got), err)
	}
}
