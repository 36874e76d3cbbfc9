package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/serve"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// startServe runs `podtrace serve` on the trace in this process and returns
// its base URL and kubeconfig.
func startServe(t *testing.T, db string, args ...string) (base, kubeconfig string) {
	t.Helper()
	kubeconfig = db + ".kubeconfig"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	argv := append([]string{"podtrace", "serve", "--db", db, "--kubeconfig", kubeconfig}, args...)
	go func() { done <- app.Run(ctx, argv, app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("podtrace serve: %v\n%s", err, errOut.String())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("podtrace serve did not stop within 10s")
		}
	})
	re := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)`)
	waitFor(t, "podtrace serve to listen", 30*time.Second, func() (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("podtrace serve ended early: %v\n%s", err, errOut.String())
		default:
		}
		m := re.FindStringSubmatch(out.String())
		if m == nil {
			return false, nil
		}
		base = m[1]
		return true, nil
	})
	return base, kubeconfig
}

// at is a client of the served recording at moment t.
func at(t *testing.T, base string, m time.Time) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: base + serve.Path(m)})
}

// TestServe records a pod's life, serves the trace, and reads it back
// through client-go at moments before, during and after the pod.
func TestServe(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := context.Background()
	rec := startRecorder(t, c)
	const ns = "default"
	pod := simplePod(ns, "web")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2"}}
	createPod(t, client, pod)
	waitPod(t, client, ns, "web", "ready", podReady)
	time.Sleep(time.Second)
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod deleted", time.Minute, podGone(client, ns, "web"))
	time.Sleep(2 * time.Second) // let the watch deliver the deletion
	rec.stop(t)

	tr, err := store.Open(rec.db, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := tr.Objects(store.ObjectFilter{Kind: "Pod", Namespace: ns, Name: "web"})
	if err != nil || len(pods) != 1 {
		t.Fatalf("recorded pods web: %v, %v", pods, err)
	}
	hist, err := tr.History(pods[0].UID)
	tr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) < 4 || hist[len(hist)-1].Type != store.Deleted {
		t.Fatalf("recorded %d revisions of web, the last %s; want its life to its deletion", len(hist), hist[len(hist)-1].Type)
	}
	var running time.Time
	for _, r := range hist {
		var p corev1.Pod
		if err := json.Unmarshal(r.Object, &p); err == nil && podReady(&p) && p.DeletionTimestamp == nil {
			running = r.Observed
		}
	}
	if running.IsZero() {
		t.Fatal("no recorded revision of web is ready")
	}
	before, after := hist[0].Observed.Add(-time.Millisecond), hist[len(hist)-1].Observed.Add(time.Millisecond)

	base, kubeconfig := startServe(t, rec.db, "--speed", "0")

	t.Run("list at three moments", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			at   time.Time
			want string
		}{{"before creation", before, "[]"}, {"running", running, "[web]"}, {"after deletion", after, "[]"}} {
			l, err := at(t, base, tc.at).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var names []string
			for _, p := range l.Items {
				if p.Namespace == ns {
					names = append(names, p.Name)
				}
			}
			if fmt.Sprint(names) != tc.want && !(tc.want == "[]" && names == nil) {
				t.Errorf("%s (%s): pods %v, want %s", tc.name, tc.at.Format(time.RFC3339Nano), names, tc.want)
			}
		}
	})

	t.Run("each revision byte for byte", func(t *testing.T) {
		red, err := diff.NewRedactor(nil)
		if err != nil {
			t.Fatal(err)
		}
		compared := 0
		for i, r := range hist[:len(hist)-1] {
			if hist[i+1].Observed.Equal(r.Observed) {
				continue // the next revision was seen at the same instant
			}
			compared++
			got, err := at(t, base, r.Observed).CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").Name("web").DoRaw(ctx)
			if err != nil {
				t.Fatalf("revision %d (rv %s): %v", i, r.ResourceVersion, err)
			}
			want, err := red.Clone().RedactObject(r.Object)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("revision %d (rv %s) at %s:\n got %s\nwant %s", i, r.ResourceVersion, r.Observed.Format(time.RFC3339Nano), got, want)
			}
			if bytes.Contains(got, []byte("hunter2")) {
				t.Errorf("revision %d: the env value is served unredacted", i)
			}
		}
		if compared < 3 {
			t.Errorf("compared %d of %d revisions; want most of them apart in time", compared, len(hist))
		}
		t.Logf("compared %d of %d revisions byte for byte", compared, len(hist))
	})

	wantEvents := func() []string {
		var out []string
		for i, r := range hist {
			typ := "MODIFIED"
			switch {
			case i == 0:
				typ = "ADDED"
			case r.Type == store.Deleted:
				typ = "DELETED"
			}
			out = append(out, typ+" "+r.ResourceVersion)
		}
		return out
	}()

	t.Run("watch replays the revisions", func(t *testing.T) {
		timeout := int64(3)
		w, err := at(t, base, before).CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var got []string
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && p.Name == "web" {
				got = append(got, string(ev.Type)+" "+p.ResourceVersion)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantEvents) {
			t.Errorf("watch:\n got %v\nwant %v", got, wantEvents)
		}
	})

	t.Run("informer", func(t *testing.T) {
		f := informers.NewSharedInformerFactoryWithOptions(at(t, base, before), 0, informers.WithNamespace(ns))
		inf := f.Core().V1().Pods().Informer()
		seen := make(chan string, 64)
		inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { seen <- "ADDED " + o.(*corev1.Pod).ResourceVersion },
			UpdateFunc: func(_, o any) { seen <- "MODIFIED " + o.(*corev1.Pod).ResourceVersion },
			DeleteFunc: func(o any) {
				if p, ok := o.(*corev1.Pod); ok {
					seen <- "DELETED " + p.ResourceVersion
				} else {
					seen <- "DELETED ?"
				}
			},
		})
		stop := make(chan struct{})
		defer close(stop)
		f.Start(stop)
		var got []string
		deadline := time.After(30 * time.Second)
		for len(got) < len(wantEvents) {
			select {
			case s := <-seen:
				got = append(got, s)
			case <-deadline:
				t.Fatalf("informer saw %v, want %v", got, wantEvents)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantEvents) {
			t.Errorf("informer:\n got %v\nwant %v", got, wantEvents)
		}
	})

	t.Run("events by involvedObject", func(t *testing.T) {
		l, err := at(t, base, running).CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=web,involvedObject.namespace=" + ns + ",involvedObject.uid=" + pods[0].UID,
		})
		if err != nil {
			t.Fatal(err)
		}
		var reasons []string
		for _, e := range l.Items {
			if e.InvolvedObject.UID != apitypes.UID(pods[0].UID) {
				t.Errorf("event %s is about %s, not web", e.Name, e.InvolvedObject.Name)
			}
			reasons = append(reasons, e.Reason)
		}
		if !strings.Contains(strings.Join(reasons, ","), "Scheduled") {
			t.Errorf("events of web when running: %v, want Scheduled among them", reasons)
		}
	})

	t.Run("writes are refused", func(t *testing.T) {
		_, err := at(t, base, running).CoreV1().Pods(ns).Create(ctx, simplePod(ns, "new"), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "read-only recording") {
			t.Errorf("create: %v, want the read-only refusal", err)
		}
		err = at(t, base, running).CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{})
		if err == nil || !strings.Contains(err.Error(), "read-only recording") {
			t.Errorf("delete: %v, want the read-only refusal", err)
		}
	})

	t.Run("kubeconfig contexts", func(t *testing.T) {
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"podtrace-latest", "podtrace-session-1-start", "podtrace-session-1-end"} {
			if _, ok := cfg.Contexts[name]; !ok {
				t.Errorf("kubeconfig has no context %s; has %v", name, cfg.Contexts)
			}
		}
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, "podtrace-latest", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		l, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) == 0 {
			t.Errorf("nodes at the end through the kubeconfig: %v, %v", l, err)
		}
	})
}
