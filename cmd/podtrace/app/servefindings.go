package app

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/serve"
	"github.com/podtrace/podtrace/store"
)

// maxFindingContexts bounds the kubeconfig's contexts at findings'
// moments: the most severe are kept.
const maxFindingContexts = 20

// moment is a context at the moment a pod's finding tells of.
type moment struct {
	serve.Moment
	severity explain.Severity
}

// findingMoments replays every recorded pod, one at a time (no lifecycle is
// kept), and returns a moment for each pod with a critical or warning
// finding: when its deletion was requested, for a pod that was still
// terminating when the recording ended, else when its most severe finding's
// first evidence was recorded. The most severe first, then the earliest;
// total counts them all, of which at most maxFindingContexts are returned.
//
// The findings are diff's today (diff.Replay); this is the one place serve
// reads them.
func findingMoments(ctx context.Context, db *store.DB) (out []moment, total int, err error) {
	objs, found, err := scanTrace(db, store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return nil, 0, err
	}
	tc, err := newContext(db, objs)
	if err != nil {
		return nil, 0, err
	}
	for _, p := range found[0] {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		lc, err := loadPod(db, tc, p, nil)
		if err != nil {
			return nil, 0, err
		}
		m, ok, err := findingMoment(db, lc)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			continue
		}
		total++
		out = append(out, m)
		if len(out) > 2*maxFindingContexts {
			out = mostSevere(out)
		}
	}
	return mostSevere(out), total, nil
}

// mostSevere sorts moments, the most severe first, then the earliest, and
// keeps maxFindingContexts of them.
func mostSevere(ms []moment) []moment {
	slices.SortStableFunc(ms, func(a, b moment) int {
		return cmp.Or(cmp.Compare(b.severity, a.severity), a.At.Compare(b.At), cmp.Compare(a.Name, b.Name))
	})
	return ms[:min(len(ms), maxFindingContexts)]
}

// findingMoment is the moment of a pod's most severe finding, if it is
// critical or a warning.
func findingMoment(db *store.DB, lc *explain.Lifecycle) (moment, bool, error) {
	if len(lc.Findings) == 0 || lc.Findings[0].Severity < explain.Warning {
		return moment{}, false, nil
	}
	f := lc.Findings[0] // sorted by severity
	var seq uint64
	var at time.Time
	if lc.Outcome == "Terminating" {
		for _, ph := range lc.Phases {
			if ph.Name == diff.PhaseDeletionRequested {
				seq, at = ph.Seq, ph.Time
				break
			}
		}
	}
	if seq == 0 {
		for _, ev := range f.Evidence {
			if ev.Seq != 0 {
				seq, at = ev.Seq, ev.Time
				break
			}
		}
	}
	// The moment is when the trace shows it: the record's observed time,
	// not the cluster's clock in it (a deletion request's time is the API
	// server's, and may come before the recorder saw it).
	if seq != 0 {
		obs, err := observedAt(db, lc, seq)
		if err != nil {
			return moment{}, false, err
		}
		if !obs.IsZero() {
			at = obs
		}
	}
	if at.IsZero() {
		return moment{}, false, nil
	}
	return moment{
		Moment: serve.Moment{
			Name: fmt.Sprintf("podtrace-%s-%s-%s", f.ID, lc.Namespace, lc.Name),
			At:   at,
			Why:  fmt.Sprintf("%s %s/%s: %s", f.Severity, lc.Namespace, lc.Name, f.Headline),
		},
		severity: f.Severity,
	}, true, nil
}

// observedAt is when the record seq was observed: a step of the pod's, or
// another record (an Event), read from the trace.
func observedAt(db *store.DB, lc *explain.Lifecycle, seq uint64) (time.Time, error) {
	for _, st := range lc.Steps {
		if st.Seq == seq {
			return st.Time, nil
		}
	}
	var at time.Time
	err := db.ScanAfter(seq-1, nil, func(r store.Record) error {
		if r.Seq == seq {
			at = r.Observed
		}
		return store.ErrStop
	})
	return at, err
}

// addFindingContexts adds a context at the moment of each of the most
// severe findings to the kubeconfig serve wrote, once every pod is
// replayed: serve answers meanwhile.
func (o *serveOptions) addFindingContexts(ctx context.Context, db *store.DB, base string, moments []serve.Moment, cred *serve.Credentials) {
	start := time.Now()
	found, total, err := findingMoments(ctx, db)
	// The replay held what report holds (the nodes' histories, every pod's
	// node occupancy: 85 MiB live on the 1M-record benchmark trace); serve
	// needs none of it again.
	debug.FreeOSMemory()
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		fmt.Fprintf(o.streams.ErrOut, "podtrace: warning: the kubeconfig has no contexts at findings' moments: %v\n", err)
		return
	}
	if len(found) == 0 {
		fmt.Fprintf(o.streams.Out, "no pod has a critical or warning finding: no contexts at findings' moments (%s)\n", time.Since(start).Round(time.Millisecond))
		return
	}
	names := map[string]bool{}
	for _, m := range moments {
		names[m.Name] = true
	}
	added := make([]serve.Moment, 0, len(found))
	for _, f := range found {
		m := f.Moment
		// Incarnations of a pod share its name.
		for n := 2; names[m.Name]; n++ {
			m.Name = fmt.Sprintf("%s-%d", f.Name, n)
		}
		names[m.Name] = true
		added = append(added, m)
	}
	if err := writeKubeconfig(o.kubeconfig, base, append(slices.Clip(moments), added...), cred); err != nil {
		fmt.Fprintf(o.streams.ErrOut, "podtrace: warning: %v\n", err)
		return
	}
	more := ""
	if total > len(added) {
		more = fmt.Sprintf(" (the %d most severe of %d)", len(added), total)
	}
	fmt.Fprintf(o.streams.Out, "kubeconfig %s: %s added at findings' moments%s, replayed in %s:\n", o.kubeconfig, plural(len(added), "context"), more, time.Since(start).Round(time.Millisecond))
	printMoments(o.streams, added)
}
