package tracer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podtrace/podtrace/store"
)

// Sink receives the records, in batches. A batch is not used by the tracer
// after Write returns. An error stops the recording: Run returns it.
type Sink interface {
	Write([]store.Record) error
}

// GapSink is a Sink that also receives the gaps in observation: a stretch
// in which the API server did not answer (store.GapAPIServer, with its
// start, its end and the error), handed over once it answers again, or at
// shutdown with no end if it never did. A gap reaches the sink before the
// records observed after it. A Sink that is not a GapSink does not get them.
type GapSink interface {
	Sink
	Gap(store.Gap)
}

// Clock tells the time a revision was observed.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Defaults for Options.
const (
	DefaultBatchSize = 2000
	// DefaultFlushInterval: records reach the trace within 1 s, which
	// bounds what a recorder killed with -9 loses (0.45-1.2 s of revisions
	// with 2 s), while no reader holds the file. A commit costs the store
	// little beside the informers' work on the same revisions, but longer
	// batches do cost it less: 5 s batches about 8% less store CPU than
	// 2 s in BenchmarkRewrite, so 1 s costs somewhat more than 2 s did
	// (not measured yet). They also hold more in memory: 5 s batches
	// raised the recorder's peak RSS by 5-25 MiB in the kwok benchmark.
	DefaultFlushInterval = time.Second
)

// Options configure a Tracer.
type Options struct {
	// RESTConfig reaches the API server. It is not needed when both Client
	// and Metadata are given (tests).
	RESTConfig *rest.Config
	// Client and Metadata override the clients built from RESTConfig.
	Client   Client
	Metadata metadata.Interface

	// Namespace limits the recording to one namespace; "" records all.
	Namespace string
	// PodSelector is a label selector for pods, as in kubectl -l; "" keeps
	// every pod.
	PodSelector string
	// DefaultNamespace is the kubeconfig context's namespace: when a
	// recording of all namespaces is refused, Preflight says whether this
	// one could be recorded instead.
	DefaultNamespace string

	// Warn receives warnings: a kind that cannot be watched, an API server
	// that keeps failing. Nil discards them.
	Warn func(msg string)
	// Clock stamps Record.Observed; nil is the system clock.
	Clock Clock

	// BatchSize and FlushInterval bound how many records wait for the sink
	// and for how long; zero values mean DefaultBatchSize and
	// DefaultFlushInterval.
	BatchSize     int
	FlushInterval time.Duration

	// Compression asks the API server to gzip its responses. It is off by
	// default. Since Kubernetes 1.37 (WatchListCompression) the stream a
	// watch-list informer begins with, and begins again with after a
	// relist (the initial list, then every change until the watch ends,
	// after client-go's 5 to 10 minutes), is gzipped event by event, each
	// event a gzip stream of its own: the server pays for it on every
	// watcher and the recorder on every event, for half the bytes. In a
	// profile of a 2,000-pod kwok benchmark, which runs inside those
	// streams, gzip was 7% of record's CPU; record used 2% less CPU
	// without it there, and no measurably different CPU at 20,000 pods.
	// On a slow link to a remote cluster the bytes may matter more. A
	// kubeconfig's disable-compression: true holds either way.
	Compression bool
}

// Tracer records pods and what surrounds them. Use New, then Run once.
type Tracer struct {
	opts   Options
	client Client
	meta   metadata.Interface
	// pods, when set, watches pods as rawPods (the tracer built its own
	// clients); else client does, as typed Pods.
	pods    rest.Interface
	allPods bool // no pod selector: every event and pod-owned object in scope
	clock   Clock
	warn    func(string)
	kinds   []*kind
	skip    map[*kind]bool // kinds the user may not watch (see Preflight)
	checked bool
	started atomic.Bool
	ready   chan struct{}
	out     *queue                // records on their way to the writer
	gaps    atomic.Pointer[queue] // out, for the transport's goroutines
	pendTTL time.Duration
	// shutdownGrace bounds the wait for the informers to stop.
	shutdownGrace time.Duration
	stats         counters
	watchErr      watchErrors
	// health follows the API server's answers; nil when the tracer was
	// given its clients.
	health *serverHealth
	// informers are the running informers, for tests.
	informers []cache.SharedIndexInformer

	mu sync.Mutex
	// known holds the UIDs of every recorded object when a pod selector is
	// set: events and dependents are kept when they name one.
	known map[types.UID]struct{}
	// dependents holds the UIDs of the recorded pod-owned objects.
	dependents map[types.UID]struct{}
	// pending holds, by pod UID, the events and dependents that name a pod
	// not recorded yet (pod selector only).
	pending map[types.UID][]held
}

// New returns a Tracer. It checks the options and builds the clients but does
// not contact the API server.
func New(opts Options) (*Tracer, error) {
	if _, err := labels.Parse(opts.PodSelector); err != nil {
		return nil, fmt.Errorf("parse pod selector %q: %w", opts.PodSelector, err)
	}
	t := &Tracer{
		opts:          opts,
		client:        opts.Client,
		meta:          opts.Metadata,
		allPods:       opts.PodSelector == "",
		clock:         opts.Clock,
		warn:          opts.Warn,
		kinds:         kinds(),
		skip:          map[*kind]bool{},
		ready:         make(chan struct{}),
		pendTTL:       15 * time.Second,
		shutdownGrace: 5 * time.Second,
		known:         map[types.UID]struct{}{},
		dependents:    map[types.UID]struct{}{},
		pending:       map[types.UID][]held{},
	}
	t.stats.kinds = map[string]*kind{}
	for _, k := range t.kinds {
		t.stats.kinds[k.gvk.Kind] = k
	}
	if t.clock == nil {
		t.clock = realClock{}
	}
	if t.warn == nil {
		t.warn = func(string) {}
	}
	if t.opts.BatchSize <= 0 {
		t.opts.BatchSize = DefaultBatchSize
	}
	if t.opts.FlushInterval <= 0 {
		t.opts.FlushInterval = DefaultFlushInterval
	}
	if t.client != nil && t.meta != nil {
		return t, nil
	}
	if opts.RESTConfig == nil {
		return nil, errors.New("tracer: no RESTConfig and no clients")
	}
	cfg := rest.CopyConfig(opts.RESTConfig)
	if !opts.Compression {
		cfg.DisableCompression = true
	}
	if cfg.QPS == 0 {
		// The access checks are a burst of requests; informers need few more.
		cfg.QPS, cfg.Burst = 50, 100
	}
	if cfg.WarningHandler == nil && cfg.WarningHandlerWithContext == nil {
		cfg.WarningHandler = &serverWarnings{warn: t.warn}
	}
	t.health = &serverHealth{host: cfg.Host, warn: t.warn, now: time.Now, gap: t.gap}
	cfg.Wrap(t.health.wrap)
	// Outside the health check's retries: one count per informer request.
	counter := newRequestCounter(t.kinds)
	counter.gap, counter.outageEnded = t.gap, t.health.lastOutageEnded
	cfg.Wrap(counter.wrap)
	if t.meta == nil {
		m, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("build metadata client: %w", err)
		}
		t.meta = m
	}
	if t.client == nil {
		// Every kind the typed client watches is built in: protobuf on the
		// wire costs the API server and the recorder less than JSON.
		typed := rest.CopyConfig(cfg)
		typed.ContentType = "application/vnd.kubernetes.protobuf"
		typed.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		c, err := newRESTClient(typed)
		if err != nil {
			return nil, fmt.Errorf("build client: %w", err)
		}
		t.client = c
		if t.pods, err = rawPodClient(cfg); err != nil {
			return nil, fmt.Errorf("build pod client: %w", err)
		}
	}
	return t, nil
}

// Ready is closed once every informer has delivered its initial list.
func (t *Tracer) Ready() <-chan struct{} { return t.ready }

// Run watches until ctx is done, sending records to sink, then stops the
// informers, flushes the last batch and returns. It runs Preflight first if
// the caller did not. The error is a failed access check or a failed write;
// a cancelled ctx is not an error.
func (t *Tracer) Run(ctx context.Context, sink Sink) error {
	if !t.started.CompareAndSwap(false, true) {
		return errors.New("tracer: Run called twice")
	}
	if !t.checked {
		if err := t.Preflight(ctx); err != nil {
			return err
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	t.out = newQueue(t.opts.BatchSize)
	t.gaps.Store(t.out)
	writerDone := make(chan error, 1)
	go func() { writerDone <- t.write(t.out, sink, cancel) }()

	var waves [2][]*kind
	for _, k := range t.kinds {
		if !t.skip[k] {
			waves[k.wave] = append(waves[k.wave], k)
		}
	}
	var informers sync.WaitGroup
	stores := map[*kind]cache.Store{}
	if !t.allPods {
		informers.Go(func() { t.sweepPending(runCtx) })
	}
	start := func(ks []*kind) ([]cache.DoneChecker, error) {
		var synced []cache.DoneChecker
		for _, k := range ks {
			ns := t.opts.Namespace
			if k.cluster {
				ns = ""
			}
			inf := t.informer(k, ns)
			if err := inf.SetTransform(k.transform()); err != nil {
				return nil, fmt.Errorf("watch %s: %w", k.resource(), err)
			}
			if err := inf.SetWatchErrorHandlerWithContext(t.watchErr.handler(t, k)); err != nil {
				return nil, fmt.Errorf("watch %s: %w", k.resource(), err)
			}
			reg, err := inf.AddEventHandler(t.handler(k))
			if err != nil {
				return nil, fmt.Errorf("watch %s: %w", k.resource(), err)
			}
			synced = append(synced, reg.HasSyncedChecker())
			t.informers = append(t.informers, inf)
			stores[k] = inf.GetStore()
			informers.Go(func() { inf.RunWithContext(runCtx) })
		}
		return synced, nil
	}
	var err error
	for _, ks := range waves {
		var synced []cache.DoneChecker
		if synced, err = start(ks); err != nil || !waitDone(runCtx, synced) {
			break
		}
		t.reconcile(sink, ks, stores)
	}
	if err == nil && runCtx.Err() == nil {
		close(t.ready)
	}
	if err != nil {
		cancel()
	}

	// Shut down in order: informers and their handlers, then the queue,
	// then the writer's last batch.
	<-runCtx.Done()
	stopped := make(chan struct{})
	go func() { informers.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(t.shutdownGrace):
		// A reflector sleeping in its watch-list back-off does not watch
		// ctx (client-go v0.37); it would hold the recorder for up to 30s
		// while the API server is away. Its handler has nothing to send:
		// the writer takes what is queued and stops.
		t.warn(fmt.Sprintf("stopped without waiting for informers still retrying the API server (%s)", t.shutdownGrace))
	}
	if t.health != nil {
		if g, ok := t.health.open(); ok {
			t.out.pushGap(g) // the server never answered again
		}
	}
	t.out.close()
	if werr := <-writerDone; werr != nil {
		return werr
	}
	return err
}

// gap queues g for the writer; gaps before Run (the access checks) are
// dropped: no recording had begun.
func (t *Tracer) gap(g store.Gap) {
	if q := t.gaps.Load(); q != nil {
		q.pushGap(g)
	}
}

// waitDone waits until every checker is done; false if ctx ended first.
func waitDone(ctx context.Context, checkers []cache.DoneChecker) bool {
	for _, c := range checkers {
		select {
		case <-c.Done():
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Stats are the recording's counters so far.
type Stats struct {
	Objects   int64     // distinct objects with a record written
	Pods      int64     // distinct pods
	Events    int64     // distinct Event objects
	Revisions int64     // records written
	LastWrite time.Time // when the sink last accepted a batch; zero if never

	// Kinds are the counters of each kind the tracer may watch, in start
	// order.
	Kinds []KindStats
	// APIServerFailures is the requests that did not reach the API server
	// or that it answered as unavailable (502, 503, 504), retries included;
	// APIServerDown is since when it has not answered, zero while it does.
	// Both stay zero for a Tracer given its clients.
	APIServerFailures int64
	APIServerDown     time.Time
}

// Stats returns the counters; safe to call while Run runs.
func (t *Tracer) Stats() Stats {
	s := Stats{
		Objects:   t.stats.objects.Load(),
		Pods:      t.stats.pods.Load(),
		Events:    t.stats.events.Load(),
		Revisions: t.stats.revisions.Load(),
		Kinds:     t.kindStats(),
	}
	s.APIServerFailures, s.APIServerDown = t.serverStatus()
	if ns := t.stats.lastWrite.Load(); ns != 0 {
		s.LastWrite = time.Unix(0, ns)
	}
	return s
}

// serverWarnings passes the API server's warning headers on, once each.
type serverWarnings struct {
	warn func(string)
	mu   sync.Mutex
	seen map[string]bool
}

func (w *serverWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[text] {
		return
	}
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[text] = true
	w.warn("API server: " + text)
}
