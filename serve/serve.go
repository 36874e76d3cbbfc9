// Package serve is a read-only Kubernetes API over a trace, at any recorded
// moment: kubectl, client-go and k9s read the cluster as it was.
//
// The moment is the first part of the URL path: /at/2026-12-01T10:02:00Z/
// (RFC 3339), /at/10:02:00/ (a time of day, on the day the recording ended,
// or the day before if that is later than the end), /at/-5m/ (before the
// end of the recording), /latest/ (its end). Under it, the server answers
// what a client needs to read: /version, discovery (/api, /apis and their
// groups, the recorded kinds with the verbs get, list and watch), lists and
// gets with label and field selectors, Tables, and watches that replay the
// recorded revisions after the moment. Every write is refused with a 405
// Status.
//
// An object's state at a moment is its last revision observed at or before
// it; an object whose last revision then is a deletion, or that was first
// seen after it, is absent. Objects are served as recorded, through the
// redactor unless redaction is off.
package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/store"
)

// Options configure a Server.
type Options struct {
	// Redactor redacts every object served; nil serves them as recorded.
	Redactor *redact.Redactor
	// Speed is how much faster than recorded a watch replays: 1 at
	// recorded speed, 10 ten times faster, 0 as fast as it can.
	Speed float64
	// Now is the clock a watch paces its replay by; default time.Now.
	Now func() time.Time
}

// Server answers the Kubernetes API over one trace.
type Server struct {
	db       *store.DB
	opts     Options
	res      resources
	sessions []store.Session
	start    time.Time
	end      time.Time
	version  string
	// prunedTo is the last deletion among the pods retention pruned (zero
	// if none was): at a moment before it, a pod that was there and is
	// gone by then may be missing.
	prunedTo time.Time
}

// New returns a Server over db, which the caller keeps open (read-only)
// while the server runs, and closes.
func New(db *store.DB, opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{db: db, opts: opts}
	sessions, err := db.Sessions()
	if err != nil {
		return nil, err
	}
	s.sessions = sessions
	for _, ss := range sessions {
		if s.start.IsZero() || ss.Started.Before(s.start) {
			s.start = ss.Started
		}
		if e := ss.End(); e.After(s.end) {
			s.end = e
		}
		if ss.ServerVersion != "" {
			s.version = ss.ServerVersion
		}
	}
	prunes, err := db.Prunes()
	if err != nil {
		return nil, err
	}
	for _, p := range prunes {
		if p.NewestGone.After(s.prunedTo) {
			s.prunedTo = p.NewestGone
		}
	}
	// The recorded kinds, read in place: the summaries are not kept.
	kinds, err := db.Kinds()
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		s.res.add(newResource(k.APIVersion, k.Kind, k.Namespaced))
		if k.LastObserved.After(s.end) {
			s.end = k.LastObserved
		}
	}
	unrecorded := map[string]bool{}
	for _, ss := range sessions {
		for _, k := range ss.Unrecorded {
			unrecorded[k] = true
		}
	}
	if len(sessions) > 0 {
		for _, k := range recorded {
			if !unrecorded[k[1]] {
				r := newResource(k[0], k[1], true)
				r.namespaced = known[k[0]+" "+k[1]].namespaced
				s.res.add(r)
			}
		}
	}
	return s, nil
}

// End is the end of the recording: what /latest/ serves.
func (s *Server) End() time.Time { return s.end }

// Sessions are the trace's sessions.
func (s *Server) Sessions() []store.Session { return s.sessions }

// Moment parses the moment part of a URL: an RFC 3339 time, a time of
// day, or a negative duration before the end.
func (s *Server) Moment(m string) (time.Time, error) {
	if m == "latest" {
		return s.end, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, m); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(m); err == nil {
		if d > 0 {
			return time.Time{}, fmt.Errorf("moment %q: a duration counts back from the end of the recording, e.g. -5m", m)
		}
		return s.end.Add(d), nil
	}
	for _, layout := range []string{"15:04:05.999999999", "15:04"} {
		if c, err := time.Parse(layout, m); err == nil {
			e := s.end.UTC()
			t := time.Date(e.Year(), e.Month(), e.Day(), c.Hour(), c.Minute(), c.Second(), c.Nanosecond(), time.UTC)
			if t.After(s.end) {
				t = t.AddDate(0, 0, -1)
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("moment %q: want an RFC 3339 time (2026-12-01T10:02:00Z), a time of day (10:02:00, UTC), or a duration before the end (-5m)", m)
}

// Path returns the URL path prefix of moment t.
func Path(t time.Time) string { return "/at/" + t.UTC().Format(time.RFC3339Nano) + "/" }

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	default:
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			fmt.Sprintf("%s %s: this server is a read-only recording (podtrace serve): nothing can be created, changed or deleted", r.Method, r.URL.Path), nil)
		return
	}
	p := strings.TrimPrefix(r.URL.Path, "/")
	var moment, rest string
	switch {
	case strings.HasPrefix(p, "at/"):
		moment, rest, _ = strings.Cut(strings.TrimPrefix(p, "at/"), "/")
	case p == "latest" || strings.HasPrefix(p, "latest/"):
		moment, rest, _ = strings.Cut(p, "/")
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("%s: pick a moment first: /latest/, /at/RFC3339/ (e.g. %s) or /at/-5m/", r.URL.Path, Path(s.end)), nil)
		return
	}
	t, err := s.Moment(moment)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), nil)
		return
	}
	if !s.prunedTo.IsZero() && t.Before(s.prunedTo) {
		// kubectl prints a 299 warning as "Warning: ..." on every request.
		w.Header().Add("Warning", fmt.Sprintf(`299 - "podtrace: retention pruned the history of pods gone up to %s (record --retain or --max-size): a pod that existed at this moment and was deleted by then is missing"`,
			s.prunedTo.UTC().Format(time.RFC3339)))
	}
	s.serveAt(w, r, t, strings.Split(strings.Trim(rest, "/"), "/"))
}

func (s *Server) serveAt(w http.ResponseWriter, r *http.Request, t time.Time, parts []string) {
	if len(parts) == 1 && parts[0] == "" {
		parts = nil
	}
	switch {
	case len(parts) == 1 && parts[0] == "version":
		writeJSON(w, s.versionInfo())
		return
	case len(parts) == 1 && parts[0] == "api":
		writeJSON(w, metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
		})
		return
	case len(parts) == 1 && parts[0] == "apis":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: s.res.groups()})
		return
	case len(parts) == 2 && parts[0] == "apis":
		for _, g := range s.res.groups() {
			if g.Name == parts[1] {
				writeJSON(w, g)
				return
			}
		}
	case len(parts) >= 2 && parts[0] == "api", len(parts) >= 3 && parts[0] == "apis":
		gv, rest := parts[1], parts[2:]
		if parts[0] == "apis" {
			gv, rest = parts[1]+"/"+parts[2], parts[3:]
		}
		if len(rest) == 0 {
			if l, ok := s.res.list(gv); ok {
				writeJSON(w, l)
				return
			}
			break
		}
		var q query
		switch {
		case len(rest) >= 3 && rest[0] == "namespaces":
			q.namespace, q.plural = rest[1], rest[2]
			rest = rest[3:]
		default:
			q.plural = rest[0]
			rest = rest[1:]
		}
		res, ok := s.res.find(gv, q.plural)
		if !ok {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("the trace holds no %s in %s", q.plural, gv), nil)
			return
		}
		q.res = res
		if len(rest) > 1 {
			writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("%s/%s: a trace holds objects, not their subresources", res.plural, strings.Join(rest, "/")), nil)
			return
		}
		if len(rest) == 1 {
			q.name = rest[0]
		}
		if err := q.parse(r); err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error(), nil)
			return
		}
		s.serveResource(w, r, t, q)
		return
	}
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("%s: not found in this recording", r.URL.Path), nil)
}

func (s *Server) versionInfo() version.Info {
	v := s.version
	if v == "" {
		v = "v0.0.0"
	}
	info := version.Info{GitVersion: v, Platform: "podtrace/serve"}
	if parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3); len(parts) >= 2 {
		info.Major, info.Minor = parts[0], parts[1]
	}
	return info
}

// serveResource answers a get, a list or a watch.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, t time.Time, q query) {
	if q.watch {
		s.watch(w, r, t, q)
		return
	}
	s.serveList(w, r, t, q)
}

func (s *Server) notFound(w http.ResponseWriter, t time.Time, q query) {
	writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
		fmt.Sprintf("%s %q not found at %s", q.res.plural, q.name, t.UTC().Format(time.RFC3339)),
		&metav1.StatusDetails{Name: q.name, Kind: q.res.plural, Group: q.res.group})
}

// redactor returns what redacts one object for one request.
func (s *Server) redactor() func([]byte) ([]byte, error) {
	if s.opts.Redactor == nil {
		return func(b []byte) ([]byte, error) { return b, nil }
	}
	return s.opts.Redactor.Clone().RedactObject
}

// state is what a query selects at a moment.
type state struct {
	items []store.Revision // present and selected, by namespace and name
	rv    string           // the last resourceVersion recorded of the kind at the moment
	start uint64           // the first Seq after the moment of the kind's objects (0: none)
}

func (s *Server) state(t time.Time, q query) (state, error) {
	var st state
	p, err := s.db.ObjectsAt(q.filter(), t)
	if err != nil {
		return st, err
	}
	st.start = p.FirstAfter
	keep := p.Objects
	if p.Gone != nil {
		keep = append(keep, *p.Gone)
	}
	revs, err := s.db.At(keep, t)
	if err != nil {
		return st, err
	}
	var rv rvMax
	for _, rev := range revs {
		if rev.NextSeq != 0 && (st.start == 0 || rev.NextSeq < st.start) {
			st.start = rev.NextSeq
		}
		rv.add(&rev)
		if rev.Type == store.Deleted || rev.Type == store.DeletedUnknown {
			continue
		}
		if q.selects() {
			m, err := parseMeta(rev.Object)
			if err != nil {
				return st, fmt.Errorf("%s %s/%s at Seq %d: %w", rev.Kind, rev.Namespace, rev.Name, rev.Seq, err)
			}
			if !q.matches(m) {
				continue
			}
		}
		st.items = append(st.items, rev)
	}
	st.rv = rv.rv
	return st, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string, details *metav1.StatusDetails) {
	b, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Details: details, Code: int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
