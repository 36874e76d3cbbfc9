package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// watchBatch is how many records a watch reads from the trace at a time:
// it holds no transaction while it waits to send them.
const watchBatch = 256

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watch replays the revisions recorded after the moment t, in order, with
// their recorded resourceVersions, paced by Options.Speed; then it holds
// the stream open until the client goes or timeoutSeconds pass.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, t time.Time, q query) {
	st, err := s.state(t, q)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
		return
	}
	ctx := r.Context()
	if q.timeout > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, q.timeout)
		defer cancel()
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	red := s.redactor()
	// As a Table (kubectl get -w), each event's object is a Table of one
	// row at the moment of the revision, as the API server sends it: the
	// columns in the first event only.
	table := wantsTable(r)
	tw := &worker{red: red}
	include := r.URL.Query().Get("includeObject")
	headers := true
	send := func(typ string, raw []byte, at time.Time) bool {
		switch {
		case typ == "BOOKMARK":
		case table:
			row, err := appendRow(nil, q.res, raw, at, include, tw)
			if err != nil {
				// A deletion recorded without the object (its final
				// state unknown) has no row: the watch goes on.
				return typ == "DELETED"
			}
			raw = appendTable(nil, q.res, headers, row, rvOf(raw))
			headers = false
		default:
			var err error
			if raw, err = red(raw); err != nil {
				return false
			}
		}
		if enc.Encode(watchEvent{Type: typ, Object: raw}) != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	present := map[string]bool{}
	for _, it := range st.items {
		present[it.UID] = true
		if q.sendInitialEvents && !send("ADDED", it.Object, t) {
			return
		}
	}
	if q.sendInitialEvents {
		b, _ := json.Marshal(map[string]any{
			"kind": q.res.kind, "apiVersion": q.res.apiVersion(),
			"metadata": map[string]any{"resourceVersion": st.rv, "annotations": map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
		})
		if !send("BOOKMARK", b, t) {
			return
		}
	}
	from, hasFrom := rvNumber(q.resourceVersion)
	if q.sendInitialEvents || q.resourceVersion == "0" {
		hasFrom = false
	}
	match := func(o *store.Object) bool {
		return o.Kind == q.res.kind && o.APIVersion == q.res.apiVersion() &&
			(q.namespace == "" || o.Namespace == q.namespace) && (q.name == "" || o.Name == q.name)
	}
	wallStart, paceFrom := s.opts.Now(), t
	after := uint64(0)
	if st.start > 0 {
		after = st.start - 1
	}
	for st.start > 0 {
		var batch []store.Record
		err := s.db.ScanAfter(after, match, func(rec store.Record) error {
			batch = append(batch, rec)
			if len(batch) == watchBatch {
				return store.ErrStop
			}
			return nil
		})
		if err != nil || len(batch) == 0 {
			break
		}
		after = batch[len(batch)-1].Seq
		for _, rec := range batch {
			if !rec.Observed.After(t) {
				continue
			}
			m, err := parseMeta(rec.Object)
			if err != nil {
				continue
			}
			var typ string
			switch {
			case rec.Type == store.Deleted || rec.Type == store.DeletedUnknown:
				if !present[rec.UID] {
					continue
				}
				delete(present, rec.UID)
				typ = "DELETED"
			case !q.matches(m):
				continue
			case present[rec.UID]:
				typ = "MODIFIED"
			default:
				present[rec.UID] = true
				typ = "ADDED"
			}
			// A watch resumed from a resourceVersion (an informer's,
			// after its last watch ended) has seen the revisions up to
			// it: they only bring the state up to date, and the pace
			// starts again from the last of them.
			if n, ok := rvNumber(rec.ResourceVersion); hasFrom && ok && n <= from {
				paceFrom, wallStart = rec.Observed, s.opts.Now()
				continue
			}
			if s.opts.Speed > 0 {
				due := wallStart.Add(time.Duration(float64(rec.Observed.Sub(paceFrom)) / s.opts.Speed))
				if d := due.Sub(s.opts.Now()); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				}
			}
			if !send(typ, rec.Object, rec.Observed) {
				return
			}
		}
		if len(batch) < watchBatch {
			break
		}
	}
	<-ctx.Done()
}

// appendTable appends a Table of one row (row's JSON), with the columns
// of res when headers is set, and the resourceVersion rv.
func appendTable(dst []byte, res resource, headers bool, row []byte, rv string) []byte {
	dst = append(dst, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":`...)
	dst = appendJSONString(dst, rv)
	dst = append(dst, `},"columnDefinitions":`...)
	if headers {
		cols, _ := json.Marshal(columnsOf(res.apiVersion(), res.kind))
		dst = append(dst, cols...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"rows":[`...)
	dst = append(dst, row...)
	return append(dst, "]}"...)
}

// rvOf is the resourceVersion in an object's metadata.
func rvOf(raw []byte) string {
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	json.Unmarshal(raw, &m)
	return m.Metadata.ResourceVersion
}

func rvNumber(rv string) (int64, bool) {
	n, err := strconv.ParseInt(rv, 10, 64)
	return n, err == nil
}
