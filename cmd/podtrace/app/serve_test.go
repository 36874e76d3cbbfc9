package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestServeCommand serves the sample trace, reads the seed case's pod
// through it, and stops on cancel.
func TestServeCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		warning bool
	}{{"redacted", nil, false}, {"no-redact", []string{"--no-redact"}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			ctx, cancel := context.WithCancel(context.Background())
			var out, errOut syncBuf
			done := make(chan error, 1)
			args := append([]string{"podtrace", "serve", "--db", sampleTrace, "--kubeconfig", kc}, tc.args...)
			go func() { done <- Run(ctx, args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}) }()
			re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)`)
			var base string
			for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
				if m := re.FindStringSubmatch(out.String()); m != nil {
					base = m[1]
				}
				if time.Now().After(deadline) {
					t.Fatalf("serve did not say where it listens: %s %s", out.String(), errOut.String())
				}
			}
			resp, err := http.Get(base + "/at/04:30:05.7/api/v1/namespaces/ci/pods/runner-job-1")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"foregroundDeletion"`)) {
				t.Errorf("the pod after its deletion request: %d %s", resp.StatusCode, body)
			}
			if got := strings.Contains(errOut.String(), "WARNING: --no-redact"); got != tc.warning {
				t.Errorf("--no-redact warning shown: %v, want %v (%s)", got, tc.warning, errOut.String())
			}
			// The seed case's finding: a context at the moment its
			// deletion was requested, added once the pods are replayed.
			for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "added at findings' moments"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("serve did not add the findings' contexts: %s %s", out.String(), errOut.String())
				}
			}
			cfg, err := os.ReadFile(kc)
			if err != nil || !bytes.Contains(cfg, []byte(base+"/latest/")) || !bytes.Contains(cfg, []byte("podtrace-session-1-start")) {
				t.Errorf("kubeconfig: %v\n%s", err, cfg)
			}
			const stuck = "podtrace-stuck-finalizer-ci-runner-job-1"
			if !strings.Contains(out.String(), stuck+" 2026-12-01T04:30:05.675") {
				t.Errorf("serve's output does not name %s at the deletion request (04:30:05.675):\n%s", stuck, out.String())
			}
			pod := getThrough(t, kc, stuck, "ci", "runner-job-1")
			if pod.DeletionTimestamp == nil || !slices.Contains(pod.Finalizers, "foregroundDeletion") {
				t.Errorf("at %s: runner-job-1 deletionTimestamp %v, finalizers %v; want it asked to be deleted, held by foregroundDeletion", stuck, pod.DeletionTimestamp, pod.Finalizers)
			}
			if fi, err := os.Stat(kc); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("kubeconfig mode: %v %v, want 0600", fi.Mode(), err)
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not stop within 10s of cancel")
			}
		})
	}
}

// getThrough gets a pod with client-go through a context of the
// kubeconfig.
func getThrough(t *testing.T, kubeconfig, context, ns, name string) *corev1.Pod {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context %s: %v", context, err)
	}
	pod, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s through %s: %v", ns, name, context, err)
	}
	return pod
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--listen", "0.0.0.0:8001"}, []string{"--listen", "loopback", "--expose"}},
		{[]string{"--listen", "192.0.2.7:8001"}, []string{"--listen", "--expose"}},
		{[]string{"--listen", ":8001"}, []string{"--listen", "--expose"}},
		{[]string{"--tls-san", "example.com"}, []string{"--tls-san", "--expose"}},
	} {
		var out, errOut bytes.Buffer
		code := Main(append([]string{"podtrace", "serve", "--db", sampleTrace}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		ok := code == 2
		for _, w := range tc.want {
			ok = ok && strings.Contains(errOut.String(), w)
		}
		if !ok {
			t.Errorf("%v: exit %d, %s; want 2 and a message naming %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestServeExpose serves the sample trace with --expose (on loopback, which
// the test can reach): TLS, a 401 Status without the token, the pod through
// the kubeconfig with client-go.
func TestServeExpose(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuf
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"podtrace", "serve", "--db", sampleTrace, "--kubeconfig", kc, "--expose", "--tls-san", "127.0.0.1", "--tls-san", "podtrace.test"},
			Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop within 10s of cancel")
		}
	}()
	re := regexp.MustCompile(`at (https://127\.0\.0\.1:\d+)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say where it listens: %s %s", out.String(), errOut.String())
		}
	}
	if !strings.Contains(errOut.String(), "WARNING: --expose") {
		t.Errorf("no warning that the recording is exposed: %s", errOut.String())
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	user := cfg.AuthInfos[cfg.Contexts["podtrace-latest"].AuthInfo]
	cluster := cfg.Clusters["podtrace-latest"]
	if user == nil || len(user.Token) < 40 || len(cluster.CertificateAuthorityData) == 0 || !strings.HasPrefix(cluster.Server, base) {
		t.Fatalf("kubeconfig: want the server %s, its CA and a token: %+v %+v", base, cluster, user)
	}
	// Unauthenticated, or with another token: 401, even with the CA.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cluster.CertificateAuthorityData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodGet, base+"/latest/api/v1/pods", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !bytes.Contains(body, []byte(`"reason":"Unauthorized"`)) {
			t.Errorf("Authorization %q: %d %s, want a 401 Status", auth, resp.StatusCode, body)
		}
	}
	// Plain HTTP gets no recording.
	if resp, err := http.Get(strings.Replace(base, "https://", "http://", 1) + "/latest/api/v1/pods"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(body, []byte("runner-job-1")) {
			t.Errorf("plain HTTP served the pods: %s", body)
		}
	}
	// The kubeconfig's context at the deletion request, through client-go.
	pod := getThrough(t, kc, "podtrace-session-1-end", "ci", "runner-job-1")
	if pod.DeletionTimestamp == nil {
		t.Errorf("runner-job-1 at the end: no deletionTimestamp")
	}
	if leaf := cluster.CertificateAuthorityData; !bytes.Contains(leaf, []byte("BEGIN CERTIFICATE")) {
		t.Errorf("CA data is not PEM: %s", leaf)
	}
}

func TestCertHosts(t *testing.T) {
	o := &serveOptions{host: "0.0.0.0"}
	hosts, advertised, err := o.certHosts()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := os.Hostname()
	if advertised != name || !slices.Contains(hosts, "127.0.0.1") || !slices.Contains(hosts, "localhost") {
		t.Errorf("0.0.0.0: hosts %v, advertised %q; want this machine's name first, its addresses and localhost", hosts, advertised)
	}
	o = &serveOptions{host: "10.1.2.3"}
	o.sans = *cli.NewStringSlice("podtrace.example")
	if hosts, advertised, _ := o.certHosts(); fmt.Sprint(hosts) != "[podtrace.example 10.1.2.3]" || advertised != "podtrace.example" {
		t.Errorf("10.1.2.3 with --tls-san podtrace.example: hosts %v, advertised %q", hosts, advertised)
	}
}

// syncBuf is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
