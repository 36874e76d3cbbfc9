package tracer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/podtrace/podtrace/store"
)

// counters feed Stats; only the writer goroutine updates them.
type counters struct {
	objects, pods, events, revisions atomic.Int64
	lastWrite                        atomic.Int64 // unix nanoseconds
	// live holds the UIDs written and not deleted yet, to count objects
	// once each.
	live map[string]struct{}
}

// count updates the counters after the sink accepted batch.
func (c *counters) count(batch []store.Record, now time.Time) {
	if c.live == nil {
		c.live = map[string]struct{}{}
	}
	for i := range batch {
		r := &batch[i]
		if _, ok := c.live[r.UID]; !ok {
			c.objects.Add(1)
			switch r.Kind {
			case "Pod":
				c.pods.Add(1)
			case "Event":
				c.events.Add(1)
			}
			c.live[r.UID] = struct{}{}
		}
		if isDeletion(r.Type) {
			delete(c.live, r.UID)
		}
	}
	c.revisions.Add(int64(len(batch)))
	c.lastWrite.Store(now.UnixNano())
}

// write hands the records from in to sink in batches of BatchSize, or
// whatever has waited FlushInterval, until in is closed, or abandon is closed
// (then it takes what is queued in in); then it writes the last batch and
// returns. After a failed write it calls fail (which stops the informers),
// keeps draining in so that no handler blocks, and returns the error.
func (t *Tracer) write(in <-chan store.Record, abandon <-chan struct{}, sink Sink, fail func()) error {
	size := t.opts.BatchSize
	batch := make([]store.Record, 0, size)
	timer := time.NewTimer(t.opts.FlushInterval)
	timer.Stop()
	defer timer.Stop()
	var err error
	flush := func() {
		timer.Stop()
		if len(batch) == 0 {
			return
		}
		if err == nil {
			if err = sink.Write(batch); err != nil {
				err = fmt.Errorf("write %d records: %w", len(batch), err)
				fail()
			} else {
				t.stats.count(batch, t.clock.Now())
			}
		}
		batch = make([]store.Record, 0, size)
	}
	for {
		select {
		case r, ok := <-in:
			if !ok {
				flush()
				return err
			}
			if len(batch) == 0 {
				timer.Reset(t.opts.FlushInterval)
			}
			batch = append(batch, r)
			if len(batch) >= size {
				flush()
			}
		case <-timer.C:
			flush()
		case <-abandon:
			for {
				select {
				case r := <-in:
					batch = append(batch, r)
				default:
					flush()
					return err
				}
			}
		}
	}
}
