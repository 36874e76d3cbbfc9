package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/otlp"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// otlpFlags are the flags of every command that sends pods' traces over
// OTLP: export --otlp and record --otlp.
type otlpFlags struct {
	endpoint string
	protocol string
	insecure bool
	caFile   string
	headers  cli.StringSlice
	timeout  time.Duration
	cluster  string

	client otlp.ClientOptions // built by complete
}

func (f *otlpFlags) flags(what string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "otlp", Destination: &f.endpoint, Usage: what + " to this OpenTelemetry (OTLP) endpoint, one trace per pod: host:port (TLS unless --otlp-insecure), or http://host:port (no TLS) or https://host:port; e.g. localhost:4317 (gRPC) or http://localhost:4318 with --otlp-protocol http"},
		&cli.StringFlag{Name: "otlp-protocol", Value: otlp.ProtocolGRPC, Destination: &f.protocol, Usage: "OTLP transport: grpc or http (http/protobuf)"},
		&cli.BoolFlag{Name: "otlp-insecure", Destination: &f.insecure, Usage: "send to a host:port --otlp without TLS"},
		&cli.StringFlag{Name: "otlp-ca-file", Destination: &f.caFile, Usage: "PEM file of the certificates that sign the OTLP endpoint's (default: the system's)", TakesFile: true},
		&cli.StringSliceFlag{Name: "otlp-header", Destination: &f.headers, Usage: "send this header with every OTLP request, KEY=VALUE, e.g. \"Authorization=Bearer TOKEN\" (repeatable)"},
		&cli.DurationFlag{Name: "otlp-timeout", Value: 10 * time.Second, Destination: &f.timeout, Usage: "give up on an OTLP request after this long, retries included"},
		&cli.StringFlag{Name: "cluster-name", Destination: &f.cluster, Usage: "the cluster's name in the traces (k8s.cluster.name), to tell clusters apart in one backend (default: the recording's kubeconfig context)"},
	}
}

// on reports whether --otlp was given.
func (f *otlpFlags) on() bool { return f.endpoint != "" }

// complete checks the OTLP flags, naming the one that is wrong, and builds
// the client's options; the cluster name is settled by clusterName.
func (f *otlpFlags) complete() error {
	switch f.protocol {
	case "grpc":
		f.protocol = otlp.ProtocolGRPC
	case "http", "http/protobuf":
		f.protocol = otlp.ProtocolHTTP
	default:
		return usagef("--otlp-protocol must be grpc or http, not %q", f.protocol)
	}
	if _, err := otlp.ParseEndpoint(f.endpoint, f.protocol, f.insecure); err != nil {
		return usagef("--otlp: %v", err)
	}
	headers := map[string]string{}
	for _, h := range f.headers.Value() {
		k, v, ok := strings.Cut(h, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return usagef("--otlp-header %q: want KEY=VALUE, e.g. \"Authorization=Bearer TOKEN\"", h)
		}
		headers[strings.TrimSpace(k)] = v
	}
	if f.timeout <= 0 {
		return usagef("--otlp-timeout must be positive, got %s", f.timeout)
	}
	f.client = otlp.ClientOptions{Endpoint: f.endpoint, Protocol: f.protocol, Insecure: f.insecure,
		CAFile: f.caFile, Headers: headers, Timeout: f.timeout}
	if _, err := otlp.NewClient(f.client); err != nil {
		return usagef("--otlp: %v", err) // the CA file, mostly
	}
	return nil
}

// clusterName is --cluster-name, else the kubeconfig context of the
// recording's last session that names one.
func (f *otlpFlags) clusterName(sessions []store.Session) (string, error) {
	if f.cluster != "" {
		return f.cluster, nil
	}
	for i := len(sessions) - 1; i >= 0; i-- {
		if c := sessions[i].Context; c != "" {
			return c, nil
		}
	}
	server := ""
	if len(sessions) > 0 {
		if u, err := url.Parse(sessions[len(sessions)-1].Server); err == nil {
			server = " (its API server: " + u.Host + ")"
		}
	}
	return "", usagef("--cluster-name is needed: the recording names no kubeconfig context%s, and the traces must say which cluster they are from", server)
}

// otlpPod replays one recorded pod and makes its trace: explained,
// redacted (lifecycle and labels) as every output is.
// end, if not zero, is when the recording ends for the pod: record --otlp
// passes the present, which its recorder is observing.
func otlpPod(db *store.DB, tc *traceContext, obj store.Object, sel labels.Selector, finish func(*explain.Lifecycle), objects *redact.Redactor, opts otlp.Options, end time.Time) (tracetest.SpanStubs, bool, error) {
	in, err := loadInput(db, tc, obj)
	if err != nil {
		return nil, false, err
	}
	in.End = end
	if len(in.Pod) == 0 {
		return nil, false, nil
	}
	if !matchesLabels(in, sel) {
		return nil, false, nil
	}
	lc, err := explain.Replay(in, diff.Options{})
	if err != nil {
		return nil, false, fmt.Errorf("replay pod %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	if finish != nil {
		finish(lc)
	}
	p := otlp.PodOf(lc, in)
	if objects != nil && len(p.Labels) > 0 {
		if p.Labels, err = redactLabels(objects, p.Labels); err != nil {
			return nil, false, fmt.Errorf("pod %s/%s: %w", obj.Namespace, obj.Name, err)
		}
	}
	lc.DropRevisions()
	return otlp.Spans(p, opts), true, nil
}

// matchesLabels reports whether the pod's labels, as last recorded, match
// sel (nil or empty: any pod).
func matchesLabels(in diff.Input, sel labels.Selector) bool {
	if sel == nil || sel.Empty() {
		return true
	}
	if len(in.Pod) == 0 {
		return false
	}
	var m metav1.PartialObjectMetadata
	return json.Unmarshal(in.Pod[len(in.Pod)-1].Object, &m) == nil && sel.Matches(labels.Set(m.Labels))
}

// redactLabels redacts labels as a recorded object's are: the --redact
// keys and patterns, credentials.
func redactLabels(r *redact.Redactor, l map[string]string) (map[string]string, error) {
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": l}})
	if err != nil {
		return nil, err
	}
	out, err := r.RedactObject(raw)
	if err != nil {
		return nil, err
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, err
	}
	return m.Labels, nil
}

// inWindow reports whether a pod's recorded life, from its first record to
// its deletion (or the end of the trace, end), meets [from, to].
func inWindow(o store.Object, from, to, end time.Time) bool {
	last := end
	if o.Deleted {
		last = o.LastObserved
	}
	return (from.IsZero() || !last.Before(from)) && (to.IsZero() || !o.FirstObserved.After(to))
}

// runOTLP sends the chosen pods' traces to the OTLP endpoint: replayed on
// GOMAXPROCS workers, each pod's spans handed to one sender that batches
// them, in bounded memory (a few pods per worker, one batch).
func (o *exportOptions) runOTLP(ctx context.Context) error {
	began := time.Now()
	// As report (batchGC): the replays' garbage, not what export holds,
	// makes its heap; a collection at 3x the live heap instead of 2x.
	defer batchGC(200)()
	db, err := openTrace(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	ctxObjs, found, err := scanTrace(db, podFilter(o.namespace, o.pod))
	if err != nil {
		return err
	}
	tc, err := newContext(db, ctxObjs)
	if err != nil {
		return err
	}
	cluster, err := o.otlp.clusterName(tc.sessions)
	if err != nil {
		return err
	}
	end := traceEnd(tc.sessions)
	if o.from, err = o.sinceTime(end); err != nil {
		return err
	}
	var pods []store.Object
	for _, p := range found[0] {
		if inWindow(p, o.from, o.to, end) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return fmt.Errorf("no pod%s%s recorded in %s%s: run podtrace report --db %s to list them", optName(o.pod), inNamespace(o.namespace), o.db, o.windowText(), o.db)
	}
	// A request that fails is retried, with back-off, up to --otlp-timeout.
	o.otlp.client.RetryFor = o.otlp.timeout
	client, err := otlp.NewClient(o.otlp.client)
	if err != nil {
		return err
	}
	defer client.Close(context.Background())
	o.redact.warnOff(o.streams)
	opts := otlp.Options{Cluster: cluster, Version: Version}

	type result struct {
		spans tracetest.SpanStubs
		ok    bool
		err   error
	}
	// Each pod's result has a slot of its own; the sender takes them in
	// order, so the summary and any error are the same every run.
	results := make([]chan result, len(pods))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := min(runtime.GOMAXPROCS(0), len(pods))
	// A worker is at most this many pods ahead of the sender.
	ahead := make(chan struct{}, 4*workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		var finish func(*explain.Lifecycle)
		var objects *redact.Redactor
		if !o.redact.off {
			finish, objects = o.redact.forWorker(), o.redact.objects()
		}
		wg.Go(func() {
			for {
				select {
				case ahead <- struct{}{}:
				case <-wctx.Done():
					return
				}
				i := int(next.Add(1) - 1)
				if i >= len(pods) {
					return
				}
				spans, ok, err := otlpPod(db, tc, pods[i], o.sel, finish, objects, opts, time.Time{})
				results[i] <- result{spans, ok, err}
			}
		})
	}
	defer wg.Wait()

	status := newStatusLine(o.streams.ErrOut)
	batch := otlp.NewBatcher(client)
	var lastStatus time.Time
	for i := range pods {
		var r result
		select {
		case r = <-results[i]:
		case <-ctx.Done():
			status.clear()
			return fmt.Errorf("interrupted after sending the traces of %s of %d", plural(batch.Pods, "pod"), len(pods))
		}
		<-ahead
		if r.err != nil {
			status.clear()
			return r.err
		}
		if !r.ok {
			continue
		}
		if err := batch.Add(ctx, r.spans); err != nil {
			status.clear()
			return o.sendError(err, batch.Pods)
		}
		if status.enabled && time.Since(lastStatus) > 200*time.Millisecond {
			status.set(fmt.Sprintf("exporting to %s: %d/%d pods, %s sent", client.Endpoint(), i+1, len(pods), plural(batch.Sent, "span")))
			lastStatus = time.Now()
		}
	}
	if err := batch.Flush(ctx); err != nil {
		status.clear()
		return o.sendError(err, batch.Pods)
	}
	status.clear()
	if batch.Pods == 0 {
		return fmt.Errorf("no recorded pod%s%s has labels matching %q: check --selector and -n", optName(o.pod), inNamespace(o.namespace), o.selector)
	}
	redaction := "redaction OFF (--no-redact)"
	if !o.redact.off {
		redaction = "redacted"
	}
	fmt.Fprintf(o.streams.ErrOut, "sent the traces of %s (%s in %s) from %s to %s (%s) as cluster %q in %s; %s\n",
		plural(batch.Pods, "pod"), plural(batch.Sent, "span"), plural(batch.Requests, "request"), o.db, client.Endpoint(), client.Protocol(),
		cluster, time.Since(began).Round(10*time.Millisecond), redaction)
	return nil
}

// sendError says that sending failed, what was sent, and what to check.
func (o *exportOptions) sendError(err error, sent int) error {
	hint := "check that an OTLP receiver listens there"
	if o.otlp.protocol == otlp.ProtocolGRPC {
		hint += " (4317 is OTLP/gRPC's port; for OTLP/HTTP, 4318, add --otlp-protocol http)"
	}
	var deadline interface{ Timeout() bool }
	if errors.As(err, &deadline) && deadline.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		hint += ", or raise --otlp-timeout"
	}
	return fmt.Errorf("%w; the traces of %s were sent before it failed; %s", err, plural(sent, "pod"), hint)
}

// windowText says which window --since and --until chose, for messages.
func (o *exportOptions) windowText() string {
	switch {
	case !o.from.IsZero() && !o.to.IsZero():
		return " between " + stampUTC(o.from) + " and " + stampUTC(o.to)
	case !o.from.IsZero():
		return " since " + stampUTC(o.from)
	case !o.to.IsZero():
		return " until " + stampUTC(o.to)
	}
	return ""
}

func stampUTC(t time.Time) string { return t.UTC().Format(time.RFC3339) }
