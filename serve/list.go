package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podtrace/podtrace/store"
)

// A list or a Table is written as it is made: the objects present at the
// moment are decoded and rendered in chunks, on every core, and written in
// order. A request holds the summaries of the objects present and a few
// chunks of revisions, never the whole response, and no read transaction
// while it writes.

// chunkSize is how many objects a worker decodes and renders at a time.
const chunkSize = 128

// flushBytes is how much of a response is kept before it is written: an
// error found before then is still a Status.
const flushBytes = 64 << 10

// render appends what the revision of one object renders to for the
// response; ok false leaves it out (a selector does not match). The
// revision's Object is valid only during the call.
type render func(dst []byte, rev *store.Revision, w *worker) (out []byte, ok bool, err error)

// worker is what one of each's goroutines renders with.
type worker struct {
	red func([]byte) ([]byte, error)
	pod corev1.Pod // readPod's, reused
}

// chunk is a run of objects and what their revisions rendered: the items
// one after the other in buf, each ending at its ends.
type chunk struct {
	objs []store.Object
	buf  []byte
	ends []int
	rv   rvMax
	err  error
	done chan struct{}
}

// errStop, returned by emit, ends each without error.
var errStop = errors.New("stop")

// each decodes the revisions at t of objs and calls emit, in order, with
// what render makes of each; it returns the greatest resourceVersion of the
// revisions (deletions included).
func (s *Server) each(ctx context.Context, objs []store.Object, t time.Time, fn render, emit func([]byte) error) (rvMax, error) {
	var rv rvMax
	workers := max(1, min(runtime.GOMAXPROCS(0), (len(objs)+chunkSize-1)/chunkSize))
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: the workers finish their chunk and go
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *chunk)
	ordered := make(chan *chunk, 2*workers) // the chunks ahead of the writer
	go func() {
		defer close(work)
		defer close(ordered)
		for i := 0; i < len(objs); i += chunkSize {
			c := &chunk{objs: objs[i:min(i+chunkSize, len(objs))], done: make(chan struct{})}
			select {
			case ordered <- c:
			case <-ctx.Done():
				return
			}
			select {
			case work <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		w := &worker{red: s.redactor()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				c.err = s.renderChunk(c, t, fn, w)
				close(c.done)
			}
		}()
	}
	for c := range ordered {
		select {
		case <-c.done:
		case <-ctx.Done():
			return rv, ctx.Err()
		}
		if c.err != nil {
			return rv, c.err
		}
		rv.merge(c.rv)
		start := 0
		for _, end := range c.ends {
			b := c.buf[start:end:end]
			start = end
			if err := emit(b); err != nil {
				if errors.Is(err, errStop) {
					return rv, nil
				}
				return rv, err
			}
		}
	}
	return rv, ctx.Err()
}

// renderChunk decodes and renders the revisions of a chunk's objects, each
// in the memory of the one before (store.DB.AtEach).
func (s *Server) renderChunk(c *chunk, t time.Time, fn render, w *worker) error {
	return s.db.AtEach(c.objs, t, func(rev *store.Revision) error {
		c.rv.add(rev)
		if rev.Type == store.Deleted || rev.Type == store.DeletedUnknown {
			return nil
		}
		buf, ok, err := fn(c.buf, rev, w)
		if err != nil {
			return fmt.Errorf("%s %s/%s at Seq %d: %w", rev.Kind, rev.Namespace, rev.Name, rev.Seq, err)
		}
		if ok {
			c.buf = buf
			c.ends = append(c.ends, len(buf))
		}
		return nil
	})
}

// rvMax is the greatest resourceVersion seen: by number, or, while none is
// a number, the one of the last record.
type rvMax struct {
	numeric bool
	num     int64
	seq     uint64
	rv      string
}

func (m *rvMax) add(rev *store.Revision) {
	m.merge(rvMax{seq: rev.Seq, rv: rev.ResourceVersion})
}

func (m *rvMax) merge(o rvMax) {
	if o.rv == "" && o.seq == 0 {
		return
	}
	if !o.numeric {
		if n, err := strconv.ParseInt(o.rv, 10, 64); err == nil {
			o.numeric, o.num = true, n
		}
	}
	switch {
	case o.numeric && (!m.numeric || o.num > m.num):
		*m = o
	case !o.numeric && !m.numeric && o.seq > m.seq:
		*m = o
	}
}

// response is a response being written: kept until flushBytes, so that an
// error before then is a Status, then written as it grows.
type response struct {
	w       http.ResponseWriter
	buf     []byte
	written bool
}

func (r *response) flush(force bool) {
	if len(r.buf) < flushBytes && !force {
		return
	}
	if !r.written {
		r.w.Header().Set("Content-Type", "application/json")
		r.written = true
	}
	r.w.Write(r.buf)
	r.buf = r.buf[:0]
}

// fail answers an error: a Status if nothing was written yet; else the
// connection is cut, so that the client sees a broken response, not a short
// list.
func (r *response) fail(err error) {
	if !r.written {
		writeStatus(r.w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
		return
	}
	panic(http.ErrAbortHandler)
}

// serveList answers a get or a list, as JSON or as a Table.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, t time.Time, q query) {
	p, err := s.db.ObjectsAt(q.filter(), t)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
		return
	}
	var gone rvMax
	if p.Gone != nil {
		// The list's resourceVersion is that of the last change, which may
		// be a deletion.
		revs, err := s.db.At([]store.Object{*p.Gone}, t)
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error(), nil)
			return
		}
		for i := range revs {
			gone.add(&revs[i])
		}
	}
	selected := func(raw []byte) (bool, error) {
		if !q.selects() {
			return true, nil
		}
		m, err := parseMeta(raw)
		if err != nil {
			return false, err
		}
		return q.matches(m), nil
	}
	resp := &response{w: w}
	if wantsTable(r) {
		s.writeTable(r.Context(), resp, t, q, p.Objects, gone, selected, r.URL.Query().Get("includeObject"))
		return
	}
	fn := func(dst []byte, rev *store.Revision, w *worker) ([]byte, bool, error) {
		if ok, err := selected(rev.Object); !ok || err != nil {
			return dst, false, err
		}
		b, err := w.red(rev.Object)
		return append(dst, b...), err == nil, err
	}
	if q.name != "" {
		var obj []byte
		_, err := s.each(r.Context(), p.Objects, t, fn, func(b []byte) error { obj = b; return errStop })
		switch {
		case err != nil:
			resp.fail(err)
		case obj == nil:
			s.notFound(w, t, q)
		default:
			resp.buf = obj
			resp.flush(true)
		}
		return
	}
	head, _ := json.Marshal(struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}{q.res.kind + "List", q.res.apiVersion()})
	resp.buf = append(head[:len(head)-1], `,"items":[`...)
	n := 0
	rv, err := s.each(r.Context(), p.Objects, t, fn, func(b []byte) error {
		if n > 0 {
			resp.buf = append(resp.buf, ',')
		}
		n++
		resp.buf = append(resp.buf, b...)
		resp.flush(false)
		return nil
	})
	if err != nil {
		resp.fail(err)
		return
	}
	rv.merge(gone)
	resp.buf = appendListEnd(resp.buf, rv.rv)
	resp.flush(true)
}

// appendListEnd closes the items or rows of a list, and appends its
// metadata: its resourceVersion is known once every item is.
func appendListEnd(dst []byte, rv string) []byte {
	md, _ := json.Marshal(metav1.ListMeta{ResourceVersion: rv})
	dst = append(dst, `],"metadata":`...)
	dst = append(dst, md...)
	return append(dst, "}\n"...)
}

// writeTable writes the objects present at t as a Table of that moment.
// The cells are computed from the recorded objects (names, states,
// addresses: nothing redaction hides); each row's object, its metadata
// unless include asks for the object (Object) or nothing (None), is
// redacted.
func (s *Server) writeTable(ctx context.Context, resp *response, t time.Time, q query, objs []store.Object, gone rvMax,
	selected func([]byte) (bool, error), include string) {
	colsJSON, _ := json.Marshal(columnsOf(q.res.apiVersion(), q.res.kind))
	resp.buf = append(resp.buf, `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":`...)
	resp.buf = append(resp.buf, colsJSON...)
	resp.buf = append(resp.buf, `,"rows":[`...)
	fn := func(dst []byte, rev *store.Revision, w *worker) ([]byte, bool, error) {
		if ok, err := selected(rev.Object); !ok || err != nil {
			return dst, false, err
		}
		b, err := appendRow(dst, q.res, rev.Object, t, include, w)
		return b, err == nil, err
	}
	n := 0
	rv, err := s.each(ctx, objs, t, fn, func(b []byte) error {
		if n > 0 {
			resp.buf = append(resp.buf, ',')
		}
		n++
		resp.buf = append(resp.buf, b...)
		resp.flush(false)
		return nil
	})
	if err != nil {
		resp.fail(err)
		return
	}
	if q.name != "" && n == 0 {
		s.notFound(resp.w, t, q)
		return
	}
	rv.merge(gone)
	resp.buf = appendListEnd(resp.buf, rv.rv)
	resp.flush(true)
}

// appendRow appends the row of one object at the moment t, with its object
// as include asks (None, Object, or its metadata by default), redacted.
func appendRow(dst []byte, res resource, raw []byte, t time.Time, include string, w *worker) ([]byte, error) {
	var md objectMeta
	cells, err := cellsOf(res.apiVersion(), res.kind, raw, t, &md, &w.pod)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"cells":[`...)
	for i, c := range cells {
		if i > 0 {
			dst = append(dst, ',')
		}
		if str, ok := c.(string); ok {
			dst = appendJSONString(dst, str)
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		dst = append(dst, b...)
	}
	dst = append(dst, ']')
	if include == "None" {
		return append(dst, '}'), nil
	}
	dst = append(dst, `,"object":`...)
	at := len(dst)
	if include == "Object" {
		dst = append(dst, raw...)
	} else {
		// kubectl reads names, namespaces and labels of a row's object,
		// never its managedFields: they are left out.
		dst = appendPartial(dst, &md)
	}
	obj, err := w.red(dst[at:])
	if err != nil {
		return nil, err
	}
	if len(obj) == 0 || &obj[0] != &dst[at] {
		dst = append(dst[:at], obj...)
	}
	return append(dst, '}'), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it
// but for HTML's characters, which a JSON reader does not need escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			switch r {
			case utf8.RuneError:
				dst = append(dst, `\ufffd`...)
			case '\u2028':
				dst = append(dst, `\u2028`...)
			default:
				dst = append(dst, `\u2029`...)
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
