package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{"short", "  INFO ended: deleted\n", 40, "  INFO ended: deleted\n"},
		{"evidence: under its text",
			"    04:30:05.675 #20     deletion requested: grace period 0s, finalizers [foregroundDeletion], propagation Foreground\n", 60,
			"    04:30:05.675 #20     deletion requested: grace period\n" +
				"                         0s, finalizers\n" +
				"                         [foregroundDeletion], propagation\n" +
				"                         Foreground\n"},
		{"next: after the label",
			"    next: fix the webhook so that it allows this request, or take it off the namespace\n", 50,
			"    next: fix the webhook so that it allows this\n" +
				"          request, or take it off the namespace\n"},
		{"a word longer than the width stays whole",
			"    image alpine@sha256:d3dfed77bb64d7d29a735783a2a90e9a1979dacbe1b8dead996d9ebc78544336 pinned\n", 40,
			"    image\n        alpine@sha256:d3dfed77bb64d7d29a735783a2a90e9a1979dacbe1b8dead996d9ebc78544336\n        pinned\n"},
		{"colour takes no column",
			"  \x1b[31m\x1b[1mCRITICAL\x1b[0m stuck-finalizer: deletion blocked for 51s: finalizer never removed\n", 50,
			"  \x1b[31m\x1b[1mCRITICAL\x1b[0m stuck-finalizer: deletion blocked for\n      51s: finalizer never removed\n"},
		{"a line in two writes, and one without its newline", "  one two three four five six\n  seven", 12,
			"  one two\n      three\n      four\n      five\n      six\n  seven"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			ww := &wrapWriter{w: &b, width: tc.width}
			half := len(tc.in) / 2
			if _, err := ww.Write([]byte(tc.in[:half])); err != nil {
				t.Fatal(err)
			}
			if _, err := ww.Write([]byte(tc.in[half:])); err != nil {
				t.Fatal(err)
			}
			if err := ww.flush(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, l := range strings.Split(b.String(), "\n") {
				if w := visibleWidth([]byte(l)); w > tc.width && !strings.Contains(l, "sha256") {
					t.Errorf("line of %d columns, over %d: %q", w, tc.width, l)
				}
			}
		})
	}
}
