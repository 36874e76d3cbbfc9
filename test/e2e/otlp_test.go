package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/examples/digester"
	"github.com/podtrace/podtrace/otlp"
	"github.com/podtrace/podtrace/test/cluster"
	"github.com/podtrace/podtrace/test/jaeger"
)

// The recordings of the seed case kept in the repository: the sample trace
// (make example-trace) and another recording of the case, with its own
// pod UID, standing for a second cluster.
var (
	seedTrace  = filepath.Join("..", "..", "examples", "trace", "digester.db")
	otherTrace = filepath.Join("..", "..", "cmd", "podtrace", "app", "testdata", "audit", "trace.db")
)

const (
	seedUID  = "78dc8001-9b83-4f4d-8273-8d448f4ba592"
	otherUID = "87d9cb75-b045-4dd1-8c75-c93d921b4f0c"
)

// since is before every recording the tests send: the query API's window.
var since = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func traceID(uid string) string { return otlp.TraceID(uid).String() }

// waitTrace waits until Jaeger holds a trace whose spans satisfy ok.
func waitTrace(t *testing.T, j *jaeger.Jaeger, uid, what string, timeout time.Duration, ok func(*jaeger.Trace) bool) *jaeger.Trace {
	t.Helper()
	var tr *jaeger.Trace
	waitFor(t, what, timeout, func() (bool, error) {
		var err error
		tr, err = j.Trace(traceID(uid))
		return err == nil && tr != nil && ok(tr), err
	})
	return tr
}

func spanNamed(tr *jaeger.Trace, name string) (jaeger.Span, bool) {
	for _, s := range tr.Spans {
		if s.OperationName == name {
			return s, true
		}
	}
	return jaeger.Span{}, false
}

// root returns the trace's root span of the pod's latest story: a pod
// sent when quiet and again when it ended has two.
func root(tr *jaeger.Trace) (jaeger.Span, bool) {
	var out jaeger.Span
	found := false
	for _, s := range tr.Spans {
		if s.Parent() == "" && strings.HasPrefix(s.OperationName, "pod ") && (!found || s.Duration > out.Duration) {
			out, found = s, true
		}
	}
	return out, found
}

func event(s jaeger.Span, name string) (map[string]string, bool) {
	for _, l := range s.Logs {
		if ev, _ := jaeger.Tag(l.Fields, "event"); ev == name {
			out := map[string]string{}
			for _, f := range l.Fields {
				out[f.Key] = fmt.Sprint(f.Value)
			}
			return out, true
		}
	}
	return nil, false
}

// checkSeedTrace checks the seed case's trace as Jaeger shows it: its
// spans, the stuck phase, the critical finding and the webhook it names.
func checkSeedTrace(t *testing.T, tr *jaeger.Trace, cluster string, stuckFor time.Duration) {
	t.Helper()
	names := map[string]int{}
	for _, s := range tr.Spans {
		names[s.OperationName]++
	}
	for _, want := range []string{"pod ci/runner-job-1", "admission", "scheduling", "image pull and start", "running", "completed", "terminating", "stuck"} {
		if names[want] == 0 {
			t.Errorf("no span %q in the trace; spans: %v", want, names)
		}
	}
	r, ok := root(tr)
	if !ok {
		t.Fatalf("no root span; spans: %v", names)
	}
	if v, _ := jaeger.Tag(r.Tags, "otel.status_code"); v != "ERROR" {
		t.Errorf("root status %q, want ERROR (a critical finding)", v)
	}
	for key, want := range map[string]string{"podtrace.outcome": "Terminating", "podtrace.finding": "stuck-finalizer", "podtrace.severity": "critical"} {
		if v, _ := jaeger.Tag(r.Tags, key); v != want {
			t.Errorf("root %s = %q, want %q", key, v, want)
		}
	}
	res := tr.Processes[r.ProcessID]
	if res.ServiceName != otlp.ServiceName {
		t.Errorf("service %q, want %q", res.ServiceName, otlp.ServiceName)
	}
	for key, want := range map[string]string{"k8s.cluster.name": cluster, "k8s.namespace.name": "ci", "k8s.pod.name": "runner-job-1"} {
		if v, _ := jaeger.Tag(res.Tags, key); v != want {
			t.Errorf("resource %s = %q, want %q", key, v, want)
		}
	}
	stuck, _ := spanNamed(tr, "stuck")
	term, _ := spanNamed(tr, "terminating")
	if stuck.Parent() != term.SpanID {
		t.Errorf("the stuck span's parent is %s, want the terminating span %s", stuck.Parent(), term.SpanID)
	}
	if stuck.Duration < stuckFor.Microseconds() {
		t.Errorf("stuck for %dµs, want at least %s: the silence until the recording ended", stuck.Duration, stuckFor)
	}
	f, ok := event(r, "finding stuck-finalizer (critical)")
	if !ok {
		t.Fatalf("no finding event on the root; logs: %+v", r.Logs)
	}
	if f["podtrace.finding.severity"] != "critical" || !strings.Contains(f["podtrace.finding.suspects"], digester.WebhookName) {
		t.Errorf("finding event %v: want critical, naming the webhook %s", f, digester.WebhookName)
	}
	if !strings.Contains(f["podtrace.finding.next"], digester.WebhookName) {
		t.Errorf("finding's next steps %q do not name the webhook", f["podtrace.finding.next"])
	}
	adm, _ := spanNamed(tr, "admission")
	if v, _ := jaeger.Tag(adm.Tags, "podtrace.admission.webhooks"); !strings.Contains(v, digester.WebhookName) {
		t.Errorf("admission span's webhooks %q, want %s", v, digester.WebhookName)
	}
}

// traceIDs lists the ids of traces.
func traceIDs(trs []jaeger.Trace) []string {
	var out []string
	for _, tr := range trs {
		out = append(out, tr.TraceID)
	}
	sort.Strings(out)
	return out
}

// TestExportOTLPJaeger: export --otlp sends recorded traces to a real
// Jaeger, over gRPC and over HTTP, as two clusters; Jaeger's query API
// shows the seed case's trace, finds it by its tags, keeps the clusters
// apart by k8s.cluster.name, and a second export adds no span.
func TestExportOTLPJaeger(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Jaeger; skipped with -short")
	}
	j := jaeger.Start(t)
	podtrace(t, "export", "--db", seedTrace, "--otlp", j.GRPC, "--otlp-insecure", "--cluster-name", "alpha")
	podtrace(t, "export", "--db", otherTrace, "--otlp", "http://"+j.HTTP, "--otlp-protocol", "http", "--cluster-name", "beta")

	tr := waitTrace(t, j, seedUID, "the seed case's trace in Jaeger", 30*time.Second, func(tr *jaeger.Trace) bool { return len(tr.Spans) >= 8 })
	checkSeedTrace(t, tr, "alpha", 50*time.Second)
	if tr.TraceID != strings.ReplaceAll(seedUID, "-", "") {
		t.Errorf("trace id %s, want the pod's UID", tr.TraceID)
	}
	waitTrace(t, j, otherUID, "the other cluster's trace", 30*time.Second, func(tr *jaeger.Trace) bool { return len(tr.Spans) >= 8 })

	now := time.Now().Add(time.Hour)
	search := func(tags map[string]string) []string {
		t.Helper()
		trs, err := j.Search(otlp.ServiceName, tags, since, now)
		if err != nil {
			t.Fatal(err)
		}
		return traceIDs(trs)
	}
	both := []string{traceID(seedUID), traceID(otherUID)}
	sort.Strings(both)
	for _, tc := range []struct {
		tags map[string]string
		want []string
	}{
		{map[string]string{"k8s.namespace.name": "ci"}, both},
		{map[string]string{"podtrace.finding": "stuck-finalizer"}, both},
		{map[string]string{"k8s.namespace.name": "ci", "podtrace.finding": "stuck-finalizer", "k8s.cluster.name": "alpha"}, []string{traceID(seedUID)}},
		{map[string]string{"k8s.cluster.name": "beta"}, []string{traceID(otherUID)}},
		{map[string]string{"k8s.namespace.name": "prod"}, nil},
		{map[string]string{"podtrace.finding": "crash-loop"}, nil},
	} {
		if got := search(tc.tags); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("search %v: traces %v, want %v", tc.tags, got, tc.want)
		}
	}

	// Exported again, and a span of each again: Jaeger drops the copies,
	// in the API its UI reads (v1) and in the OTLP one (v3).
	v3Before, err := j.V3Spans(traceID(seedUID))
	if err != nil {
		t.Fatal(err)
	}
	podtrace(t, "export", "--db", seedTrace, "--otlp", j.GRPC, "--otlp-insecure", "--cluster-name", "alpha")
	podtrace(t, "export", "--db", seedTrace, "--otlp", "http://"+j.HTTP, "--otlp-protocol", "http", "--cluster-name", "alpha")
	time.Sleep(time.Second)
	again, err := j.Trace(traceID(seedUID))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Spans) != len(tr.Spans) {
		t.Errorf("after exporting twice more: %d spans in the v1 API, want %d", len(again.Spans), len(tr.Spans))
	}
	if v3, err := j.V3Spans(traceID(seedUID)); err != nil || v3 != v3Before || v3 != len(tr.Spans) {
		t.Errorf("after exporting twice more: %d spans in the v3 API (%v), want %d", v3, err, v3Before)
	}
	if got := search(map[string]string{"k8s.cluster.name": "alpha"}); len(got) != 1 {
		t.Errorf("search by cluster alpha: %v, want one trace", got)
	}
}

// TestRecordOTLPJaeger: two recorders of one cluster stream to one Jaeger.
// The first records the seed case: the stuck pod, quiet past --otlp-quiet,
// arrives with its stuck span and critical finding. The second records a
// churn of pods while Jaeger is stopped and started again: recording loses
// nothing, the pods that ended meanwhile arrive up to --otlp-queue, and
// those beyond it are counted as dropped.
func TestRecordOTLPJaeger(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	j := jaeger.Start(t)
	ctx := context.Background()
	const ns, job, churn = "ci", "runner-job-1", "churn"
	startDigester(t, c, client, ns)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: churn}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seedRec := startRecorder(t, c, "-n", ns, "--otlp", j.GRPC, "--otlp-insecure", "--cluster-name", "e2e", "--otlp-quiet", "3s")
	churnRec := startRecorder(t, c, "-n", churn, "--otlp", "http://"+j.HTTP, "--otlp-protocol", "http", "--cluster-name", "e2e",
		"--otlp-quiet", "1h", "--otlp-queue", "2", "--listen", "127.0.0.1:0")
	m := servingRE.FindStringSubmatch(churnRec.stderr.String())
	if m == nil {
		t.Fatalf("record --listen did not say where it listens:\n%s", churnRec.stderr.String())
	}
	mc := &metricsClient{base: m[1], http: &http.Client{Timeout: 5 * time.Second}}
	time.Sleep(2 * time.Second) // the API server picks up the webhook configuration

	// The seed case, streamed once the stuck pod is quiet.
	playStuckJob(t, client, ns, job, 5*time.Second)
	pod, err := client.CoreV1().Pods(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(pod.UID)
	tr := waitTrace(t, j, uid, "the stuck pod's trace, sent once quiet", 60*time.Second, func(tr *jaeger.Trace) bool {
		_, stuck := spanNamed(tr, "stuck")
		return stuck
	})
	checkSeedTrace(t, tr, "e2e", 3*time.Second) // --otlp-quiet
	found, err := j.Search(otlp.ServiceName, map[string]string{"k8s.namespace.name": ns, "podtrace.finding": "stuck-finalizer"}, since, time.Now().Add(time.Hour))
	if err != nil || len(found) != 1 || found[0].TraceID != traceID(uid) {
		t.Errorf("search by namespace and finding: %v (%v), want the stuck pod's trace", traceIDs(found), err)
	}

	// The churn: five pods; the first deleted while Jaeger is up.
	var pods []*corev1.Pod
	for i := range 5 {
		p, err := client.CoreV1().Pods(churn).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c-%d", i), Namespace: churn, Labels: map[string]string{"app": "churn"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	for _, p := range pods {
		waitFor(t, p.Name+" running", time.Minute, func() (bool, error) {
			got, err := client.CoreV1().Pods(churn).Get(ctx, p.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodRunning, err
		})
	}
	deletePod := func(p *corev1.Pod) {
		t.Helper()
		if err := client.CoreV1().Pods(churn).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, p.Name+" gone", time.Minute, podGone(client, churn, p.Name))
	}
	deletePod(pods[0])
	waitTrace(t, j, string(pods[0].UID), "the deleted pod's trace", 30*time.Second, func(tr *jaeger.Trace) bool {
		r, ok := root(tr)
		v, _ := jaeger.Tag(r.Tags, "podtrace.outcome")
		return ok && v == "Deleted"
	})

	// Jaeger stopped: four pods end; two wait in the queue, two are
	// dropped and counted.
	j.Stop()
	for _, p := range pods[1:] {
		deletePod(p)
	}
	waitFor(t, "two pods queued, two dropped, the endpoint failing", 30*time.Second, func() (bool, error) {
		fams := mc.scrape(t)
		return metricValue(fams, "podtrace_otlp_pods_queued", "", "") == 2 &&
			metricValue(fams, "podtrace_otlp_pods_dropped_total", "", "") == 2 &&
			metricValue(fams, "podtrace_otlp_send_errors_total", "", "") > 0, nil
	})
	j.Restart()
	var arrived []string
	waitFor(t, "the two queued pods in Jaeger once it is back", 30*time.Second, func() (bool, error) {
		trs, err := j.Search(otlp.ServiceName, map[string]string{"k8s.namespace.name": churn}, since, time.Now().Add(time.Hour))
		arrived = traceIDs(trs)
		return len(trs) >= 2, err
	})
	time.Sleep(3 * time.Second) // nothing more comes
	trs, err := j.Search(otlp.ServiceName, map[string]string{"k8s.namespace.name": churn}, since, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	arrived = traceIDs(trs)
	ended := map[string]string{}
	for _, p := range pods[1:] {
		ended[traceID(string(p.UID))] = p.Name
	}
	if len(arrived) != 2 {
		t.Errorf("%d traces in Jaeger after its restart (%v), want the 2 queued", len(arrived), arrived)
	}
	for _, id := range arrived {
		if ended[id] == "" {
			t.Errorf("trace %s arrived, not one of the pods that ended while Jaeger was down", id)
		}
		tr, err := j.Trace(id)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := root(tr); r.OperationName == "" {
			t.Errorf("trace %s has no root", id)
		} else if v, _ := jaeger.Tag(r.Tags, "podtrace.outcome"); v != "Deleted" {
			t.Errorf("trace of %s: outcome %q, want Deleted", ended[id], v)
		}
	}
	fams := mc.scrape(t)
	if v := metricValue(fams, "podtrace_otlp_pods_dropped_total", "", ""); v != 2 {
		t.Errorf("podtrace_otlp_pods_dropped_total = %v, want 2", v)
	}
	if v := metricValue(fams, "podtrace_records_dropped_total", "", ""); v != 0 {
		t.Errorf("podtrace_records_dropped_total = %v: the recording lost records", v)
	}

	// Recording lost nothing: every pod's deletion is in the trace.
	churnRec.stop(t)
	seedRec.stop(t)
	for _, p := range pods {
		if lc := lifecycle(t, churnRec.db, churn, p.Name); lc.Outcome != "Deleted" {
			t.Errorf("%s: outcome %q in the trace, want Deleted", p.Name, lc.Outcome)
		}
	}
	if !strings.Contains(churnRec.stderr.String(), "not sent: 2 dropped while the queue (--otlp-queue 2) was full") {
		t.Errorf("record's summary does not count the dropped pods:\n%s", churnRec.stderr.String())
	}
}
