package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/otlp"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer"
)

// otlpStream sends, while record records, the trace of each pod that ends:
// deleted, or quiet (no new revision) for its quiet time. It sees the
// records as the tracer hands them to the trace (wrap), keeps a few words
// per pod (when it last changed, whether it waits or was sent), and reads
// the pods it sends back from the trace file: what waits to be sent is a
// queue of UIDs, bounded; past the bound, pods are dropped and counted.
// Nothing it does blocks the recording: the tracer's writes only take a
// lock to note the pods; reading, replaying and sending happen on a
// goroutine of its own, which retries a backend that does not answer.
type otlpStream struct {
	path   string
	client *otlp.Client
	opts   otlp.Options
	quiet  time.Duration
	bound  int
	warn   func(string)
	now    func() time.Time

	finish  func(*explain.Lifecycle) // redacts a lifecycle; nil under --no-redact
	objects *redact.Redactor         // redacts labels; nil under --no-redact

	mu    sync.Mutex
	pods  map[string]*streamedPod // by UID
	queue []string                // UIDs waiting, oldest first; the sender's batch at the front
	wake  chan struct{}
	st    otlpStreamStats
	// dropping: the queue was full when a pod ended, and has not had
	// room since.
	dropping bool

	stop     chan struct{} // closed by finishAndReport
	done     chan struct{} // closed when the sender has returned
	finished sync.Once
}

// streamedPod is what otlpStream keeps of a recorded pod.
type streamedPod struct {
	// last is when its last revision was observed.
	last time.Time
	// ended: deleted; it is forgotten once sent (or dropped).
	ended bool
	// queued: its UID is in the queue.
	queued bool
	// sent: sent, or dropped, since its last revision: not again until it
	// changes.
	sent bool
	// hold: a quiet pod found terminating within its grace period (and
	// explain's slack past it) is not sent until then, when what it is
	// (gone, or stuck) is known; zero when not held.
	hold time.Time
}

// otlpStreamStats are the stream's counters, for /metrics and the summary.
type otlpStreamStats struct {
	SentPods, SentSpans int
	// Dropped pods ended while the queue was full.
	Dropped int
	// NotFound pods were gone from the trace when read (pruned).
	NotFound int
	// SendErrors counts failed requests, retries included.
	SendErrors int
	Queued     int
	LastSent   time.Time
	Failing    error
	FailedAt   time.Time
}

// Send batching and retrying.
const (
	// streamGather is how long the sender waits after a pod ends for more
	// to end, so that it reads the trace once for several.
	streamGather = 2 * time.Second
	// streamBatch bounds the pods read from the trace at once.
	streamBatch = 100
	// streamRetryMax bounds the wait between tries of a backend that does
	// not answer: it is found again within seconds of coming back.
	streamRetryMax = 5 * time.Second
	// streamDrain is how long record, stopping, keeps trying to send the
	// pods still queued.
	streamDrain = 10 * time.Second
)

func newOTLPStream(path string, client *otlp.Client, opts otlp.Options, quiet time.Duration, bound int, red *redactFlags, warn func(string)) *otlpStream {
	s := &otlpStream{path: path, client: client, opts: opts, quiet: quiet, bound: bound, warn: warn, now: time.Now,
		pods: map[string]*streamedPod{}, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if !red.off {
		s.finish, s.objects = red.forWorker(), red.objects()
	}
	return s
}

// wrap returns a sink that notes the pods' records for the stream, then
// hands them to sink.
func (s *otlpStream) wrap(sink tracer.GapSink) tracer.GapSink {
	return &streamSink{GapSink: sink, s: s}
}

type streamSink struct {
	tracer.GapSink
	s *otlpStream
}

func (w *streamSink) Write(recs []store.Record) error {
	err := w.GapSink.Write(recs)
	w.s.observe(recs)
	return err
}

// observe notes the pods' revisions; a deletion ends a pod.
func (s *otlpStream) observe(recs []store.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		if r.Kind != "Pod" {
			continue
		}
		p := s.pods[r.UID]
		if p == nil {
			p = &streamedPod{}
			s.pods[r.UID] = p
		}
		if r.Observed.After(p.last) {
			p.last = r.Observed
		}
		p.sent = false
		if r.Type == store.Deleted || r.Type == store.DeletedUnknown {
			p.ended = true
			s.enqueue(r.UID, p)
		}
	}
}

// enqueue queues a pod that ended, or drops it if the queue is full. It
// is called with s.mu held.
func (s *otlpStream) enqueue(uid string, p *streamedPod) {
	if p.queued {
		return // read when its turn comes, as it is then
	}
	if len(s.queue) >= s.bound {
		if !s.dropping {
			s.dropping = true
			s.warn(fmt.Sprintf("%d pods wait to be sent to %s (--otlp-queue): dropping the traces of the pods that end until it takes them (counted; podtrace export --otlp sends them from the trace later)",
				len(s.queue), s.client.Endpoint()))
		}
		s.st.Dropped++
		s.st.Queued = len(s.queue)
		p.sent = true
		if p.ended {
			delete(s.pods, uid)
		}
		return
	}
	s.queue = append(s.queue, uid)
	s.st.Queued = len(s.queue)
	p.queued = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// quietScan queues the pods quiet for the quiet time, not sent since
// their last revision, while the queue is less than half full: a quiet
// pod that does not fit waits for a later scan, and is never dropped (it
// is quiet, nothing of it is lost by waiting); the other half is room for
// the pods that are deleted meanwhile. Every pod of a recording goes quiet
// at once, the quiet time after the recorder's first list: a cluster of
// more pods than the queue holds is sent in turns, not dropped.
func (s *otlpStream) quietScan() {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, p := range s.pods {
		if len(s.queue) >= s.bound/2 {
			return
		}
		if !p.ended && !p.queued && !p.sent && now.Sub(p.last) >= s.quiet && !now.Before(p.hold) {
			s.enqueue(uid, p)
		}
	}
}

// stats returns the counters.
func (s *otlpStream) stats() otlpStreamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Queued = len(s.queue)
	return st
}

// run sends until finish, then tries for streamDrain more to send what
// is queued.
func (s *otlpStream) run() {
	defer close(s.done)
	scan := time.NewTicker(min(max(s.quiet/10, 100*time.Millisecond), 10*time.Second))
	defer scan.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	// The quiet pods are found while a batch is being sent or retried.
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		for {
			select {
			case <-scan.C:
				s.quietScan()
			case <-ctx.Done():
				return
			}
		}
	}()
	for ctx.Err() == nil {
		select {
		case <-s.wake:
		case <-ctx.Done():
		}
		sleep(ctx, streamGather)
		s.sendQueued(ctx)
	}
	<-scanned
	drain, stopDrain := context.WithTimeout(context.Background(), streamDrain)
	defer stopDrain()
	s.sendQueued(drain)
}

// finishAndReport stops the stream, once the trace is complete: it sends
// what is queued, trying for streamDrain at most, and says on w what it
// sent. Only its first call does anything.
func (s *otlpStream) finishAndReport(w io.Writer) {
	s.finished.Do(func() { s.finishOnce(w) })
}

func (s *otlpStream) finishOnce(w io.Writer) {
	if n := s.stats().Queued; n > 0 {
		fmt.Fprintf(w, "podtrace: sending the traces of %s still queued to %s (for up to %s)\n", plural(n, "pod"), s.client.Endpoint(), streamDrain)
	}
	close(s.stop)
	<-s.done
	s.client.Close(context.Background())
	st := s.stats()
	fmt.Fprintf(w, "sent the traces of %s (%s) to %s (%s) as cluster %q",
		plural(st.SentPods, "pod"), plural(st.SentSpans, "span"), s.client.Endpoint(), s.client.Protocol(), s.opts.Cluster)
	if st.SendErrors > 0 {
		fmt.Fprintf(w, "; %s failed and %s retried", plural(st.SendErrors, "request"), pluralIt(st.SendErrors))
	}
	fmt.Fprintln(w)
	if st.Dropped > 0 || st.Queued > 0 {
		fmt.Fprintf(w, "not sent: %d dropped while the queue (--otlp-queue %d) was full, %d still queued at the end; podtrace export --otlp sends them from %s\n",
			st.Dropped, s.bound, st.Queued, s.path)
	}
}

func pluralIt(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// sleep waits for d or ctx.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// sendQueued sends the queued pods, a batch at a time, retrying a batch
// that fails until it goes or ctx is done.
func (s *otlpStream) sendQueued(ctx context.Context) {
	wait := time.Second
	for ctx.Err() == nil {
		s.mu.Lock()
		batch := append([]string(nil), s.queue[:min(len(s.queue), streamBatch)]...)
		s.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		loaded, err := s.load(batch)
		if err != nil {
			// The trace cannot be read now (a damaged file stops the
			// recording itself): the pods wait.
			s.warn(fmt.Sprintf("OTLP: cannot read %s to send the pods that ended: %v; retrying", s.path, err))
			sleep(ctx, wait)
			wait = min(2*wait, streamRetryMax)
			continue
		}
		var spans tracetest.SpanStubs
		for _, l := range loaded {
			spans = append(spans, l.spans...)
		}
		ok := len(spans) == 0
		for !ok && ctx.Err() == nil {
			if ok = s.send(ctx, spans) == nil; !ok {
				sleep(ctx, wait)
				wait = min(2*wait, streamRetryMax)
			}
		}
		if !ok {
			return // ctx is done; the batch stays queued
		}
		wait = time.Second
		if !s.sent(batch, loaded, len(spans)) {
			return // none was written yet: after the next wait
		}
	}
}

// send sends one batch's spans, in requests of a bounded size.
func (s *otlpStream) send(ctx context.Context, spans tracetest.SpanStubs) error {
	b := otlp.NewBatcher(s.client)
	var err error
	for i := 0; i < len(spans) && err == nil; {
		// A pod's spans are consecutive and share their trace id.
		j := i + 1
		for j < len(spans) && spans[j].SpanContext.TraceID() == spans[i].SpanContext.TraceID() {
			j++
		}
		err = b.Add(ctx, spans[i:j])
		i = j
	}
	if err == nil {
		err = b.Flush(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.st.Failing == nil {
			s.st.FailedAt = s.now()
			s.warn(fmt.Sprintf("OTLP: %v; the pods that end wait (up to --otlp-queue %d) and are retried", err, s.bound))
		}
		s.st.Failing = err
		s.st.SendErrors++
		return err
	}
	if s.st.Failing != nil {
		s.warn(fmt.Sprintf("OTLP: %s takes traces again after %s", s.client.Endpoint(), s.now().Sub(s.st.FailedAt).Round(time.Second)))
		s.st.Failing = nil
	}
	s.st.LastSent = s.now()
	return nil
}

// loadedPod is one queued pod as read from the trace.
type loadedPod struct {
	// read is when its last revision in the trace was observed; zero if
	// it is not in the trace (pruned).
	read time.Time
	// ready: its revision that queued it is in the trace.
	ready bool
	// hold, when not zero: a quiet pod still within its grace period and
	// the slack past it, not sent now (streamedPod.hold).
	hold  time.Time
	spans tracetest.SpanStubs
}

// load reads the pods of batch from the trace and makes their traces.
func (s *otlpStream) load(batch []string) (map[string]*loadedPod, error) {
	s.mu.Lock()
	want := make(map[string]time.Time, len(batch))
	ended := make(map[string]bool, len(batch))
	for _, uid := range batch {
		if p := s.pods[uid]; p != nil {
			want[uid], ended[uid] = p.last, p.ended
		}
	}
	s.mu.Unlock()
	db, err := openTrace(s.path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	filters := make([]store.ObjectFilter, len(batch))
	for i, uid := range batch {
		filters[i] = store.ObjectFilter{Kind: "Pod", UID: uid}
	}
	ctxObjs, found, err := scanTrace(db, filters...)
	if err != nil {
		return nil, err
	}
	tc, err := newContext(db, ctxObjs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*loadedPod, len(batch))
	for i, uid := range batch {
		l := &loadedPod{}
		out[uid] = l
		if len(found[i]) == 0 {
			continue
		}
		obj := found[i][0]
		l.read = obj.LastObserved
		if l.read.Before(want[uid]) {
			continue // its last revision is not written yet
		}
		l.ready = true
		// The recorder is observing the cluster now: the recording ends
		// now for the pod, not at its last flush (the session's Alive).
		now := s.now()
		finish := func(lc *explain.Lifecycle) {
			if !ended[uid] {
				l.hold = settles(lc, now)
			}
			if s.finish != nil {
				s.finish(lc)
			}
		}
		spans, ok, err := otlpPod(db, tc, obj, nil, finish, s.objects, s.opts, now)
		if err != nil {
			return nil, err
		}
		if ok && l.hold.IsZero() {
			l.spans = spans
		}
	}
	return out, nil
}

// sent takes a batch off the queue: its pods are sent, gone from the
// trace, or not written yet (queued again, at the end). It reports
// whether any was written.
func (s *otlpStream) sent(batch []string, loaded map[string]*loadedPod, spans int) (any bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = s.queue[len(batch):]
	s.st.SentSpans += spans
	var again []string
	for _, uid := range batch {
		p, l := s.pods[uid], loaded[uid]
		if p == nil {
			continue
		}
		p.queued = false
		switch {
		case l.read.IsZero():
			s.st.NotFound++
			delete(s.pods, uid)
		case !l.ready:
			p.queued = true
			again = append(again, uid)
		case !l.hold.IsZero():
			// Within its grace period: read again once it is over, unless
			// it changes or ends first.
			p.hold = l.hold
		default:
			any = true
			s.st.SentPods++
			if p.last.After(l.read) {
				// It changed while it was read and sent: again, once it
				// ends again.
				if p.ended {
					again = append(again, uid)
					p.queued = true
				}
				continue
			}
			p.sent = true
			if p.ended {
				delete(s.pods, uid)
			}
		}
	}
	s.queue = append(s.queue, again...)
	s.st.Queued = len(s.queue)
	if len(s.queue) < s.bound {
		s.dropping = false
	}
	if len(again) > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return any
}

// settles returns when a pod replayed at now, terminating, will have
// gone past its grace period and the slack explain allows after it
// (explain.PastGrace, explain.TerminationSlack): until then a quiet pod is
// not stuck, only going, and its trace would say neither. Zero for a pod
// not terminating, or already past it.
func settles(lc *explain.Lifecycle, now time.Time) time.Time {
	if lc.Outcome != "Terminating" {
		return time.Time{}
	}
	past := explain.PastGrace(lc.Lifecycle)
	if past > explain.TerminationSlack {
		return time.Time{}
	}
	return now.Add(explain.TerminationSlack - past + time.Second)
}

// errNoCluster says record --otlp needs a cluster name.
var errNoCluster = errors.New("--cluster-name is needed with --otlp: the kubeconfig names no context (in a pod, none does), and the traces must say which cluster they are from")

// otlpCollector reads record --otlp's counters at each scrape; it reports
// nothing without --otlp.
type otlpCollector struct{ s *recordServer }

var (
	descOTLPSent = prometheus.NewDesc("podtrace_otlp_pods_sent_total",
		"Pods whose trace record --otlp sent (a pod sent when quiet and again when it ends counts twice).", nil, nil)
	descOTLPSpans = prometheus.NewDesc("podtrace_otlp_spans_sent_total",
		"Spans record --otlp sent.", nil, nil)
	descOTLPDropped = prometheus.NewDesc("podtrace_otlp_pods_dropped_total",
		"Pods that ended while --otlp-queue pods already waited for the endpoint: their trace is not sent (podtrace export --otlp sends it from the trace).", nil, nil)
	descOTLPQueued = prometheus.NewDesc("podtrace_otlp_pods_queued",
		"Pods that ended and wait to be sent.", nil, nil)
	descOTLPErrors = prometheus.NewDesc("podtrace_otlp_send_errors_total",
		"Failed OTLP requests, each retry counted.", nil, nil)
	descOTLPNotFound = prometheus.NewDesc("podtrace_otlp_pods_not_found_total",
		"Pods that ended but were gone from the trace when read (pruned by --retain or --max-size first).", nil, nil)
	descOTLPLastSent = prometheus.NewDesc("podtrace_otlp_seconds_since_last_send",
		"Seconds since a request last went through (-1 before the first).", nil, nil)
)

func (c *otlpCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOTLPSent, descOTLPSpans, descOTLPDropped, descOTLPQueued, descOTLPErrors, descOTLPNotFound, descOTLPLastSent} {
		ch <- d
	}
}

func (c *otlpCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	stream := c.s.otlp
	now := c.s.now()
	c.s.mu.Unlock()
	if stream == nil {
		return
	}
	st := stream.stats()
	counter := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	counter(descOTLPSent, st.SentPods)
	counter(descOTLPSpans, st.SentSpans)
	counter(descOTLPDropped, st.Dropped)
	counter(descOTLPErrors, st.SendErrors)
	counter(descOTLPNotFound, st.NotFound)
	ch <- prometheus.MustNewConstMetric(descOTLPQueued, prometheus.GaugeValue, float64(st.Queued))
	age := -1.0
	if !st.LastSent.IsZero() {
		age = now.Sub(st.LastSent).Seconds()
	}
	ch <- prometheus.MustNewConstMetric(descOTLPLastSent, prometheus.GaugeValue, age)
}
