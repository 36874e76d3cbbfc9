package tracer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/podtrace/podtrace/store"
)

func TestCollection(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"/api/v1/pods", "/pods"},
		{"/api/v1/namespaces/ci/pods", "/pods"},
		{"/api/v1/namespaces", "/namespaces"},
		{"/api/v1/namespaces/ci", ""}, // an object
		{"/api/v1/namespaces/ci/pods/web", ""},
		{"/apis/apps/v1/replicasets", "apps/replicasets"},
		{"/apis/apps/v1/namespaces/ci/replicasets", "apps/replicasets"},
		{"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", "admissionregistration.k8s.io/mutatingwebhookconfigurations"},
		{"/api", ""},
		{"/apis/apps/v1", ""},
		{"/version", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := collection(tc.path); got != tc.want {
				t.Errorf("collection(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// TestRequestCounter: lists (plain, and watch-lists) and watches are
// counted per kind once each, a list's further pages and failed or
// non-GET requests not at all.
func TestRequestCounter(t *testing.T) {
	ks := kinds()
	c := newRequestCounter(ks)
	status := http.StatusOK
	rt := c.wrap(roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		rec.WriteHeader(status)
		return rec.Result(), nil
	}))
	send := func(method, url string) {
		req := httptest.NewRequest(method, url, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	send("GET", "https://h/api/v1/pods?limit=500&resourceVersion=0")
	send("GET", "https://h/api/v1/pods?limit=500&continue=abc") // a page
	send("GET", "https://h/api/v1/pods?watch=true&resourceVersion=10&allowWatchBookmarks=true")
	send("GET", "https://h/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan") // a relist
	send("GET", "https://h/api/v1/namespaces/ci/pods?watch=1")
	send("GET", "https://h/apis/apps/v1/namespaces/ci/replicasets")
	send("POST", "https://h/api/v1/namespaces/ci/pods")
	send("GET", "https://h/api/v1/namespaces/ci/pods/web")
	status = http.StatusGone
	send("GET", "https://h/api/v1/pods?watch=true")

	got := map[string][2]int64{}
	for _, k := range ks {
		if l, w := k.lists.Load(), k.watches.Load(); l+w > 0 {
			got[k.resource()] = [2]int64{l, w}
		}
	}
	want := map[string][2]int64{"pods": {2, 2}, "replicasets.apps": {1, 0}}
	if len(got) != len(want) || got["pods"] != want["pods"] || got["replicasets.apps"] != want["replicasets.apps"] {
		t.Errorf("lists and watches by kind = %v, want %v", got, want)
	}
}

// step is one Read of a scripted watch body: at that time on the test's
// clock, it returns data, or err once data is empty.
type step struct {
	at   time.Duration
	data string
	err  error
}

type scriptedBody struct {
	clock *time.Time
	base  time.Time
	steps []step
}

func (b *scriptedBody) Read(p []byte) (int, error) {
	if len(b.steps) == 0 {
		return 0, io.EOF
	}
	s := b.steps[0]
	b.steps = b.steps[1:]
	*b.clock = b.base.Add(s.at)
	if s.data != "" {
		n := copy(p, s.data)
		if n < len(s.data) { // the rest in the next Read, at the same time
			b.steps = append([]step{{at: s.at, data: s.data[n:]}}, b.steps...)
		}
		return n, nil
	}
	return 0, s.err
}

func (b *scriptedBody) Close() error { return nil }

const (
	protoStream = "application/vnd.kubernetes.protobuf;stream=watch"
	expiredJSON = `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 10 (25)","reason":"Expired","code":410}}` + "\n"
)

var expired = metav1.Status{Status: metav1.StatusFailure, Message: "too old resource version: 10 (25)", Reason: metav1.StatusReasonExpired, Code: 410}

// expiredProto is the error event of expiredJSON as a protobuf watch frame.
func expiredProto(t *testing.T) string {
	st, err := expired.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: st}
	ub, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ev := metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: append([]byte("k8s\x00"), ub...)}}
	eb, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return string(binary.BigEndian.AppendUint32(nil, uint32(len(eb)))) + string(eb)
}

// TestRelistGaps: a list after the first is a gap of its kind, from the last
// moment the informer is known to have been up to date to the list's
// answer, with how the watch before it ended; a watch resumed without a
// list, a first list, and a relist after an outage are not.
func TestRelistGaps(t *testing.T) {
	base := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return base.Add(d) }
	type req struct {
		at     time.Duration
		url    string
		status int
		ctype  string // the response's Content-Type
		body   []step // read to its end (or closed after it) before the next request
		closed bool   // the reader closes the body after its steps, as on an error event
	}
	const (
		list  = "https://h/api/v1/pods?limit=500"
		wlist = "https://h/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&timeoutSeconds=300"
		watch = "https://h/api/v1/pods?watch=true&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=300"
	)
	for _, tc := range []struct {
		name        string
		reqs        []req
		outageEnded time.Duration // 0: none
		want        []store.Gap
	}{{
		name: "watch closed early by the API server",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: "a"}, {at: 3 * time.Second, data: "b"}, {at: 4 * time.Second, data: "c"}, {at: 5 * time.Second, err: io.EOF}}},
			{at: 6 * time.Second, url: list},
		},
		// What the server sent is no proof: it may have dropped changes
		// made before its last message (queued behind it). Current as of
		// the list.
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(0), End: at(6 * time.Second),
			Detail: "the API server ended the watch after 4s, 3 bytes received"}},
	}, {
		name: "watch-list, then a watch closed at once with nothing",
		reqs: []req{
			{at: 0, url: wlist, body: []step{{at: time.Second, data: "initial"}, {at: 2 * time.Second, data: "bookmark"}, {at: 3 * time.Second, data: "x"}, {at: 300 * time.Second, err: io.EOF}}},
			{at: 301 * time.Second, url: watch, body: []step{{at: 301*time.Second + 200*time.Millisecond, err: io.EOF}}},
			{at: 302 * time.Second, url: wlist},
		},
		// The first watch ran to its timeout: current to its end.
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(300 * time.Second), End: at(302 * time.Second),
			Detail: "the API server ended the watch after 200ms, nothing received"}},
	}, {
		name: "error event on a resumed watch",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: "a"}, {at: 301 * time.Second, err: io.EOF}}},
			{at: 302 * time.Second, url: watch, body: []step{{at: 302*time.Second + 10*time.Millisecond, data: expiredJSON}}, closed: true},
			{at: 303 * time.Second, url: list},
		},
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(301 * time.Second), End: at(303 * time.Second),
			Detail: "the informer stopped the watch after 10ms, with the error: too old resource version: 10 (25)"}},
	}, {
		name: "error event in protobuf, then the end",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, ctype: protoStream, body: []step{{at: 2 * time.Second, data: expiredProto(t)}, {at: 2 * time.Second, err: io.EOF}}},
			{at: 3 * time.Second, url: list},
		},
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(0), End: at(3 * time.Second),
			Detail: "the API server ended the watch after 1s, with the error: too old resource version: 10 (25)"}},
	}, {
		name: "watch refused",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 301 * time.Second, err: io.EOF}}},
			{at: 302 * time.Second, url: watch, status: http.StatusTooManyRequests},
			{at: 303 * time.Second, url: watch, status: http.StatusTooManyRequests},
			{at: 304 * time.Second, url: watch, status: http.StatusGone},
			{at: 305 * time.Second, url: list},
		},
		// The first and the last of the watches that did not go on.
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(301 * time.Second), End: at(305 * time.Second),
			Detail: "the API server refused to watch from resource version 10: 429 Too Many Requests; " +
				"then the API server refused to watch from resource version 10: 410 Gone"}},
	}, {
		name: "connection broken",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: "a"}, {at: 3 * time.Second, err: io.ErrUnexpectedEOF}}},
			{at: 4 * time.Second, url: list},
		},
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(0), End: at(4 * time.Second),
			Detail: "the watch broke after 2s, 1 byte received: unexpected EOF"}},
	}, {
		name: "a big stream is not searched for errors",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: strings.Repeat("x", 5000)}, {at: 2 * time.Second, data: expiredJSON}, {at: 3 * time.Second, err: io.EOF}}},
			{at: 4 * time.Second, url: list},
		},
		want: []store.Gap{{Cause: store.GapWatch, Resource: "pods", Start: at(0), End: at(4 * time.Second),
			Detail: "the API server ended the watch after 2s, " + strconv.Itoa(5000+len(expiredJSON)) + " bytes received"}},
	}, {
		name: "watches resumed, no relist",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: "a"}, {at: 4 * time.Second, err: io.EOF}}},
			{at: 5 * time.Second, url: watch, body: []step{{at: 6 * time.Second, data: "b"}}, closed: true},
			{at: 7 * time.Second, url: "https://h/api/v1/pods?limit=500&continue=abc"}, // a page of nothing counted
		},
	}, {
		name: "relist after an outage",
		reqs: []req{
			{at: 0, url: list},
			{at: time.Second, url: watch, body: []step{{at: 2 * time.Second, data: "a"}, {at: 3 * time.Second, err: io.ErrUnexpectedEOF}}},
			{at: 20 * time.Second, url: list},
		},
		outageEnded: 19 * time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var now time.Time
			var gaps []store.Gap
			c := newRequestCounter(kinds())
			c.now = func() time.Time { return now }
			c.gap = func(g store.Gap) { gaps = append(gaps, g) }
			c.outageEnded = func() time.Time {
				if tc.outageEnded == 0 {
					return time.Time{}
				}
				return at(tc.outageEnded)
			}
			var next *req
			rt := c.wrap(roundTripperFunc(func(*http.Request) (*http.Response, error) {
				status := cmp.Or(next.status, http.StatusOK)
				return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
					Header: http.Header{"Content-Type": {next.ctype}},
					Body:   &scriptedBody{clock: &now, base: base, steps: next.body}}, nil
			}))
			for i := range tc.reqs {
				next = &tc.reqs[i]
				now = at(next.at)
				resp, err := rt.RoundTrip(httptest.NewRequest("GET", next.url, nil))
				if err != nil {
					t.Fatal(err)
				}
				if next.closed {
					buf := make([]byte, 64<<10)
					for range next.body {
						_, _ = resp.Body.Read(buf)
					}
				} else {
					_, _ = io.ReadAll(resp.Body)
				}
				resp.Body.Close()
			}
			if d := gocmp.Diff(tc.want, gaps, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("gaps (-want +got):\n%s", d)
			}
		})
	}
}
