package main

import (
	"os/exec"
	"strings"
	"testing"
)

// heavyPackages are packages that must stay out of the podtrace binary: each
// imports, or registers in its scheme, every API group Kubernetes serves
// (typed clients, informers, listers, apply configurations) or the OpenAPI
// models, for about 25 MB of a 56 MB binary. The tracer lists and watches
// through REST clients of the group versions it records (tracer/client.go).
var heavyPackages = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/informers",
	"k8s.io/client-go/listers",
	"k8s.io/client-go/discovery",
	"k8s.io/client-go/applyconfigurations",
	"k8s.io/client-go/metadata/metadatainformer",
	"github.com/google/gnostic-models",
}

// TestNoClientset: nothing in podtrace's import graph pulls in client-go's
// clientset, informer factory or discovery client (a test may; the binary
// may not).
func TestNoClientset(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages, not podtrace's graph", len(deps))
	}
	for _, p := range deps {
		for _, h := range heavyPackages {
			if p == h || strings.HasPrefix(p, h+"/") {
				t.Errorf("podtrace imports %s: run `go list -deps ./cmd/podtrace` and find the importer", p)
			}
		}
	}
}
