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
	send := func(typ string, raw []byte) bool {
		if typ != "BOOKMARK" {
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
		if q.sendInitialEvents && !send("ADDED", it.Object) {
			return
		}
	}
	if q.sendInitialEvents {
		b, _ := json.Marshal(map[string]any{
			"kind": q.res.kind, "apiVersion": q.res.apiVersion(),
			"metadata": map[string]any{"resourceVersion": st.rv, "annotations": map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
		})
		if !send("BOOKMARK", b) {
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
			if !send(typ, rec.Object) {
				return
			}
		}
		if len(batch) < watchBatch {
			break
		}
	}
	<-ctx.Done()
}

func rvNumber(rv string) (int64, bool) {
	n, err := strconv.ParseInt(rv, 10, 64)
	return n, err == nil
}
