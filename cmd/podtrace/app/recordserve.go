package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer"
)

// readyFlushAge: /readyz says ready only while a flush has left nothing
// pending within the last 3 flush intervals. A trace that a full disk, a
// quota or a reader keeps from taking the records goes unready after that.
const readyFlushAge = 3 * tracer.DefaultFlushInterval

// readyServerDown: /readyz says unready once the API server has not
// answered for this long (the recorder warns then, too).
const readyServerDown = 5 * time.Second

// recordServer serves record --listen: /metrics, /healthz and /readyz. What
// it reports on is set as the recording comes up; until then /readyz says
// what it waits for.
type recordServer struct {
	out string // the trace file
	now func() time.Time

	mu    sync.Mutex
	host  string          // the API server, for messages
	tr    recordingTracer // nil until the tracer is built
	sink  *traceSink      // nil until the session begins
	audit *auditFollower  // nil without --audit-log
	// writer is the trace's, for its retention counters; nil until it is
	// made. waiting says what the recorder waits for before it records
	// (--wait-for-lease); "" when it does not.
	writer  pruneCounter
	waiting string
	// otlp is record --otlp's stream, for its counters; nil without it.
	otlp *otlpStream

	srv *http.Server
	ln  net.Listener
}

// recordingTracer is what the server reads of a *tracer.Tracer.
type recordingTracer interface {
	Ready() <-chan struct{}
	Stats() tracer.Stats
}

// set tells the server what to report on, as the recording comes up.
func (s *recordServer) set(host string, tr recordingTracer, sink *traceSink, audit *auditFollower) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if host != "" {
		s.host = host
	}
	if tr != nil {
		s.tr = tr
	}
	if sink != nil {
		s.sink = sink
	}
	if audit != nil {
		s.audit = audit
	}
}

// pruneCounter is what the server reads of a *store.Writer.
type pruneCounter interface {
	PruneStats() store.PruneStats
}

// setWriter tells the server the trace's writer, for its retention counters.
func (s *recordServer) setWriter(w pruneCounter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writer = w
}

// setOTLP tells the server record --otlp's stream, for its counters.
func (s *recordServer) setOTLP(st *otlpStream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.otlp = st
}

// setWaiting tells the server what the recorder waits for before it
// records; "" once it does not.
func (s *recordServer) setWaiting(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = why
}

func (s *recordServer) parts() (recordingTracer, *traceSink, *auditFollower) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr, s.sink, s.audit
}

func (s *recordServer) apiServer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host
}

// listen binds addr; serve then serves on it. A port of 0 takes a free one:
// Addr says which.
func listen(addr, out string) (*recordServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	s := &recordServer{out: out, now: time.Now, ln: ln}
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	return s, nil
}

// Addr is the address listened on.
func (s *recordServer) Addr() string { return s.ln.Addr().String() }

// serve serves until shutdown.
func (s *recordServer) serve() {
	go func() { _ = s.srv.Serve(s.ln) }()
}

// shutdown stops serving, waiting a little for the requests in flight.
func (s *recordServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
}

func (s *recordServer) handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		&recordCollector{s: s},
		&otlpCollector{s: s},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		// The process answers: the recorder's own failures (a trace that
		// cannot be written, an API server away) are readiness, which a
		// restart would not cure.
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := s.unready(); why != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: "+why)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// unready says why the recorder is not ready; "" when it is: every
// informer has synced, the last flush that left nothing pending is recent,
// and the API server answers.
func (s *recordServer) unready() string {
	tr, sink, _ := s.parts()
	if tr == nil || sink == nil {
		s.mu.Lock()
		waiting := s.waiting
		s.mu.Unlock()
		if waiting != "" {
			return waiting
		}
		return "recording has not started"
	}
	select {
	case <-tr.Ready():
	default:
		return "the initial lists have not synced yet"
	}
	now := s.now()
	var why []string
	st := sink.status()
	switch {
	case st.Failing != nil:
		why = append(why, fmt.Sprintf("cannot write %s for %s (%d records waiting): %v",
			s.out, now.Sub(st.FailedSince).Truncate(time.Second), st.Pending, st.Failing))
	case st.Flushed.IsZero() || now.Sub(st.Flushed) > readyFlushAge:
		last := "never"
		if !st.Flushed.IsZero() {
			last = now.Sub(st.Flushed).Truncate(time.Second).String() + " ago"
		}
		why = append(why, fmt.Sprintf("%d records wait for %s: the last complete flush was %s (a reader may hold the file)", st.Pending, s.out, last))
	}
	if ts := tr.Stats(); !ts.APIServerDown.IsZero() && now.Sub(ts.APIServerDown) >= readyServerDown {
		why = append(why, fmt.Sprintf("the API server at %s has not answered for %s", s.apiServer(), now.Sub(ts.APIServerDown).Truncate(time.Second)))
	}
	return strings.Join(why, "; ")
}

// recordCollector reads the recorder's counters at each scrape: the
// tracer's, the sink's, the audit follower's and the trace file's size.
type recordCollector struct{ s *recordServer }

var (
	descInfo = prometheus.NewDesc("podtrace_info",
		"The recorder's version (always 1).", []string{"version"}, nil)
	descReady = prometheus.NewDesc("podtrace_ready",
		"1 when /readyz says ready: every informer synced, the last flush recent, the API server answering.", nil, nil)
	descRevisions = prometheus.NewDesc("podtrace_revisions_total",
		"Revisions recorded (records written), by kind.", []string{"kind"}, nil)
	descWatched = prometheus.NewDesc("podtrace_resource_watched",
		"1 for each resource the recorder watches, 0 for one it may not list and watch (see its warning).", []string{"resource"}, nil)
	descLists = prometheus.NewDesc("podtrace_lists_total",
		"Complete lists of a resource the API server answered: the initial list, then every relist.", []string{"resource"}, nil)
	descRelists = prometheus.NewDesc("podtrace_relists_total",
		"Lists after the initial one: after an expired watch, a cut connection or an outage.", []string{"resource"}, nil)
	descWatches = prometheus.NewDesc("podtrace_watches_total",
		"Watches started: after each list, and each time one ends (the API server ends every watch after 5-10 minutes).", []string{"resource"}, nil)
	descWatchErrors = prometheus.NewDesc("podtrace_watch_errors_total",
		"Failed lists and watches the informer reported, by resource.", []string{"resource"}, nil)
	descObjects = prometheus.NewDesc("podtrace_objects_recorded",
		"Distinct objects with a record written, by kind of object (pods, events, all).", []string{"of"}, nil)
	descFlushAge = prometheus.NewDesc("podtrace_seconds_since_last_flush",
		"Seconds since a flush last left nothing pending (-1 before the first).", nil, nil)
	descPending = prometheus.NewDesc("podtrace_pending_records",
		"Records waiting in memory for the trace file (a full disk, a reader holding the file).", nil, nil)
	descBacklog = prometheus.NewDesc("podtrace_pending_bytes",
		"Bytes of the pending records' objects (pods' protobuf, the others' JSON); past 256 MiB new records are dropped.", nil, nil)
	descDropped = prometheus.NewDesc("podtrace_records_dropped_total",
		"Records dropped because the backlog was full (each stretch is recorded as a gap).", nil, nil)
	descTraceBytes = prometheus.NewDesc("podtrace_trace_bytes",
		"Size of the trace file.", nil, nil)
	descErrors = prometheus.NewDesc("podtrace_errors_total",
		"Errors by kind: trace_write (failed flushes), api_server (requests that did not reach it or found it unavailable, retries included), watch (failed lists and watches).", []string{"error"}, nil)
	descAuditRead = prometheus.NewDesc("podtrace_audit_lines_read_total",
		"Lines of the --audit-log read.", nil, nil)
	descAuditKept = prometheus.NewDesc("podtrace_audit_events_kept_total",
		"Audit events kept in the trace (about recorded pods).", nil, nil)
	descAuditSkipped = prometheus.NewDesc("podtrace_audit_lines_skipped_total",
		"Lines of the --audit-log not kept (other resources, pods not recorded, unreadable lines).", nil, nil)
	descPrunedPods = prometheus.NewDesc("podtrace_pruned_pods_total",
		"Gone pods pruned by retention, by reason: age (--retain) or size (--max-size).", []string{"reason"}, nil)
	descPrunedObjects = prometheus.NewDesc("podtrace_pruned_objects_total",
		"Objects pruned by retention (pods, their events, dependents and owners), by reason.", []string{"reason"}, nil)
	descPrunedRecords = prometheus.NewDesc("podtrace_pruned_records_total",
		"Records (revisions) pruned by retention, by reason.", []string{"reason"}, nil)
	descPrunedBytes = prometheus.NewDesc("podtrace_pruned_bytes_total",
		"Bytes of keys and values pruned by retention, by reason.", []string{"reason"}, nil)
	descPruneTxs = prometheus.NewDesc("podtrace_prune_transactions_total",
		"Prune transactions committed.", nil, nil)
	descPruneTxMax = prometheus.NewDesc("podtrace_prune_transaction_seconds_max",
		"The longest prune transaction so far, from begin to commit: the longest pruning held the file.", nil, nil)
	descUsedBytes = prometheus.NewDesc("podtrace_trace_used_bytes",
		"The trace's pages in use (the file less its free pages, which bbolt reuses), after the last flush; with --retain or --max-size.", nil, nil)
	descPageBytes = prometheus.NewDesc("podtrace_trace_page_bytes",
		"The trace's pages, used or free: the file's high-water mark (bbolt grows the file 16 MiB ahead of it), after the last flush; with --retain or --max-size.", nil, nil)
)

func (c *recordCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInfo, descReady, descRevisions, descWatched, descLists, descRelists,
		descWatches, descWatchErrors, descObjects, descFlushAge, descPending, descBacklog, descDropped,
		descTraceBytes, descErrors, descAuditRead, descAuditKept, descAuditSkipped,
		descPrunedPods, descPrunedObjects, descPrunedRecords, descPrunedBytes, descPruneTxs, descPruneTxMax, descUsedBytes, descPageBytes} {
		ch <- d
	}
}

func (c *recordCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descInfo, 1, Version)
	ready := 0.0
	if s.unready() == "" {
		ready = 1
	}
	gauge(descReady, ready)
	if fi, err := os.Stat(s.out); err == nil {
		gauge(descTraceBytes, float64(fi.Size()))
	}
	tr, sink, audit := s.parts()
	var watchErrors, serverErrors, writeErrors int64
	if tr != nil {
		st := tr.Stats()
		for _, k := range st.Kinds {
			counter(descRevisions, k.Revisions, k.Kind)
			watched := 0.0
			if k.Watched {
				watched = 1
			}
			gauge(descWatched, watched, k.Resource)
			counter(descLists, k.Lists, k.Resource)
			counter(descRelists, k.Relists(), k.Resource)
			counter(descWatches, k.Watches, k.Resource)
			counter(descWatchErrors, k.WatchErrors, k.Resource)
			watchErrors += k.WatchErrors
		}
		gauge(descObjects, float64(st.Objects), "all")
		gauge(descObjects, float64(st.Pods), "pods")
		gauge(descObjects, float64(st.Events), "events")
		serverErrors = st.APIServerFailures
	}
	if sink != nil {
		st := sink.status()
		age := -1.0
		if !st.Flushed.IsZero() {
			age = s.now().Sub(st.Flushed).Seconds()
		}
		gauge(descFlushAge, age)
		gauge(descPending, float64(st.Pending))
		gauge(descBacklog, float64(st.Backlog))
		counter(descDropped, int64(st.Lost))
		writeErrors = int64(st.WriteErrors)
	}
	counter(descErrors, writeErrors, "trace_write")
	counter(descErrors, serverErrors, "api_server")
	counter(descErrors, watchErrors, "watch")
	s.mu.Lock()
	writer := s.writer
	s.mu.Unlock()
	if writer != nil {
		ps := writer.PruneStats()
		for reason, c := range map[string]store.PruneCounts{"age": ps.Age, "size": ps.Size} {
			counter(descPrunedPods, int64(c.Pods), reason)
			counter(descPrunedObjects, int64(c.Objects), reason)
			counter(descPrunedRecords, int64(c.Records), reason)
			counter(descPrunedBytes, c.Bytes, reason)
		}
		counter(descPruneTxs, int64(ps.Transactions))
		gauge(descPruneTxMax, ps.MaxTx.Seconds())
		if ps.UsedBytes > 0 {
			gauge(descUsedBytes, float64(ps.UsedBytes))
			gauge(descPageBytes, float64(ps.PageBytes))
		}
	}
	if audit != nil {
		counter(descAuditRead, audit.linesRead.Load())
		counter(descAuditKept, audit.eventsKept.Load())
		counter(descAuditSkipped, audit.linesSkipped.Load())
	}
}
