package report

import (
	"encoding/json"
	"slices"
	"strconv"
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
type htmlData struct{ tr *Trace }

// MarshalJSON implements json.Marshaler.
func (d htmlData) MarshalJSON() ([]byte, error) {
	e := newDataEncoder(d.tr, nil)
	e.encode(d.tr)
	return e.b, e.err
}

// encode writes the JSON of d to sink, in pieces.
func (d htmlData) encode(sink *dataSink) error {
	e := newDataEncoder(d.tr, sink)
	e.encode(d.tr)
	if e.err != nil {
		return e.err
	}
	sink.write(e.b)
	return sink.err
}

func newDataEncoder(tr *Trace, sink *dataSink) *dataEncoder {
	// Room for the strings of a typical trace, whose every step changes
	// a few fields to fresh values.
	steps := 0
	for _, p := range tr.Pods {
		steps += len(p.Steps)
	}
	return &dataEncoder{ids: make(map[string]int32, 64+steps*4), actor: map[actorKey]int{}, webhook: map[string]int{},
		stepOrder: make([][]int32, len(tr.Pods)), sink: sink}
}

func (e *dataEncoder) encode(tr *Trace) {
	d := htmlData{tr}
	e.base = dataBase(d.tr).UnixMilli()
	// The first pass interns the strings and records which string each
	// reference was; the second writes, numbering the strings by use, most
	// used first, so the most used get the shortest numbers.
	e.counting = true
	e.pods(d.tr)
	e.counting = false
	e.rankStrings(len(d.tr.Pods))

	e.raw(`{"format":"podtrace-report/3","file":`)
	e.json(d.tr.File)
	e.raw(`,"generated":`)
	e.json(d.tr.Generated)
	e.raw(`,"sessions":`)
	e.json(d.tr.Sessions)
	e.raw(`,"base":`)
	e.int(e.base)
	e.raw(`,"strings":`)
	e.json(e.ranked)
	e.raw(`,"actors":[`)
	for i, a := range e.actors {
		e.sep(i)
		e.raw("[")
		e.int(int64(e.rank[a.manager]))
		e.raw(",")
		e.int(int64(e.rank[a.who]))
		e.raw("]")
	}
	e.raw(`],"webhooks":[`)
	for i, w := range e.webhooks {
		e.sep(i)
		e.raw(w)
	}
	e.raw("]")
	e.pods(d.tr)
	e.raw("}")
}

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

type dataEncoder struct {
	counting bool
	b        []byte
	sink     *dataSink // where b goes a pod at a time; nil: b holds all
	err      error
	base     int64 // Unix ms

	ids    map[string]int32 // string -> id, in order of first use
	strs   []string         // by id
	uses   []int32          // by id
	tokens tokenList        // the id of every reference, in order
	next   int              // the next token to write
	rank   []int32          // id -> index in the top-level table, or in its pod's
	ranked []string
	podOf  []int32 // id -> the pod that used it first
	shared []bool  // id -> used by more than one pod, or by the tables
	cur    int32   // the pod being encoded
	inStep bool    // encoding the pod's steps
	// Per pod: the ids its steps use, in order of first use there; its
	// own strings (the table written with it); and which of them its
	// steps have used so far, by the number of the pod plus one.
	stepOrder [][]int32
	seenPod   []int32
	seenStep  []int32
	locals    [][]string

	actor  map[actorKey]int
	actors []actorKey

	webhook  map[string]int // JSON -> index
	webhooks []string

	// By the id of a path: the value the pod's last change of it set,
	// valid where lastGen holds gen, which each pod's steps advance.
	last    []string
	lastGen []int32
	gen     int32
}

// tokenList is a list of ids kept in chunks, so that it grows without
// copying.
type tokenList struct {
	chunks [][]int32
	n      int
}

const tokenChunk = 1 << 16

func (l *tokenList) append(id int32) {
	if l.n%tokenChunk == 0 && l.n/tokenChunk == len(l.chunks) {
		l.chunks = append(l.chunks, make([]int32, 0, tokenChunk))
	}
	c := &l.chunks[l.n/tokenChunk]
	*c = append(*c, id)
	l.n++
}

// drop removes the last n ids.
func (l *tokenList) drop(n int) {
	for range n {
		l.n--
		c := &l.chunks[l.n/tokenChunk]
		*c = (*c)[:len(*c)-1]
	}
}

func (l *tokenList) at(i int) int32 { return l.chunks[i/tokenChunk][i%tokenChunk] }

type actorKey struct{ manager, who int32 }

// rankStrings numbers the strings for the second pass: the shared ones by
// use, most used first; each pod's own ones first in the order its steps
// use them, then the others in order of first use.
func (e *dataEncoder) rankStrings(pods int) {
	var order []int32
	e.rank = make([]int32, len(e.strs))
	e.locals = make([][]string, pods)
	placed := make([]bool, len(e.strs))
	for p, ids := range e.stepOrder {
		for _, id := range ids {
			if !e.shared[id] && !placed[id] {
				placed[id] = true
				e.rank[id] = int32(len(e.locals[p]))
				e.locals[p] = append(e.locals[p], e.strs[id])
			}
		}
	}
	for id := range e.strs {
		switch {
		case e.shared[id]:
			order = append(order, int32(id))
		case !placed[id]:
			p := e.podOf[id]
			e.rank[id] = int32(len(e.locals[p]))
			e.locals[p] = append(e.locals[p], e.strs[id])
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return int(e.uses[b] - e.uses[a]) })
	e.ranked = make([]string, len(order))
	for r, id := range order {
		e.rank[id] = int32(r)
		e.ranked[r] = e.strs[id]
	}
	e.seenStep = make([]int32, len(e.strs))
	e.next = 0
}

func (e *dataEncoder) raw(s string) {
	if !e.counting {
		e.b = append(e.b, s...)
	}
}

func (e *dataEncoder) sep(i int) {
	if i > 0 {
		e.raw(",")
	}
}

func (e *dataEncoder) int(n int64) {
	if !e.counting {
		e.b = strconv.AppendInt(e.b, n, 10)
	}
}

// intern returns the id of s, counting a use, in the first pass; in the
// second it returns the id the same reference had.
func (e *dataEncoder) intern(s string) int32 {
	if !e.counting {
		id := e.tokens.at(e.next)
		e.next++
		return id
	}
	id, ok := e.ids[s]
	if !ok {
		id = int32(len(e.strs))
		e.ids[s] = id
		e.strs = append(e.strs, s)
		e.uses = append(e.uses, 0)
		e.podOf = append(e.podOf, e.cur)
		e.shared = append(e.shared, false)
		e.seenPod = append(e.seenPod, 0)
	} else if e.podOf[id] != e.cur {
		e.shared[id] = true
	}
	if e.inStep && e.seenPod[id] != e.cur+1 {
		e.seenPod[id] = e.cur + 1
		e.stepOrder[e.cur] = append(e.stepOrder[e.cur], id)
	}
	e.uses[id]++
	e.tokens.append(id)
	return id
}

// str writes a reference to s: n >= 0 for the top-level strings[n];
// n <= -2 for the pod's strings[-n-2]; in the steps, -1 for the next
// string of the pod that its steps had not used yet.
func (e *dataEncoder) str(s string) {
	id := e.intern(s)
	if e.counting {
		return
	}
	switch {
	case e.shared[id]:
		e.int(int64(e.rank[id]))
	case e.inStep && e.seenStep[id] != e.cur+1:
		e.seenStep[id] = e.cur + 1
		e.raw("-1")
	default:
		e.int(-2 - int64(e.rank[id]))
	}
}

// sharedIndex returns the index of s in the top-level table, where it is
// put whoever uses it.
func (e *dataEncoder) sharedIndex(s string) int32 {
	_, r := e.sharedID(s)
	return r
}

// sharedID is sharedIndex that also returns the id of s.
func (e *dataEncoder) sharedID(s string) (id, index int32) {
	id = e.intern(s)
	if e.counting {
		e.shared[id] = true
		return id, id
	}
	return id, e.rank[id]
}

// json writes v as ordinary JSON.
func (e *dataEncoder) json(v any) {
	if e.counting || e.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.err = err
		return
	}
	e.b = append(e.b, b...)
}

// time writes t in ms from the base, or null.
// stringList writes a list of strings as JSON, [] for a nil one.
func (e *dataEncoder) stringList(ss []string) {
	if ss == nil {
		e.raw("[]")
		return
	}
	e.json(ss)
}

func (e *dataEncoder) time(t time.Time) {
	if t.IsZero() {
		e.raw("null")
		return
	}
	e.int(t.UnixMilli() - e.base)
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

// actorIndex returns the index of a step's actor in the actor table. The
// table is built in the first pass; its strings are interned then, once.
func (e *dataEncoder) actorIndex(a diff.Actor) int {
	if !e.counting {
		id := e.tokens.at(e.next)
		e.next++
		return int(id)
	}
	k := actorKey{e.sharedIndex(a.Manager), e.sharedIndex(a.Who)}
	e.tokens.drop(2) // the table holds the strings, not this reference
	i, ok := e.actor[k]
	if !ok {
		i = len(e.actors)
		e.actor[k] = i
		e.actors = append(e.actors, k)
	} else {
		e.uses[k.manager]--
		e.uses[k.who]--
	}
	e.tokens.append(int32(i))
	return i
}

// webhookIndex returns the index of w in the webhook table, adding it in
// the first pass.
func (e *dataEncoder) webhookIndex(w diff.Webhook) int {
	if !e.counting {
		id := e.tokens.at(e.next)
		e.next++
		return int(id)
	}
	b, err := json.Marshal(w)
	if err != nil {
		e.err = err
	}
	i, ok := e.webhook[string(b)]
	if !ok {
		i = len(e.webhooks)
		e.webhook[string(b)] = i
		e.webhooks = append(e.webhooks, string(b))
	}
	e.tokens.append(int32(i))
	return i
}

func (e *dataEncoder) webhookList(ws []diff.Webhook) {
	e.raw("[")
	for i, w := range ws {
		e.sep(i)
		e.int(int64(e.webhookIndex(w)))
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

func (e *dataEncoder) pods(tr *Trace) {
	e.raw(`,"pods":[`)
	for i, p := range tr.Pods {
		e.sep(i)
		e.cur = int32(i)
		e.pod(p)
		if e.sink != nil && len(e.b) >= sinkChunk {
			e.sink.write(e.b)
			e.b = e.b[:0]
		}
	}
	e.raw("]")
}

// sinkChunk is about how much the encoder writes before handing it to its
// sink.
const sinkChunk = 64 << 10

func (e *dataEncoder) pod(p *diff.Lifecycle) {
	e.raw(`{"strings":`)
	if !e.counting {
		e.stringList(e.locals[e.cur])
	}
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
	ms := e.base
	for i, ev := range p.Events {
		e.sep(i)
		e.raw("[")
		e.int(int64(ev.Seq) - int64(seq))
		seq = ev.Seq
		e.raw(",")
		t := ev.Time.UnixMilli()
		e.int(t - ms)
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
func (e *dataEncoder) audit(a *diff.Audit) {
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

func (e *dataEncoder) steps(steps []diff.Step) {
	e.gen++
	var seq uint64
	ms := e.base
	var rv int64
	rvNumber := false
	for i, s := range steps {
		e.sep(i)
		e.raw("[")
		e.int(int64(s.Seq) - int64(seq))
		seq = s.Seq
		e.raw(",")
		t := s.Time.UnixMilli()
		e.int(t - ms)
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
			e.int(int64(e.actorIndex(a)))
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
func (e *dataEncoder) change(c diff.Change, manager string) {
	e.raw("[")
	path, index := e.sharedID(c.Path)
	e.int(int64(index)*3 + opCode(c.Op))
	e.raw(",")
	value := c.New
	if c.Op == diff.OpRemove {
		value = c.Old
	}
	e.str(value)
	if int(path) >= len(e.last) {
		n := max(int(path)+1, 2*len(e.last))
		e.last = append(e.last, make([]string, n-len(e.last))...)
		e.lastGen = append(e.lastGen, make([]int32, n-len(e.lastGen))...)
	}
	last := ""
	if e.lastGen[path] == e.gen {
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
	e.lastGen[path] = e.gen
	if c.Op == diff.OpRemove {
		e.last[path] = ""
	} else {
		e.last[path] = c.New
	}
}
