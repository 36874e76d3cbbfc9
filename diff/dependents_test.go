package diff

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podtrace/podtrace/store"
)

func TestReplayDependents(t *testing.T) {
	t0 := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	yes := true
	rec := func(kind, name, uid string, at int, typ store.EventType, owners ...string) store.Record {
		m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: "x"}}
		for _, o := range owners {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID(o), BlockOwnerDeletion: &yes})
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return store.Record{Observed: t0.Add(time.Duration(at) * time.Second), Type: typ, Kind: kind, Name: name, UID: uid, Refs: owners, Object: b}
	}
	related := map[string][]store.Record{
		// A node: many revisions, none owned by the pod.
		"node-1": {rec("Node", "n1", "node-1", 0, store.Initial), rec("Node", "n1", "node-1", 10, store.Updated), rec("Node", "n1", "node-1", 20, store.Updated)},
		// Owned from its second revision; the owner reference is gone when
		// it is deleted, and the deletion still counts.
		"cm-1": {rec("ConfigMap", "cm", "cm-1", 1, store.Added), rec("ConfigMap", "cm", "cm-1", 2, store.Updated, "uid-p"), rec("ConfigMap", "cm", "cm-1", 30, store.Deleted)},
		// Names the pod in Refs (as an Event would) without an owner reference.
		"ev-1": {rec("Event", "e", "ev-1", 3, store.Added)},
	}
	related["ev-1"][0].Refs = []string{"uid-p"}
	got := replayDependents("uid-p", related, nil)
	want := []Dependent{{Kind: "ConfigMap", Name: "cm", UID: "cm-1", Since: t0.Add(2 * time.Second), Deleted: t0.Add(30 * time.Second), Blocking: true}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("replayDependents (-want +got):\n%s", d)
	}
}

func TestDecodeEventMatchesFullDecode(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC))
	events := []corev1.Event{
		{Type: "Warning", Reason: "BackOff", Message: "Back-off restarting", Count: 7, Source: corev1.EventSource{Component: "kubelet", Host: "node-1"},
			FirstTimestamp: t0, LastTimestamp: metav1.NewTime(t0.Add(time.Minute)),
			ObjectMeta: metav1.ObjectMeta{Name: "e1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}},
		{Type: "Normal", Reason: "Scheduled", Message: "assigned", ReportingController: "default-scheduler", ReportingInstance: "s-1",
			EventTime: metav1.NewMicroTime(t0.Add(time.Second)), Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Hour))}},
		{},
	}
	for i, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var full corev1.Event
		if err := json.Unmarshal(b, &full); err != nil {
			t.Fatal(err)
		}
		got, err := decodeEvent(b)
		if err != nil {
			t.Fatal(err)
		}
		rec := store.Record{Observed: t0.Add(2 * time.Hour)}
		if eventTime(got, rec) != eventTime(&full, rec) || eventSource(got) != eventSource(&full) ||
			got.Type != full.Type || got.Reason != full.Reason || got.Message != full.Message || got.Count != full.Count ||
			!cmp.Equal(got.Series, full.Series) {
			t.Errorf("event %d: decodeEvent %+v, full decode %+v", i, got, full)
		}
	}
}

func TestDecodeEventRawJSON(t *testing.T) {
	// The split path and encoding/json agree on JSON written by hand too:
	// case-variant and escaped keys, nulls, repeated keys, other members.
	for _, b := range []string{
		`{"type":"Warning","reason":"BackOff","count":3,"metadata":{"name":"x","managedFields":[{"manager":"kubelet"}]}}`,
		`{"Type":"Warning","reason":"BackOff"}`,
		`{"ty\u0070e":"Warning","reason":"BackOff"}`,
		`{"type":"Normal","type":"Warning"}`,
		`{"type":null,"series":null,"source":{"component":"kubelet","host":"n1"},"count":2}`,
		`{"reportingComponent":"ctrl","eventTime":"2026-03-14T09:00:00.000000Z","series":{"count":4,"lastObservedTime":"2026-03-14T10:00:00.000000Z"}}`,
		` { "reason" : "Spaced" , "lastTimestamp" : "2026-03-14T09:00:00Z" } `,
	} {
		var full eventFields
		if err := json.Unmarshal([]byte(b), &full); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		got, err := decodeEvent([]byte(b))
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		want := &corev1.Event{Type: full.Type, Reason: full.Reason, Message: full.Message, Count: full.Count, Series: full.Series,
			Source: full.Source, ReportingController: full.ReportingController,
			FirstTimestamp: full.FirstTimestamp, LastTimestamp: full.LastTimestamp, EventTime: full.EventTime}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-encoding/json +decodeEvent):\n%s", b, d)
		}
	}
	if _, err := decodeEvent([]byte(`{"type":`)); err == nil {
		t.Errorf("truncated JSON decoded without an error")
	}
}
