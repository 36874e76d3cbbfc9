package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/store"
)

func TestGapLines(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 21, 16, 43, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	sessions := []store.Session{
		{ID: 1, Started: at(-60), Stopped: at(100)},
		{ID: 2, Started: at(200), Stopped: at(400)},
	}
	gaps := []store.Gap{
		{Session: 1, Cause: store.GapWatch, Resource: "pods", Start: at(0), End: at(7)},
		{Session: 1, Cause: store.GapWatch, Resource: "events", Start: at(2), End: at(3)},
		{Session: 1, Cause: store.GapWatch, Resource: "pods", Start: at(7), End: at(8)},
		{Session: 1, Cause: store.GapWatch, Resource: "pods", Start: at(9), End: at(11)},
		{Session: 2, Cause: store.GapRecorderDown, Start: at(100), End: at(200)},
		{Session: 2, Cause: store.GapWriteFailed, Start: at(300), End: at(305), Dropped: 1204},
		{Session: 2, Cause: store.GapAPIServer, Start: at(390)}, // open: ends with its session
	}
	got := GapLines(gaps, sessions, stampUTC)
	want := []string{
		"the watch was restarted and pods listed again, 3 times, 2026-12-04 21:16:43 UTC to 2026-12-04 21:16:54 UTC (10s in all)",
		"the watch was restarted and events listed again, 2026-12-04 21:16:45 UTC to 2026-12-04 21:16:46 UTC (1s in all)",
		"no recorder was running, 2026-12-04 21:18:23 UTC to 2026-12-04 21:20:03 UTC (1m40s in all)",
		"records were lost: the trace could not be written (1,204 records), 2026-12-04 21:21:43 UTC to 2026-12-04 21:21:48 UTC (5s in all)",
		"the API server did not answer, 2026-12-04 21:23:13 UTC to 2026-12-04 21:23:23 UTC (10s in all)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("GapLines (-want +got):\n%s", d)
	}
	if got := GapLines(nil, sessions, stampUTC); got != nil {
		t.Errorf("GapLines(no gaps) = %q; want none", got)
	}
}
