package report

import (
	"encoding/json"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podtrace/podtrace/diff"
)

// htmlData is the trace as the HTML page's script reads it. html/template
// marshals it into <script type="application/json" id="data">; encoding/json
// escapes <, > and & in it, so no string from the cluster can end the script
// element.
//
// A thousand pods of a hundred revisions would make tens of megabytes of
// plain diff.Lifecycle JSON, mostly the same field names, paths, managers
// and timestamps over and over; so the page gets a compact form (which
// HTML embeds deflated when it is large: see embedData):
//
//	{
//	  "format": "podtrace-report/3",
//	  "file": "...", "generated": "RFC 3339", "sessions": [store.Session...],
//	  "base": 1773478800000,     // Unix ms; every time below is ms from it
//	  "strings": ["...", ...],   // the strings of more than one pod, once, most used first
//	  "actors": [[manager s, who s], ...],
//	  "webhooks": [diff.Webhook...],
//	  "pods": [{
//	    "strings": ["...", ...], // the strings of this pod alone (see below)
//	    "namespace": s, "name": s, "uid": "...", "node": s, "outcome": s,
//	    "end": t, "terminating": "6m30s",
//	    "phases": [[name s, time t, seq, detail s, actor s], ...],
//	    "steps": [[seq +, time +, type s, resourceVersion +, [actor...], [change...], [phase s...]?], ...],
//	    "creationDetails": [i, ...],
//	    "events": [[seq +, time +, type s, reason s, message s, source s, count], ...],
//	    "dependents": [[kind s, name s, uid, since t, deleted t or null, blockOwnerDeletion 0/1], ...],
//	    "findings": [{"id", "severity", "headline", "evidence": [[seq, t or null, text]], "suspects": [webhook...], "next": [...]}],
//	    "admission": {"source", "changes": [[path s, op, old s, new s, by s, certainty s], ...],
//	                  "defaultsHidden", "webhooks": [webhook...], "notes": [...]},  // when known
//	    "audit": {                                                        // with an audit log
//	      "requests": [[time t, verb s, subresource s, user s, userAgent s, code, resourceVersion, seq], ...],
//	      "denied": [[user s, userAgent s, verb s, subresource s, code, message s, count, first t, last t, webhook s], ...],
//	      "patches": [[time t, verb s, webhook s, configuration s, round, index, [[op s, path s, from s, value s], ...]], ...]
//	    }
//	  }]
//	}
//
// where s is a string: n >= 0 is the top-level strings[n], n <= -2 the
// pod's strings[-n-2], and in the steps -1 is the next string of the pod's
// table that the steps had not used yet. A string that only one pod uses
// is in the pod's table, first those its steps use in the order they first
// do, then the others; so most references to a pod's own strings are -1
// or short. t is a time in ms from base, webhook an
// index into webhooks and actor one into actors; + marks a delta from the
// same field of the item before (the first from 0, or from base for
// times). A resourceVersion is a number (a delta after the first) while it
// and the one before are plain numbers, else a string.
//
// A change is [path*3 + op, value, manager s, old s]: op 0 adds, 1 removes,
// 2 changes a field; value is the new value, or the old one of a removal.
// manager is left out when it is the manager of the step's only actor (or
// empty when there are several), and old is left out when it is the value
// the pod's last change of the same path set (or "" when none did).
// creationDetails lists the changes of the first step that the text report
// also folds away: the fields set at creation that tell no story.
//
// The page's data is made in two steps. Each pod's part is encoded on its
// own, by PrepareHTML (as the pod is replayed, on the worker that replayed
// it, or by HTML on GOMAXPROCS workers): its JSON with holes where it
// refers to what only the whole trace decides, with the pod's strings,
// actors and webhooks in the order it first uses them. HTML then numbers
// the strings, actors and webhooks of the whole trace in the order of the
// pods and writes each pod's JSON, filling the holes (pageWriter): a copy
// of bytes and a few numbers per pod.
type htmlData struct{ tr *Trace }

// MarshalJSON implements json.Marshaler.
func (d htmlData) MarshalJSON() ([]byte, error) {
	w := newPageWriter(d.tr, prepareAll(d.tr), nil)
	w.write(d.tr)
	return w.b, w.err
}

// encode writes the JSON of d to sink, in pieces.
func (d htmlData) encode(sink *dataSink) error {
	w := newPageWriter(d.tr, prepareAll(d.tr), sink)
	w.write(d.tr)
	if w.err != nil {
		return w.err
	}
	sink.write(w.b)
	return sink.err
}

// HTMLPod is one pod's part of the HTML page's data, encoded ahead of the
// page by PrepareHTML. It holds what the page shows of the pod's steps,
// events, dependents, admission and audit; it is safe for concurrent use
// and is never modified.
type HTMLPod struct {
	b     []byte  // the JSON, with holes
	holes []hole  // in the order of their offsets
	times []int64 // Unix ms, by the id of a holeTime
	err   error

	strs      []string   // local id -> the string, in order of first use
	uses      []int32    // local id -> references
	forced    []bool     // local id -> must be in the top-level table
	stepOrder []int32    // the ids the steps use, in order of first use there
	actors    []actorKey // by local index: the local ids of manager and who
	webhooks  []string   // by local index: the webhook's JSON
}

type holeKind uint8

const (
	holeString     holeKind = iota // a reference to strs[id] (see pageWriter.str)
	holeStepString                 // the same, in the steps
	holeTime                       // times[id] as ms from the base
	holeActor                      // the index of actors[id] in the actor table
	holeWebhook                    // the index of webhooks[id] in the webhook table
	holeStrings                    // the pod's own table of strings
	holePath                       // holePath+op: the top-level index of strs[id], times 3, plus op
)

type hole struct {
	at   int32 // offset in b
	id   int32
	kind holeKind
}

// PrepareHTML encodes a pod's part of the HTML page's data. A caller that
// renders many pods hands HTML the pods prepared (see Trace.Prepared), on
// as many goroutines as it likes; HTML prepares the others itself.
func PrepareHTML(lc *diff.Lifecycle) *HTMLPod {
	e := podEncoders.Get().(*podEncoder)
	p := e.encode(lc)
	podEncoders.Put(e)
	return p
}

// TrimPrepared lets go of the parts of a prepared pod's lifecycle that
// HTML reads only through its HTMLPod: the steps (but the first one's
// sequence number and time), events, phases, dependents, admission and
// audit. What is left is what the page's overview reads: names, outcome,
// findings, redaction counts, the recording's end. A report that holds
// many pods until it writes them holds far less; the trace's Prepared
// must then hold every pod trimmed.
func TrimPrepared(lc *diff.Lifecycle) {
	if len(lc.Steps) > 0 {
		lc.Steps = []diff.Step{{Seq: lc.Steps[0].Seq, Time: lc.Steps[0].Time}}
	}
	lc.Events, lc.Phases, lc.Dependents, lc.Admission, lc.Audit = nil, nil, nil, nil, nil
}

var podEncoders = sync.Pool{New: func() any {
	return &podEncoder{ids: map[string]int32{}, actor: map[actorKey]int32{}, webhook: map[string]int32{}}
}}

// prepareAll returns the prepared data of every pod of tr, from
// tr.Prepared or made here, on GOMAXPROCS workers.
func prepareAll(tr *Trace) []*HTMLPod {
	out := make([]*HTMLPod, len(tr.Pods))
	var todo []int
	for i, p := range tr.Pods {
		if out[i] = tr.Prepared[p]; out[i] == nil {
			todo = append(todo, i)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(todo)); i = next.Add(1) - 1 {
				out[todo[i]] = PrepareHTML(tr.Pods[todo[i]])
			}
		})
	}
	wg.Wait()
	return out
}

// podEncoder encodes one pod at a time into an HTMLPod; its maps are
// reused from pod to pod.
type podEncoder struct {
	p       *HTMLPod // scratch, while a pod is encoded
	scratch HTMLPod
	ids     map[string]int32
	actor   map[actorKey]int32
	webhook map[string]int32
	inStep  bool
	inSteps []bool // local id -> in stepOrder

	// By the local id of a path: the value the pod's last change of it
	// set, valid where lastSet is true.
	last    []string
	lastSet []bool
}

func (e *podEncoder) encode(lc *diff.Lifecycle) *HTMLPod {
	s := &e.scratch
	*s = HTMLPod{b: s.b[:0], holes: s.holes[:0], times: s.times[:0], strs: s.strs[:0], uses: s.uses[:0],
		forced: s.forced[:0], stepOrder: s.stepOrder[:0], actors: s.actors[:0], webhooks: s.webhooks[:0]}
	e.p = s
	clear(e.ids)
	clear(e.actor)
	clear(e.webhook)
	e.inSteps = e.inSteps[:0]
	e.last = e.last[:0]
	e.lastSet = e.lastSet[:0]
	e.pod(lc)
	e.p = nil
	// The pod keeps slices of its size; the scratch ones are reused.
	p := &HTMLPod{b: slices.Clone(s.b), holes: slices.Clone(s.holes), times: slices.Clone(s.times), err: s.err,
		strs: slices.Clone(s.strs), uses: slices.Clone(s.uses), forced: slices.Clone(s.forced),
		stepOrder: slices.Clone(s.stepOrder), actors: slices.Clone(s.actors), webhooks: slices.Clone(s.webhooks)}
	clear(s.strs) // let go of the pod's strings
	clear(s.webhooks)
	return p
}

func (e *podEncoder) raw(s string) { e.p.b = append(e.p.b, s...) }

func (e *podEncoder) sep(i int) {
	if i > 0 {
		e.p.b = append(e.p.b, ',')
	}
}

func (e *podEncoder) int(n int64) { e.p.b = strconv.AppendInt(e.p.b, n, 10) }

func (e *podEncoder) hole(kind holeKind, id int32) {
	e.p.holes = append(e.p.holes, hole{at: int32(len(e.p.b)), kind: kind, id: id})
}

// timeHole writes ms, Unix ms, as ms from the base.
func (e *podEncoder) timeHole(ms int64) {
	e.hole(holeTime, int32(len(e.p.times)))
	e.p.times = append(e.p.times, ms)
}

// intern returns the local id of s, counting a use.
func (e *podEncoder) intern(s string) int32 {
	p := e.p
	id, ok := e.ids[s]
	if !ok {
		id = int32(len(p.strs))
		e.ids[s] = id
		p.strs = append(p.strs, s)
		p.uses = append(p.uses, 0)
		p.forced = append(p.forced, false)
		e.inSteps = append(e.inSteps, false)
	}
	if e.inStep && !e.inSteps[id] {
		e.inSteps[id] = true
		p.stepOrder = append(p.stepOrder, id)
	}
	p.uses[id]++
	return id
}

// str writes a reference to s (see pageWriter.str).
func (e *podEncoder) str(s string) {
	id := e.intern(s)
	if e.inStep {
		e.hole(holeStepString, id)
	} else {
		e.hole(holeString, id)
	}
}

// sharedID interns s, which goes in the top-level table whoever uses it.
func (e *podEncoder) sharedID(s string) int32 {
	id := e.intern(s)
	e.p.forced[id] = true
	return id
}

// json writes v as ordinary JSON.
func (e *podEncoder) json(v any) {
	if e.p.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.p.err = err
		return
	}
	e.p.b = append(e.p.b, b...)
}

// stringList writes a list of strings as JSON, [] for a nil one.
func (e *podEncoder) stringList(ss []string) {
	if ss == nil {
		e.raw("[]")
		return
	}
	e.json(ss)
}

// time writes t in ms from the base, or null.
func (e *podEncoder) time(t time.Time) {
	if t.IsZero() {
		e.raw("null")
		return
	}
	e.timeHole(t.UnixMilli())
}

// plainNumber returns rv as a number if it is a plain one that a page's
// script holds exactly.
func plainNumber(rv string) (int64, bool) {
	if len(rv) == 0 || len(rv) > 15 || rv[0] == '0' {
		return 0, false
	}
	var n int64
	for i := 0; i < len(rv); i++ {
		if rv[i] < '0' || rv[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(rv[i]-'0')
	}
	return n, true
}

// actorIndex writes the index of a step's actor in the actor table. The
// table holds its strings; a reference to an actor counts one use of them
// for each actor, not for each reference.
func (e *podEncoder) actorIndex(a diff.Actor) {
	k := actorKey{e.sharedID(a.Manager), e.sharedID(a.Who)}
	i, ok := e.actor[k]
	if !ok {
		i = int32(len(e.p.actors))
		e.actor[k] = i
		e.p.actors = append(e.p.actors, k)
	} else {
		e.p.uses[k.manager]--
		e.p.uses[k.who]--
	}
	e.hole(holeActor, i)
}

// webhookIndex writes the index of w in the webhook table.
func (e *podEncoder) webhookIndex(w diff.Webhook) {
	b, err := json.Marshal(w)
	if err != nil && e.p.err == nil {
		e.p.err = err
	}
	i, ok := e.webhook[string(b)]
	if !ok {
		i = int32(len(e.p.webhooks))
		e.webhook[string(b)] = i
		e.p.webhooks = append(e.p.webhooks, string(b))
	}
	e.hole(holeWebhook, i)
}

func (e *podEncoder) webhookList(ws []diff.Webhook) {
	e.raw("[")
	for i, w := range ws {
		e.sep(i)
		e.webhookIndex(w)
	}
	e.raw("]")
}

// opCode is the page's number for op: 0 add (and anything unknown), 1
// remove, 2 change.
func opCode(op diff.Op) int64 {
	switch op {
	case diff.OpRemove:
		return 1
	case diff.OpChange:
		return 2
	}
	return 0
}

type actorKey struct{ manager, who int32 }

// dataBase is the time the page's times count from: the start of the
// recording window, or of the earliest pod.
func dataBase(tr *Trace) time.Time {
	base, _ := tr.Window()
	for _, p := range tr.Pods {
		if len(p.Steps) > 0 && (base.IsZero() || p.Steps[0].Time.Before(base)) {
			base = p.Steps[0].Time
		}
	}
	return base.Truncate(time.Second)
}

// pageWriter writes the page's data from the pods' prepared parts: it
// numbers the strings of the whole trace (ids in the order of first use,
// pod after pod, as one pass over the pods would meet them), the actors
// and the webhooks, then writes the pods, filling their holes.
type pageWriter struct {
	b    []byte
	sink *dataSink // where b goes a pod at a time; nil: b holds all
	err  error
	base int64 // Unix ms
	pods []*HTMLPod

	ids    map[string]int32 // string -> id, in order of first use
	strs   []string         // by id
	uses   []int32          // by id
	podOf  []int32          // id -> the pod that used it first
	shared []bool           // id -> used by more than one pod, or by the tables
	rank   []int32          // id -> index in the top-level table
	ranked []string

	global    [][]int32 // per pod: local id -> id
	actorOf   [][]int32 // per pod: local actor -> index in actors
	webhookOf [][]int32 // per pod: local webhook -> index in webhooks

	actor    map[actorKey]int32 // by ids
	actors   []actorKey
	webhook  map[string]int32 // JSON -> index
	webhooks []string

	// The pod being written: its own table (local id -> index, or -1)
	// and which of its strings its steps have used so far.
	localRank []int32
	locals    []string
	seenStep  []bool
}

func newPageWriter(tr *Trace, pods []*HTMLPod, sink *dataSink) *pageWriter {
	n := 64
	for _, p := range pods {
		n += len(p.strs) / 2
	}
	w := &pageWriter{sink: sink, pods: pods, ids: make(map[string]int32, n), actor: map[actorKey]int32{}, webhook: map[string]int32{},
		global: make([][]int32, len(pods)), actorOf: make([][]int32, len(pods)), webhookOf: make([][]int32, len(pods))}
	w.base = dataBase(tr).UnixMilli()
	for i, p := range pods {
		if p.err != nil && w.err == nil {
			w.err = p.err
		}
		w.merge(int32(i), p)
	}
	w.rankStrings()
	return w
}

// merge numbers the strings, actors and webhooks of pod i that no pod
// before it used.
func (w *pageWriter) merge(i int32, p *HTMLPod) {
	g := make([]int32, len(p.strs))
	for l, s := range p.strs {
		id, ok := w.ids[s]
		if !ok {
			id = int32(len(w.strs))
			w.ids[s] = id
			w.strs = append(w.strs, s)
			w.uses = append(w.uses, 0)
			w.podOf = append(w.podOf, i)
			w.shared = append(w.shared, false)
		} else if w.podOf[id] != i {
			w.shared[id] = true
		}
		if p.forced[l] {
			w.shared[id] = true
		}
		w.uses[id] += p.uses[l]
		g[l] = id
	}
	w.global[i] = g
	actors := make([]int32, len(p.actors))
	for l, a := range p.actors {
		k := actorKey{g[a.manager], g[a.who]}
		x, ok := w.actor[k]
		if !ok {
			x = int32(len(w.actors))
			w.actor[k] = x
			w.actors = append(w.actors, k)
		} else {
			w.uses[k.manager]--
			w.uses[k.who]--
		}
		actors[l] = x
	}
	w.actorOf[i] = actors
	webhooks := make([]int32, len(p.webhooks))
	for l, j := range p.webhooks {
		x, ok := w.webhook[j]
		if !ok {
			x = int32(len(w.webhooks))
			w.webhook[j] = x
			w.webhooks = append(w.webhooks, j)
		}
		webhooks[l] = x
	}
	w.webhookOf[i] = webhooks
}

// rankStrings numbers the shared strings by use, most used first (then in
// order of first use).
func (w *pageWriter) rankStrings() {
	var order []int32
	for id := range w.strs {
		if w.shared[id] {
			order = append(order, int32(id))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(w.uses[b] - w.uses[a]) })
	w.rank = make([]int32, len(w.strs))
	w.ranked = make([]string, len(order))
	for r, id := range order {
		w.rank[id] = int32(r)
		w.ranked[r] = w.strs[id]
	}
}

func (w *pageWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *pageWriter) sep(i int) {
	if i > 0 {
		w.b = append(w.b, ',')
	}
}

func (w *pageWriter) int(n int64) { w.b = strconv.AppendInt(w.b, n, 10) }

// json writes v as ordinary JSON.
func (w *pageWriter) json(v any) {
	if w.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	w.b = append(w.b, b...)
}

func (w *pageWriter) write(tr *Trace) {
	w.raw(`{"format":"podtrace-report/3","file":`)
	w.json(tr.File)
	w.raw(`,"generated":`)
	w.json(tr.Generated)
	w.raw(`,"sessions":`)
	w.json(tr.Sessions)
	w.raw(`,"base":`)
	w.int(w.base)
	w.raw(`,"strings":`)
	w.json(w.ranked)
	w.raw(`,"actors":[`)
	for i, a := range w.actors {
		w.sep(i)
		w.raw("[")
		w.int(int64(w.rank[a.manager]))
		w.raw(",")
		w.int(int64(w.rank[a.who]))
		w.raw("]")
	}
	w.raw(`],"webhooks":[`)
	for i, j := range w.webhooks {
		w.sep(i)
		w.raw(j)
	}
	w.raw(`],"pods":[`)
	// The sink deflates each chunk on a goroutine of its own while the
	// next is written: it gets the same chunks as if written here.
	var chunks, free chan []byte
	var done chan struct{}
	if w.sink != nil {
		const spare = 2
		chunks, free, done = make(chan []byte, spare), make(chan []byte, spare+1), make(chan struct{})
		for range spare {
			free <- make([]byte, 0, 2*sinkChunk)
		}
		go func() {
			defer close(done)
			for c := range chunks {
				w.sink.write(c)
				free <- c[:0]
			}
		}()
	}
	for i := range w.pods {
		w.sep(i)
		w.pod(int32(i))
		if chunks != nil && len(w.b) >= sinkChunk {
			chunks <- w.b
			w.b = <-free
		}
	}
	if chunks != nil {
		close(chunks)
		<-done
	}
	w.raw("]}")
}

// sinkChunk is about how much the writer writes before handing it to its
// sink.
const sinkChunk = 64 << 10

// pod writes pod i: its strings used by no other pod form its own table,
// first those its steps use in the order they first do, then the others
// in order of first use.
func (w *pageWriter) pod(i int32) {
	p, g := w.pods[i], w.global[i]
	n := len(p.strs)
	w.localRank = slices.Grow(w.localRank[:0], n)[:n]
	w.seenStep = slices.Grow(w.seenStep[:0], n)[:n]
	clear(w.seenStep)
	for l := range w.localRank {
		w.localRank[l] = -1
	}
	w.locals = w.locals[:0]
	for _, l := range p.stepOrder {
		if !w.shared[g[l]] && w.localRank[l] < 0 {
			w.localRank[l] = int32(len(w.locals))
			w.locals = append(w.locals, p.strs[l])
		}
	}
	for l, s := range p.strs {
		if !w.shared[g[l]] && w.localRank[l] < 0 {
			w.localRank[l] = int32(len(w.locals))
			w.locals = append(w.locals, s)
		}
	}
	at := 0
	for _, h := range p.holes {
		w.b = append(w.b, p.b[at:h.at]...)
		at = int(h.at)
		switch h.kind {
		case holeString, holeStepString:
			w.str(g[h.id], h.id, h.kind == holeStepString)
		case holeTime:
			w.int(p.times[h.id] - w.base)
		case holeActor:
			w.int(int64(w.actorOf[i][h.id]))
		case holeWebhook:
			w.int(int64(w.webhookOf[i][h.id]))
		case holeStrings:
			if len(w.locals) == 0 {
				w.raw("[]")
			} else {
				w.json(w.locals)
			}
		default: // holePath+op
			w.int(int64(w.rank[g[h.id]])*3 + int64(h.kind-holePath))
		}
	}
	w.b = append(w.b, p.b[at:]...)
}

// str writes a reference to a string (id; local id l of the pod): n >= 0
// for the top-level strings[n]; n <= -2 for the pod's strings[-n-2]; in
// the steps, -1 for the next string of the pod that its steps had not used
// yet.
func (w *pageWriter) str(id, l int32, inStep bool) {
	switch {
	case w.shared[id]:
		w.int(int64(w.rank[id]))
	case inStep && !w.seenStep[l]:
		w.seenStep[l] = true
		w.raw("-1")
	default:
		w.int(-2 - int64(w.localRank[l]))
	}
}

func (e *podEncoder) pod(p *diff.Lifecycle) {
	e.raw(`{"strings":`)
	e.hole(holeStrings, 0)
	e.raw(`,"namespace":`)
	e.str(p.Namespace)
	e.raw(`,"name":`)
	e.str(p.Name)
	e.raw(`,"uid":`)
	e.json(p.UID)
	e.raw(`,"node":`)
	e.str(p.Node)
	e.raw(`,"outcome":`)
	e.str(p.Outcome)
	e.raw(`,"end":`)
	e.time(p.RecordingEnd)
	if p.Terminating != 0 {
		e.raw(`,"terminating":`)
		e.json(p.Terminating.String())
	}

	e.raw(`,"phases":[`)
	for i, ph := range p.Phases {
		e.sep(i)
		e.raw("[")
		e.str(ph.Name)
		e.raw(",")
		e.time(ph.Time)
		e.raw(",")
		e.int(int64(ph.Seq))
		e.raw(",")
		e.str(ph.Detail)
		e.raw(",")
		e.str(ph.Actor)
		e.raw("]")
	}

	e.raw(`],"steps":[`)
	e.inStep = true
	e.steps(p.Steps)
	e.inStep = false
	e.raw(`],"creationDetails":[`)
	if len(p.Steps) > 0 {
		n := 0
		for j, c := range p.Steps[0].Changes {
			if !isStoryField(c) {
				e.sep(n)
				e.int(int64(j))
				n++
			}
		}
	}

	e.raw(`],"events":[`)
	var seq uint64
	var ms int64
	for i, ev := range p.Events {
		e.sep(i)
		e.raw("[")
		e.int(int64(ev.Seq) - int64(seq))
		seq = ev.Seq
		e.raw(",")
		t := ev.Time.UnixMilli()
		if i == 0 {
			e.timeHole(t) // from the base
		} else {
			e.int(t - ms)
		}
		ms = t
		e.raw(",")
		e.str(ev.Type)
		e.raw(",")
		e.str(ev.Reason)
		e.raw(",")
		e.str(ev.Message)
		e.raw(",")
		e.str(ev.Source)
		e.raw(",")
		e.int(int64(ev.Count))
		e.raw("]")
	}

	e.raw(`],"dependents":[`)
	for i, d := range p.Dependents {
		e.sep(i)
		e.raw("[")
		e.str(d.Kind)
		e.raw(",")
		e.str(d.Name)
		e.raw(",")
		e.json(d.UID)
		e.raw(",")
		e.time(d.Since)
		e.raw(",")
		e.time(d.Deleted)
		if d.Blocking {
			e.raw(",1]")
		} else {
			e.raw(",0]")
		}
	}

	e.raw(`],"findings":[`)
	for i, f := range p.Findings {
		e.sep(i)
		e.raw(`{"id":`)
		e.json(f.ID)
		e.raw(`,"severity":`)
		e.json(f.Severity.String())
		e.raw(`,"headline":`)
		e.json(f.Headline)
		e.raw(`,"evidence":[`)
		for j, ev := range f.Evidence {
			e.sep(j)
			e.raw("[")
			e.int(int64(ev.Seq))
			e.raw(",")
			e.time(ev.Time)
			e.raw(",")
			e.json(ev.Text)
			e.raw("]")
		}
		e.raw(`],"suspects":`)
		e.webhookList(f.Suspects)
		e.raw(`,"next":`)
		e.stringList(f.Next)
		e.raw("}")
	}
	e.raw("]")
	if a := p.Admission; a != nil {
		e.raw(`,"admission":{"source":`)
		e.json(a.Source)
		e.raw(`,"changes":[`)
		for i, c := range a.Changes {
			e.sep(i)
			e.raw("[")
			e.str(c.Path)
			e.raw(",")
			e.int(opCode(c.Op))
			e.raw(",")
			e.str(c.Old)
			e.raw(",")
			e.str(c.New)
			e.raw(",")
			e.str(c.By)
			e.raw(",")
			e.str(c.Certainty)
			e.raw("]")
		}
		e.raw(`],"defaultsHidden":`)
		e.int(int64(a.Defaults))
		e.raw(`,"webhooks":`)
		e.webhookList(a.Webhooks)
		e.raw(`,"notes":`)
		e.stringList(a.Notes)
		e.raw("}")
	}
	if a := p.Audit; a != nil {
		e.audit(a)
	}
	e.raw("}")
}

// audit writes what the audit log says about the pod: its requests, the
// denied ones grouped, and the mutating webhooks' patches.
func (e *podEncoder) audit(a *diff.Audit) {
	e.raw(`,"audit":{"requests":[`)
	for i, r := range a.Requests {
		e.sep(i)
		e.raw("[")
		e.time(r.Time)
		e.raw(",")
		e.str(r.Verb)
		e.raw(",")
		e.str(r.Subresource)
		e.raw(",")
		e.str(r.User)
		e.raw(",")
		e.str(r.UserAgent)
		e.raw(",")
		e.int(int64(r.Code))
		e.raw(",")
		e.json(r.ResourceVersion)
		e.raw(",")
		e.int(int64(r.Seq))
		e.raw("]")
	}
	e.raw(`],"denied":[`)
	for i, d := range a.Denied {
		e.sep(i)
		e.raw("[")
		e.str(d.User)
		e.raw(",")
		e.str(d.UserAgent)
		e.raw(",")
		e.str(d.Verb)
		e.raw(",")
		e.str(d.Subresource)
		e.raw(",")
		e.int(int64(d.Code))
		e.raw(",")
		e.str(d.Message)
		e.raw(",")
		e.int(int64(d.Count))
		e.raw(",")
		e.time(d.First)
		e.raw(",")
		e.time(d.Last)
		e.raw(",")
		e.str(d.Webhook)
		e.raw("]")
	}
	e.raw(`],"patches":[`)
	for i, p := range a.Patches {
		e.sep(i)
		e.raw("[")
		e.time(p.Time)
		e.raw(",")
		e.str(p.Verb)
		e.raw(",")
		e.str(p.Webhook)
		e.raw(",")
		e.str(p.Configuration)
		e.raw(",")
		e.int(int64(p.Round))
		e.raw(",")
		e.int(int64(p.Index))
		e.raw(",[")
		for j, op := range p.Ops {
			e.sep(j)
			e.raw("[")
			e.str(op.Op)
			e.raw(",")
			e.str(op.Path)
			e.raw(",")
			e.str(op.From)
			e.raw(",")
			e.str(string(op.Value))
			e.raw("]")
		}
		e.raw("]]")
	}
	e.raw("]}")
}

func (e *podEncoder) steps(steps []diff.Step) {
	var seq uint64
	var ms int64
	var rv int64
	rvNumber := false
	for i, s := range steps {
		e.sep(i)
		e.raw("[")
		e.int(int64(s.Seq) - int64(seq))
		seq = s.Seq
		e.raw(",")
		t := s.Time.UnixMilli()
		if i == 0 {
			e.timeHole(t) // from the base
		} else {
			e.int(t - ms)
		}
		ms = t
		e.raw(",")
		e.str(string(s.Type))
		e.raw(",")
		n, isNumber := plainNumber(s.ResourceVersion)
		switch {
		case isNumber && i == 0:
			e.int(n)
		case isNumber && rvNumber:
			e.int(n - rv)
		default:
			e.json(s.ResourceVersion)
		}
		rv, rvNumber = n, isNumber
		e.raw(",[")
		for j, a := range s.Actors {
			e.sep(j)
			e.actorIndex(a)
		}
		e.raw("],[")
		manager := ""
		if len(s.Actors) == 1 {
			manager = s.Actors[0].Manager
		}
		for j, c := range s.Changes {
			e.sep(j)
			e.change(c, manager)
		}
		e.raw("]")
		if len(s.Phases) > 0 {
			e.raw(",[")
			for j, ph := range s.Phases {
				e.sep(j)
				e.str(ph)
			}
			e.raw("]")
		}
		e.raw("]")
	}
}

// change writes [path*3 + op, value, manager, old], leaving out the old
// value the reader knows and the manager it can tell.
func (e *podEncoder) change(c diff.Change, manager string) {
	e.raw("[")
	path := e.sharedID(c.Path)
	e.hole(holePath+holeKind(opCode(c.Op)), path)
	e.raw(",")
	value := c.New
	if c.Op == diff.OpRemove {
		value = c.Old
	}
	e.str(value)
	for len(e.last) <= int(path) {
		e.last = append(e.last, "")
		e.lastSet = append(e.lastSet, false)
	}
	last := ""
	if e.lastSet[path] {
		last = e.last[path]
	}
	knownOld := c.Op != diff.OpChange || last == c.Old
	if !knownOld || c.Manager != manager {
		e.raw(",")
		e.str(c.Manager)
	}
	if !knownOld {
		e.raw(",")
		e.str(c.Old)
	}
	e.raw("]")
	e.lastSet[path] = true
	if c.Op == diff.OpRemove {
		e.last[path] = ""
	} else {
		e.last[path] = c.New
	}
}
