package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/serve"
)

// serveOptions are the options of `podtrace serve`.
type serveOptions struct {
	streams    Streams
	db         string
	listen     string
	kubeconfig string
	speed      float64
	redact     redactFlags
}

func serveCommand(streams Streams) *cli.Command {
	o := &serveOptions{streams: streams, db: "podtrace.db", listen: "127.0.0.1:0", speed: 1}
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the recorded cluster as a read-only Kubernetes API, at any recorded moment, for kubectl and client-go",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read", TakesFile: true},
			&cli.StringFlag{Name: "listen", Value: o.listen, Destination: &o.listen, Usage: "address to listen on (loopback only; port 0 picks a free one)"},
			&cli.StringFlag{Name: "kubeconfig", Destination: &o.kubeconfig, Usage: "kubeconfig to write, with a context per moment (default: the trace's path + .kubeconfig)", TakesFile: true},
			&cli.Float64Flag{Name: "speed", Value: o.speed, Destination: &o.speed, Usage: "how many times faster than recorded a watch replays (0: as fast as it can)"},
		}, o.redact.flags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("serve takes no arguments (got %q): the trace is --db FILE", c.Args().First())
			}
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context)
		},
	}
}

// Complete fills the defaults that depend on other flags.
func (o *serveOptions) Complete() error {
	if o.kubeconfig == "" {
		o.kubeconfig = o.db + ".kubeconfig"
	}
	return o.redact.Complete()
}

// Validate checks the flags, naming the one that is wrong.
func (o *serveOptions) Validate() error {
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8001", o.listen)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("--listen %q: serve listens on loopback only (127.0.0.1 or ::1): a trace holds the cluster's objects, and serving them beyond this machine (TLS with a bearer token) is not built yet", o.listen)
	}
	if o.speed < 0 {
		return usagef("--speed %v: want 0 (as fast as possible) or a positive factor, e.g. 10", o.speed)
	}
	return nil
}

// Run serves the trace until ctx is cancelled.
func (o *serveOptions) Run(ctx context.Context) error {
	db, err := openTrace(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	opts := serve.Options{Speed: o.speed}
	if o.redact.off {
		o.redact.warnOff(o.streams)
	} else {
		opts.Redactor = o.redact.redactor
	}
	srv, err := serve.New(db, opts)
	if err != nil {
		return fmt.Errorf("serve %s: %w", o.db, err)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	base := "http://" + ln.Addr().String()
	cfg := serve.Kubeconfig(base, srv.Moments())
	if err := clientcmd.WriteToFile(*cfg, o.kubeconfig); err != nil {
		ln.Close()
		return fmt.Errorf("write kubeconfig %q: %w", o.kubeconfig, err)
	}
	fmt.Fprintf(o.streams.Out, "serving %s at %s (read-only; recording ends %s)\n", o.db, base, srv.End().UTC().Format(time.RFC3339))
	fmt.Fprintf(o.streams.Out, "kubeconfig %s, contexts:\n", o.kubeconfig)
	for _, m := range srv.Moments() {
		at := "the end of the recording"
		if !m.At.IsZero() {
			at = m.At.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(o.streams.Out, "  %-28s %s\n", m.Name, at)
	}
	fmt.Fprintf(o.streams.Out, "try: kubectl --kubeconfig %s get pods -A   (or any moment: %s/at/-5m/)\n", o.kubeconfig, base)

	hs := &http.Server{Handler: srv, BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	return nil
}
