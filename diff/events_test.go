package diff

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// eventVariants are Event JSON that the split path of eventDecoder takes
// and JSON that it leaves to encoding/json: each is held to json.Unmarshal.
func eventVariants(t testing.TB) []string {
	t0 := metav1.NewTime(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC))
	kubelet := corev1.Event{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-0.17c8", Namespace: "shop", UID: "e-1", ResourceVersion: "1194", CreationTimestamp: t0,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &t0,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:count":{},"f:lastTimestamp":{}}`)}}}},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "p-1", APIVersion: "v1", ResourceVersion: "1193", FieldPath: "spec.containers{app}"},
		Reason:         "BackOff", Message: "Back-off restarting failed container app in pod web-0_shop(p-1)",
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: t0, LastTimestamp: metav1.NewTime(t0.Add(time.Minute)), Count: 47, Type: corev1.EventTypeWarning,
		ReportingController: "kubelet", ReportingInstance: "node-1",
	}
	series := corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0.18a0", Namespace: "shop"},
		Reason:     "Unhealthy", Message: "Readiness probe failed", Type: corev1.EventTypeWarning,
		EventTime:           metav1.NewMicroTime(t0.Add(time.Second)),
		Series:              &corev1.EventSeries{Count: 12, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Hour + 123456*time.Microsecond))},
		ReportingController: "kubelet", ReportingInstance: "node-1", Action: "Probe",
	}
	eventTimeOnly := corev1.Event{
		Reason: "Scheduled", Message: "Successfully assigned shop/web-0 to node-1", Type: corev1.EventTypeNormal,
		EventTime: metav1.NewMicroTime(t0.Add(2 * time.Second)), ReportingController: "default-scheduler", Action: "Binding",
	}
	var out []string
	for _, ev := range []corev1.Event{kubelet, series, eventTimeOnly, {}} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
		ind, _ := json.MarshalIndent(ev, "", "  ")
		out = append(out, string(ind))
		// The same members in the reverse order.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(b, &members); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(members))
		for k := range members {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		var sb strings.Builder
		sb.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, "%q:%s", k, members[k])
		}
		sb.WriteString("}")
		out = append(out, sb.String())
	}
	k := out[0]
	replace := func(old, new string) string {
		if !strings.Contains(k, old) {
			t.Fatalf("%s not in %s", old, k)
		}
		return strings.Replace(k, old, new, 1)
	}
	return append(out,
		// Unknown members, nested, with names and text of eventKeys in
		// them; braces and quotes inside strings.
		replace(`"reason":`, `"action":"x","related":{"kind":"Pod","count":3,"type":"y"},"deprecatedCount":9,"note":"}\"count\":99{[","reason":`),
		replace(`"metadata":{`, `"metadata":{"annotations":{"count":"1","message":"a\"b\\"},`),
		// Names that differ from eventKeys only in case, as encoding/json
		// takes them: ASCII, ſ (folds to s), İ and ı (which do not fold to i).
		replace(`"reason":"BackOff"`, `"Reason":"BackOff"`),
		replace(`"count":47`, `"COUNT":47`),
		replace(`"source":`, `"ſource":`),
		replace(`"reason":"BackOff"`, `"reaſon":"X","reason":"BackOff"`),
		replace(`"reason":"BackOff"`, `"serİes":{"count":5},"reason":"BackOff"`),
		replace(`"reason":"BackOff"`, `"serıes":{"count":5},"reason":"BackOff"`),
		replace(`"reason":"BackOff"`, `"Kind":"x","reason":"BackOff"`),
		// Escaped names and strings.
		replace(`"count":47`, `"co\u0075nt":48`),
		replace(`"message":"Back-off`, `"message":"Back\u002doff \"quoted\"\n\t\u00e9\ud83d\ude00`),
		replace(`"reason":"BackOff"`, `"reason":"Back\/Off"`),
		replace(`"type":"Warning"`, `"type":"Warn\u0069ng"`),
		replace(`"message":"Back-off`, `"message":"Bäck-öff ✓`),
		replace(`"message":"Back-off`, "\"message\":\"Back\xffoff"),
		// Repeated members: the last wins, or is decoded into the first.
		replace(`"count":47`, `"count":47,"count":48`),
		replace(`"reason":"BackOff"`, `"series":{"count":2,"lastObservedTime":"2026-03-14T10:00:00.000000Z"},"series":{"count":3},"reason":"BackOff"`),
		replace(`"source":{"component":"kubelet","host":"node-1"}`, `"source":{"component":"kubelet"},"source":{"host":"node-2"}`),
		replace(`"metadata":{`, `"metadata":{},"metadata":{`),
		// null and empty members.
		replace(`"source":{"component":"kubelet","host":"node-1"}`, `"source":null`),
		replace(`"count":47`, `"count":null`),
		replace(`"message":"Back-off restarting failed container app in pod web-0_shop(p-1)"`, `"message":""`),
		replace(`"reason":"BackOff"`, `"series":null,"reason":"BackOff"`),
		replace(`"lastTimestamp":"2026-03-14T09:01:00Z"`, `"lastTimestamp":null`),
		// Other times.
		replace(`"lastTimestamp":"2026-03-14T09:01:00Z"`, `"lastTimestamp":"2026-03-14T11:01:00+02:00"`),
		replace(`"lastTimestamp":"2026-03-14T09:01:00Z"`, `"lastTimestamp":"2026-03-14T09:01:00.5Z"`),
		// What encoding/json rejects.
		replace(`"count":47`, `"count":"47"`),
		replace(`"count":47`, `"count":4.7`),
		replace(`"count":47`, `"count":2147483648`),
		replace(`"count":47`, `"count":-0`),
		replace(`"lastTimestamp":"2026-03-14T09:01:00Z"`, `"lastTimestamp":"yesterday"`),
		replace(`"type":"Warning"`, `"type":7`),
		replace(`"source":{"component":"kubelet","host":"node-1"}`, `"source":"kubelet"`),
		replace(`"reason":"BackOff"`, `"series":{"count":"2"},"reason":"BackOff"`),
		k+" ", " "+k, k+"{}", k[:len(k)-1], `{}`, ` { } `, `null`, `[]`, `{"count":1`, `{"count":1,}`, `{"count" 1}`, ``,
	)
}

// wholeEvent is what eventDecoder must give for b: encoding/json's verdict.
func wholeEvent(b []byte) (*corev1.Event, error) {
	return decodeEventWhole(b)
}

func checkEventDecode(t *testing.T, what string, got *corev1.Event, gotErr error, b []byte) {
	t.Helper()
	want, wantErr := wholeEvent(b)
	if (gotErr != nil) != (wantErr != nil) {
		t.Errorf("%s: %s: error %v, encoding/json's %v", what, b, gotErr, wantErr)
		return
	}
	if wantErr != nil {
		return
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: %s (-encoding/json +eventDecoder):\n%s", what, b, d)
	}
}

// TestEventDecoderMatchesUnmarshal decodes each variant alone, and as the
// revision after each other variant of the same Event (where the bytes
// last decoded are reused), and holds each to encoding/json.
func TestEventDecoderMatchesUnmarshal(t *testing.T) {
	variants := eventVariants(t)
	for _, v := range variants {
		got, err := decodeEvent([]byte(v))
		checkEventDecode(t, "alone", got, err, []byte(v))
	}
	for _, a := range variants {
		for _, b := range variants {
			var d eventDecoder
			// Copies: the decoder keeps the bytes it decoded, and must not
			// rely on them being those of the next revision.
			d.decode("uid", []byte(a))
			got, err := d.decode("uid", []byte(b))
			checkEventDecode(t, "after "+a, got, err, []byte(b))
			// And again, as a third revision.
			got, err = d.decode("uid", []byte(b))
			checkEventDecode(t, "twice after "+a, got, err, []byte(b))
		}
	}
}

// TestEventDecoderStartFinish: the count and series that start decodes
// are those of the whole revision, and finish completes it, whatever
// revisions were only started before (replayEvents drops one whose count
// did not grow without finishing it).
func TestEventDecoderStartFinish(t *testing.T) {
	variants := eventVariants(t)
	for _, a := range variants {
		for _, b := range variants {
			var d eventDecoder
			r := d.revision("uid")
			_ = d.start(r, []byte(a)) // started, not finished
			want, wantErr := wholeEvent([]byte(b))
			err := d.start(r, []byte(b))
			if wantErr == nil && err == nil {
				wantCount := want.Count
				if want.Series != nil {
					wantCount = want.Series.Count
				}
				if got := r.f.count(); got != wantCount {
					t.Errorf("%s after %s: started with count %d, encoding/json's %d", b, a, got, wantCount)
				}
			}
			if err == nil {
				err = d.finish(r)
			}
			if (err != nil) != (wantErr != nil) {
				t.Errorf("%s after %s: error %v, encoding/json's %v", b, a, err, wantErr)
				continue
			}
			if err == nil {
				f := &r.f
				got := &corev1.Event{Type: f.Type, Reason: f.Reason, Message: f.Message, Count: f.Count, Series: f.Series,
					Source: f.Source, ReportingController: f.ReportingController,
					FirstTimestamp: f.FirstTimestamp, LastTimestamp: f.LastTimestamp, EventTime: f.EventTime}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s after %s (-encoding/json +start, finish):\n%s", b, a, d)
				}
			}
		}
	}
}

// replayEventsWhole is replayEvents as it was written first: every
// revision decoded whole by encoding/json, counts in a map.
func replayEventsWhole(recs []store.Record) []Event {
	var out []Event
	counts := map[string]int32{}
	for _, rec := range recs {
		if rec.Type == store.Deleted || rec.Type == store.DeletedUnknown {
			continue
		}
		ev, err := wholeEvent(rec.Object)
		if err != nil {
			continue
		}
		count := ev.Count
		if ev.Series != nil {
			count = ev.Series.Count
		}
		if seen, ok := counts[rec.UID]; ok && count <= seen {
			continue
		}
		counts[rec.UID] = count
		t := eventTime(ev, rec)
		if rec.Type != store.Initial && rec.Observed.After(t) {
			t = rec.Observed
		}
		out = append(out, Event{Seq: rec.Seq, Time: t, Type: ev.Type, Reason: ev.Reason,
			Message: ev.Message, Source: eventSource(ev), Count: count})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// TestReplayEventsMatchesWhole replays the crash loop's Events, and
// revisions of every kind mixed (counts that grow, stay, fall; series;
// deletions; JSON that does not decode; Events without a UID), and holds
// ReplayEvents to the same replay with every revision decoded by
// encoding/json.
func TestReplayEventsMatchesWhole(t *testing.T) {
	_, crash := crashLoop(200)
	check := func(name string, recs []store.Record) {
		t.Helper()
		got, want := ReplayEvents(recs), replayEventsWhole(recs)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-whole +replayEvents):\n%s", name, d)
		}
		if (got == nil) != (want == nil) {
			t.Errorf("%s: replayEvents gave %#v, whole %#v", name, got, want)
		}
	}
	check("crash loop", crash)
	check("none", nil)
	check("deleted only", []store.Record{{Type: store.Deleted, UID: "a", Object: []byte(`{"count":1}`)}})

	variants := eventVariants(t)
	base := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	types := []store.EventType{store.Initial, store.Added, store.Updated, store.Updated, store.Deleted, store.Updated, store.DeletedUnknown}
	for seed := range 20 {
		var recs []store.Record
		for i := range 300 {
			n := (i*7 + seed*13) % 97
			obj := variants[n%len(variants)]
			if n%3 == 0 {
				// The count goes up and down: some revisions are dropped.
				obj = strings.Replace(variants[0], `"count":47`, fmt.Sprintf(`"count":%d`, (i*5+seed)%11), 1)
			}
			if n%5 == 0 {
				obj = strings.Replace(variants[3], `"count":12`, fmt.Sprintf(`"count":%d`, (i*3+seed)%13), 1)
			}
			recs = append(recs, store.Record{Seq: uint64(i + 1), Type: types[(i+seed)%len(types)], UID: fmt.Sprint("e-", (i+seed)%5),
				Observed: base.Add(time.Duration((i*37+seed)%300) * time.Minute), Object: []byte(obj)})
		}
		check(fmt.Sprint("mixed ", seed), recs)
	}
}

// TestEventRevisionAllocates: once an Event is known, decoding its next
// revision (a count and lastTimestamp that changed, as kubelet's do)
// allocates nothing.
func TestEventRevisionAllocates(t *testing.T) {
	_, events := crashLoop(200)
	var d eventDecoder
	for _, rec := range events {
		if _, err := d.decode(rec.UID, rec.Object); err != nil {
			t.Fatal(err)
		}
	}
	// The last two revisions of the last Event, decoded in turn: each
	// changed from the one before.
	var revs [][]byte
	for i := len(events) - 1; i >= 0 && len(revs) < 2; i-- {
		if events[i].UID == events[len(events)-1].UID {
			revs = append(revs, events[i].Object)
		}
	}
	r := d.revision(events[len(events)-1].UID)
	var counts []int32
	allocs := testing.AllocsPerRun(50, func() {
		counts = counts[:0]
		for _, b := range revs {
			if d.start(r, b) != nil || d.finish(r) != nil {
				t.Fatal("does not decode")
			}
			counts = append(counts, r.f.Count)
		}
	})
	if len(counts) != 2 || counts[0] == counts[1] {
		t.Fatalf("counts %v: want two revisions that differ", counts)
	}
	if allocs > 0 {
		t.Errorf("two revisions allocated %v times, want none", allocs)
	}
}

// FuzzEventDecoder holds eventDecoder to encoding/json for valid JSON,
// alone and as the revision after a variant of the same Event.
func FuzzEventDecoder(f *testing.F) {
	variants := eventVariants(f)
	for i, v := range variants {
		f.Add([]byte(v), uint8(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, prev uint8) {
		if !json.Valid(b) {
			// Members replayEvents does not read are not validated;
			// encoding/json rejects the whole.
			return
		}
		got, err := decodeEvent(b)
		checkEventDecode(t, "alone", got, err, b)
		var d eventDecoder
		d.decode("uid", []byte(variants[int(prev)%len(variants)]))
		got, err = d.decode("uid", b)
		checkEventDecode(t, "after a variant", got, err, b)
	})
}

// The helpers below decode Events one at a time, for the tests that hold
// replayEvents' decoding to encoding/json.

// decodeEvent decodes what replayEvents needs of an Event's JSON. It splits
// the object first and decodes only those members, so the metadata and
// managedFields are skipped, not parsed; JSON the split does not take
// plainly goes through encoding/json whole.
func decodeEvent(b []byte) (*corev1.Event, error) {
	var d eventDecoder
	return d.decode("", b)
}

// decode decodes the revision b of the Event uid whole, as replayEvents
// does in two steps.
func (d *eventDecoder) decode(uid string, b []byte) (*corev1.Event, error) {
	r := d.revision(uid)
	if err := d.start(r, b); err != nil {
		return nil, err
	}
	if err := d.finish(r); err != nil {
		return nil, err
	}
	f := &r.f
	return &corev1.Event{Type: f.Type, Reason: f.Reason, Message: f.Message, Count: f.Count, Series: f.Series,
		Source: f.Source, ReportingController: f.ReportingController,
		FirstTimestamp: f.FirstTimestamp, LastTimestamp: f.LastTimestamp, EventTime: f.EventTime}, nil
}

// eventTime is when the Event ev last happened, or rec's time if it
// carries none.
func eventTime(ev *corev1.Event, rec store.Record) time.Time {
	f := eventFields{Series: ev.Series, LastTimestamp: ev.LastTimestamp, EventTime: ev.EventTime, FirstTimestamp: ev.FirstTimestamp}
	return f.time(rec)
}

// eventSource is who reported the Event ev.
func eventSource(ev *corev1.Event) string {
	f := eventFields{ReportingController: ev.ReportingController, Source: ev.Source}
	return f.source()
}
