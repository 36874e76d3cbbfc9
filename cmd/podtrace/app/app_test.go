package app

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestInterspersed(t *testing.T) {
	cmds := commands(Streams{})
	tests := []struct{ in, want string }{
		{"podtrace diff web -n default --db x.db", "podtrace diff -n default --db x.db -- web"},
		{"podtrace diff -n default web", "podtrace diff -n default -- web"},
		{"podtrace diff web --all-fields -o json", "podtrace diff --all-fields -o json -- web"},
		{"podtrace diff --db=x.db web", "podtrace diff --db=x.db -- web"},
		{"podtrace report --html -o r.html", "podtrace report --html -o r.html"},
		{"podtrace nosuch a -b", "podtrace nosuch a -b"},
		{"podtrace diff web -n", "podtrace diff -n"},
	}
	for _, tc := range tests {
		got := strings.Join(interspersed(cmds, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestBuildVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"go install @version", debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, "v0.2.0"},
		{"a clean checkout", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "256aee3d0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a59"}, {Key: "vcs.modified", Value: "false"}}}, "v0.1.0-dev+256aee3d0c1b"},
		{"a changed tree", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "256aee3d0c1b2a3f4e5d6c7b8a9f0e1d2c3b4a59"}, {Key: "vcs.modified", Value: "true"}}}, "v0.1.0-dev+256aee3d0c1b.dirty"},
		{"no git", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "v0.1.0-dev"},
	} {
		if got := buildVersion(&tc.info); got != tc.want {
			t.Errorf("%s: buildVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestKubectlPlugin: installed as kubectl-podtrace, the help names the
// command as kubectl runs it.
func TestKubectlPlugin(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"/usr/local/bin/kubectl-podtrace", "--help"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kubectl podtrace [global options] command") {
		t.Errorf("help of the plugin:\n%s", out.String())
	}
}
