// Command digester runs the digester example webhook (package
// github.com/podtrace/podtrace/examples/digester) on a loopback address:
// a stand-in for k8s-digester that pins pod images to digests on CREATE and
// denies any pod request whose pull Secrets it cannot read.
//
//	digester --kubeconfig KUBECONFIG --register
//
// With --register it creates the MutatingWebhookConfiguration
// digester.example.com pointing at itself and deletes it on exit. It stops
// on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/examples/digester"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "digester: error: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "digester: error: %v\n", err)
		os.Exit(1)
	}
}

// usageError is a bad command line: exit 2.
type usageError struct{ error }

// options are the command's flags.
type options struct {
	listen     string
	kubeconfig string
	register   bool
	name       string
	quiet      bool
	latency    time.Duration
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	opts := options{listen: "127.0.0.1:0", latency: digester.DefaultKeychainLatency}
	fs := flag.NewFlagSet("digester", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.listen, "listen", opts.listen, "address to serve the webhook on; its host must be 127.0.0.1, port 0 picks one")
	fs.StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster whose Secrets the webhook reads (default: $KUBECONFIG, then ~/.kube/config)")
	fs.BoolVar(&opts.register, "register", false, "create the MutatingWebhookConfiguration pointing at this server, and delete it on exit")
	fs.StringVar(&opts.name, "name", digester.ConfigurationName, "name of the MutatingWebhookConfiguration --register creates")
	fs.DurationVar(&opts.latency, "keychain-latency", opts.latency, "wait before reading a pod's pull Secrets, standing in for the real webhook's network hop and work (0: none)")
	fs.BoolVar(&opts.quiet, "quiet", false, "do not log each admission decision to stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Errorf("unexpected arguments %q: digester takes only flags", fs.Args())}
	}
	if opts.latency < 0 {
		return usageError{fmt.Errorf("--keychain-latency %s: want 0 or more", opts.latency)}
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig (set --kubeconfig): %w", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("make Kubernetes client: %w", err)
	}

	logger := slog.New(slog.DiscardHandler)
	if !opts.quiet {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	latency := opts.latency
	if latency == 0 {
		latency = -1 // ServerOptions: negative means none
	}
	srv, err := digester.NewServer(digester.ServerOptions{Addr: opts.listen, Client: client, Logger: logger, KeychainLatency: latency})
	if err != nil {
		return usageError{fmt.Errorf("--listen: %w", err)}
	}
	if err := srv.Start(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "digester: serving %s\n", srv.URL())

	if opts.register {
		cfg, err := digester.Register(ctx, client, digester.Options{URL: srv.URL(), CABundle: srv.CABundle(), Name: opts.name})
		if err != nil {
			return errors.Join(err, srv.Close())
		}
		fmt.Fprintf(stdout, "digester: registered mutatingwebhookconfiguration %s (pods, CREATE and UPDATE, namespaces labelled %s=%s)\n",
			cfg.Name, digester.NamespaceLabel, digester.NamespaceLabelValue)
	}

	<-ctx.Done()
	fmt.Fprintln(stdout, "digester: stopping")
	var errs []error
	if opts.register {
		cleanup, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := digester.Unregister(cleanup, client, opts.name); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(stdout, "digester: deleted mutatingwebhookconfiguration %s\n", opts.name)
		}
	}
	errs = append(errs, srv.Close())
	return errors.Join(errs...)
}
