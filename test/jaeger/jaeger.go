package jaeger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Env names the Jaeger binary to run; else it is looked for as jaeger in
// $PODTRACE_CLUSTER_BIN, else in the repository's _output/bin.
const Env = "PODTRACE_JAEGER"

// Jaeger is one Jaeger process, stopped and started again on the same
// ports (its storage is in memory: a restart forgets every trace).
type Jaeger struct {
	Bin string
	Dir string // its config and log
	// GRPC and HTTP are the OTLP receivers' host:port; Query is the query
	// service's (HTTP API).
	GRPC, HTTP, Query string

	t   testing.TB
	cmd *exec.Cmd
	// done is closed once the process has exited and been reaped.
	done chan struct{}
}

// Binary finds the Jaeger binary.
func Binary() (string, error) {
	if p := os.Getenv(Env); p != "" {
		return p, nil
	}
	dir := os.Getenv("PODTRACE_CLUSTER_BIN")
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "_output", "bin")
	}
	bin := filepath.Join(dir, "jaeger")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no Jaeger binary: %w; make jaeger builds it (hack/build-jaeger.sh), or set %s to one", err, Env)
	}
	return bin, nil
}

// Start starts Jaeger on free loopback ports, waits until its receivers and
// query API answer, and stops it when the test ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	j := &Jaeger{Bin: bin, Dir: t.TempDir(), t: t,
		GRPC:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		HTTP:  "127.0.0.1:" + strconv.Itoa(ports[1]),
		Query: "127.0.0.1:" + strconv.Itoa(ports[2])}
	queryGRPC := "127.0.0.1:" + strconv.Itoa(ports[3])
	config := fmt.Sprintf(configTemplate, queryGRPC, j.Query, j.GRPC, j.HTTP)
	if err := os.WriteFile(filepath.Join(j.Dir, "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(j.Stop)
	j.Restart()
	return j
}

// configTemplate is Jaeger's configuration: the OTLP receivers into the
// in-memory store, the query service on it, nothing else (no metrics
// port, no sampling).
const configTemplate = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    grpc:
      endpoint: %s
    http:
      endpoint: %s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// Restart starts Jaeger (again) on its ports and waits until it answers.
func (j *Jaeger) Restart() {
	t := j.t
	t.Helper()
	if j.running() {
		t.Fatal("jaeger: Restart while running: Stop first")
	}
	log, err := os.OpenFile(filepath.Join(j.Dir, "jaeger.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(j.Bin, "--config", filepath.Join(j.Dir, "config.yaml"))
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr = j.Dir, log, log, sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start jaeger: %v", err)
	}
	j.cmd, j.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(j.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := j.ready()
		if err == nil {
			return
		}
		select {
		case <-j.done:
			t.Fatalf("jaeger exited while starting: %s", j.logTail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer within 60s: %v\n%s", err, j.logTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ready reports whether the query API and both receivers answer.
func (j *Jaeger) ready() error {
	resp, err := http.Get("http://" + j.Query + "/api/services")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("query API: %s", resp.Status)
	}
	for _, addr := range []string{j.GRPC, j.HTTP} {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

func (j *Jaeger) running() bool {
	if j.done == nil {
		return false
	}
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// Stop stops Jaeger (SIGTERM to its process group, SIGKILL after 10 s) and
// waits until it has exited and its ports are free.
func (j *Jaeger) Stop() {
	if !j.running() {
		return
	}
	pid := j.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-j.done
	}
}

func (j *Jaeger) logTail() string {
	b, _ := os.ReadFile(filepath.Join(j.Dir, "jaeger.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// Trace is a trace as the query API's v1 endpoints (/api/traces) give it,
// the ones Jaeger's UI reads.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
	Warnings  []string           `json:"warnings"`
}

// Span is a span of a Trace.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64      `json:"startTime"` // µs
	Duration  int64      `json:"duration"`  // µs
	Tags      []KeyValue `json:"tags"`
	Logs      []struct {
		Timestamp int64      `json:"timestamp"`
		Fields    []KeyValue `json:"fields"`
	} `json:"logs"`
	ProcessID string   `json:"processID"`
	Warnings  []string `json:"warnings"`
}

// Process is the resource of spans.
type Process struct {
	ServiceName string     `json:"serviceName"`
	Tags        []KeyValue `json:"tags"`
}

// KeyValue is a tag or a log field.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Tag returns the value of key among kvs, as text.
func Tag(kvs []KeyValue, key string) (string, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return fmt.Sprint(kv.Value), true
		}
	}
	return "", false
}

// Parent returns the span's parent's id, "" for a root.
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Trace gets one trace by id (hex) from /api/traces/ID; nil if Jaeger has
// none.
func (j *Jaeger) Trace(id string) (*Trace, error) {
	var resp struct {
		Data   []Trace `json:"data"`
		Errors []any   `json:"errors"`
	}
	status, err := j.get("/api/traces/"+id, &resp)
	if status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(resp.Data) == 0 {
		return nil, nil
	}
	return &resp.Data[0], nil
}

// Search finds the traces of service with spans whose tags (their own,
// their events' or their resource's) have all these values, as Jaeger's
// UI searches: /api/traces?service=...&tags=... over [start, end].
func (j *Jaeger) Search(service string, tags map[string]string, start, end time.Time) ([]Trace, error) {
	q := url.Values{}
	q.Set("service", service)
	q.Set("start", strconv.FormatInt(start.UnixMicro(), 10))
	q.Set("end", strconv.FormatInt(end.UnixMicro(), 10))
	q.Set("limit", "1000")
	if len(tags) > 0 {
		b, _ := json.Marshal(tags)
		q.Set("tags", string(b))
	}
	var resp struct {
		Data []Trace `json:"data"`
	}
	if _, err := j.get("/api/traces?"+q.Encode(), &resp); err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// V3Spans counts the spans of a trace as the OTLP-native query API
// (/api/v3/traces/ID) gives it; 0 if Jaeger has none.
func (j *Jaeger) V3Spans(id string) (int, error) {
	var resp struct {
		Result struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []json.RawMessage `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	status, err := j.get("/api/v3/traces/"+id, &resp)
	if status == http.StatusNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rs := range resp.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n, nil
}

// get decodes the JSON answer to a GET of the query API.
func (j *Jaeger) get(path string, into any) (int, error) {
	resp, err := http.Get("http://" + j.Query + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(b)))
	}
	return resp.StatusCode, json.Unmarshal(b, into)
}

// freePorts picks n free loopback ports, holding each until all are picked.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// repoRoot finds the podtrace repository from the working directory up.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/podtrace/podtrace\n") {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("cannot find the podtrace repository (its go.mod) from " + wd + " up: set " + Env)
		}
	}
}
