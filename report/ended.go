package report

import (
	"strings"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
)

// endedLines are the lines that say how a pod ended, for a finding that
// names a mechanism (diff's ended finding): the mechanism, then who used
// it and how that is known.
func endedLines(f explain.Finding) []string {
	if f.Mechanism == "" {
		return nil
	}
	lines := []string{"mechanism: " + f.Mechanism}
	if a := f.Actor; a != nil {
		lines = append(lines, "actor: "+actorLine(a))
	}
	return lines
}

// actorLine says who an actor is and how it is known: "kubectl (audit log:
// delete, kubectl/v1.37.2)", "replicaset-controller (event: its
// SuccessfulDelete event on ReplicaSet web-6f7)".
func actorLine(a *diff.Actor) string {
	var b strings.Builder
	b.WriteString(a.Who)
	if a.Impersonator != "" && !strings.Contains(a.Who, a.Impersonator) {
		b.WriteString(" (impersonated by " + a.Impersonator + ")")
	}
	b.WriteString(" [" + string(a.Basis))
	if a.Detail != "" {
		b.WriteString(": " + a.Detail)
	}
	b.WriteString("]")
	return b.String()
}
