package explain

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEveryRule: README's table of what explain finds names
// every finding id of Rules, and none that Rules does not give.
func TestReadmeListsEveryRule(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## What `explain` finds")
	if !ok {
		t.Fatal("README has no section \"What `explain` finds\"")
	}
	section, _, _ = strings.Cut(section, "\n#")
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, id := range strings.Split(first, ", ") {
			listed[strings.Trim(id, "`")] = true
		}
	}
	for _, r := range Rules {
		for _, id := range r.IDs {
			if !listed[id] {
				t.Errorf("README's table lacks finding %q", id)
			}
			delete(listed, id)
		}
	}
	for id := range listed {
		t.Errorf("README's table lists %q, which no rule gives", id)
	}
}
