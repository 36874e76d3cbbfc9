package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podtrace/podtrace/store"
)

// The pod of testdata/audit/audit.log.
const (
	auditPodUID  = "87d9cb75-b045-4dd1-8c75-c93d921b4f0c"
	auditPodName = "runner-job-1"
)

// followerFixture is an auditFollower on an empty log in a temp dir, with
// a clock the test moves.
type followerFixture struct {
	t     *testing.T
	log   string
	f     *auditFollower
	pods  *podIndex
	added []store.Record
	warns []string
	now   time.Time
}

func newFollowerFixture(t *testing.T, namespace string) *followerFixture {
	t.Helper()
	fx := &followerFixture{t: t, log: filepath.Join(t.TempDir(), "audit.log"), pods: newPodIndex(), now: time.Now()}
	if err := os.WriteFile(fx.log, []byte("{\"before\":\"recording\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := newAuditFollower(auditFollowerOptions{
		Path: fx.log, Pods: fx.pods, Namespace: namespace,
		Add:  func(recs []store.Record) { fx.added = append(fx.added, recs...) },
		Warn: func(s string) { fx.warns = append(fx.warns, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.now = func() time.Time { return fx.now }
	t.Cleanup(func() { f.tail.Close() })
	fx.f = f
	return fx
}

func (fx *followerFixture) appendLog(b []byte) {
	fx.t.Helper()
	f, err := os.OpenFile(fx.log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		fx.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		fx.t.Fatal(err)
	}
}

// step is one turn of run's loop.
func (fx *followerFixture) step() {
	fx.t.Helper()
	if err := fx.f.tail.Poll(fx.f.line); err != nil {
		fx.t.Fatal(err)
	}
	fx.f.retry(false)
	fx.f.send()
}

// observePod is the tracer writing the pod's first record.
func (fx *followerFixture) observePod(ns, name, uid string, at time.Time) {
	fx.pods.observe([]store.Record{{Type: store.Added, APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: uid, Observed: at, Object: []byte("{}")}})
}

func TestAuditFollowerLinksLateAndEarlyPods(t *testing.T) {
	log, err := os.ReadFile("testdata/audit/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 12, 1, 4, 4, 35, 700000000, time.UTC)
	fx := newFollowerFixture(t, "ci")

	// The audit events come before the informer delivers the pod: held.
	fx.appendLog(log)
	fx.step()
	if len(fx.added) != 0 || len(fx.f.held) != 5 {
		t.Fatalf("before the pod is recorded: %d added, %d held; want 0 added, the 5 kept events held", len(fx.added), len(fx.f.held))
	}
	fx.now = fx.now.Add(auditHold / 2)
	fx.observePod("ci", auditPodName, auditPodUID, created)
	fx.step()
	if len(fx.added) != 5 || len(fx.f.held) != 0 {
		t.Fatalf("once the pod is recorded: %d added, %d held; want 5 added, none held", len(fx.added), len(fx.f.held))
	}
	for _, r := range fx.added {
		if !isAudit(store.Object{APIVersion: r.APIVersion, Kind: r.Kind}) || len(r.Refs) != 1 || r.Refs[0] != auditPodUID {
			t.Errorf("record %s %s refs %v, want an audit event about %s", r.APIVersion, r.Kind, r.Refs, auditPodUID)
		}
	}

	// Events about a pod the recording does not have (another pod, or one
	// the selector leaves out) wait, then are dropped and counted; events
	// about a recorded pod read after it are linked at once.
	other := bytes.ReplaceAll(log, []byte(auditPodName), []byte("runner-job-2"))
	other = bytes.ReplaceAll(other, []byte(auditPodUID), []byte("00000000-0000-0000-0000-000000000002"))
	other = bytes.ReplaceAll(other, []byte(`"auditID":"`), []byte(`"auditID":"2-`))
	again := bytes.ReplaceAll(log, []byte(`"auditID":"`), []byte(`"auditID":"3-`))
	elsewhere := bytes.ReplaceAll(log, []byte(`"namespace":"ci"`), []byte(`"namespace":"web"`))
	fx.appendLog(append(append(other, again...), elsewhere...))
	fx.step()
	if len(fx.added) != 10 || len(fx.f.held) != 5 {
		t.Fatalf("%d added, %d held; want 10 added (5 more about the recorded pod), 5 held (about runner-job-2)", len(fx.added), len(fx.f.held))
	}
	fx.now = fx.now.Add(auditHold)
	fx.step()
	if len(fx.f.held) != 0 || len(fx.added) != 10 {
		t.Fatalf("after the hold: %d held, %d added; want 0 held, still 10 added", len(fx.f.held), len(fx.added))
	}

	// A line being written when recording stops is not an event.
	fx.appendLog(log[:100])
	if err := fx.f.finish(); err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	fx.f.summary(&sum)
	for _, want := range []string{
		": 10 events kept,",
		"skipped 5: pod not recorded (not in the recording after 5s)",
		"skipped 5: pod not in the recorded namespace",
		"skipped 4: malformed JSON", // one per copy of the log
		"skipped 1: partial or overlong line",
	} {
		if !strings.Contains(sum.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, sum.String())
		}
	}
	if !strings.Contains(strings.Join(fx.warns, "\n"), "audit.log: not a JSON audit event") {
		t.Errorf("no warning about the malformed line: %q", fx.warns)
	}
}

func TestAuditFollowerSettlesHeldOnStop(t *testing.T) {
	log, err := os.ReadFile("testdata/audit/audit.log")
	if err != nil {
		t.Fatal(err)
	}
	fx := newFollowerFixture(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fx.f.run(ctx, time.Hour) }()
	// Whether run's first poll or finish reads the log, the events wait
	// for their pod.
	fx.appendLog(log)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The informer delivers the pod as recording stops, after the log was
	// read: finish links the held events, without waiting for the hold.
	fx.observePod("ci", auditPodName, auditPodUID, time.Date(2026, 12, 1, 4, 4, 35, 700000000, time.UTC))
	if err := fx.f.finish(); err != nil {
		t.Fatal(err)
	}
	if len(fx.added) != 5 || len(fx.f.held) != 0 {
		t.Errorf("after finish: %d added, %d held; want 5 added, none held", len(fx.added), len(fx.f.held))
	}
}

func TestRecordAuditLogUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		log, want string
	}{
		{filepath.Join(dir, "no-such.log"), "--audit-log " + filepath.Join(dir, "no-such.log") + ": stat"},
		{dir, "is a directory"},
	} {
		_, _, err := runPodtrace(t, "record", "--audit-log", tc.log, "--db", filepath.Join(dir, "trace.db"))
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--audit-log-path") {
			t.Errorf("record --audit-log %s: error %v, want a usage error with %q that names --audit-log-path", tc.log, err, tc.want)
		}
	}
}
