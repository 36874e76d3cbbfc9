package tracer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// Warnings about failing watches: informers retry by themselves, so a
// failure is only worth telling after a few in a row, and then once a minute.
const (
	watchFailuresBeforeWarning = 3
	watchWarningEvery          = time.Minute
	watchFailuresForget        = 5 * time.Minute
)

// watchErrors counts watch failures per kind.
type watchErrors struct {
	mu    sync.Mutex
	kinds map[*kind]*watchFailures
}

type watchFailures struct {
	n          int
	last, warn time.Time
}

// handler returns the watch error handler of kind k's informer.
func (w *watchErrors) handler(t *Tracer, k *kind) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return // shutting down, or a watch that ended normally
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.kinds == nil {
			w.kinds = map[*kind]*watchFailures{}
		}
		f := w.kinds[k]
		if f == nil {
			f = &watchFailures{}
			w.kinds[k] = f
		}
		if now.Sub(f.last) > watchFailuresForget {
			f.n = 0
		}
		f.n++
		f.last = now
		if f.n >= watchFailuresBeforeWarning && now.Sub(f.warn) >= watchWarningEvery {
			f.warn = now
			t.warn(fmt.Sprintf("watching %s failed %d times, still retrying: %v", k.resource(), f.n, err))
		}
	}
}

// An API server that goes away does not reach the watch error handlers: the
// reflectors retry their watches quietly. serverHealth watches the requests
// themselves instead, and warns once they have failed for a while.
const (
	serverFailuresBeforeWarning = 3
	serverDownBeforeWarning     = 5 * time.Second
)

// serverHealth counts failed requests to the API server in a row.
type serverHealth struct {
	host string
	warn func(string)
	now  func() time.Time

	mu       sync.Mutex
	failures int
	since    time.Time // first failure in a row
	warned   time.Time // last warning; zero if none in this outage
}

// failed notes a request that did not reach the API server, or that it
// answered with a gateway or availability error.
func (h *serverHealth) failed(err error) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		h.since = now
	}
	h.failures++
	if h.failures < serverFailuresBeforeWarning || now.Sub(h.since) < serverDownBeforeWarning {
		return
	}
	if !h.warned.IsZero() && now.Sub(h.warned) < watchWarningEvery {
		return
	}
	h.warned = now
	h.warn(fmt.Sprintf("cannot reach the API server at %s for %s (%d failed requests, last: %v); still retrying, what was recorded is kept",
		h.host, now.Sub(h.since).Round(time.Second), h.failures, err))
}

// succeeded notes a request the API server answered.
func (h *serverHealth) succeeded() {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.warned.IsZero() {
		h.warn(fmt.Sprintf("the API server at %s answers again after %s; changes made meanwhile may show as one revision",
			h.host, now.Sub(h.since).Round(time.Second)))
	}
	h.failures, h.warned = 0, time.Time{}
}

// wrap is a rest.Config transport wrapper that reports to h.
func (h *serverHealth) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		switch {
		case req.Context().Err() != nil:
			// Cancelled by the recorder (shutdown): says nothing.
		case err != nil:
			h.failed(err)
		case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
			h.failed(fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status))
		default:
			h.succeeded()
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
