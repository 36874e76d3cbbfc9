package tracer_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
	"github.com/podtrace/podtrace/tracer"
)

type sink struct {
	mu   sync.Mutex
	recs []store.Record
}

func (s *sink) Write(b []store.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, b...)
	return nil
}

func (s *sink) records() []store.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Record(nil), s.recs...)
}

// TestRecordPodLifecycle records a pod created, scheduled, run by kwok and
// deleted on the local control plane, with a Secret the pod owns, and checks
// that the tracer saw exactly the revisions an independent watch saw.
func TestRecordPodLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := c.Client()
	const ns = "trace"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var warnings []string
	tr, err := tracer.New(tracer.Options{
		RESTConfig: c.RESTConfig(), Namespace: ns, FlushInterval: 50 * time.Millisecond,
		Warn: func(s string) { warnings = append(warnings, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tr.Run(runCtx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-ctx.Done():
		t.Fatal("tracer not ready")
	}

	// An independent watch on the pod: what the tracer must match.
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "job").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	pod, err = client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const secretValue = "hunter2-do-not-record"
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "job-pull", Namespace: ns, OwnerReferences: []metav1.OwnerReference{owner}},
		Data:       map[string][]byte{"token": []byte(secretValue)},
	}
	if secret, err = client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var want []string
	add := func(e watch.Event) {
		p, ok := e.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch: %T %v", e.Object, e.Object)
		}
		typ := map[watch.EventType]store.EventType{watch.Added: store.Added, watch.Modified: store.Updated, watch.Deleted: store.Deleted}[e.Type]
		want = append(want, fmt.Sprintf("%s rv=%s", typ, p.ResourceVersion))
	}
	// Wait for kwok to run it.
	for running := false; !running; {
		select {
		case e := <-w.ResultChan():
			add(e)
			running = e.Object.(*corev1.Pod).Status.Phase == corev1.PodRunning
		case <-ctx.Done():
			t.Fatalf("pod not running; watch saw %v", want)
		}
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deleted := false; !deleted; {
		select {
		case e := <-w.ResultChan():
			add(e)
			deleted = e.Type == watch.Deleted
		case <-ctx.Done():
			t.Fatalf("pod not deleted; watch saw %v", want)
		}
	}
	// The garbage collector deletes the Secret the pod owned.
	for {
		_, err := client.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the garbage collector did not delete the pod's Secret")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hasSecretDeleted := func() bool {
		for _, r := range out.records() {
			if r.Kind == "Secret" && r.Type == store.Deleted {
				return true
			}
		}
		return false
	}
	for !hasSecretDeleted() && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}

	var got []string
	var scheduled, secretRecs int
	for _, r := range out.records() {
		switch {
		case r.Kind == "Pod" && r.UID == string(pod.UID):
			got = append(got, fmt.Sprintf("%s rv=%s", r.Type, r.ResourceVersion))
		case r.Kind == "Event" && len(r.Refs) > 0 && r.Refs[0] == string(pod.UID) && strings.Contains(string(r.Object), `"reason":"Scheduled"`):
			scheduled++
		case r.Kind == "Secret" && r.UID == string(secret.UID):
			secretRecs++
			if bytes.Contains(r.Object, []byte(secretValue)) || bytes.Contains(r.Object, []byte(base64.StdEncoding.EncodeToString([]byte(secretValue)))) {
				t.Errorf("Secret data recorded: %s", r.Object)
			}
			if bytes.Contains(r.Object, []byte(`"data"`)) {
				t.Errorf("Secret record has a data field: %s", r.Object)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod revisions, tracer vs. an independent watch (-want +got):\n%s", diff)
	}
	if len(got) < 4 {
		t.Errorf("only %d pod revisions: want create, binding, running, ..., delete", len(got))
	}
	t.Logf("pod revisions: %v", got)
	if scheduled == 0 {
		t.Error("no Scheduled event about the pod was recorded")
	}
	if secretRecs < 2 {
		t.Errorf("%d records of the pod's Secret, want its creation and its deletion", secretRecs)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings as cluster admin: %v", warnings)
	}
}

// TestAPIServerGoesAway kills the API server while recording: the tracer
// warns that its watches keep failing, keeps retrying, and on shutdown
// returns without error with what it had recorded.
func TestAPIServerGoesAway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane; skipped with -short")
	}
	c := cluster.New(t, cluster.Options{})
	var mu sync.Mutex
	var warnings []string
	tr, err := tracer.New(tracer.Options{
		RESTConfig: c.RESTConfig(), FlushInterval: 50 * time.Millisecond,
		Warn: func(s string) { mu.Lock(); warnings = append(warnings, s); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &sink{}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx, out) }()
	select {
	case <-tr.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("tracer not ready")
	}
	// The initial lists reach the sink within a flush interval.
	time.Sleep(500 * time.Millisecond)
	before := len(out.records())
	if before == 0 {
		t.Fatal("nothing recorded from the initial lists")
	}
	if err := syscall.Kill(c.Pid(cluster.KubeAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		mu.Lock()
		n := len(warnings)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no warning 90s after the API server died")
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned while the API server is away: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Log(string(buf[:runtime.Stack(buf, true)]))
		t.Fatal("Run did not return 10s after cancel with the API server away")
	}
	if got := len(out.records()); got < before {
		t.Errorf("%d records after shutdown, %d before the API server died", got, before)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("warnings: %q", warnings)
	if !strings.Contains(warnings[0], "still retrying") {
		t.Errorf("warning %q does not say the tracer keeps retrying", warnings[0])
	}
}
