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

	"github.com/podtrace/podtrace/store"
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
		if ctx.Err() != nil {
			return // shutting down
		}
		k.watchErrors.Add(1)
		if errors.Is(err, io.EOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return // a watch that ended normally
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
// themselves instead, warns once they have failed for a while, and records
// the outage as a gap in observation once the server answers again.
const (
	serverFailuresBeforeWarning = 3
	serverDownBeforeWarning     = 5 * time.Second
)

// While the API server does not answer, the recorder's GET requests (its
// lists and watches) are retried by the transport, every retryMax at most,
// instead of failing back to the reflectors. A reflector that sees its
// watch fail backs off exponentially, to 30 s and up to twice that with
// jitter, and does not reset before two minutes (client-go v0.37, and no
// option for it through a shared informer): after an outage of ten seconds
// the pod informer slept on for up to half a minute with the server back,
// and what changed meanwhile reached the trace only with its relist, as one
// revision. A request waiting in the transport goes out within retryMax of
// the server answering. The recorder is one client: a request a second per
// informer is little for a server that is starting up.
const (
	retryFirst = 200 * time.Millisecond
	retryMax   = time.Second
)

// serverHealth counts failed requests to the API server in a row.
type serverHealth struct {
	host string
	warn func(string)
	now  func() time.Time
	// gap, if set, receives the outages once the server answers again.
	gap func(store.Gap)

	mu       sync.Mutex
	total    int64 // failed requests in the whole recording
	failures int
	since    time.Time // first failure in a row
	first    string    // its error
	last     string    // the latest failure's error
	warned   time.Time // last warning; zero if none in this outage
	ended    time.Time // when the last outage ended
}

// failed notes a request that did not reach the API server, or that it
// answered with a gateway or availability error.
func (h *serverHealth) failed(err error) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		h.since, h.first = now, err.Error()
	}
	h.failures++
	h.total++
	h.last = err.Error()
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

// succeeded notes a request the API server answered; it ends the outage,
// if any, and hands it to gap.
func (h *serverHealth) succeeded() {
	now := h.now()
	h.mu.Lock()
	if h.failures == 0 {
		h.mu.Unlock()
		return
	}
	if !h.warned.IsZero() {
		h.warn(fmt.Sprintf("the API server at %s answers again after %s; changes made meanwhile may show as one revision",
			h.host, now.Sub(h.since).Round(time.Second)))
	}
	g := h.outage()
	g.End = now
	h.failures, h.warned, h.ended = 0, time.Time{}, now
	h.mu.Unlock()
	if h.gap != nil {
		h.gap(g)
	}
}

// open returns the outage still going on, if any, as a gap without an end.
func (h *serverHealth) open() (store.Gap, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures == 0 {
		return store.Gap{}, false
	}
	return h.outage(), true
}

// lastOutageEnded returns when the last outage ended; zero if none did.
func (h *serverHealth) lastOutageEnded() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended
}

// status returns the failed requests so far and, while the API server does
// not answer, since when; zero when its last request was answered.
func (h *serverHealth) status() (failed int64, downSince time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures > 0 {
		downSince = h.since
	}
	return h.total, downSince
}

// outage is the current outage as a gap without an end; h.mu is held.
func (h *serverHealth) outage() store.Gap {
	detail := h.first
	if h.last != h.first {
		detail += "; last: " + h.last
	}
	return store.Gap{
		Cause:  store.GapAPIServer,
		Start:  h.since,
		Detail: fmt.Sprintf("%s (%d failed requests to %s)", detail, h.failures, h.host),
	}
}

// wrap is a rest.Config transport wrapper that reports to h, and retries
// the GET requests that fail for want of a server (see retryMax) until it
// answers or the request is cancelled.
func (h *serverHealth) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		retry := req.Method == http.MethodGet && (req.Body == nil || req.Body == http.NoBody)
		for delay := retryFirst; ; delay = min(2*delay, retryMax) {
			resp, err := rt.RoundTrip(req)
			var failure error
			switch {
			case req.Context().Err() != nil:
				// Cancelled by the recorder (shutdown): says nothing.
				return resp, err
			case err != nil:
				failure = err
			case unavailable(resp.StatusCode):
				failure = fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
			}
			if failure == nil {
				h.succeeded()
				return resp, err
			}
			h.failed(failure)
			if !retry {
				return resp, err
			}
			if resp != nil {
				// Read a little so the connection can be reused.
				_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
				resp.Body.Close()
			}
			select {
			case <-req.Context().Done():
				return nil, fmt.Errorf("%w (while retrying: %v)", req.Context().Err(), failure)
			case <-time.After(delay):
			}
		}
	})
}

// unavailable reports whether an HTTP status says the API server (or what
// stands before it) cannot serve now.
func unavailable(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
