package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestNewCredentials(t *testing.T) {
	now := time.Now()
	cred, err := NewCredentials([]string{"podtrace.example", "127.0.0.1", "::1"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf := cred.Certificate.Leaf
	if k, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if leaf.NotAfter.Sub(now) > time.Hour || leaf.NotBefore.After(now) {
		t.Errorf("valid %s to %s, want from before %s for an hour", leaf.NotBefore, leaf.NotAfter, now)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(cred.CAData) {
		t.Fatal("CAData is not a PEM certificate")
	}
	for _, host := range []string{"podtrace.example", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("verify for %s: %v", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: roots, CurrentTime: now}); err == nil {
		t.Error("the certificate verifies for a host it does not name")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "127.0.0.1", Roots: roots, CurrentTime: now.Add(2 * time.Hour)}); err == nil {
		t.Error("the certificate verifies after it expired")
	}
	other, _ := NewCredentials([]string{"127.0.0.1"}, now, time.Hour)
	if len(cred.Token) < 40 || other.Token == cred.Token {
		t.Errorf("tokens %q and %q: want two long random ones", cred.Token, other.Token)
	}
}

// TestRequireToken serves the trace over TLS with a token: a request
// without it, or with another, gets a 401 Status; client-go with the
// kubeconfig Kubeconfig writes reads the pods.
func TestRequireToken(t *testing.T) {
	db, _ := trace(t)
	srv, err := New(db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := NewCredentials([]string{"127.0.0.1"}, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(RequireToken(srv, cred.Token))
	ts.TLS = cred.TLSConfig()
	ts.StartTLS()
	defer ts.Close()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cred.CAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, auth := range []string{"", "Bearer ", "Bearer " + cred.Token[:len(cred.Token)-1], "Bearer " + cred.Token + "x", "Basic " + cred.Token, cred.Token} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+at(30*time.Second)+"api/v1/pods", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var st metav1.Status
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if resp.StatusCode != 401 || st.Code != 401 || st.Reason != metav1.StatusReasonUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d %+v, want a 401 Unauthorized Status", auth, resp.StatusCode, st)
		}
	}
	// Without the certificate, a client refuses the server.
	if _, err := http.Get(ts.URL + "/latest/version"); err == nil {
		t.Error("a client that does not trust the certificate connected")
	}

	b, err := clientcmd.Write(*Kubeconfig(ts.URL, []Moment{{Name: "podtrace-latest"}, {Name: "running", At: t0.Add(30 * time.Second)}}, cred))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), cred.Token) || !strings.Contains(string(b), "certificate-authority-data") {
		t.Fatalf("kubeconfig without the token or the CA:\n%s", b)
	}
	cc, err := clientcmd.NewClientConfigFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := cc.RawConfig()
	rc, err := clientcmd.NewNonInteractiveClientConfig(raw, "running", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	l, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Pods("ci").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "web" {
		t.Errorf("pods through the kubeconfig: %v, %v; want web", l, err)
	}
}
