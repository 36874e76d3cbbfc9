package app

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/serve"
)

// certValidity is how long the certificate of an exposed server is valid:
// it lives only as long as the server (a restart makes another), so a day
// is plenty and a leaked copy soon worthless.
const certValidity = 24 * time.Hour

// serveOptions are the options of `podtrace serve`.
type serveOptions struct {
	streams    Streams
	db         string
	listen     string
	kubeconfig string
	speed      float64
	expose     bool
	sans       cli.StringSlice
	redact     redactFlags

	host string // of --listen
}

func serveCommand(streams Streams) *cli.Command {
	o := &serveOptions{streams: streams, db: "podtrace.db", listen: "127.0.0.1:0", speed: 1}
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the recorded cluster as a read-only Kubernetes API, at any recorded moment, for kubectl and client-go",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read", TakesFile: true},
			&cli.StringFlag{Name: "listen", Value: o.listen, Destination: &o.listen, Usage: "address to listen on (port 0 picks a free one); an address beyond loopback needs --expose"},
			&cli.StringFlag{Name: "kubeconfig", Destination: &o.kubeconfig, Usage: "kubeconfig to write, with a context per moment (default: the trace's path + .kubeconfig)", TakesFile: true},
			&cli.Float64Flag{Name: "speed", Value: o.speed, Destination: &o.speed, Usage: "how many times faster than recorded a watch replays (0: as fast as it can)"},
			&cli.BoolFlag{Name: "expose", Destination: &o.expose, Usage: "serve over TLS with a generated certificate and a bearer token, both written into the kubeconfig: what any --listen beyond loopback needs"},
			&cli.StringSliceFlag{Name: "tls-san", Destination: &o.sans, Usage: "with --expose, a host name or address clients reach the server by (repeatable); the first is the kubeconfig's"},
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
	o.host = host
	if !o.expose && !isLoopback(host) {
		return usagef("--listen %q is not a loopback address: serve opens a trace to the network only over TLS, with a bearer token: "+
			"add --expose (it writes the generated certificate and the token into the kubeconfig; --tls-san NAME names how clients reach this machine), "+
			"or listen on 127.0.0.1", o.listen)
	}
	if len(o.sans.Value()) > 0 && !o.expose {
		return usagef("--tls-san names the certificate of an exposed server: add --expose, or leave --tls-san out")
	}
	if o.speed < 0 {
		return usagef("--speed %v: want 0 (as fast as possible) or a positive factor, e.g. 10", o.speed)
	}
	return nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
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
	var handler http.Handler = srv
	var cred *serve.Credentials
	base := "http://" + ln.Addr().String()
	if o.expose {
		hosts, advertised, err := o.certHosts()
		if err != nil {
			ln.Close()
			return err
		}
		if cred, err = serve.NewCredentials(hosts, time.Now(), certValidity); err != nil {
			ln.Close()
			return fmt.Errorf("serve: %w", err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		base = "https://" + net.JoinHostPort(advertised, port)
		handler = serve.RequireToken(srv, cred.Token)
		fmt.Fprintf(o.streams.ErrOut, "WARNING: --expose: serving the recording beyond this machine, over TLS; anyone with the kubeconfig's token can read it until serve stops (certificate for %s, valid %s)\n",
			strings.Join(hosts, ", "), certValidity)
	}
	moments := srv.Moments()
	if err := writeKubeconfig(o.kubeconfig, base, moments, cred); err != nil {
		ln.Close()
		return err
	}
	fmt.Fprintf(o.streams.Out, "serving %s at %s (read-only; recording ends %s)\n", o.db, base, srv.End().UTC().Format(time.RFC3339))
	fmt.Fprintf(o.streams.Out, "kubeconfig %s, contexts:\n", o.kubeconfig)
	printMoments(o.streams, moments)
	fmt.Fprintf(o.streams.Out, "try: kubectl --kubeconfig %s get pods -A   (or any moment: --context, or --server %s/at/-5m/)\n", o.kubeconfig, base)

	hs := &http.Server{Handler: handler, BaseContext: func(net.Listener) context.Context { return ctx }, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(o.streams.ErrOut, "podtrace serve: ", 0)}
	done := make(chan error, 1)
	if cred != nil {
		hs.TLSConfig = cred.TLSConfig()
		go func() { done <- hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { done <- hs.Serve(ln) }()
	}
	found := make(chan struct{})
	go func() {
		defer close(found)
		o.addFindingContexts(ctx, db, base, moments, cred)
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	<-found
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve: shut down: %w", err)
	}
	return nil
}

// certHosts are the names and addresses of an exposed server's
// certificate, and the one its kubeconfig names: the --tls-san names first,
// then the --listen address, or, for an unspecified one (0.0.0.0, ::),
// this machine's host name and every address of its interfaces.
func (o *serveOptions) certHosts() (hosts []string, advertised string, err error) {
	seen := map[string]bool{}
	add := func(h string) {
		if h != "" && !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	for _, h := range o.sans.Value() {
		add(h)
	}
	ip := net.ParseIP(o.host)
	switch {
	case o.host == "" || ip != nil && ip.IsUnspecified():
		name, err := os.Hostname()
		if err == nil {
			add(name)
		}
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return nil, "", fmt.Errorf("serve --expose: list this machine's addresses for the certificate: %w (name them with --tls-san, or --listen on one)", err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				add(n.IP.String())
			}
		}
		add("localhost")
	default:
		add(o.host)
	}
	if len(hosts) == 0 {
		return nil, "", usagef("--expose: no host name or address for the certificate: add --tls-san NAME")
	}
	return hosts, hosts[0], nil
}

// writeKubeconfig writes the kubeconfig of the moments, readable by its
// owner only: with --expose it holds the token.
func writeKubeconfig(path, base string, moments []serve.Moment, cred *serve.Credentials) error {
	cfg := serve.Kubeconfig(base, moments, cred)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %q: %w", path, err)
	}
	// WriteToFile makes a new file 0600, but keeps the mode of one that
	// was there.
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig %q: %w", path, err)
	}
	return nil
}

func printMoments(streams Streams, moments []serve.Moment) {
	for _, m := range moments {
		at := "the end of the recording"
		if !m.At.IsZero() {
			at = m.At.UTC().Format(time.RFC3339Nano)
		}
		line := fmt.Sprintf("  %-28s %s", m.Name, at)
		if m.Why != "" && !m.At.IsZero() {
			line += "  " + m.Why
		}
		fmt.Fprintln(streams.Out, line)
	}
}
