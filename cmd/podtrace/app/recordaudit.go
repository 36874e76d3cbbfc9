package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync/atomic"
	"time"

	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer/auditlog"
)

// auditHold is how long record holds an audit event it cannot link to a
// recorded pod yet: the event may be read before the informer delivers the
// pod. After that the event is dropped (and counted).
const auditHold = 5 * time.Second

// maxAuditHeld bounds the events held at once; the oldest go first.
const maxAuditHeld = 20000

// auditFollower follows the API server's audit log while record runs and
// adds the events about the recorded pods to the trace, through the same
// Writer as the tracer's records. Lines are parsed as import parses them
// (auditlog.Parse); the pods come from the records the recording writes.
type auditFollower struct {
	path      string
	tail      *auditlog.Tailer
	pods      *podIndex
	namespace string // the recording's --namespace; empty: all
	add       func([]store.Record)
	warn      func(string)
	now       func() time.Time

	held   []heldEvent
	out    []store.Record
	kept   int
	skip   map[string]int
	warned map[string]int

	// The counts so far, for /metrics: the follower's goroutine updates
	// them after each poll.
	linesRead, eventsKept, linesSkipped atomic.Int64
}

// heldEvent is an audit event waiting for its pod.
type heldEvent struct {
	ev      auditlog.Event
	line    []byte
	expires time.Time
}

type auditFollowerOptions struct {
	Path      string
	Pods      *podIndex
	Namespace string
	Add       func([]store.Record) // hands records to the trace's writer
	Warn      func(string)
}

func newAuditFollower(o auditFollowerOptions) (*auditFollower, error) {
	f := &auditFollower{path: o.Path, pods: o.Pods, namespace: o.Namespace, add: o.Add, warn: o.Warn, now: time.Now,
		skip: map[string]int{}, warned: map[string]int{}}
	tail, err := auditlog.NewTailer(auditlog.TailOptions{Path: o.Path, Warn: o.Warn})
	if err != nil {
		return nil, fmt.Errorf("follow audit log: %w", err)
	}
	f.tail = tail
	return f, nil
}

// run follows the log until ctx is done; then call finish.
func (f *auditFollower) run(ctx context.Context, every time.Duration) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := f.tail.Poll(f.line); err != nil {
			return err
		}
		f.retry(false)
		f.send()
		f.publish()
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// finish reads the rest of the log, links or drops the events it holds and
// closes the file: run's last step, once the tracer has written its last
// records, so that every recorded pod is known.
func (f *auditFollower) finish() error {
	err := f.tail.Poll(f.line)
	f.tail.Finish()
	f.retry(true)
	f.send()
	f.publish()
	if cerr := f.tail.Close(); err == nil {
		err = cerr
	}
	return err
}

// want skips the events about pods outside the recorded namespace. The
// pods the selector leaves out are known only by not being recorded: their
// events wait for them, then are dropped.
func (f *auditFollower) want(namespace, _ string) string {
	if f.namespace != "" && namespace != f.namespace {
		return "pod not in the recorded namespace"
	}
	return ""
}

// line handles one line of the log.
func (f *auditFollower) line(b []byte) error {
	ev, skip := auditlog.Parse(b, f.want)
	if skip != nil {
		f.skip[skip.Reason]++
		if skip.Warning != "" {
			f.warnf(skip.Reason, "%s: %s", f.path, skip.Warning)
		}
		return nil
	}
	if f.link(ev, b, false) {
		return nil
	}
	if len(f.held) >= maxAuditHeld {
		f.skip["pod not recorded (too many events waiting for their pod)"]++
		f.held = f.held[1:]
	}
	f.held = append(f.held, heldEvent{ev: ev, line: bytes.Clone(b), expires: f.now().Add(auditHold)})
	return nil
}

// link turns ev into a record if its pod is recorded, and says so. Not
// final, it also declines an event whose pod was deleted before it: the
// informer may not have delivered the pod's next incarnation yet.
func (f *auditFollower) link(ev auditlog.Event, b []byte, final bool) bool {
	if ev.Collection {
		// Tied to the pods its response listed, or to those of its
		// namespace then; with selectors and no response, only import
		// (which reads the pods' labels in the trace) ties it.
		uids, ok, _ := f.pods.collection(&ev, nil)
		if ok {
			f.out = append(f.out, ev.RecordFor(bytes.Clone(bytes.TrimSpace(b)), uids))
		}
		return ok
	}
	pod, gone, ok := f.pods.resolve(ev.Namespace, ev.Name, ev.UID, ev.Time)
	if !ok || (gone && !final) {
		return false
	}
	f.out = append(f.out, ev.Record(b, pod.UID))
	return true
}

// retry links the held events whose pods are now recorded and, once they
// have waited long enough (or final), drops the others.
func (f *auditFollower) retry(final bool) {
	now := f.now()
	kept := f.held[:0]
	for _, h := range f.held {
		last := final || !now.Before(h.expires)
		if f.link(h.ev, h.line, last) {
			continue
		}
		if last {
			f.skip["pod not recorded (not in the recording after "+auditHold.String()+")"]++
			continue
		}
		kept = append(kept, h)
	}
	clear(f.held[len(kept):])
	f.held = kept
}

// send hands the linked records to the writer.
func (f *auditFollower) send() {
	if len(f.out) == 0 {
		return
	}
	f.kept += len(f.out)
	f.add(f.out)
	f.out = nil // the writer keeps the slice's records
}

// publish updates the counts /metrics reads.
func (f *auditFollower) publish() {
	f.linesRead.Store(int64(f.tail.Stats().Lines))
	f.eventsKept.Store(int64(f.kept))
	skipped := 0
	for _, n := range f.skip {
		skipped += n
	}
	f.linesSkipped.Store(int64(skipped))
}

// warnf warns at most 5 times per reason (the reason the summary counts
// the line under); the summary counts them all.
func (f *auditFollower) warnf(reason, format string, args ...any) {
	f.warned[reason]++
	if f.warned[reason] > 5 {
		return
	}
	f.warn(fmt.Sprintf(format, args...))
	if f.warned[reason] == 5 {
		f.warn(fmt.Sprintf("no more warnings about lines skipped for %q: the summary counts them all", reason))
	}
}

// summary prints what the follower read and kept.
func (f *auditFollower) summary(w io.Writer) {
	st := f.tail.Stats()
	if st.Dropped > 0 {
		f.skip["partial or overlong line"] = st.Dropped
	}
	skipped := 0
	for _, n := range f.skip {
		skipped += n
	}
	var rotated string
	if st.Rotations+st.Truncations > 0 {
		rotated = fmt.Sprintf(", followed %s and %s", plural(st.Rotations, "rotation"), plural(st.Truncations, "truncation"))
	}
	fmt.Fprintf(w, "audit log %s: %s (%s)%s: %s kept, %d skipped\n",
		f.path, plural(st.Lines, "line"), report.BytesText(st.Bytes), rotated, plural(f.kept, "event"), skipped)
	reasons := make([]string, 0, len(f.skip))
	for r := range f.skip {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "  skipped %d: %s\n", f.skip[r], r)
	}
}

// plural formats n things: "1 rotation", "2 rotations".
func plural[N int | int64](n N, thing string) string { return report.Plural(n, thing) }
