package tracer

import (
	"net/http"
	"strings"
	"time"
)

// The informers do not tell when they relist or restart a watch: client-go's
// reflector relists after any watch that ended with an error (an expired
// resource version, a cut connection) without calling the watch error
// handler. The requests tell instead. requestCounter is a transport wrapper
// that counts, per kind, the lists and watches the API server answered.

// requestCounter counts the informers' lists and watches by kind.
type requestCounter struct {
	// kinds by "group/resource" ("/pods" for the core group).
	kinds map[string]*kind
}

func newRequestCounter(ks []*kind) *requestCounter {
	c := &requestCounter{kinds: map[string]*kind{}}
	for _, k := range ks {
		c.kinds[k.gvr.Group+"/"+k.gvr.Resource] = k
	}
	return c
}

// wrap is a rest.Config transport wrapper that counts the requests rt sends
// and the API server answers with success.
func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode < 300 && req.Method == http.MethodGet {
			c.count(req)
		}
		return resp, err
	})
}

// count counts req if it lists or watches a watched kind's collection. A
// watch that asks for the initial events (client-go's watch-list) is a list;
// the further pages of a list are not counted again.
func (c *requestCounter) count(req *http.Request) {
	k := c.kinds[collection(req.URL.Path)]
	if k == nil {
		return
	}
	q := req.URL.Query()
	switch {
	case q.Get("continue") != "":
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		if q.Get("sendInitialEvents") == "true" {
			k.lists.Add(1)
		} else {
			k.watches.Add(1)
		}
	default:
		k.lists.Add(1)
	}
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
