package tracer

import (
	"fmt"
	"sync"
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
	// kinds are the watched kinds by Kind, for their revision counts; set
	// by New and read-only after.
	kinds map[string]*kind
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
		if k := c.kinds[r.Kind]; k != nil {
			k.revisions.Add(1)
		}
	}
	c.revisions.Add(int64(len(batch)))
	c.lastWrite.Store(now.UnixNano())
}

// queue hands records from the handlers to the writer. A channel would wake
// the writer for every record (a revision is a few microseconds of work for
// it, the wake-up about as much again, on both sides); the queue wakes it
// for the first record of a batch, to start the flush timer, and when a
// batch is full. Handlers wait while a full batch is queued and the writer
// is still writing the previous one, as they waited on the channel.
type queue struct {
	mu     sync.Mutex
	room   sync.Cond // signalled when the writer takes the records
	recs   []store.Record
	gaps   []store.Gap
	size   int  // a batch
	closed bool // no more records: push drops them
	wake   chan struct{}
}

func newQueue(size int) *queue {
	q := &queue{size: size, wake: make(chan struct{}, 1)}
	q.room.L = &q.mu
	return q
}

// push queues r; false if the queue is closed and r was dropped.
func (q *queue) push(r store.Record) bool {
	q.mu.Lock()
	for len(q.recs) >= q.size && !q.closed {
		q.room.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.recs = append(q.recs, r)
	n := len(q.recs)
	q.mu.Unlock()
	if n == 1 || n == q.size {
		q.signal()
	}
	return true
}

// pushGap queues g; it is dropped if the queue is closed.
func (q *queue) pushGap(g store.Gap) {
	q.mu.Lock()
	if !q.closed {
		q.gaps = append(q.gaps, g)
	}
	q.mu.Unlock()
	q.signal()
}

// takeGaps takes the queued gaps.
func (q *queue) takeGaps() []store.Gap {
	q.mu.Lock()
	defer q.mu.Unlock()
	gaps := q.gaps
	q.gaps = nil
	return gaps
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// close makes push drop its records and wakes the writer for the last
// batch; what is queued stays to be taken.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.room.Broadcast()
	q.mu.Unlock()
	q.signal()
}

// take takes the queued records if they are a batch, or if the queue is
// closed, or if any is queued and due is set; queued is how many wait when
// it takes none.
func (q *queue) take(due bool) (batch []store.Record, ok bool, queued int, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.recs)
	if n >= q.size || q.closed || due && n > 0 {
		batch, q.recs = q.recs, make([]store.Record, 0, min(q.size, max(n, 64)))
		q.room.Broadcast()
		return batch, true, 0, q.closed
	}
	return nil, false, n, false
}

// write hands the queued records to sink in batches of BatchSize, or
// whatever has waited FlushInterval, and the queued gaps to sink if it is a
// GapSink, until q is closed; then it writes what is left and returns. After a failed write it calls fail (which stops the
// informers), closes q so that no handler waits, and returns the error.
func (t *Tracer) write(q *queue, sink Sink, fail func()) error {
	timer := time.NewTimer(t.opts.FlushInterval)
	timer.Stop()
	defer timer.Stop()
	timing := false // the timer runs for the records queued
	var err error
	for {
		due := false
		select {
		case <-q.wake:
		case <-timer.C:
			due, timing = true, false
		}
		// Gaps first: the records queued after a gap was are observed
		// after it.
		gaps := q.takeGaps()
		if gs, isGapSink := sink.(GapSink); isGapSink && err == nil {
			for _, g := range gaps {
				gs.Gap(g)
			}
		}
		batch, ok, queued, closed := q.take(due)
		if !ok {
			if queued > 0 && !timing {
				timer.Reset(t.opts.FlushInterval)
				timing = true
			}
			continue
		}
		if timing {
			timer.Stop()
			timing = false
		}
		if err == nil && len(batch) > 0 {
			if err = sink.Write(batch); err != nil {
				err = fmt.Errorf("write %d records: %w", len(batch), err)
				fail()
				q.close()
			} else {
				t.stats.count(batch, t.clock.Now())
			}
		}
		if closed {
			if gs, isGapSink := sink.(GapSink); isGapSink && err == nil {
				for _, g := range q.takeGaps() {
					gs.Gap(g)
				}
			}
			return err
		}
	}
}
