package report

import "testing"

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "pod", "0 pods"},
		{1, "pod", "1 pod"},
		{2, "pod", "2 pods"},
		{1, "event", "1 event"},
		{1, "file", "1 file"},
		{3, "file", "3 files"},
		{2, "patch", "2 patches"},
		{2, "entry", "2 entries"},
		{2, "day", "2 days"},
		{2, "process", "2 processes"},
		{2, "status", "2 statuses"},
		{1, "revision", "1 revision"},
	} {
		if got := Plural(tc.n, tc.noun); got != tc.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
