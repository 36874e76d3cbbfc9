package tracer

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/podtrace/podtrace/store"
)

func TestServerHealthGaps(t *testing.T) {
	now := observedAt
	var gaps []store.Gap
	h := &serverHealth{host: "https://127.0.0.1:6443", warn: func(string) {}, now: func() time.Time { return now },
		gap: func(g store.Gap) { gaps = append(gaps, g) }}
	refused := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	h.succeeded() // no outage: no gap
	if _, open := h.open(); open || len(gaps) != 0 {
		t.Fatalf("gap without a failure: %v, open %v", gaps, open)
	}
	start := now
	h.failed(refused)
	now = now.Add(time.Second)
	h.failed(refused)
	now = now.Add(time.Second)
	h.failed(errors.New("GET /api/v1/pods: 503 Service Unavailable"))
	if g, open := h.open(); !open || !g.Start.Equal(start) || !g.End.IsZero() {
		t.Errorf("open outage = %+v, %v; want one since %s, no end", g, open, start)
	}
	now = now.Add(time.Second)
	h.succeeded()
	h.succeeded()
	want := []store.Gap{{
		Cause: store.GapAPIServer, Start: start, End: start.Add(3 * time.Second),
		Detail: "dial tcp 127.0.0.1:6443: connect: connection refused; last: GET /api/v1/pods: 503 Service Unavailable (3 failed requests to https://127.0.0.1:6443)",
	}}
	if diff := cmp.Diff(want, gaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	if _, open := h.open(); open {
		t.Error("outage still open after the server answered")
	}
}

// TestTransportRetriesWhileServerIsAway: a GET answered 503 is retried
// until the server answers, without the caller seeing the failures; a
// request that is not a GET is not.
func TestTransportRetriesWhileServerIsAway(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 3 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	var mu sync.Mutex
	var gaps []store.Gap
	h := &serverHealth{host: srv.URL, warn: func(string) {}, now: time.Now,
		gap: func(g store.Gap) { mu.Lock(); gaps = append(gaps, g); mu.Unlock() }}
	client := &http.Client{Transport: h.wrap(http.DefaultTransport)}

	resp, err := client.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || calls.Load() != 1 {
		t.Errorf("POST: %s after %d calls; want 503 after 1 (not retried)", resp.Status, calls.Load())
	}
	resp, err = client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || calls.Load() != 4 {
		t.Errorf("GET: %s after %d calls; want 200 after 4", resp.Status, calls.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gaps) != 1 || gaps[0].Cause != store.GapAPIServer || !strings.Contains(gaps[0].Detail, "3 failed requests") || !gaps[0].End.After(gaps[0].Start) {
		t.Errorf("gaps = %+v; want one outage of 3 failed requests", gaps)
	}
}

// TestTransportRetryStopsWithTheRequest: a GET to a server that refuses
// connections waits until its context is cancelled.
func TestTransportRetryStopsWithTheRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refused from now on
	h := &serverHealth{host: addr, warn: func(string) {}, now: time.Now}
	client := &http.Client{Transport: h.wrap(http.DefaultTransport)}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/pods?watch=true", nil)
	began := time.Now()
	_, err = client.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET: %v, want the context's deadline", err)
	}
	if d := time.Since(began); d < time.Second {
		t.Errorf("GET returned after %s, before its deadline", d)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failures < 3 {
		t.Errorf("%d attempts in 1.5s, want a retry every %s at most", h.failures, retryMax)
	}
}

type gapSink struct {
	memSink
	gaps []store.Gap
}

func (s *gapSink) Gap(g store.Gap) { s.gaps = append(s.gaps, g) }

// TestWriterHandsGapsToAGapSink: gaps queued before the last batch reach
// the sink, also the one queued just before the queue closes.
func TestWriterHandsGapsToAGapSink(t *testing.T) {
	tr := directTracer(t, "")
	q := newQueue(10)
	q.push(store.Record{UID: "a", Kind: "Pod"})
	q.pushGap(store.Gap{Cause: store.GapAPIServer, Start: observedAt})
	q.close()
	q.pushGap(store.Gap{Cause: store.GapAPIServer, Detail: "after close: dropped"})
	sink := &gapSink{}
	if err := tr.write(q, sink, func() {}); err != nil {
		t.Fatal(err)
	}
	if len(sink.gaps) != 1 || !sink.gaps[0].Start.Equal(observedAt) || len(sink.records()) != 1 {
		t.Errorf("gaps %+v, %d records; want the one gap queued before close and 1 record", sink.gaps, len(sink.records()))
	}
}

// TestCompressionOffByDefault: the tracer's clients ask the API server for
// no gzip unless Options.Compression; a kubeconfig's disable-compression
// holds either way. Over TLS, as to an API server: client-go gives a plain
// http:// host Go's default transport, which asks for gzip whatever the
// config says.
func TestCompressionOffByDefault(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+" Accept-Encoding="+r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer srv.Close()
	for _, c := range []struct {
		compression, disabled bool
		want                  string
	}{
		{false, false, ""},
		{true, false, "gzip"},
		{true, true, ""},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		cfg := &rest.Config{Host: srv.URL, DisableCompression: c.disabled,
			TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
		tr, err := New(Options{RESTConfig: cfg, Compression: c.compression})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tr.pods.Get().Resource("pods").Do(ctx)
		tr.meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).List(ctx, metav1.ListOptions{})
		mu.Lock()
		if len(got) < 2 {
			t.Errorf("Compression %v, kubeconfig disable-compression %v: %d requests, want 2", c.compression, c.disabled, len(got))
		}
		for _, g := range got {
			if !strings.HasSuffix(g, "Accept-Encoding="+c.want) {
				t.Errorf("Compression %v, kubeconfig disable-compression %v: %s; want Accept-Encoding=%q", c.compression, c.disabled, g, c.want)
			}
		}
		mu.Unlock()
	}
}
