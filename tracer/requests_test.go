package tracer

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
