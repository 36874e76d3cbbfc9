package tracer

import (
	"bytes"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podtrace/podtrace/store"
)

// TestPodProtoJSON: a pod the API server sent as protobuf is recorded as
// that protobuf, and a read of the trace gives the JSON the recorder wrote
// for it before (encode of the typed pod: TestRawPodJSON), byte for byte.
func TestPodProtoJSON(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "trace.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr := &Tracer{clock: fixedClock{}}
	k := kinds()[0]
	pods := append(recordedPods(t), benchPod(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "empty", UID: "uid-empty"}})
	for i, p := range pods {
		data := wire(t, p, runtime.ContentTypeProtobuf)
		obj := informed(k, decodeRaw(t, data, runtime.ContentTypeProtobuf))
		rec, err := tr.record(held{k: k, typ: store.Updated, obj: obj, observed: observedAt})
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Proto || !bytes.Equal(rec.Object, obj.(*rawPod).pb) {
			t.Fatalf("pod %s: recorded Proto=%v, %d bytes: want its protobuf", p.Name, rec.Proto, len(rec.Object))
		}
		want := typedJSON(t, data, runtime.ContentTypeProtobuf)
		// The metadata transcoded too, not the typed path behind it.
		if got, ok := appendPodProto(nil, "Pod", "v1", rec.Object); !ok || !bytes.Equal(got, want) {
			t.Errorf("appendPodProto of %s (ok %v):\n got %s\nwant %s", p.Name, ok, got, want)
		}
		if got, err := podJSON([]byte("prefix"), &rec); err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Errorf("podJSON of %s (%v):\n got %s\nwant prefix%s", p.Name, err, got, want)
		}
		// The store's own transcoder, for programs that do not link this
		// package, writes the same.
		store.RegisterPodJSON(nil)
		def, err := rec.JSON()
		store.RegisterPodJSON(podJSON)
		if err != nil || !bytes.Equal(def, want) {
			t.Errorf("the store's transcoder of %s (%v):\n got %s\nwant %s", p.Name, err, def, want)
		}
		rec.UID = string(p.UID)
		if rec.UID == "" {
			t.Fatalf("pod %d has no UID", i)
		}
		if err := db.Write([]store.Record{rec}); err != nil {
			t.Fatal(err)
		}
		h, err := db.History(rec.UID)
		if err != nil {
			t.Fatal(err)
		}
		if got := h[len(h)-1]; got.Proto || !bytes.Equal(got.Object, want) || got.ResourceVersion != p.ResourceVersion {
			t.Errorf("pod %s read back: Proto=%v rv=%s\n got %s\nwant %s", p.Name, got.Proto, got.ResourceVersion, got.Object, want)
		}
	}
}

// TestPodProtoJSONNotCanonical: protobuf the transcoders do not take (a
// field sent twice, which gogo merges) reads back as encode of the typed
// pod gogo decodes from it; protobuf that does not decode is an error.
func TestPodProtoJSONNotCanonical(t *testing.T) {
	p := benchPod()
	pb := mustMarshal(t, p)
	dup := append(append([]byte(nil), pb...), protoField(2, mustMarshal(t, &corev1.PodSpec{NodeName: "node-b"}))...)
	var want corev1.Pod
	if err := want.Unmarshal(dup); err != nil {
		t.Fatal(err)
	}
	want.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	wantJSON, err := encode(&want)
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{APIVersion: "v1", Kind: "Pod", Object: dup, Proto: true}
	if got, err := podJSON(nil, &rec); err != nil || !bytes.Equal(got, wantJSON) {
		t.Errorf("merged spec (%v):\n got %s\nwant %s", err, got, wantJSON)
	}
	bad := append(protoField(1, mustMarshal(t, &p.ObjectMeta)), protoField(2, []byte{0x0a, 0x05, 'a'})...)
	rec.Object = bad
	if got, err := podJSON(nil, &rec); err == nil {
		t.Errorf("a spec that does not decode gave %s", got)
	}
}

// rawRecordedPods returns the pods of recordedPods as the recorder's
// informer decodes them from the API server's protobuf.
func rawRecordedPods(b testing.TB) []*rawPod {
	k := kinds()[0]
	var out []*rawPod
	for _, p := range recordedPods(b) {
		data := wire(b, p, runtime.ContentTypeProtobuf)
		out = append(out, informed(k, decodeRaw(b, data, runtime.ContentTypeProtobuf)).(*rawPod))
	}
	return out
}

// BenchmarkRecordRawPods is the recorder's cost per pod revision as the
// informer hands it over (a rawPod): the record that keeps the protobuf
// (what record does), beside the JSON it wrote before (encode).
func BenchmarkRecordRawPods(b *testing.B) {
	tr := &Tracer{clock: fixedClock{}}
	k := kinds()[0]
	pods := rawRecordedPods(b)
	b.Run("protobuf", func(b *testing.B) {
		var n int
		b.ReportAllocs()
		for b.Loop() {
			n = 0
			for _, p := range pods {
				rec, err := tr.record(held{k: k, typ: "Updated", obj: p})
				if err != nil || !rec.Proto {
					b.Fatal(err, rec.Proto)
				}
				n += len(rec.Object)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/revision")
		b.ReportMetric(float64(n)/float64(len(pods)), "B/revision")
	})
	b.Run("json", func(b *testing.B) {
		var n int
		b.ReportAllocs()
		for b.Loop() {
			n = 0
			for _, p := range pods {
				data, err := encode(p)
				if err != nil {
					b.Fatal(err)
				}
				n += len(data)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pods)), "ns/revision")
		b.ReportMetric(float64(n)/float64(len(pods)), "B/revision")
	})
}

// BenchmarkPodJSON is what a read pays per pod revision recorded as
// protobuf: this package's transcoder, and the store's own (the typed
// decode and encoding/json) that programs without it use.
func BenchmarkPodJSON(b *testing.B) {
	var recs []store.Record
	for _, p := range rawRecordedPods(b) {
		recs = append(recs, store.Record{APIVersion: "v1", Kind: "Pod", Object: p.pb, Proto: true})
	}
	for _, c := range []struct {
		name string
		fn   store.PodJSON
	}{{"tracer", podJSON}, {"store", nil}} {
		b.Run(c.name, func(b *testing.B) {
			store.RegisterPodJSON(c.fn)
			defer store.RegisterPodJSON(podJSON)
			b.ReportAllocs()
			for b.Loop() {
				for i := range recs {
					if _, err := recs[i].JSON(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/revision")
		})
	}
}
