package tracetest

import (
	"cmp"
	"slices"
	"time"

	"github.com/podtrace/podtrace/store"
)

// Busiest returns the moment the most of pods were present in a trace:
// first observed by then, not yet gone. The read benchmarks ask serve for
// every pod at that moment.
func Busiest(pods []store.Object) time.Time {
	type change struct {
		at time.Time
		d  int
	}
	var cs []change
	for _, p := range pods {
		cs = append(cs, change{p.FirstObserved, 1})
		if p.Deleted {
			cs = append(cs, change{p.LastObserved, -1})
		}
	}
	slices.SortFunc(cs, func(a, b change) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(b.d, a.d)) })
	var at time.Time
	n, most := 0, -1
	for _, c := range cs {
		n += c.d
		if n > most {
			most, at = n, c.at
		}
	}
	return at
}
