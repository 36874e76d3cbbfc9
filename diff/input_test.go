package diff

import (
	"encoding/json"
	"testing"

	"github.com/podtrace/podtrace/store"
)

// TestNodeName checks NodeName against json.Unmarshal, the way it read
// spec.nodeName before, on what the API server writes and on what it
// never writes but a JSON object may hold.
func TestNodeName(t *testing.T) {
	reference := func(raw string) string {
		var p struct {
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		}
		if json.Unmarshal([]byte(raw), &p) != nil {
			return ""
		}
		return p.Spec.NodeName
	}
	for _, raw := range []string{
		`{"metadata":{"name":"a","labels":{"spec":"x"}},"spec":{"containers":[{"name":"c","nodeName":"no"}],"nodeName":"node-1"},"status":{}}`,
		`{"spec":{"nodeName":"node-1"}}`,
		` { "spec" : { "nodeName" : "node-2" } } `,
		`{"spec":{}}`,
		`{"spec":null}`,
		`{"metadata":{}}`,
		`{}`,
		`{"spec":{"nodeName":"first","nodeName":"last"}}`,
		`{"spec":{"nodeName":"a"},"spec":{"nodeName":"b"}}`,
		`{"Spec":{"nodeName":"folded"}}`,
		`{"spec":{"nodeName":"a"},"Spec":{"nodeName":"folded-last"}}`,
		`{"spec":{"nodeName":"a","NodeName":"folded-last"}}`,
		`{"spec":{"nodeName":"merged"},"spec":{}}`,
		`{"spec":{"nodeName":"kept"},"spec":null}`,
		`{"spec":{"NODENAME":"folded"}}`,
		"{\"\u017fpec\":{\"nodeName\":\"long-s\"}}",
		`{"spec":{"nodeName":"n\u00f6de"}}`,
		`{"spec":{"node\u004eame":"escaped-key"}}`,
		`{"spec":{"nodeName":null}}`,
		`{"spec":{"nodeName":""}}`,
		`{"spec":{"nodeName":"x\"y"}}`,
		`{"spec":{"nodeName":7}}`,
		`{"spec":"nodeName"}`,
		`[{"spec":{"nodeName":"list"}}]`,
		`{"spec":{"nodeName":"truncated"`,
		`not json`,
		``,
	} {
		got := NodeName([]store.Record{{Object: []byte(raw)}})
		if want := reference(raw); got != want {
			t.Errorf("NodeName(%s) = %q, json.Unmarshal reads %q", raw, got, want)
		}
	}
	// The last revision that names a node wins; one without a node (a
	// pod not yet bound, or whose record cannot be read) is passed over.
	recs := []store.Record{
		{Object: []byte(`{"spec":{}}`)},
		{Object: []byte(`{"spec":{"nodeName":"node-a"}}`)},
		{Object: []byte(`{"spec":{"nodeName":"node-b"}}`)},
		{Object: []byte(`{"spec":{}}`)},
		{Object: []byte(`{`)},
	}
	if got := NodeName(recs); got != "node-b" {
		t.Errorf("NodeName of a pod bound to node-a, then node-b = %q, want node-b", got)
	}
	if got := NodeName(nil); got != "" {
		t.Errorf("NodeName(nil) = %q, want none", got)
	}
}
