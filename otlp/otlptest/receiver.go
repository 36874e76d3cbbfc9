package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver takes OTLP/HTTP trace requests (protobuf, gzip or not) and keeps
// them. Its zero value is ready to serve.
type Receiver struct {
	mu       sync.Mutex
	requests []*coltrace.ExportTraceServiceRequest
	headers  []http.Header
	paths    []string
	// Fail, when set, answers every request with this status.
	fail int
}

// NewServer starts a receiver on a loopback port; close the server when done.
func NewServer() (*Receiver, *httptest.Server) {
	rc := &Receiver{}
	return rc, httptest.NewServer(rc)
}

// SetFail makes the receiver answer every request with status (0: serve).
func (rc *Receiver) SetFail(status int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail = status
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	fail := rc.fail
	rc.mu.Unlock()
	if fail != 0 {
		http.Error(w, "failing as asked", fail)
		return
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	rc.requests = append(rc.requests, &req)
	rc.headers = append(rc.headers, r.Header.Clone())
	rc.paths = append(rc.paths, r.URL.Path)
	rc.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Write(out)
}

// Requests returns the requests received, their headers and paths.
func (rc *Receiver) Requests() ([]*coltrace.ExportTraceServiceRequest, []http.Header, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests, rc.headers, rc.paths
}

// Span is a received span with its resource's attributes.
type Span struct {
	*tracepb.Span
	Resource []*common.KeyValue
}

// Spans returns every span received, in the order received.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []Span
	for _, req := range rc.requests {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, Span{Span: s, Resource: rs.Resource.GetAttributes()})
				}
			}
		}
	}
	return out
}

// Names counts the spans received, by name.
func (rc *Receiver) Names() map[string]int {
	out := map[string]int{}
	for _, s := range rc.Spans() {
		out[s.Name]++
	}
	return out
}

// Text renders spans for a golden file: each trace's resource, then its
// spans in time order (a child after its parent), each with its parent,
// status, attributes, and its events in time order with theirs.
func Text(spans []Span) string {
	var b strings.Builder
	byTrace := map[string][]Span{}
	var traces []string
	for _, s := range spans {
		id := hex.EncodeToString(s.TraceId)
		if byTrace[id] == nil {
			traces = append(traces, id)
		}
		byTrace[id] = append(byTrace[id], s)
	}
	for _, id := range traces {
		ss := byTrace[id]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].StartTimeUnixNano < ss[j].StartTimeUnixNano })
		names := map[string]string{}
		for _, s := range ss {
			names[hex.EncodeToString(s.SpanId)] = s.Name
		}
		fmt.Fprintf(&b, "trace %s\n", id)
		for _, a := range ss[0].Resource {
			fmt.Fprintf(&b, "  resource %s = %s\n", a.Key, value(a.Value))
		}
		for _, s := range ss {
			fmt.Fprintf(&b, "  span %q %s, %s", s.Name, stamp(s.StartTimeUnixNano), time.Duration(s.EndTimeUnixNano-s.StartTimeUnixNano))
			if p := hex.EncodeToString(s.ParentSpanId); p != "" {
				fmt.Fprintf(&b, ", in %q", names[p])
			}
			if s.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
				fmt.Fprintf(&b, ", %s %q", s.Status.GetCode(), s.Status.GetMessage())
			}
			b.WriteString("\n")
			for _, a := range s.Attributes {
				fmt.Fprintf(&b, "    %s = %s\n", a.Key, value(a.Value))
			}
			evs := append([]*tracepb.Span_Event(nil), s.Events...)
			sort.SliceStable(evs, func(i, j int) bool { return evs[i].TimeUnixNano < evs[j].TimeUnixNano })
			for _, e := range evs {
				fmt.Fprintf(&b, "    event %s %q\n", stamp(e.TimeUnixNano), e.Name)
				for _, a := range e.Attributes {
					fmt.Fprintf(&b, "      %s = %s\n", a.Key, value(a.Value))
				}
			}
		}
	}
	return b.String()
}

func stamp(ns uint64) string { return time.Unix(0, int64(ns)).UTC().Format("15:04:05.000000000") }

func value(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return fmt.Sprintf("%q", x.StringValue)
	case *common.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *common.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *common.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *common.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.Values {
			parts = append(parts, value(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}
