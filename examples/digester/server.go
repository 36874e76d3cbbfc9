package digester

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// MutatePath is the path the webhook is served on.
const MutatePath = "/mutate"

// ServerOptions configure a Server.
type ServerOptions struct {
	// Addr is the listen address. Its host must be 127.0.0.1 (the serving
	// certificate's address); port 0 picks a free port. Default
	// "127.0.0.1:0".
	Addr string
	// Client reads the pods' pull Secrets. Required.
	Client kubernetes.Interface
	// Logger gets one line per admission decision; nil discards them.
	Logger *slog.Logger
	// KeychainLatency is the Handler's KeychainLatency: 0 means
	// DefaultKeychainLatency, a negative value none.
	KeychainLatency time.Duration
}

// Server serves a Handler over TLS on a loopback listener, with a
// certificate signed by a CA it made in memory.
type Server struct {
	opts  ServerOptions
	certs *certificates
	srv   *http.Server

	mu       sync.Mutex
	listener net.Listener
	done     chan struct{} // closed when Serve returns
	serveErr error
}

// NewServer makes the certificates and the handler; Start serves them.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("new digester server: a Kubernetes client is required")
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("new digester server: listen address %q: %w", opts.Addr, err)
	}
	if host != "127.0.0.1" {
		return nil, fmt.Errorf("new digester server: listen address %q: the serving certificate is for 127.0.0.1; listen on 127.0.0.1:PORT", opts.Addr)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	certs, err := newCertificates(time.Now())
	if err != nil {
		return nil, fmt.Errorf("new digester server: %w", err)
	}
	handler := NewHandler(opts.Client, opts.Logger)
	switch {
	case opts.KeychainLatency == 0:
		handler.KeychainLatency = DefaultKeychainLatency
	case opts.KeychainLatency > 0:
		handler.KeychainLatency = opts.KeychainLatency
	}
	mux := http.NewServeMux()
	mux.Handle(MutatePath, handler)
	return &Server{
		opts:  opts,
		certs: certs,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			TLSConfig: &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{certs.serving},
			},
			ErrorLog: slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
		},
	}, nil
}

// Start listens and serves in the background until Close.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("start digester server: already started")
	}
	l, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("start digester server: %w", err)
	}
	s.listener = l
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		err := s.srv.Serve(tls.NewListener(l, s.srv.TLSConfig))
		if !errors.Is(err, http.ErrServerClosed) {
			s.mu.Lock()
			s.serveErr = err
			s.mu.Unlock()
		}
	}()
	return nil
}

// URL is the webhook's address, https://127.0.0.1:PORT/mutate; empty before
// Start.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return "https://" + s.listener.Addr().String() + MutatePath
}

// CABundle is the PEM of the CA that signed the serving certificate, for a
// webhook configuration's clientConfig.caBundle or a client's root pool.
func (s *Server) CABundle() []byte {
	return append([]byte(nil), s.certs.caPEM...)
}

// Close stops the listener, waits up to 5 s for requests in flight, then
// closes what is left and returns once the serving goroutine has ended.
// It reports an error the server stopped with on its own, if any.
func (s *Server) Close() error {
	s.mu.Lock()
	started := s.listener != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.serveErr != nil {
		return fmt.Errorf("digester server: %w", s.serveErr)
	}
	return nil
}
