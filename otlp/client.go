package otlp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/encoding/gzip" // the gzip compressor, by name
)

// The OTLP transports.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// ClientOptions say where and how spans are sent.
type ClientOptions struct {
	// Endpoint is host:port, or a URL: http://host:port (no TLS),
	// https://host:port, with the path of OTLP/HTTP's traces if it is not
	// /v1/traces.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP.
	Protocol string
	// Insecure sends without TLS to an endpoint given as host:port.
	Insecure bool
	// CAFile holds the certificates that sign the endpoint's, PEM; empty:
	// the system's.
	CAFile string
	// Headers go with every request: Authorization and the like.
	Headers map[string]string
	// Timeout bounds each request (default 10s).
	Timeout time.Duration
	// Retry has the exporter retry a failed request, with back-off, for
	// up to RetryFor; zero: a failed request fails at once (the caller
	// retries).
	RetryFor time.Duration
}

// Endpoint is a parsed ClientOptions.Endpoint.
type Endpoint struct {
	HostPort string
	Path     string // OTLP/HTTP only
	TLS      bool
}

// ParseEndpoint reads an endpoint as ClientOptions.Endpoint says, for the
// protocol; insecure turns TLS off for a host:port.
func ParseEndpoint(endpoint, protocol string, insecure bool) (Endpoint, error) {
	if endpoint == "" {
		return Endpoint{}, errors.New("no endpoint: give host:port, or a URL such as http://localhost:4318")
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return Endpoint{}, fmt.Errorf("%q is not a URL: %w", endpoint, err)
		}
		var e Endpoint
		switch u.Scheme {
		case "http":
		case "https":
			e.TLS = true
		default:
			return Endpoint{}, fmt.Errorf("%q: the scheme must be http (no TLS) or https, not %q", endpoint, u.Scheme)
		}
		if insecure && e.TLS {
			return Endpoint{}, fmt.Errorf("%q is https, which asks for TLS, and insecure turns it off: drop one", endpoint)
		}
		if u.Hostname() == "" {
			return Endpoint{}, fmt.Errorf("%q names no host", endpoint)
		}
		e.HostPort = u.Host
		if u.Port() == "" {
			e.HostPort = net.JoinHostPort(u.Hostname(), defaultPort(protocol))
		}
		e.Path = u.Path
		if protocol == ProtocolGRPC && e.Path != "" && e.Path != "/" {
			return Endpoint{}, fmt.Errorf("%q has a path, which gRPC has no use for: give the host and port", endpoint)
		}
		if e.Path == "" || e.Path == "/" {
			e.Path = "/v1/traces"
		}
		return e, nil
	}
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%q: %w; give host:port, e.g. localhost:4317, or a URL", endpoint, err)
	}
	if host == "" || port == "" {
		return Endpoint{}, fmt.Errorf("%q: give both a host and a port, e.g. localhost:4317", endpoint)
	}
	return Endpoint{HostPort: endpoint, Path: "/v1/traces", TLS: !insecure}, nil
}

// defaultPort is OTLP's port for the protocol.
func defaultPort(protocol string) string {
	if protocol == ProtocolHTTP {
		return "4318"
	}
	return "4317"
}

// String is the endpoint as a URL.
func (e Endpoint) String() string {
	scheme := "http"
	if e.TLS {
		scheme = "https"
	}
	return scheme + "://" + e.HostPort
}

// Client sends spans to one OTLP endpoint with OpenTelemetry's exporters.
type Client struct {
	exp      sdktrace.SpanExporter
	endpoint Endpoint
	protocol string
}

// NewClient makes a client; it connects on the first Send.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Protocol == "" {
		opts.Protocol = ProtocolGRPC
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	ep, err := ParseEndpoint(opts.Endpoint, opts.Protocol, opts.Insecure)
	if err != nil {
		return nil, err
	}
	var tlsCfg *tls.Config
	if ep.TLS {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.CAFile != "" {
			pem, err := os.ReadFile(opts.CAFile)
			if err != nil {
				return nil, fmt.Errorf("CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("CA file %s holds no PEM certificate", opts.CAFile)
			}
			tlsCfg.RootCAs = pool
		}
	} else if opts.CAFile != "" {
		return nil, fmt.Errorf("a CA file is for TLS, and %s is sent to without it: give an https:// endpoint, or drop insecure", ep.HostPort)
	}
	c := &Client{endpoint: ep, protocol: opts.Protocol}
	ctx := context.Background()
	switch opts.Protocol {
	case ProtocolGRPC:
		o := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpoint(ep.HostPort),
			otlptracegrpc.WithTimeout(opts.Timeout),
			otlptracegrpc.WithCompressor("gzip"),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: opts.RetryFor > 0,
				InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: opts.RetryFor}),
			// A backend that was down is found again within seconds of
			// coming back, not after gRPC's back-off of up to two minutes.
			otlptracegrpc.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 500 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
				MinConnectTimeout: 5 * time.Second,
			})),
		}
		if len(opts.Headers) > 0 {
			o = append(o, otlptracegrpc.WithHeaders(opts.Headers))
		}
		if tlsCfg != nil {
			o = append(o, otlptracegrpc.WithTLSCredentials(credentials.NewTLS(tlsCfg)))
		} else {
			o = append(o, otlptracegrpc.WithInsecure())
		}
		c.exp, err = otlptracegrpc.New(ctx, o...)
	case ProtocolHTTP:
		o := []otlptracehttp.Option{
			otlptracehttp.WithEndpoint(ep.HostPort),
			otlptracehttp.WithURLPath(ep.Path),
			otlptracehttp.WithTimeout(opts.Timeout),
			otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: opts.RetryFor > 0,
				InitialInterval: time.Second, MaxInterval: 5 * time.Second, MaxElapsedTime: opts.RetryFor}),
		}
		if len(opts.Headers) > 0 {
			o = append(o, otlptracehttp.WithHeaders(opts.Headers))
		}
		if tlsCfg != nil {
			o = append(o, otlptracehttp.WithTLSClientConfig(tlsCfg))
		} else {
			o = append(o, otlptracehttp.WithInsecure())
		}
		c.exp, err = otlptracehttp.New(ctx, o...)
	default:
		return nil, fmt.Errorf("protocol %q: want %s or %s", opts.Protocol, ProtocolGRPC, ProtocolHTTP)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", ep, err)
	}
	return c, nil
}

// Endpoint is where the client sends, as a URL.
func (c *Client) Endpoint() string { return c.endpoint.String() }

// Protocol is the client's transport.
func (c *Client) Protocol() string { return c.protocol }

// Send sends spans in one request.
func (c *Client) Send(ctx context.Context, spans tracetest.SpanStubs) error {
	if len(spans) == 0 {
		return nil
	}
	if err := c.exp.ExportSpans(ctx, spans.Snapshots()); err != nil {
		return fmt.Errorf("send %d spans to %s (%s): %w", len(spans), c.endpoint, c.protocol, err)
	}
	return nil
}

// Close lets go of the connection.
func (c *Client) Close(ctx context.Context) error { return c.exp.Shutdown(ctx) }
