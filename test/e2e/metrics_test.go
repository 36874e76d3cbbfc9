package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/test/cluster"
)

var servingRE = regexp.MustCompile(`serving /metrics, /healthz and /readyz on (http://[^\s]+)`)

// metricsClient reads a recorder's --listen endpoints.
type metricsClient struct {
	base string
	http *http.Client
}

func (m *metricsClient) get(path string) (int, string, error) {
	resp, err := m.http.Get(m.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// scrape returns the Pod revisions and pod lists counted so far.
func (m *metricsClient) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	code, body, err := m.get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%s", code, err, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return fams
}

func metricValue(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == label && l.GetValue() == value {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
		if label == "" {
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// TestRecordMetrics: record --listen 127.0.0.1:0 prints where it listens;
// /readyz is 200 once the lists synced, /metrics parses with the Prometheus
// text parser and its counters move with the workload; with the API server
// gone /readyz turns 503 and /healthz stays 200, and back once it answers.
func TestRecordMetrics(t *testing.T) {
	c, client := newCluster(t, cluster.Options{Nodes: 1})
	ctx := context.Background()
	rec := startRecorder(t, c, "--listen", "127.0.0.1:0")
	m := servingRE.FindStringSubmatch(rec.stderr.String())
	if m == nil {
		t.Fatalf("record --listen did not say where it listens:\n%s", rec.stderr.String())
	}
	mc := &metricsClient{base: m[1], http: &http.Client{Timeout: 5 * time.Second}}

	waitFor(t, "/readyz 200 after sync", 15*time.Second, func() (bool, error) {
		code, _, err := mc.get("/readyz")
		return code == http.StatusOK, err
	})
	if code, _, err := mc.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d %v", code, err)
	}
	before := mc.scrape(t)
	pods0 := metricValue(before, "podtrace_revisions_total", "kind", "Pod")
	if lists := metricValue(before, "podtrace_lists_total", "resource", "pods"); lists < 1 {
		t.Errorf("podtrace_lists_total{resource=pods} = %v after sync, want >= 1", lists)
	}
	if w := metricValue(before, "podtrace_resource_watched", "resource", "secrets"); w != 1 {
		t.Errorf("podtrace_resource_watched{resource=secrets} = %v for the admin, want 1", w)
	}

	const n = 5
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m-%d", i), Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each pod is created, bound, and started by kwok: at least 3 revisions.
	var after map[string]*dto.MetricFamily
	waitFor(t, "the pods' revisions counted", 30*time.Second, func() (bool, error) {
		after = mc.scrape(t)
		return metricValue(after, "podtrace_revisions_total", "kind", "Pod") >= pods0+3*n, nil
	})
	t.Logf("Pod revisions %v -> %v; trace %v bytes; since last flush %vs; pending %v",
		pods0, metricValue(after, "podtrace_revisions_total", "kind", "Pod"),
		metricValue(after, "podtrace_trace_bytes", "", ""), metricValue(after, "podtrace_seconds_since_last_flush", "", ""),
		metricValue(after, "podtrace_pending_records", "", ""))
	if b := metricValue(after, "podtrace_trace_bytes", "", ""); b <= 0 {
		t.Errorf("podtrace_trace_bytes = %v, want > 0", b)
	}
	if age := metricValue(after, "podtrace_seconds_since_last_flush", "", ""); age < 0 || age > 3 {
		t.Errorf("podtrace_seconds_since_last_flush = %v while recording, want 0-3", age)
	}
	if e := metricValue(after, "podtrace_errors_total", "error", "trace_write"); e != 0 {
		t.Errorf("podtrace_errors_total{error=trace_write} = %v, want 0", e)
	}

	// The API server goes away: unready (the process still healthy), and
	// ready again once it answers.
	if err := syscall.Kill(c.Pid(cluster.KubeAPIServer), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var why string
	waitFor(t, "/readyz 503 with the API server gone", 30*time.Second, func() (bool, error) {
		code, body, err := mc.get("/readyz")
		why = body
		return code == http.StatusServiceUnavailable, err
	})
	t.Logf("unready %s after the API server was killed: %s", time.Since(killed).Round(100*time.Millisecond), strings.TrimSpace(why))
	if !strings.Contains(why, "API server") {
		t.Errorf("/readyz says %q, want it to name the API server", why)
	}
	if code, _, err := mc.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with the API server gone = %d %v, want 200", code, err)
	}
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	waitFor(t, "/readyz 200 with the API server back", 30*time.Second, func() (bool, error) {
		code, _, err := mc.get("/readyz")
		return code == http.StatusOK, err
	})
	t.Logf("ready %s after the API server answered again", time.Since(back).Round(100*time.Millisecond))
	if e := metricValue(mc.scrape(t), "podtrace_errors_total", "error", "api_server"); e < 1 {
		t.Errorf("podtrace_errors_total{error=api_server} = %v after the outage, want >= 1", e)
	}
	rec.stop(t)
	if _, _, err := mc.get("/healthz"); err == nil {
		t.Errorf("still serving after record stopped")
	}
}
