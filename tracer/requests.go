package tracer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podtrace/podtrace/store"
)

// The informers do not tell when they relist or restart a watch: client-go's
// reflector relists after any watch that ended with an error (an expired
// resource version, an error event, a watch the API server closed at once)
// without calling the watch error handler. The requests tell instead.
// requestCounter is a transport wrapper that counts, per kind, the lists and
// watches the API server answered, and records each relist as a gap.
//
// A relist means the informer lost the thread of its watch: the new list
// gives the kind's state as it is now, and what changed since the informer
// last heard from the API server is known only as its outcome (revisions in
// between are missing, deletions come as DeletedFinalStateUnknown). The gap
// runs from the last moment the informer is known to have been up to date
// (its last list, or the end of the last watch that ran its course; see
// watchStream) to the list's answer. An API server outage that ended
// in that time is already a gap of its own (serverHealth), which covers it.

// requestCounter counts the informers' lists and watches by kind.
type requestCounter struct {
	// kinds by "group/resource" ("/pods" for the core group).
	kinds map[string]*kind
	now   func() time.Time
	// gap, if set, receives the relists as store.GapWatch gaps.
	gap func(store.Gap)
	// outageEnded, if set, returns when the last API server outage ended.
	outageEnded func() time.Time
}

func newRequestCounter(ks []*kind) *requestCounter {
	c := &requestCounter{kinds: map[string]*kind{}, now: time.Now}
	for _, k := range ks {
		c.kinds[k.gvr.Group+"/"+k.gvr.Resource] = k
	}
	return c
}

// What a request to a watched kind's collection is.
type request int

const (
	notCounted   request = iota // not a collection, or a list's further page
	listRequest                 // a list, or a watch that asks for the initial events (client-go's watch-list)
	watchRequest                // a watch from a resource version
)

// wrap is a rest.Config transport wrapper that counts the requests rt sends
// and the API server answers with success.
func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || req.Method != http.MethodGet {
			return resp, err
		}
		k, what := c.classify(req)
		if what == notCounted {
			return resp, err
		}
		q := req.URL.Query()
		if resp.StatusCode >= 300 {
			if what == watchRequest {
				k.setEnded(fmt.Sprintf("the API server refused to watch from resource version %s: %s", q.Get("resourceVersion"), resp.Status))
			}
			return resp, err
		}
		if what == listRequest {
			c.listed(k)
		} else {
			k.watches.Add(1)
		}
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			resp.Body = c.newWatchStream(k, q.Get("timeoutSeconds"), resp.Header.Get("Content-Type"), resp.Body)
		}
		return resp, err
	})
}

// classify returns the watched kind req lists or watches, and which.
func (c *requestCounter) classify(req *http.Request) (*kind, request) {
	k := c.kinds[collection(req.URL.Path)]
	if k == nil {
		return nil, notCounted
	}
	q := req.URL.Query()
	switch {
	case q.Get("continue") != "":
		return k, notCounted
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		if q.Get("sendInitialEvents") == "true" {
			return k, listRequest
		}
		return k, watchRequest
	}
	return k, listRequest
}

// listed counts a list of k the API server answered; a list after the
// first is a relist, handed to gap unless an outage covers it.
func (c *requestCounter) listed(k *kind) {
	now := c.now()
	n := k.lists.Add(1)
	since := k.current.Swap(now.UnixNano())
	why := k.takeEnded()
	if n == 1 || since == 0 || c.gap == nil {
		return
	}
	start := time.Unix(0, since)
	if c.outageEnded != nil && c.outageEnded().After(start) {
		return // the outage's gap says it
	}
	c.gap(store.Gap{Cause: store.GapWatch, Resource: k.resource(), Start: start, End: now, Detail: why})
}

// errStopped ends a watch stream its reader closed.
var errStopped = errors.New("stopped by the informer")

// A watch stream's first bytes are kept, up to this many, to tell the error
// that ended a short watch.
const watchHeadBytes = 4 << 10

// watchStream is the body of a watch response. It moves its kind's
// "current" time, the last moment the informer is known to have been up to
// date, and describes how the watch ended for the gap of a relist that
// follows.
//
// A watch that runs to the timeout the informer asked for proves the
// informer current to its end: the API server sends every change until
// then. One that ends before proves nothing past its start: the API server
// closes the watch of a client too slow to keep up and what it had queued
// (changes made at any time since the watch's resource version) is lost;
// or it sent an error (an expired resource version).
type watchStream struct {
	io.ReadCloser
	c       *requestCounter
	k       *kind
	start   time.Time
	timeout time.Duration // the timeoutSeconds asked; 0 if none
	proto   bool          // protobuf frames, else JSON lines

	mu    sync.Mutex
	bytes int64
	head  []byte // the first watchHeadBytes read
	done  bool
}

func (c *requestCounter) newWatchStream(k *kind, timeoutSeconds, contentType string, body io.ReadCloser) *watchStream {
	s := &watchStream{ReadCloser: body, c: c, k: k, start: c.now(), proto: strings.Contains(contentType, "protobuf")}
	if n, err := strconv.Atoi(timeoutSeconds); err == nil && n > 0 {
		s.timeout = time.Duration(n) * time.Second
	}
	return s
}

func (s *watchStream) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n == 0 && err == nil {
		return n, err
	}
	s.mu.Lock()
	if !s.done {
		if s.bytes < watchHeadBytes {
			s.head = append(s.head, p[:min(n, watchHeadBytes-int(s.bytes))]...)
		}
		s.bytes += int64(n)
		if err != nil {
			s.end(err)
		}
	}
	s.mu.Unlock()
	return n, err
}

func (s *watchStream) Close() error {
	s.mu.Lock()
	if !s.done {
		s.end(errStopped)
	}
	s.mu.Unlock()
	return s.ReadCloser.Close()
}

// end notes how the watch ended; s.mu is held.
func (s *watchStream) end(err error) {
	s.done = true
	now := s.c.now()
	lasted := now.Sub(s.start)
	if err == io.EOF && s.timeout > 0 && lasted >= s.timeout-time.Second {
		s.k.current.Store(now.UnixNano())
		s.k.takeEnded()
		return
	}
	after := "after " + lasted.Round(time.Millisecond).String()
	if lasted < time.Millisecond {
		after = "at once"
	}
	received := fmt.Sprintf("%d bytes received", s.bytes)
	switch {
	case s.bytes == 0:
		received = "nothing received"
	case s.bytes == 1:
		received = "1 byte received"
	}
	if s.bytes <= watchHeadBytes {
		if msg := watchError(s.head, s.proto); msg != "" {
			received = "with the error: " + msg
		}
	}
	switch {
	case err == io.EOF:
		s.k.setEnded(fmt.Sprintf("the API server ended the watch %s, %s", after, received))
	case errors.Is(err, errStopped):
		// What stops a running watch is an error event (client-go's
		// reflector stops on watch.Error), or shutdown.
		s.k.setEnded(fmt.Sprintf("the informer stopped the watch %s, %s", after, received))
	default:
		s.k.setEnded(fmt.Sprintf("the watch broke %s, %s: %v", after, received, err))
	}
}

// watchError returns the message of the first error event in b, the start
// of a watch stream, or "" if there is none.
func watchError(b []byte, proto bool) string {
	if !proto {
		for line := range bytes.Lines(b) {
			var ev struct {
				Type   watch.EventType `json:"type"`
				Object metav1.Status   `json:"object"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.Type == watch.Error {
				return statusText(&ev.Object)
			}
		}
		return ""
	}
	// Frames of a 4-byte big-endian length and a metav1.WatchEvent, whose
	// object is the Status in the protobuf envelope ("k8s\x00", Unknown).
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+n {
			return ""
		}
		var ev metav1.WatchEvent
		if ev.Unmarshal(b[4:4+n]) == nil && ev.Type == string(watch.Error) {
			var u runtime.Unknown
			var st metav1.Status
			raw, ok := bytes.CutPrefix(ev.Object.Raw, []byte("k8s\x00"))
			if ok && u.Unmarshal(raw) == nil && st.Unmarshal(u.Raw) == nil {
				return statusText(&st)
			}
			return "an error event"
		}
		b = b[4+n:]
	}
	return ""
}

func statusText(st *metav1.Status) string {
	if st.Message == "" {
		return fmt.Sprintf("%s (%d)", st.Reason, st.Code)
	}
	return st.Message
}

// collection returns "group/resource" for the path of a collection
// (/api/v1/pods, /api/v1/namespaces/NS/pods, /apis/apps/v1/replicasets), or
// "" for any other path (an object, discovery).
func collection(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		return ""
	}
	switch {
	case len(segs) == 1:
		return group + "/" + segs[0]
	case len(segs) == 3 && segs[0] == "namespaces":
		return group + "/" + segs[2]
	}
	return ""
}

// KindStats are the counters of one watched kind.
type KindStats struct {
	Resource string // as kubectl names it: "pods", "replicasets.apps"
	Kind     string // "Pod"
	Watched  bool   // false when Preflight found it may not be watched
	// Revisions is the records of this kind written.
	Revisions int64
	// Lists is the complete lists the API server answered: the first is the
	// informer's initial list, each further one a relist (after an expired
	// watch, a cut connection, an outage). Counted only for a Tracer built
	// from a RESTConfig, as are Watches.
	Lists int64
	// Watches is the watches started: after each list, and again whenever
	// one ends (the API server ends every watch after 5 to 10 minutes).
	Watches int64
	// WatchErrors is the failed lists and watches the informer reported.
	WatchErrors int64
}

// Relists is the lists after the initial one.
func (s KindStats) Relists() int64 { return max(s.Lists-1, 0) }

// kindStats returns the per-kind counters, in start order.
func (t *Tracer) kindStats() []KindStats {
	out := make([]KindStats, 0, len(t.kinds))
	for _, k := range t.kinds {
		out = append(out, KindStats{
			Resource:    k.resource(),
			Kind:        k.gvk.Kind,
			Watched:     !k.skipped.Load(),
			Revisions:   k.revisions.Load(),
			Lists:       k.lists.Load(),
			Watches:     k.watches.Load(),
			WatchErrors: k.watchErrors.Load(),
		})
	}
	return out
}

// serverStatus is the API server's health as the requests saw it.
func (t *Tracer) serverStatus() (failed int64, downSince time.Time) {
	if t.health == nil {
		return 0, time.Time{}
	}
	return t.health.status()
}
