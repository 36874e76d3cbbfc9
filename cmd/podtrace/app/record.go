package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/podtrace/podtrace/otlp"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer"
	"github.com/podtrace/podtrace/tracer/auditlog"
)

// recordOptions are the options of `podtrace record`.
type recordOptions struct {
	Kubeconfig    string
	Context       string
	Namespace     string
	AllNamespaces bool
	Selector      string
	Out           string
	Duration      time.Duration
	AuditLog      string
	Listen        string
	Retain        string
	MaxSize       string
	WaitForLease  time.Duration
	Compression   bool
	OTLP          otlpFlags
	OTLPQuiet     time.Duration
	OTLPQueue     int

	otlpRedact redactFlags // the traces sent are redacted as every output is

	oldOut  string        // --out and -o, deprecated for --db
	retain  time.Duration // Retain, parsed
	maxSize int64         // MaxSize, parsed
	args    []string      // the command line, for the session
}

func defaultRecordOptions() *recordOptions {
	return &recordOptions{Out: "podtrace.db", OTLPQuiet: 5 * time.Minute, OTLPQueue: 10000}
}

func recordCommand(streams Streams) *cli.Command {
	o := defaultRecordOptions()
	return &cli.Command{
		Name:      "record",
		Usage:     "record pods, their events and what surrounds them into a trace file",
		ArgsUsage: " ",
		Description: "Watches the cluster with shared informers and writes every revision of every pod\n" +
			"(and their events, owners, pod-owned Secrets/ConfigMaps/Services (metadata only for\n" +
			"Secrets and ConfigMaps), PersistentVolumeClaims and StorageClasses, namespaces, nodes\n" +
			"and admission webhook configurations) to the trace file, until\n" +
			"Ctrl-C or --duration. Secret data is never requested. Recording into an existing\n" +
			"trace adds a session to it; diff and report can read it while it records.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "kubeconfig", Usage: "kubeconfig file (default: $KUBECONFIG or ~/.kube/config; in a pod: the pod's service account)", Destination: &o.Kubeconfig},
			&cli.StringFlag{Name: "context", Usage: "kubeconfig context to use", Destination: &o.Context},
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "record only this namespace (default: all namespaces)", Destination: &o.Namespace},
			&cli.BoolFlag{Name: "all-namespaces", Aliases: []string{"A"}, Usage: "record all namespaces (the default)", Destination: &o.AllNamespaces},
			&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Usage: "record only the pods matching this label selector, e.g. app=web", Destination: &o.Selector},
			&cli.StringFlag{Name: "db", Usage: "trace file to write (one that exists gets a new session)", Value: o.Out, Destination: &o.Out, TakesFile: true},
			// Deprecated: the trace file is --db in every command.
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Hidden: true, Destination: &o.oldOut, TakesFile: true},
			&cli.DurationFlag{Name: "duration", Usage: "stop after this long, e.g. 10m (0: until Ctrl-C)", Destination: &o.Duration},
			&cli.StringFlag{Name: "listen", Usage: "serve /metrics (Prometheus), /healthz and /readyz on this address, e.g. 127.0.0.1:9090 or :9090 (port 0: a free one, printed); none by default", Destination: &o.Listen},
			&cli.StringFlag{Name: "retain", Usage: "prune, while recording, the history of pods gone (deleted) longer than this, with their events and dependents, e.g. 7d or 36h; live pods are never pruned, and the trace says what was (default: keep everything)", Destination: &o.Retain},
			&cli.StringFlag{Name: "max-size", Usage: "prune the oldest gone pods while the trace's pages in use exceed 95% of this, e.g. 10GiB or 500MiB (the file itself is reused, not shrunk, until record stops and compacts it)", Destination: &o.MaxSize},
			&cli.DurationFlag{Name: "wait-for-lease", Usage: "if another recorder holds the trace (one stopping, as a Deployment's old pod does), wait up to this long for it to let go, e.g. 2m30s, instead of failing at once; /healthz answers meanwhile", Destination: &o.WaitForLease},
			&cli.BoolFlag{Name: "compression", Usage: "ask the API server to gzip what it sends: half the bytes, for a slow link to a remote cluster, at a CPU cost to both ends (since Kubernetes 1.37 each event of a watch's initial stream is compressed on its own); off by default", Destination: &o.Compression},
			&cli.StringFlag{Name: "audit-log", Usage: "follow this kube-apiserver audit log (its --audit-log-path) while recording and keep its events about the recorded pods; read from its end on, through rotation (add older lines with podtrace import)", Destination: &o.AuditLog, TakesFile: true},
		}, append(o.OTLP.flags("stream each pod's trace, as it ends (deleted, or quiet for --otlp-quiet), read back from the trace file,"),
			&cli.DurationFlag{Name: "otlp-quiet", Value: o.OTLPQuiet, Usage: "with --otlp: send a pod's trace once it has had no new revision for this long (a stuck pod, a long-running one), and again if it changes", Destination: &o.OTLPQuiet},
			&cli.IntFlag{Name: "otlp-queue", Value: o.OTLPQueue, Usage: "with --otlp: at most this many pods wait to be sent while the endpoint does not answer (quiet ones, half of it, and they wait their turn); past it the deleted pods are dropped and counted (podtrace export --otlp sends them later)", Destination: &o.OTLPQueue},
			&cli.StringSliceFlag{Name: "otlp-redact", Destination: &o.otlpRedact.patterns, Usage: "with --otlp: also redact this env var, annotation or label key, or the matches of this regular expression, in the traces sent (repeatable; the trace file keeps what it records)"},
			&cli.BoolFlag{Name: "otlp-no-redact", Destination: &o.otlpRedact.off, Usage: "with --otlp: send env values, credentials and last-applied configuration as recorded"},
		)...),
		Action: func(c *cli.Context) error {
			if err := o.Complete(c, streams); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context, streams)
		},
	}
}

// Complete fills in what the flags do not say.
func (o *recordOptions) Complete(c *cli.Context, streams Streams) error {
	if c.Args().Present() {
		return usagef("record takes no arguments, got %q", strings.Join(c.Args().Slice(), " "))
	}
	if c.IsSet("out") {
		if c.IsSet("db") && o.Out != o.oldOut {
			return usagef("--db %s and -o %s name two trace files: give --db alone (-o is deprecated here)", o.Out, o.oldOut)
		}
		warnDeprecated(c, streams, "-o/--out FILE", "--db FILE")
		o.Out = o.oldOut
	}
	lineage := c.Lineage()
	o.args = append([]string{"podtrace"}, lineage[len(lineage)-1].Args().Slice()...)
	return nil
}

// Validate checks the options; its errors name the flag.
func (o *recordOptions) Validate() error {
	if o.Namespace != "" && o.AllNamespaces {
		return usagef("--namespace and --all-namespaces cannot be used together")
	}
	if o.Duration < 0 {
		return usagef("--duration must be positive (or 0 to record until Ctrl-C), got %s", o.Duration)
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return usagef("--selector %q: %v", o.Selector, err)
	}
	if o.Out == "" {
		return usagef("--db must name a trace file")
	}
	if o.AuditLog != "" {
		fi, err := os.Stat(o.AuditLog)
		switch {
		case err != nil:
			return usagef("--audit-log %s: %v; name the file the API server writes (its --audit-log-path)", o.AuditLog, err)
		case fi.IsDir():
			return usagef("--audit-log %s is a directory; name the file the API server writes (its --audit-log-path)", o.AuditLog)
		}
	}
	if o.Listen != "" {
		if _, port, err := net.SplitHostPort(o.Listen); err != nil {
			return usagef("--listen %q: %v; give host:port, e.g. 127.0.0.1:9090, or :9090 for every interface", o.Listen, err)
		} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
			return usagef("--listen %q: the port must be a number from 0 to 65535", o.Listen)
		}
	}
	if fi, err := os.Stat(o.Out); err == nil && fi.IsDir() {
		return usagef("--db %q is a directory; name a trace file, e.g. %s", o.Out, strings.TrimSuffix(o.Out, "/")+"/podtrace.db")
	}
	if o.Retain != "" {
		d, err := parseRetain(o.Retain)
		if err != nil {
			return usagef("--retain %q: %v", o.Retain, err)
		}
		o.retain = d
	}
	if o.MaxSize != "" {
		n, err := parseSize(o.MaxSize)
		if err != nil {
			return usagef("--max-size %q: %v", o.MaxSize, err)
		}
		o.maxSize = n
	}
	if o.WaitForLease < 0 {
		return usagef("--wait-for-lease must be positive (or 0 to fail at once), got %s", o.WaitForLease)
	}
	if o.OTLP.on() {
		if err := o.OTLP.complete(); err != nil {
			return err
		}
		if o.OTLPQuiet <= 0 {
			return usagef("--otlp-quiet must be positive, got %s", o.OTLPQuiet)
		}
		if o.OTLPQueue <= 0 {
			return usagef("--otlp-queue must be positive, got %d", o.OTLPQueue)
		}
		if o.otlpRedact.off && len(o.otlpRedact.patterns.Value()) > 0 {
			return usagef("--otlp-redact and --otlp-no-redact contradict each other: drop one")
		}
		if err := o.otlpRedact.Complete(); err != nil {
			return err
		}
	}
	return nil
}

// recordGCPercent is record's GOGC unless the user sets one. record's live
// heap is mostly its informers' caches, which keep only each object's
// identity: it is about half a bare informer's at 20,000 pods. Letting the
// garbage grow to twice the live heap instead of once halves the collector's
// marking, the largest cost left beside the informers' own that a setting
// can change: 1.18x -> 1.12x a bare informer's CPU at 10,000 pods, side by
// side, with the peak RSS still below the informer's (BENCHMARKS.md). In a
// pod the manifests' GOMEMLIMIT makes the collector work harder before the
// memory limit instead.
const recordGCPercent = 200

// Run records until ctx is done or the duration is over, then flushes,
// closes the trace and prints a summary.
func (o *recordOptions) Run(ctx context.Context, streams Streams) error {
	// client-go logs watch failures through klog; the tracer's warnings say
	// what matters without breaking the status line.
	klog.SetLogger(logr.Discard())
	defer batchGC(recordGCPercent)()
	defer fewerProcs(recordProcs)()
	status := newStatusLine(streams.ErrOut)
	warn := func(msg string) { status.println("podtrace: warning: " + msg) }

	var srv *recordServer
	startServer := func() error {
		var err error
		if srv, err = listen(o.Listen, o.Out); err != nil {
			return err
		}
		srv.serve()
		status.println(fmt.Sprintf("podtrace: serving /metrics, /healthz and /readyz on http://%s", srv.Addr()))
		return nil
	}
	defer func() {
		if srv != nil {
			srv.shutdown()
		}
	}()
	if o.WaitForLease > 0 {
		// Waiting for the recorder before this one (a Deployment's old
		// pod, flushing and compacting in its termination grace period):
		// the probes are answered meanwhile.
		if o.Listen != "" {
			if err := startServer(); err != nil {
				return err
			}
		}
		if err := o.waitForLease(ctx, srv, status); err != nil {
			return err
		}
		if ctx.Err() != nil {
			fmt.Fprintln(streams.ErrOut, "podtrace: interrupted before recording started")
			return nil
		}
	}

	// The trace first: a second recorder of it, or a damaged or unwritable
	// file, is refused before the cluster is asked anything. NewWriter
	// writes nothing into an existing file; a trace it creates is removed
	// if recording does not start.
	_, statErr := os.Stat(o.Out)
	existed := statErr == nil
	w, err := store.NewWriter(o.Out, store.Options{Version: Version, Warn: warn,
		Retention: store.Retention{Age: o.retain, MaxBytes: o.maxSize}})
	if err != nil {
		if errors.Is(err, store.ErrRecording) && o.WaitForLease > 0 {
			return fmt.Errorf("%w (after waiting %s with --wait-for-lease)", err, o.WaitForLease)
		}
		return err // store's errors name the file and what to do
	}
	begun := false
	defer func() {
		if begun {
			return
		}
		w.Close()
		if !existed {
			os.Remove(o.Out)
		}
	}()

	// The listener next: a port in use fails before the cluster is asked.
	if o.Listen != "" && srv == nil {
		if err := startServer(); err != nil {
			return err
		}
	}
	if srv != nil {
		srv.setWriter(w)
	}

	cfg, contextName, defaultNS, err := o.restConfig()
	if err != nil {
		return err
	}
	cluster := o.OTLP.cluster
	if cluster == "" {
		cluster = contextName
	}
	if o.OTLP.on() && cluster == "" {
		return &UsageError{Err: errNoCluster}
	}
	cfg.UserAgent = "podtrace/" + Version

	disc, err := tracer.NewDiscovery(cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", cfg.Host, err)
	}
	version, err := disc.ServerVersion()
	if err != nil {
		return fmt.Errorf("cannot reach the API server at %s (context %q): %w; check the cluster is up and kubectl works with the same --kubeconfig and --context", cfg.Host, contextName, err)
	}

	tr, err := tracer.New(tracer.Options{
		RESTConfig:       cfg,
		Namespace:        o.Namespace,
		PodSelector:      o.Selector,
		DefaultNamespace: defaultNS,
		Warn:             warn,
		Compression:      o.Compression,
	})
	if err != nil {
		return err
	}
	if srv != nil {
		srv.set(cfg.Host, tr, nil, nil)
	}
	if err := tr.Preflight(ctx); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(streams.ErrOut, "podtrace: interrupted before recording started")
			return nil
		}
		return err
	}

	started := time.Now()
	session, err := w.BeginSession(store.Session{
		Server:        cfg.Host,
		ServerVersion: version.GitVersion,
		Context:       contextName,
		Namespace:     o.Namespace,
		Selector:      o.Selector,
		Args:          o.args,
		Started:       started,
		Version:       Version,
		Unrecorded:    tr.Unrecorded(),
	})
	if err != nil {
		return fmt.Errorf("record into %s: %w", o.Out, err)
	}
	begun = true

	runCtx := ctx
	if o.Duration > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, o.Duration)
		defer cancel()
	}
	sink := newTraceSink(w, o.Out, session.ID, warn)
	var recSink tracer.Sink = sink
	var stream *otlpStream
	if o.OTLP.on() {
		client, err := otlp.NewClient(o.OTLP.client)
		if err != nil {
			w.EndSession(session.ID, time.Now())
			w.Close()
			return err
		}
		stream = newOTLPStream(o.Out, client, otlp.Options{Cluster: cluster, Version: Version}, o.OTLPQuiet, o.OTLPQueue, &o.otlpRedact, warn)
		recSink = stream.wrap(sink)
		go stream.run()
		defer stream.finishAndReport(io.Discard) // on an early return; once only
		if srv != nil {
			srv.setOTLP(stream)
		}
		status.println(fmt.Sprintf("podtrace: sending each pod's trace to %s (%s) as cluster %q, once it is deleted or quiet for %s", client.Endpoint(), client.Protocol(), cluster, o.OTLPQuiet))
		if o.otlpRedact.off {
			status.println("podtrace: WARNING: --otlp-no-redact: the traces sent carry env values, credentials and last-applied configuration as recorded")
		}
	}
	var audit *auditFollower
	if o.AuditLog != "" {
		sink.pods = newPodIndex()
		audit, err = newAuditFollower(auditFollowerOptions{
			Path: o.AuditLog, Pods: sink.pods, Namespace: o.Namespace, Warn: warn,
			Add: func(recs []store.Record) { sink.add(recs) },
		})
		if err != nil {
			w.EndSession(session.ID, time.Now())
			w.Close()
			return err
		}
	}
	if srv != nil {
		srv.set("", nil, sink, audit)
	}
	bg, stopBG := context.WithCancel(context.Background())
	var bgDone sync.WaitGroup
	bgDone.Go(func() { o.background(bg, tr, sink, status) })
	bgDone.Go(func() {
		select {
		case <-tr.Ready():
			status.println(fmt.Sprintf("podtrace: recording %s to %s (initial lists synced; Ctrl-C stops)", cfg.Host, o.Out))
		case <-bg.Done():
		}
	})

	auditCtx, stopAudit := context.WithCancel(context.Background())
	auditDone := make(chan error, 1)
	if audit != nil {
		go func() { auditDone <- audit.run(auditCtx, auditlog.DefaultPoll) }()
	}

	runErr := tr.Run(runCtx, recSink)

	// The tracer has written its last records: every recorded pod is
	// known, the audit events held for theirs can be settled.
	stopAudit()
	if audit != nil {
		err := <-auditDone
		if ferr := audit.finish(); err == nil {
			err = ferr
		}
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("follow audit log %s: %w", o.AuditLog, err)
		}
	}
	stopBG()
	bgDone.Wait()
	status.clear()
	stopped := time.Now()
	if err := w.EndSession(session.ID, stopped); err != nil && runErr == nil {
		runErr = err
	}
	if err := w.Close(); err != nil {
		return errors.Join(runErr, fmt.Errorf("close %s: %w", o.Out, err))
	}
	if runErr != nil {
		return runErr
	}
	st := tr.Stats()
	size := "?"
	if fi, err := os.Stat(o.Out); err == nil {
		size = report.BytesText(fi.Size())
	}
	fmt.Fprintf(streams.ErrOut, "recorded %s of %s (%s, %s) in %s to %s (%s)\n",
		plural(st.Revisions, "revision"), plural(st.Objects, "object"), plural(st.Pods, "pod"), plural(st.Events, "event"),
		stopped.Sub(started).Round(100*time.Millisecond), o.Out, size)
	sink.mu.Lock()
	lost := sink.lost
	sink.mu.Unlock()
	if lost > 0 {
		fmt.Fprintf(streams.ErrOut, "%s of them were dropped: the trace could not be written (recorded as gaps)\n", thousands(lost))
	}
	if ps := w.PruneStats(); ps.Age.Objects+ps.Size.Objects > 0 {
		fmt.Fprintf(streams.ErrOut, "pruned %s", pruneLine(ps.Age, "gone longer than "+report.RetainText(o.retain)))
		if ps.Size.Objects > 0 {
			if ps.Age.Objects > 0 {
				fmt.Fprint(streams.ErrOut, "; and ")
			}
			fmt.Fprint(streams.ErrOut, pruneLine(ps.Size, "(the oldest gone) for --max-size "+report.BytesText(o.maxSize)))
		}
		fmt.Fprintf(streams.ErrOut, " (%s transactions, the longest %s)\n", thousands(ps.Transactions), ps.MaxTx.Round(time.Millisecond))
	}
	if audit != nil {
		audit.summary(streams.ErrOut)
	}
	if stream != nil {
		// The trace is complete: what is queued can be read and sent.
		stream.finishAndReport(streams.ErrOut)
	}
	return nil
}

// waitForLease waits, up to --wait-for-lease, for the recorder that holds
// the trace to let go of it. It returns nil when none holds it, or when
// the wait is over (NewWriter then says who holds it), or ctx is done.
func (o *recordOptions) waitForLease(ctx context.Context, srv *recordServer, status *statusLine) error {
	wctx, cancel := context.WithTimeout(ctx, o.WaitForLease)
	defer cancel()
	began := time.Now()
	var holder string
	err := store.WaitForRecorder(wctx, o.Out, leasePoll, func(l store.Lease) {
		holder = l.String()
		status.println(fmt.Sprintf("podtrace: trace %s is being recorded by %s: waiting up to %s for it to stop (--wait-for-lease)", o.Out, holder, o.WaitForLease))
		if srv != nil {
			srv.setWaiting(fmt.Sprintf("waiting for %s, which records into %s, to stop (--wait-for-lease %s)", holder, o.Out, o.WaitForLease))
		}
	})
	if srv != nil {
		srv.setWaiting("")
	}
	switch {
	case err == nil:
		if holder != "" {
			status.println(fmt.Sprintf("podtrace: %s stopped after %s: recording into %s", holder, time.Since(began).Round(100*time.Millisecond), o.Out))
		}
		return nil
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return nil
	}
	return err
}

// leasePoll is how often record --wait-for-lease looks at the trace's lock.
const leasePoll = 100 * time.Millisecond

// pruneLine describes what retention pruned, for the summary.
func pruneLine(c store.PruneCounts, why string) string {
	if c.Objects == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s (%s, %s, %s of the trace)", plural(c.Pods, "pod"), why,
		plural(c.Objects, "object"), plural(c.Records, "record"), report.BytesText(c.Bytes))
}

// restConfig loads the kubeconfig like kubectl: --kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else the pod's service account.
func (o *recordOptions) restConfig() (_ *rest.Config, contextName, namespace string, _ error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", "", errors.New("no kubeconfig found and not running in a pod: set --kubeconfig or KUBECONFIG")
		}
		return nil, "", "", fmt.Errorf("load kubeconfig: %w", err)
	}
	contextName = o.Context
	if contextName == "" {
		if raw, err := cc.RawConfig(); err == nil {
			contextName = raw.CurrentContext
		}
	}
	// The context's namespace (or the pod's, in a cluster): only a hint
	// for a recording of all namespaces that is refused.
	namespace, _, _ = cc.Namespace()
	return cfg, contextName, namespace, nil
}

// background refreshes the status line and flushes, once a second, until
// ctx is done: the writes a reader delayed or a full disk failed are
// retried, and an idle Writer stamps the session's Alive time (every
// store.AliveEvery), which tells a reader when a killed recorder was last
// alive.
func (o *recordOptions) background(ctx context.Context, tr *tracer.Tracer, sink *traceSink, status *statusLine) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := sink.flush(); err != nil && !warned {
			// The tracer stops at its next batch with this error.
			status.println("podtrace: warning: " + err.Error())
			warned = true
		}
		if !status.enabled {
			continue
		}
		var inUse int64
		if w, ok := sink.w.(interface{ InUse() int64 }); ok {
			inUse = w.InUse()
		}
		status.set(recordStatus(tr.Stats(), inUse, sink.backlogStatus(), time.Now()))
	}
}

// The status line asks the trace's Writer for its data's size.
var _ interface{ InUse() int64 } = (*store.Writer)(nil)

// recordStatus is record's status line: what was recorded, the size of
// the trace's data (its pages in use: the file is larger while recording,
// bbolt grows it 16 MiB ahead of them; record compacts it when it stops),
// and the last write, or the backlog when writes fail.
func recordStatus(st tracer.Stats, inUse int64, backlog string, now time.Time) string {
	last := backlog
	switch {
	case last != "":
	case st.LastWrite.IsZero():
		last = "no write yet"
	default:
		last = "last write " + now.Sub(st.LastWrite).Truncate(time.Second).String() + " ago"
	}
	size := "no data written yet"
	if inUse > 0 {
		size = report.BytesText(inUse) + " of data"
	}
	return fmt.Sprintf("recording: %s, %s, %s, %s, %s (Ctrl-C to stop)",
		plural(st.Objects, "object"), plural(st.Revisions, "revision"), plural(st.Events, "event"), size, last)
}

// The tracer hands its gaps (API server outages) to a GapSink.
var _ tracer.GapSink = (*traceSink)(nil)

// traceWriter is what traceSink needs of a *store.Writer.
type traceWriter interface {
	Add(recs ...store.Record)
	AddGap(store.Gap)
	Reconcile(store.Listing)
	Flush() (int, error)
	Pending() int
}

// A trace that cannot be written (a full disk, a quota, an I/O error) does
// not stop the recording: the records wait in memory, the sink warns once
// and retries every retryEvery. maxBacklog bounds what waits, in bytes of
// the records' objects (a pod's protobuf, the others' JSON): 256 MiB is
// more than 40,000 revisions of pods of a few KiB, some minutes of a busy
// cluster, on top of the recorder's own ~100 MiB. Past it
// new records are dropped and counted; once the trace takes the backlog, a
// store.GapWriteFailed gap says when and how many. The bound applies as
// well to records held back by a reader that keeps the file open.
const (
	maxBacklog = 256 << 20
	retryEvery = time.Second
)

// traceSink writes the tracer's batches into the trace, in the session.
// With --audit-log it also notes the pods it writes, for linking audit
// events to them.
type traceSink struct {
	w       traceWriter
	path    string
	session uint32
	pods    *podIndex // nil without --audit-log
	warn    func(string)
	now     func() time.Time

	flushMu sync.Mutex // one flush at a time

	mu      sync.Mutex
	backlog int64     // bytes of JSON added since the writer last had none pending
	oldest  time.Time // when the oldest record pending was observed; zero if none
	failing error     // the last flush's error; nil once a flush works
	failed  time.Time // when the episode of failed writes began
	tried   time.Time // when a flush last ran
	dropped int       // records dropped since the backlog was last written
	dropErr error     // the write error when the dropping began; nil: a reader
	since   time.Time // when the first of them was observed
	lost    int       // records dropped in the whole recording
	fatal   error     // an error that stopped the sink
	flushed time.Time // when a flush last left nothing pending; zero if never
	errors  int       // failed flushes in the whole recording
}

func newTraceSink(w traceWriter, path string, session uint32, warn func(string)) *traceSink {
	return &traceSink{w: w, path: path, session: session, warn: warn, now: time.Now}
}

// Write buffers the batch and flushes. It fails only when writing can never
// work again (a closed writer, an invalid record, a file that is no trace):
// write failures of the file keep the records for the next flush.
func (s *traceSink) Write(recs []store.Record) error {
	s.add(recs)
	return s.flush()
}

// Gap buffers a gap in the session; the next flush writes it.
func (s *traceSink) Gap(g store.Gap) {
	g.Session = s.session
	s.w.AddGap(g)
}

// add buffers records in the session, or drops them past maxBacklog; the
// background flush or the next Write writes them.
func (s *traceSink) add(recs []store.Record) {
	if len(recs) == 0 {
		return
	}
	s.mu.Lock()
	if s.backlog >= maxBacklog {
		if s.dropped == 0 {
			s.since, s.dropErr = recs[0].Observed, s.failing
			s.warn(fmt.Sprintf("%s of records wait for %s: dropping new ones until it takes them (counted, and recorded as a gap)",
				report.BytesText(s.backlog), s.path))
		}
		s.dropped += len(recs)
		s.lost += len(recs)
		s.mu.Unlock()
		return
	}
	for i := range recs {
		recs[i].Session = s.session
		s.backlog += int64(len(recs[i].Object))
	}
	if s.oldest.IsZero() {
		s.oldest = recs[0].Observed
	}
	s.mu.Unlock()
	if s.pods != nil {
		s.pods.observe(recs)
	}
	s.w.Add(recs...)
}

// flush writes what is buffered, at most every retryEvery while writes
// fail. It returns an error only if writing can never work again.
func (s *traceSink) flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	now := s.now()
	s.mu.Lock()
	if s.fatal != nil {
		defer s.mu.Unlock()
		return s.fatal
	}
	if s.failing != nil && now.Sub(s.tried) < retryEvery {
		s.mu.Unlock()
		return nil
	}
	s.tried = now
	s.mu.Unlock()

	_, err := s.w.Flush()
	pending := s.w.Pending()

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors++
		if neverWrites(err) {
			s.fatal = err
			return err
		}
		if s.failing == nil {
			s.failed = now
			s.warn(fmt.Sprintf("cannot write the trace: %v; keeping the records in memory (up to %s) and retrying every %s",
				err, report.BytesText(maxBacklog), retryEvery))
		}
		s.failing = err
		return nil
	}
	if s.failing != nil {
		s.warn(fmt.Sprintf("writing %s again after %s", s.path, now.Sub(s.failed).Round(time.Second)))
		s.failing = nil
	}
	if pending > 0 {
		return nil // a reader holds the file
	}
	s.flushed = now
	s.backlog, s.oldest = 0, time.Time{}
	if s.dropped > 0 {
		detail := "a reader held the trace file"
		if s.dropErr != nil {
			detail = s.dropErr.Error()
		}
		s.w.AddGap(store.Gap{Session: s.session, Cause: store.GapWriteFailed, Start: s.since, End: now, Dropped: s.dropped, Detail: detail})
		s.warn(fmt.Sprintf("%s takes records again; %s dropped meanwhile, recorded as a gap", s.path, thousands(s.dropped)))
		s.dropped, s.dropErr = 0, nil
	}
	return nil
}

// sinkStatus is what the sink tells /metrics and /readyz.
type sinkStatus struct {
	Pending     int       // records buffered, not written yet
	Backlog     int64     // their bytes of JSON
	Flushed     time.Time // the last flush that left nothing pending
	Failing     error     // the last flush's error, nil once one works
	FailedSince time.Time // when the failing flushes began
	Lost        int       // records dropped in the whole recording
	WriteErrors int       // failed flushes in the whole recording
	Dropping    bool      // new records are dropped (past maxBacklog)
}

func (s *traceSink) status() sinkStatus {
	pending := s.w.Pending()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := sinkStatus{Pending: pending, Backlog: s.backlog, Flushed: s.flushed, Failing: s.failing,
		Lost: s.lost, WriteErrors: s.errors, Dropping: s.dropped > 0}
	if st.Failing == nil {
		st.Failing = s.fatal
	}
	if st.Failing != nil {
		st.FailedSince = s.failed
	}
	return st
}

// neverWrites reports whether a flush error will come back however often
// the flush is tried: those stop the recording, as they did before.
func neverWrites(err error) bool {
	return errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrInvalidRecord) ||
		errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrNewerSchema)
}

// backlogStatus says, for the status line, what waits to be written and
// why; "" when records reach the trace as they come.
func (s *traceSink) backlogStatus() string {
	pending := s.w.Pending()
	s.mu.Lock()
	defer s.mu.Unlock()
	var dropped string
	if s.dropped > 0 {
		dropped = fmt.Sprintf(", %s dropped", thousands(s.dropped))
	}
	wait := "0s"
	if !s.oldest.IsZero() {
		wait = s.now().Sub(s.oldest).Truncate(time.Second).String()
	}
	switch {
	case s.failing != nil:
		what := "cannot write the trace"
		switch {
		case errors.Is(s.failing, syscall.ENOSPC):
			what = "disk full"
		case errors.Is(s.failing, syscall.EDQUOT):
			what = "over disk quota"
		}
		return fmt.Sprintf("%s: %s waiting %s%s, retrying", what, thousands(pending), wait, dropped)
	case pending > 0 && !s.oldest.IsZero() && s.now().Sub(s.oldest) > 2*retryEvery:
		return fmt.Sprintf("%s revisions waiting %s%s: a reader holds the file", thousands(pending), wait, dropped)
	}
	return ""
}

// thousands formats n like "1,234".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// statusLine is a line on stderr rewritten in place, when stderr is a
// terminal; warnings are printed above it.
type statusLine struct {
	mu      sync.Mutex
	w       io.Writer
	enabled bool
	text    string
}

func newStatusLine(w io.Writer) *statusLine {
	s := &statusLine{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.enabled = true
	}
	return s
}

const clearLine = "\r\x1b[K"

// set replaces the status text.
func (s *statusLine) set(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
	fmt.Fprint(s.w, clearLine+text)
}

// println prints a line above the status.
func (s *statusLine) println(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled && s.text != "" {
		fmt.Fprint(s.w, clearLine)
	}
	fmt.Fprintln(s.w, line)
	if s.enabled && s.text != "" {
		fmt.Fprint(s.w, s.text)
	}
}

// clear removes the status line for good.
func (s *statusLine) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enabled && s.text != "" {
		fmt.Fprint(s.w, clearLine)
	}
	s.text = ""
	s.enabled = false
}
