package store

import "testing"

func TestHas(t *testing.T) {
	path := tracePath(t)
	db := openDB(t, path, Options{})
	recs := []Record{
		{Type: Added, APIVersion: "v1", Kind: "Pod", Namespace: "ci", Name: "p", UID: "pod-uid", ResourceVersion: "1",
			Refs: []string{"owner-uid"}, Object: []byte(`{"metadata":{"uid":"pod-uid"}}`)},
		{Type: Added, APIVersion: "audit.k8s.io/v1", Kind: "Event", Namespace: "ci", Name: "audit-1", UID: "audit-1",
			Refs: []string{"pod-uid"}, Object: []byte(`{"auditID":"audit-1"}`)},
	}
	if err := db.Write(recs); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uid  string
		want bool
	}{
		{"pod-uid", true},
		{"audit-1", true},
		{"owner-uid", false}, // referred to, never recorded: numbered, no summary
		{"audit-2", false},
		{"", false},
	} {
		got, err := db.Has(tc.uid)
		if err != nil || got != tc.want {
			t.Errorf("Has(%q) = %v, %v; want %v", tc.uid, got, err, tc.want)
		}
	}

	// A read-only DB answers too.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro := openDB(t, path, Options{ReadOnly: true})
	if ok, err := ro.Has("audit-1"); !ok || err != nil {
		t.Errorf("read-only Has(audit-1) = %v, %v; want true", ok, err)
	}
}
