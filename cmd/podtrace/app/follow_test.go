package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
)

// syncBuffer is a bytes.Buffer safe for the follower and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestFollow: diff --follow prints the revisions written to the trace
// after it started, once each, with their actors and changes, and returns
// nil when cancelled (Ctrl-C).
func TestFollow(t *testing.T) {
	old := followInterval
	followInterval = 20 * time.Millisecond
	defer func() { followInterval = old }()

	p := pod("ci", "web", "000000000042")
	trace := writeTrace(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, []string{"podtrace", "diff", "web", "--follow", "--color", "never", "--db", trace}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	}()
	wait := func(what string, cond func(string) bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(out.String()); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited 10s for %s; output:\n%s\nstderr:\n%s", what, out.String(), errOut.String())
			}
		}
	}
	wait("the first diff", func(s string) bool { return strings.Contains(s, "Timeline") })

	// The recorder writes a revision: a label added by kubectl.
	p.ResourceVersion = "7"
	p.Labels = map[string]string{"tier": "front"}
	raw, _ := json.Marshal(p)
	db, err := store.Open(trace, store.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.BeginSession(store.Session{Server: "https://127.0.0.1:6443", Started: time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Write([]store.Record{{Session: s.ID, Observed: time.Date(2026, 12, 1, 11, 0, 1, 0, time.UTC), Type: store.Updated, APIVersion: "v1", Kind: "Pod",
		Namespace: "ci", Name: "web", UID: string(p.UID), ResourceVersion: "7", Object: raw}})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	wait("the new revision", func(s string) bool { return strings.Contains(s, "rv 7 by") && strings.Contains(s, "metadata.labels") })
	time.Sleep(100 * time.Millisecond) // a few more reads: nothing printed twice
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v; want nil on Ctrl-C", err)
	}
	got := out.String()
	if n := strings.Count(got, "rv 7 by"); n != 1 {
		t.Errorf("the new revision printed %d times:\n%s", n, got)
	}
	if n := strings.Count(got, "Timeline"); n != 1 {
		t.Errorf("the diff printed %d times:\n%s", n, got)
	}
	if !strings.Contains(errOut.String(), "podtrace: following pod ci/web (uid 00000000-0000-0000-0000-000000000042)") {
		t.Errorf("stderr does not say what is followed:\n%s", errOut.String())
	}
	t.Logf("output:\n%s", got)
}

func TestFollowRefusesJSON(t *testing.T) {
	_, _, err := runPodtrace(t, "diff", "web", "--follow", "-o", "json", "--db", sampleTrace)
	if err == nil || !strings.Contains(err.Error(), "--follow prints text") {
		t.Errorf("diff --follow -o json: %v, want a usage error", err)
	}
}
