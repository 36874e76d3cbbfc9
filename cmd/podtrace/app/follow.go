package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
)

// followInterval is how often --follow reads the trace again.
var followInterval = time.Second

// followPod prints what lands in the trace about the pod of first after it
// was printed: each new revision with its actors and changes, each new
// event (kubectl get -w, with diffs); for explain, the findings again when
// they change. It reads the trace every followInterval, opening it
// read-only for the read alone, so the recorder writing it is never held
// up, and returns when ctx is done (Ctrl-C: exit 0).
func (o *podOptions) followPod(ctx context.Context, first *explain.Lifecycle, explain bool) error {
	// The pod shown first is the one followed, by its UID, even if a
	// workload or a name would pick another later.
	p := *o
	p.namespace, p.pod, p.uid = first.Namespace, first.Name, first.UID
	fmt.Fprintf(o.streams.ErrOut, "podtrace: following pod %s/%s (uid %s) in %s, read every %s; Ctrl-C stops\n",
		first.Namespace, first.Name, first.UID, o.db, followInterval)
	at := report.FollowEnd(first)
	findings := findingKeys(first)
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		lc, err := p.lifecycle()
		if err != nil {
			return fmt.Errorf("follow: %w", err)
		}
		if at, err = report.Follow(o.streams.Out, lc, o.textOptions(), at); err != nil {
			return err
		}
		if k := findingKeys(lc); explain && k != findings {
			findings = k
			fmt.Fprintf(o.streams.Out, "\n-- the findings changed --\n")
			if err := report.Explain(o.streams.Out, lc, o.textOptions()); err != nil {
				return err
			}
		}
	}
}

// findingKeys says which findings a lifecycle has, to tell when they change.
func findingKeys(lc *explain.Lifecycle) string {
	var b strings.Builder
	for _, f := range lc.Findings {
		b.WriteString(f.ID + "\x00" + f.Headline + "\x00")
	}
	return b.String()
}
