package app

import (
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
