package diff

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/podtrace/podtrace/store"
)

// podRevisions makes n revisions of a pod, each a few random mutations away
// from the one before, now and then back to where it began.
func podRevisions(t *testing.T, r *rand.Rand, n int) []store.Record {
	t.Helper()
	p := richPod()
	recs := make([]store.Record, n)
	for i := range recs {
		if r.IntN(20) == 0 {
			p = richPod()
		} else {
			p = p.DeepCopy()
			mutate(p, r, 1+r.IntN(2))
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = store.Record{Seq: uint64(i + 1), Namespace: "ci", Name: "job", ResourceVersion: fmt.Sprint(i), Object: raw}
	}
	return recs
}

// unmarshalPod is how Replay decoded a revision before it had a decoder.
func unmarshalPod(rec store.Record) (*corev1.Pod, error) {
	var p corev1.Pod
	if err := json.Unmarshal(rec.Object, &p); err != nil {
		return nil, fmt.Errorf("decode pod %s/%s revision %s (record %d): %w", rec.Namespace, rec.Name, rec.ResourceVersion, rec.Seq, err)
	}
	return &p, nil
}

// checkDecoded decodes recs in order and fails where the decoder and
// json.Unmarshal disagree, on a revision or on an error. It checks every
// revision again at the end: sharing must not let a later revision change
// an earlier one.
func checkDecoded(t *testing.T, recs []store.Record) {
	t.Helper()
	var dec decoder
	var pods []*corev1.Pod
	for i, rec := range recs {
		got, gotErr := dec.decode(rec)
		want, wantErr := unmarshalPod(rec)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("revision %d (%s): error %v, want %v", i, rec.Object, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("revision %d (%s) decoded differently (-unmarshal +decoder):\n%s", i, rec.Object, cmp.Diff(want, got))
		}
		pods = append(pods, got)
	}
	for i, got := range pods {
		if want, _ := unmarshalPod(recs[i]); !reflect.DeepEqual(got, want) {
			t.Fatalf("revision %d changed after later revisions were decoded (-want +got):\n%s", i, cmp.Diff(want, got))
		}
	}
}

func TestDecoderMatchesUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	checkDecoded(t, podRevisions(t, r, 500))
	checkDecoded(t, history(20))
}

func TestDecoderEdgeCases(t *testing.T) {
	rec := func(s string) store.Record {
		return store.Record{Seq: 1, Namespace: "ci", Name: "job", ResourceVersion: "1", Object: []byte(s)}
	}
	base := `{"metadata":{"name":"job","labels":{"app":"ci"},"finalizers":["a","b"]},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`
	indented, _ := json.MarshalIndent(richPod(), "", "  ")
	tests := []struct {
		name string
		revs []string
	}{
		{"empty object, then a pod", []string{`{}`, base}},
		{"unchanged", []string{base, base}},
		{"indented", []string{string(indented), string(indented)}},
		{"key in other case", []string{base, `{"Metadata":{"Name":"job"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`}},
		{"unknown keys", []string{base, `{"metadata":{"name":"job","bogus":1},"extra":[1,2],"spec":{"containers":[{"name":"c","image":"i"}]}}`}},
		{"repeated key", []string{base, `{"metadata":{"name":"a","name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`}},
		{"escaped key", []string{base, `{"metadata":{"na\u006de":"job"},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`}},
		{"escapes in values", []string{base, `{"metadata":{"name":"j\"o\\b","labels":{"app":"c\\"}},"spec":{"containers":[{"name":"c\\\"","image":"i"}]},"status":{"phase":"Running"}}`}},
		{"nulls", []string{base, `{"metadata":null,"spec":{"containers":null},"status":{"phase":null}}`, base}},
		{"empty lists", []string{base, `{"metadata":{"name":"job","finalizers":[]},"spec":{"containers":[]},"status":{}}`, base}},
		{"element moved", []string{base, `{"metadata":{"name":"job","labels":{"app":"ci"},"finalizers":["b","a"]},"spec":{"containers":[{"name":"d"},{"name":"c","image":"i"}]},"status":{"phase":"Running"}}`}},
		{"bytes after the object", []string{base, base + ` x`}},
		{"invalid JSON", []string{base, `{"metadata":{"name":"job"},"spec":{"containers":[{"name":"c","image":"i"}}]}`}},
		{"wrong type", []string{base, `{"metadata":{"name":"job","labels":{"app":"ci"},"finalizers":["a","b"]},"spec":{"containers":[{"name":1,"image":"i"}]},"status":{"phase":"Running"}}`}},
		{"not an object", []string{base, `[1]`, `"pod"`, base}},
		{"truncated", []string{base, base[:len(base)-3]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var recs []store.Record
			for _, s := range tc.revs {
				recs = append(recs, rec(s))
			}
			checkDecoded(t, recs)
		})
	}
}
