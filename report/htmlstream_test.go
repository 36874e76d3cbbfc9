package report

import (
	"bytes"
	"testing"
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
