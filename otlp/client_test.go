package otlp

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podtrace/podtrace/otlp/otlptest"
)

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		endpoint, protocol string
		insecure           bool
		want               Endpoint
		err                string
	}{
		{endpoint: "otel.example.com:4317", protocol: ProtocolGRPC, want: Endpoint{HostPort: "otel.example.com:4317", Path: "/v1/traces", TLS: true}},
		{endpoint: "127.0.0.1:4317", protocol: ProtocolGRPC, insecure: true, want: Endpoint{HostPort: "127.0.0.1:4317", Path: "/v1/traces"}},
		{endpoint: "http://localhost:4318", protocol: ProtocolHTTP, want: Endpoint{HostPort: "localhost:4318", Path: "/v1/traces"}},
		{endpoint: "https://otel.example.com", protocol: ProtocolHTTP, want: Endpoint{HostPort: "otel.example.com:4318", Path: "/v1/traces", TLS: true}},
		{endpoint: "https://otel.example.com/otlp/v1/traces", protocol: ProtocolHTTP, want: Endpoint{HostPort: "otel.example.com:4318", Path: "/otlp/v1/traces", TLS: true}},
		{endpoint: "http://[::1]:4317", protocol: ProtocolGRPC, want: Endpoint{HostPort: "[::1]:4317", Path: "/v1/traces"}},
		{endpoint: "", protocol: ProtocolGRPC, err: "no endpoint"},
		{endpoint: "localhost", protocol: ProtocolGRPC, err: "missing port"},
		{endpoint: ":4317", protocol: ProtocolGRPC, err: "give both a host and a port"},
		{endpoint: "ftp://localhost:4317", protocol: ProtocolGRPC, err: "the scheme must be http"},
		{endpoint: "https://localhost:4317", protocol: ProtocolGRPC, insecure: true, err: "drop one"},
		{endpoint: "http://localhost:4317/v1/traces", protocol: ProtocolGRPC, err: "gRPC has no use for"},
		{endpoint: "http://:4318", protocol: ProtocolHTTP, err: "names no host"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			got, err := ParseEndpoint(tt.endpoint, tt.protocol, tt.insecure)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseEndpoint(%q) = %v, %v; want an error with %q", tt.endpoint, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseEndpoint(%q) (-want +got):\n%s", tt.endpoint, diff)
			}
		})
	}
}

func TestClientHTTP(t *testing.T) {
	rc := &otlptest.Receiver{}
	srv := httptest.NewTLSServer(rc)
	defer srv.Close()
	// The server's certificate, as a CA file.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint := srv.URL + "/custom/v1/traces"

	c, err := NewClient(ClientOptions{Endpoint: endpoint, Protocol: ProtocolHTTP, CAFile: ca, Headers: map[string]string{"Authorization": "Bearer s3cret"}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	b := NewBatcher(c)
	ctx := context.Background()
	for range 3 {
		if err := b.Add(ctx, Spans(stuckPod(), Options{Cluster: "c"})); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Pods != 3 || b.Sent != 18 || b.Requests != 1 {
		t.Errorf("sent %d pods, %d spans in %d requests; want 3, 18 in 1", b.Pods, b.Sent, b.Requests)
	}
	want := map[string]int{"pod default/web-7d9-abc": 3, "scheduling": 3, "image pull and start": 3, "running": 3, "terminating": 3, "stuck": 3}
	if diff := cmp.Diff(want, rc.Names()); diff != "" {
		t.Errorf("spans received (-want +got):\n%s", diff)
	}
	_, headers, paths := rc.Requests()
	if got := headers[0].Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the header given", got)
	}
	if paths[0] != "/custom/v1/traces" {
		t.Errorf("path %q, want the URL's", paths[0])
	}

	// Without the CA file, the server's certificate is not trusted.
	c2, err := NewClient(ClientOptions{Endpoint: srv.URL, Protocol: ProtocolHTTP, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(context.Background())
	if err := c2.Send(ctx, Spans(stuckPod(), Options{})); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("send to an untrusted server: %v, want a certificate error", err)
	}
}

func TestBatcherSplits(t *testing.T) {
	rc, srv := otlptest.NewServer()
	defer srv.Close()
	c, err := NewClient(ClientOptions{Endpoint: srv.URL, Protocol: ProtocolHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	b := NewBatcher(c)
	// Pods of 6 spans each: 1000 spans hold 166 of them.
	for range 300 {
		if err := b.Add(context.Background(), Spans(stuckPod(), Options{})); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b.Requests != 2 || b.Sent != 1800 || b.Pods != 300 {
		t.Errorf("%d requests, %d spans, %d pods; want 2, 1800, 300", b.Requests, b.Sent, b.Pods)
	}
	requests, _, _ := rc.Requests()
	for i, req := range requests {
		n := 0
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				n += len(ss.Spans)
			}
		}
		if n > maxBatchSpans || n%6 != 0 {
			t.Errorf("request %d: %d spans, want at most %d, whole pods", i, n, maxBatchSpans)
		}
	}
}

func TestClientOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, tt := range []struct {
		opts ClientOptions
		err  string
	}{
		{ClientOptions{Endpoint: "localhost:4317", CAFile: filepath.Join(dir, "missing.pem")}, "no such file"},
		{ClientOptions{Endpoint: "localhost:4317", CAFile: notPEM}, "holds no PEM certificate"},
		{ClientOptions{Endpoint: "localhost:4317", Insecure: true, CAFile: notPEM}, "a CA file is for TLS"},
		{ClientOptions{Endpoint: "localhost:4317", Protocol: "thrift"}, `protocol "thrift"`},
	} {
		if _, err := NewClient(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewClient(%+v) = %v, want an error with %q", tt.opts, err, tt.err)
		}
	}
}
