package layers

import (
	"go/build"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/podtrace/podtrace/"

// allowed lists, for each package, the podtrace packages it may import
// (tests aside). A package not listed here may import only store.
var allowed = map[string][]string{
	"store":     nil,
	"admission": {"store"},
	"diff":      {"admission", "store"},
	"explain":   {"admission", "diff", "store"},
	"redact":    {"diff", "explain"},
	"compare":   {"admission", "diff", "explain", "store"},
	"report":    {"admission", "compare", "diff", "explain", "redact", "store"},
	"otlp":      {"admission", "diff", "explain", "redact", "store"},
	"serve":     {"redact", "store"},
	"tracer":    {"store", "tracer/auditlog"},
}

// TestImportsFlowDown: each package imports only the packages below it.
func TestImportsFlowDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for pkg, ok := range allowed {
		p, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		var bad []string
		for _, imp := range p.Imports {
			rel, mine := strings.CutPrefix(imp, module)
			if !mine || strings.HasPrefix(rel, pkg+"/") || strings.HasPrefix(rel, "internal/") {
				continue
			}
			if !contains(ok, rel) {
				bad = append(bad, rel)
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			t.Errorf("%s imports %v: only %v may be below it", pkg, bad, ok)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
