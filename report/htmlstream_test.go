package report

import (
	"bytes"
	"testing"

	"github.com/podtrace/podtrace/explain"
)

// TestHTMLStreamsItsData holds HTML, which encodes the data a pod at a time
// and deflates it as it goes, to the page that embedding the whole of
// htmlData's JSON makes, byte for byte, on either side of plainDataUpTo.
func TestHTMLStreamsItsData(t *testing.T) {
	tr := syntheticTrace(t, 40, 30)
	raw, err := htmlData{tr}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{len(raw) + 1, len(raw), len(raw) - 1, len(raw) / 3, sinkChunk / 2, 0} {
		old := plainDataUpTo
		plainDataUpTo = limit
		want, err := embedData(raw)
		if err != nil {
			t.Fatal(err)
		}
		var sink dataSink
		if err := (htmlData{tr}).encode(&sink); err != nil {
			t.Fatal(err)
		}
		got, err := sink.close()
		plainDataUpTo = old
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("plainDataUpTo %d (data %d bytes): the streamed data (%d bytes) differs from embedData's (%d bytes)", limit, len(raw), len(got), len(want))
		}
		if deflated := bytes.HasPrefix([]byte(got), []byte(`{"format":"`+deflatedFormat)); deflated != (len(raw) > limit) {
			t.Errorf("plainDataUpTo %d (data %d bytes): deflated %v", limit, len(raw), deflated)
		}
	}
}

// TestHTMLPrepared holds HTML of pods prepared ahead (PrepareHTML, as the
// report command's workers do, then TrimPrepared) to the page of the same
// pods prepared by HTML itself, byte for byte, with some pods prepared and
// some not, and with a pod listed twice.
func TestHTMLPrepared(t *testing.T) {
	traces := map[string]func() *Trace{
		"fixture":     func() *Trace { return fixtureTrace(t) },
		"audit":       func() *Trace { return auditTrace(t) },
		"crash loops": func() *Trace { return syntheticTrace(t, 30, 20) },
	}
	for name, make := range traces {
		t.Run(name, func(t *testing.T) {
			tr := make()
			tr.Pods = append(tr.Pods, tr.Pods[0])
			want := renderHTML(t, tr, HTMLOptions{})

			prepared := make()
			prepared.Pods = append(prepared.Pods, prepared.Pods[0])
			prepared.Prepared = map[*explain.Lifecycle]*HTMLPod{}
			for i, p := range prepared.Pods {
				if i%3 == 1 {
					continue // left to HTML
				}
				prepared.Prepared[p] = PrepareHTML(p)
			}
			for p := range prepared.Prepared {
				TrimPrepared(p)
				if len(p.Steps) > 1 || p.Events != nil {
					t.Fatalf("pod %s kept its steps or events", p.Name)
				}
			}
			if got := renderHTML(t, prepared, HTMLOptions{}); got != want {
				n := 0
				for n < len(got) && n < len(want) && got[n] == want[n] {
					n++
				}
				t.Errorf("the page of prepared pods (%d bytes) differs from the page of the same pods (%d bytes) at byte %d", len(got), len(want), n)
			}
		})
	}
}
