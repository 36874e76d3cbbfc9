package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podtrace/podtrace/store"
)

// PruneLines says what retention pruned from the trace, one line per
// reason, its times written by stamp, for a "Pruned" heading: "by
// retention: 1,204 pods gone before 2026-11-24 04:30:00 UTC (--retain
// 7d), with 3,410 other objects (their events, dependents and owners);
// 25,107 records, 12.3 MiB, the first pod deleted 2026-11-17 02:10:00
// UTC. Their history is not in the trace." None for a trace never
// pruned.
func PruneLines(prunes []store.Prune, stamp func(time.Time) string) []string {
	var out []string
	for _, reason := range []store.PruneReason{store.PruneAge, store.PruneSize} {
		var sum store.Prune
		n := 0
		for _, p := range prunes {
			if p.Reason != reason {
				continue
			}
			n++
			sum.Pods += p.Pods
			sum.Objects += p.Objects
			sum.Records += p.Records
			sum.Bytes += p.Bytes
			if p.Before.After(sum.Before) {
				sum.Before = p.Before
			}
			if !p.OldestGone.IsZero() && (sum.OldestGone.IsZero() || p.OldestGone.Before(sum.OldestGone)) {
				sum.OldestGone = p.OldestGone
			}
			sum.Retain, sum.MaxBytes = p.Retain, p.MaxBytes // the latest session's
		}
		if n == 0 || sum.Objects == 0 {
			continue
		}
		var b strings.Builder
		switch reason {
		case store.PruneAge:
			fmt.Fprintf(&b, "by retention: %s gone before %s (--retain %s)", countOf(sum.Pods, "pod"), stamp(sum.Before), RetainText(sum.Retain))
		default:
			fmt.Fprintf(&b, "for size: %s, the oldest gone, up to %s (--max-size %s)", countOf(sum.Pods, "pod"), stamp(sum.Before), BytesText(sum.MaxBytes))
		}
		if other := sum.Objects - sum.Pods; other > 0 {
			fmt.Fprintf(&b, ", with %s (their events, dependents and owners)", countOf(other, "other object"))
		}
		fmt.Fprintf(&b, "; %s, %s", countOf(sum.Records, "record"), BytesText(sum.Bytes))
		if !sum.OldestGone.IsZero() && sum.Pods > 0 {
			fmt.Fprintf(&b, ", the first pod deleted %s", stamp(sum.OldestGone))
		}
		b.WriteString(". Their history is not in the trace.")
		out = append(out, b.String())
	}
	return out
}

// countOf is Plural with thousands separated: "1,204 pods".
func countOf(n int, noun string) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s + " " + PluralNoun(n, noun)
}

// RetainText writes a retention in days when it has whole ones: "7d",
// "1d12h", "1h30m", "45s", as record --retain reads it.
func RetainText(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		unit string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.unit)
			d -= n * u.d
		}
	}
	if d > 0 || b.Len() == 0 {
		b.WriteString(d.String())
	}
	return b.String()
}

// BytesText writes n bytes like "1.2 MiB".
func BytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
