package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeKubeconfig writes a kubeconfig for a server that is never dialled:
// without --register the digester only reads Secrets when asked to admit.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunUsageErrors(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	for _, args := range [][]string{
		{"--bogus"},
		{"--kubeconfig", kubeconfig, "extra"},
		{"--kubeconfig", kubeconfig, "--listen", "0.0.0.0:0"},
		{"--kubeconfig", kubeconfig, "--keychain-latency", "-1s"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("run(%q) = %v, want a usage error", args, err)
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--kubeconfig", writeKubeconfig(t), "--quiet"}, w, io.Discard)
		w.Close()
	}()

	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	url, ok := strings.CutPrefix(lines.Text(), "digester: serving ")
	if !ok || !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("first line %q, want digester: serving https://127.0.0.1:PORT/mutate", lines.Text())
	}
	go func() { // keep the writer unblocked
		for lines.Scan() {
		}
	}()

	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport, Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: status %d, want 405 from the webhook", url, resp.StatusCode)
	}
	transport.CloseIdleConnections()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10 s of cancel")
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "https://"), "/mutate")
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after run returned", addr)
	}
}
