package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podtrace/podtrace/cmd/podtrace/app"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/serve"
	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/test/cluster"
)

// startServe runs `podtrace serve` on the trace in this process and returns
// its base URL and kubeconfig.
func startServe(t *testing.T, db string, args ...string) (base, kubeconfig string) {
	t.Helper()
	kubeconfig = db + ".kubeconfig"
	if slices.Contains(args, "--expose") {
		kubeconfig = db + ".expose.kubeconfig"
	}
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
	re := regexp.MustCompile(`at (https?://127\.0\.0\.1:\d+)`)
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
	// A Deployment in a namespace of its own, a pull Secret deleted while
	// the pod runs, the pod deleted in the foreground: what kubectl is
	// asked about below.
	createNamespace(t, client, "apps", nil)
	replicas := int32(1)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments("apps").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, client, "apps", "api")
	// A Service the Deployment's pod owns: the recorder keeps pod-owned
	// Services, and kubectl get svc shows it as the API server does.
	apiPods, err := client.CoreV1().Pods("apps").List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
	if err != nil || len(apiPods.Items) != 1 {
		t.Fatalf("the Deployment's pods: %v, %v", apiPods, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "apps", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Pod", Name: apiPods.Items[0].Name, UID: apiPods.Items[0].UID}}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "api"}, Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := client.CoreV1().Services("apps").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := simplePod(ns, "web")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2"}}
	created := createPod(t, client, pod)
	waitPod(t, client, ns, "web", "ready", podReady)
	// The recorder keeps the Secrets pods own (as metadata).
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "web", UID: created.UID}}},
		StringData: map[string]string{"token": "s3cret"},
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	secretUp := time.Now()
	time.Sleep(time.Second)
	if err := client.CoreV1().Secrets(ns).Delete(ctx, "pull", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	fg := metav1.DeletePropagationForeground
	if err := client.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod deleted", time.Minute, podGone(client, ns, "web"))
	// A pod held by a finalizer no controller removes, in a namespace of
	// its own: the finding serve gives a context of the kubeconfig.
	createNamespace(t, client, "hold", nil)
	held := simplePod("hold", "stuck")
	held.Finalizers = []string{"example.com/hold"}
	createPod(t, client, held)
	waitPod(t, client, "hold", "stuck", "ready", podReady)
	zero := int64(0)
	if err := client.CoreV1().Pods("hold").Delete(ctx, "stuck", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, client, "hold", "stuck", "terminating", func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	// Held past its grace period (0) and the slack a deletion has: stuck,
	// the finding serve gives a context. This lets the watch deliver the
	// deletions too.
	time.Sleep(explain.TerminationSlack + 2*time.Second)
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
	var running, terminating time.Time
	for _, r := range hist {
		var p corev1.Pod
		if err := json.Unmarshal(r.Object, &p); err != nil {
			t.Fatal(err)
		}
		if podReady(&p) && p.DeletionTimestamp == nil {
			running = r.Observed
		}
		if p.DeletionTimestamp != nil && terminating.IsZero() && r.Type != store.Deleted {
			terminating = r.Observed
		}
	}
	if terminating.IsZero() {
		t.Fatal("no recorded revision of web has a deletionTimestamp")
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
		red, err := redact.New(nil)
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

	// The finding's context: added to the kubeconfig once serve has
	// replayed the pods, at the moment the pod's deletion was requested.
	const stuck = "podtrace-stuck-finalizer-hold-stuck"
	t.Run("finding's context", func(t *testing.T) {
		var cfg *clientcmdapi.Config
		waitFor(t, "the kubeconfig's context "+stuck, 30*time.Second, func() (bool, error) {
			var err error
			cfg, err = clientcmd.LoadFromFile(kubeconfig)
			return err == nil && cfg.Contexts[stuck] != nil, nil
		})
		rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, stuck, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		p, err := kubernetes.NewForConfigOrDie(rc).CoreV1().Pods("hold").Get(ctx, "stuck", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil || !slices.Contains(p.Finalizers, "example.com/hold") {
			t.Fatalf("stuck at %s: %v %v; want it asked to be deleted, held by example.com/hold", rc.Host, p, err)
		}
		kubectl := kubectlPath(t)
		out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "--context", stuck, "get", "pod", "stuck", "-n", "hold").CombinedOutput()
		if err != nil || !regexp.MustCompile(`(?m)^stuck\s+\S+\s+Terminating\s`).Match(out) {
			t.Errorf("kubectl --context %s get pod stuck -n hold: %v\n%s\nwant it Terminating", stuck, err, out)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectlChecks(t, kubectlPath(t), base, c.Nodes[0], hist, moments{before, running, secretUp, terminating, after})
	})

	t.Run("columns as the API server's", func(t *testing.T) {
		columnChecks(t, kubectlPath(t), base, c.Kubeconfig)
	})

	// --expose: TLS and a bearer token, which kubectl has from the
	// kubeconfig; without them, nothing.
	t.Run("exposed", func(t *testing.T) {
		kubectl := kubectlPath(t)
		tlsBase, kc := startServe(t, rec.db, "--expose", "--tls-san", "127.0.0.1")
		if !strings.HasPrefix(tlsBase, "https://") {
			t.Fatalf("serve --expose at %s, want https", tlsBase)
		}
		out, err := exec.Command(kubectl, "--kubeconfig", kc, "--context", "podtrace-session-1-end", "get", "pods", "-A").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "stuck") || !strings.Contains(string(out), "api-") {
			t.Errorf("kubectl get pods -A through the exposed kubeconfig: %v\n%s", err, out)
		}
		// Another token (without one, kubectl asks for a user name).
		out, err = exec.Command(kubectl, "--server", tlsBase+"/latest/", "--insecure-skip-tls-verify", "--token", "wrong", "get", "pods", "-A").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "You must be logged in to the server") {
			t.Errorf("kubectl get pods -A with another token: %v\n%s\nwant to be told to log in (a 401)", err, out)
		}
	})
}

// columnChecks reads the same objects from the API server (kubeconfig) and
// from serve at the end of the recording (base): kubectl's columns, plain
// and -o wide, are the same, and so are the Tables' cells but the times
// (an age, a last seen: the served moment is not now).
func columnChecks(t *testing.T, kubectl, base, kubeconfig string) {
	for _, args := range [][]string{
		{"pods", "-n", "apps"}, {"deployments", "-n", "apps"}, {"replicasets", "-n", "apps"}, {"nodes"},
		{"namespaces"}, {"services", "-n", "apps"}, {"svc", "-n", "apps"}, {"events", "-n", "apps"},
	} {
		for _, wide := range []bool{false, true} {
			a := append([]string{"get"}, args...)
			if wide {
				a = append(a, "-o", "wide")
			}
			real, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, a...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %s against the API server: %v\n%s", strings.Join(a, " "), err, real)
			}
			served, err := exec.Command(kubectl, append([]string{"--server", base + "/latest/"}, a...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %s against serve: %v\n%s", strings.Join(a, " "), err, served)
			}
			header := func(b []byte) string { return strings.Join(strings.Fields(strings.SplitN(string(b), "\n", 2)[0]), " ") }
			if header(real) != header(served) {
				t.Errorf("kubectl %s: columns\n  API server: %s\n  serve:      %s", strings.Join(a, " "), header(real), header(served))
			}
			if wide {
				t.Logf("kubectl %s\nAPI server:\n%sserve (end of the recording):\n%s", strings.Join(a, " "), real, served)
			}
		}
	}
	// The Tables' cells, object by object.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	timeColumns := map[string]bool{"Age": true, "Last Seen": true, "First Seen": true, "Duration": true, "Last Schedule": true}
	for _, path := range []string{"/api/v1/namespaces/apps/pods", "/apis/apps/v1/namespaces/apps/deployments", "/apis/apps/v1/namespaces/apps/replicasets",
		"/api/v1/nodes", "/api/v1/namespaces", "/api/v1/namespaces/apps/services"} {
		tables := map[string]metav1.Table{}
		for name, c := range map[string]*rest.Config{"API server": cfg, "serve": {Host: base + "/latest/"}} {
			rc, err := rest.UnversionedRESTClientFor(&rest.Config{Host: c.Host, TLSClientConfig: c.TLSClientConfig, BearerToken: c.BearerToken,
				ContentConfig: rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := rc.Get().AbsPath(path).SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
			if err != nil {
				t.Fatalf("%s %s as a Table: %v\n%s", name, path, err, b)
			}
			var tbl metav1.Table
			if err := json.Unmarshal(b, &tbl); err != nil {
				t.Fatal(err)
			}
			tables[name] = tbl
		}
		realT, servedT := tables["API server"], tables["serve"]
		var realCols, servedCols []string
		for _, c := range realT.ColumnDefinitions {
			realCols = append(realCols, fmt.Sprintf("%s/%s/%d", c.Name, c.Type, c.Priority))
		}
		for _, c := range servedT.ColumnDefinitions {
			servedCols = append(servedCols, fmt.Sprintf("%s/%s/%d", c.Name, c.Type, c.Priority))
		}
		if fmt.Sprint(realCols) != fmt.Sprint(servedCols) {
			t.Errorf("%s: columns\n  API server: %v\n  serve:      %v", path, realCols, servedCols)
			continue
		}
		rows := func(tbl metav1.Table) map[string]string {
			m := map[string]string{}
			for _, r := range tbl.Rows {
				var cells []string
				for i, c := range r.Cells {
					if timeColumns[tbl.ColumnDefinitions[i].Name] {
						c = "<time>"
					}
					cells = append(cells, fmt.Sprint(c))
				}
				m[fmt.Sprint(r.Cells[0])] = strings.Join(cells, " | ")
			}
			return m
		}
		realRows, servedRows := rows(realT), rows(servedT)
		compared := 0
		for name, want := range realRows {
			got, ok := servedRows[name]
			if !ok {
				continue // created after the recording
			}
			compared++
			if got != want {
				t.Errorf("%s %s: cells\n  API server: %s\n  serve:      %s", path, name, want, got)
			}
		}
		if compared == 0 {
			t.Errorf("%s: no object in both the API server's Table and serve's: %v, %v", path, realRows, servedRows)
		}
	}
}

// moments are the points of web's life the kubectl checks read.
type moments struct{ before, running, secretUp, terminating, after time.Time }

// kubectlPath finds kubectl: $PODTRACE_KUBECTL, else the one make kubectl
// builds beside the control plane; the test is skipped without it.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PODTRACE_KUBECTL"); p != "" {
		return p
	}
	dir := os.Getenv(cluster.BinDirEnv)
	if dir == "" {
		out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err == nil {
			dir = filepath.Join(strings.TrimSpace(string(out)), "_output", "bin")
		}
	}
	p := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no kubectl at %s: run make kubectl (hack/build-kubectl.sh) or set PODTRACE_KUBECTL", p)
	}
	return p
}

func kubectlChecks(t *testing.T, kubectl, base, node string, hist []store.Record, m moments) {
	run := func(at time.Time, args ...string) (string, error) {
		t.Helper()
		argv := append([]string{"--server", base + serve.Path(at)}, args...)
		out, err := exec.Command(kubectl, argv...).CombinedOutput()
		return string(out), err
	}
	must := func(at time.Time, args ...string) string {
		t.Helper()
		out, err := run(at, args...)
		if err != nil {
			t.Fatalf("kubectl %s at %s: %v\n%s", strings.Join(args, " "), at.Format(time.RFC3339Nano), err, out)
		}
		return out
	}
	webRow := regexp.MustCompile(`(?m)^default\s+web\s+(\S+)\s+(\S+)`)
	for _, tc := range []struct {
		name  string
		at    time.Time
		ready string // "" for no row
		state string
	}{{"before", m.before, "", ""}, {"running", m.running, "1/1", "Running"}, {"terminating", m.terminating, "", "Terminating"}, {"after", m.after, "", ""}} {
		out := must(tc.at, "get", "pods", "-A")
		row := webRow.FindStringSubmatch(out)
		switch {
		case tc.state == "" && row != nil:
			t.Errorf("get pods -A %s: web is listed:\n%s", tc.name, out)
		case tc.state != "" && (row == nil || row[2] != tc.state || tc.ready != "" && row[1] != tc.ready):
			t.Errorf("get pods -A %s: want web %s %s:\n%s", tc.name, tc.ready, tc.state, out)
		}
		if !strings.Contains(out, "api-") {
			t.Errorf("get pods -A %s: the Deployment's pod is missing:\n%s", tc.name, out)
		}
	}
	if out := must(m.running, "get", "pods", "-n", "default", "-o", "wide"); !strings.Contains(out, node) || !strings.Contains(out, "NOMINATED NODE") {
		t.Errorf("get pods -o wide: want the node %s and the wide columns:\n%s", node, out)
	}
	out := must(m.running, "get", "pod", "web", "-o", "yaml")
	if !strings.Contains(out, "name: web") || strings.Contains(out, "hunter2") {
		t.Errorf("get pod web -o yaml: want the pod, redacted:\n%s", out)
	}
	out = must(m.running, "describe", "pod", "web")
	if !strings.Contains(out, "Events:") || !strings.Contains(out, "Scheduled") || !strings.Contains(out, node) {
		t.Errorf("describe pod web: want its events (Scheduled to %s):\n%s", node, out)
	}
	if out := must(m.running, "get", "events"); !strings.Contains(out, "pod/web") {
		t.Errorf("get events: nothing about pod/web:\n%s", out)
	}
	if out := must(m.running, "get", "nodes"); !strings.Contains(out, node) {
		t.Errorf("get nodes: no %s:\n%s", node, out)
	}
	if out := must(m.running, "get", "rs,deploy", "-n", "apps"); !strings.Contains(out, "deployment.apps/api") || !strings.Contains(out, "replicaset.apps/api-") {
		t.Errorf("get rs,deploy -n apps: want the Deployment and its ReplicaSet:\n%s", out)
	}
	// The seed case: after the deletion request, the pod is Terminating
	// on foregroundDeletion and its pull Secret is gone.
	if out := must(m.terminating, "get", "pod", "web", "-o", "jsonpath={.metadata.finalizers}"); !strings.Contains(out, "foregroundDeletion") {
		t.Errorf("finalizers when terminating: %s, want foregroundDeletion", out)
	}
	if out := must(m.secretUp, "get", "secret"); !strings.Contains(out, "pull") {
		t.Errorf("get secret while web ran: no pull:\n%s", out)
	}
	if out := must(m.terminating, "get", "secret"); strings.Contains(out, "pull") {
		t.Errorf("get secret when web was terminating: pull is still there:\n%s", out)
	}
	// -o json at each revision's time is the revision, redacted (kubectl
	// reindents: compared as JSON values).
	red, err := redact.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range hist[:len(hist)-1] {
		if hist[i+1].Observed.Equal(r.Observed) {
			continue
		}
		got := must(r.Observed, "get", "pod", "web", "-n", "default", "-o", "json", "--show-managed-fields")
		want, err := red.Clone().RedactObject(r.Object)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := canonical(t, []byte(got)), canonical(t, want); a != b {
			t.Errorf("get pod web -o json at revision %d:\n got %s\nwant %s", i, a, b)
		}
	}
	// get -w with kubectl's columns: the recorded status changes, in order.
	out, _ = run(m.before, "get", "pods", "-n", "default", "-w", "--request-timeout", "5s")
	if !regexp.MustCompile(`(?m)^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE$`).MatchString(out) || !regexp.MustCompile(`(?s)web\s+\S+\s+Pending.*web\s+1/1\s+Running.*web\s+\S+\s+Terminating`).MatchString(out) {
		t.Errorf("get pods -w: want the columns, then web Pending, Running, Terminating:\n%s", out)
	}
	// get -w replays the revisions in order.
	out, _ = run(m.before, "get", "pods", "-n", "default", "-w", "--request-timeout", "5s", "-o", "jsonpath={.metadata.resourceVersion}{\"\\n\"}")
	var want []string
	for _, r := range hist {
		want = append(want, r.ResourceVersion)
	}
	if got := strings.Fields(out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("get -w: resourceVersions %v, want %v", got, want)
	}
	if out, err := run(m.running, "delete", "pod", "web"); err == nil || !strings.Contains(out, "read-only recording") {
		t.Errorf("kubectl delete: %v %s, want the read-only refusal", err, out)
	}
}

// canonical is the JSON value of b, re-encoded.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
