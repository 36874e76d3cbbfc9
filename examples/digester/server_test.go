package digester

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestServerServesOverTLS(t *testing.T) {
	srv, err := NewServer(ServerOptions{Client: fake.NewClientset(pullSecret())})
	if err != nil {
		t.Fatal(err)
	}
	if srv.URL() != "" {
		t.Errorf("URL before Start = %q, want empty", srv.URL())
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if !strings.HasPrefix(srv.URL(), "https://127.0.0.1:") || !strings.HasSuffix(srv.URL(), "/mutate") {
		t.Fatalf("URL = %q, want https://127.0.0.1:PORT/mutate", srv.URL())
	}

	// Trust only the server's CA, as the API server does with caBundle.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(srv.CABundle()) {
		t.Fatalf("CA bundle is not PEM: %q", srv.CABundle())
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	began := time.Now()
	resp, err := client.Post(srv.URL(), "application/json", bytes.NewReader(reviewBody(t, admissionv1.Create, testPod())))
	if err != nil {
		t.Fatalf("POST over TLS verified against the CA bundle: %v", err)
	}
	if took := time.Since(began); took < DefaultKeychainLatency {
		t.Errorf("answered in %s, want at least the default keychain latency %s", took, DefaultKeychainLatency)
	}
	var out admissionv1.AdmissionReview
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || out.Response == nil || !out.Response.Allowed || len(out.Response.Patch) == 0 {
		t.Fatalf("status %d, answer %+v; want 200, allowed with a patch", resp.StatusCode, out.Response)
	}

	// A client that does not trust the CA is refused.
	if _, err := http.Post(srv.URL(), "application/json", nil); err == nil {
		t.Error("POST with the system roots succeeded; the certificate should be self-signed")
	}

	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "https://"), "/mutate")
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Close", addr)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewServerRejectsNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":8443", "localhost:0", "127.0.0.1"} {
		if _, err := NewServer(ServerOptions{Addr: addr, Client: fake.NewClientset()}); err == nil {
			t.Errorf("NewServer(Addr %q) succeeded, want an error", addr)
		}
	}
	if _, err := NewServer(ServerOptions{}); err == nil {
		t.Error("NewServer without a client succeeded, want an error")
	}
}
