package app

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
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
			cfg, err := os.ReadFile(kc)
			if err != nil || !bytes.Contains(cfg, []byte(base+"/latest/")) || !bytes.Contains(cfg, []byte("podtrace-session-1-start")) {
				t.Errorf("kubeconfig: %v\n%s", err, cfg)
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

func TestServeRefusesNonLoopback(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"podtrace", "serve", "--db", sampleTrace, "--listen", "0.0.0.0:8001"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "--listen") || !strings.Contains(errOut.String(), "loopback") {
		t.Errorf("exit %d, %s; want 2 and a message naming --listen and loopback", code, errOut.String())
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
