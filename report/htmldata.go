package report

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/podtrace/podtrace/admission"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
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
//	  "format": "podtrace-report/4",
//	  "file": "...", "generated": "RFC 3339", "sessions": [store.Session...],
//	  "base": 1773478800000,     // Unix ms; every time below is ms from it
//	  "strings": ["...", ...],   // the strings of more than one pod, once, most used first
//	  "actors": [[manager s, who s], ...],
//	  "webhooks": [admission.Webhook...],
//	  "list": [[namespace, name, uid, outcome, [[finding id, severity, headline], ...],
//	            [phase name, ...], revisions, events, start t, end t], ...],  // plain strings
//	  "pods": [
//	  {
//	    "strings": ["...", ...], // the strings of this pod alone (see below)
//	    "namespace": s, "name": s, "uid": "...", "node": s, "outcome": s,
//	    "end": t, "terminating": "6m30s",
//	    "gaps": [[start t, end t, text s], ...],  // only if the pod's life has any
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
//	      "denied": [[user s, userAgent s, verb s, subresource s, code, message s, count, first t, last t, webhook s, policy s, binding s], ...],
//	      "patches": [[time t, verb s, webhook s, configuration s, round, index, [[op s, path s, from s, value s], ...]], ...]
//	    }
//	  },
//	  {...}
//	]}
//
// The list has what the pod list shows and filters on, one entry a pod, in
// the order of the pods; each pod's data is on a line of its own (JSON
// strings hold no newline), the first one after the only newline of what
// comes before it. So the page parses the list and the tables at load, and
// a pod's data only when the pod is opened: at 20,000 pods, parsing the
// whole data (43 MB of JSON) took the page 1.3 s before its first row.
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
	hashes    []uint32   // local id -> strHash(the string)
	uses      []int32    // local id -> references
	forced    []bool     // local id -> must be in the top-level table
	stepOrder []int32    // the ids the steps use, in order of first use there
	actors    []actorKey // by local index: the local ids of manager and who
	webhooks  []string   // by local index: the webhook's JSON

	// list is the pod's entry in the page's list, its times (start, end)
	// left out: what the pod list shows and filters on, without the pod's
	// data (see the format).
	list               []byte
	listStart, listEnd int64 // Unix ms
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

// hole is where pageWriter writes what only the whole trace decides. It
// takes 8 bytes: a report holds the holes of every pod, two or three for
// each change of a step.
type hole struct {
	at int32  // offset in b
	x  uint32 // id<<holeKindBits | kind
}

const holeKindBits = 4

func (h hole) kind() holeKind { return holeKind(h.x & (1<<holeKindBits - 1)) }
func (h hole) id() int32      { return int32(h.x >> holeKindBits) }

// PrepareHTML encodes a pod's part of the HTML page's data. A caller that
// renders many pods hands HTML the pods prepared (see Trace.Prepared), on
// as many goroutines as it likes; HTML prepares the others itself.
func PrepareHTML(lc *explain.Lifecycle) *HTMLPod {
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
func TrimPrepared(lc *explain.Lifecycle) {
	if len(lc.Steps) > 0 {
		lc.Steps = []diff.Step{{Seq: lc.Steps[0].Seq, Time: lc.Steps[0].Time}}
	}
	lc.Events, lc.Phases, lc.Dependents, lc.Admission, lc.Audit = nil, nil, nil, nil, nil
}

var podEncoders = sync.Pool{New: func() any {
	return &podEncoder{actor: map[actorKey]int32{}, webhook: map[string]int32{}}
}}

// strSeed hashes the strings of the page's data, the same in every
// podEncoder and pageWriter of the process: the hashes of a prepared pod's
// strings serve the page's table too.
var strSeed = maphash.MakeSeed()

// strHash is the hash of s in a strTable.
func strHash(s string) uint32 { return uint32(maphash.String(strSeed, s)) }

// strTable indexes strings held elsewhere, by id, with their hashes
// (strHash): open addressing, linear probing, at most half full. A page's
// strings are looked up millions of times, and a map[string]int32 hashed
// each string again for the page's table: here the hash of a pod's string,
// computed once by the worker that prepared the pod, serves that table
// too, and a string is read only where its hash matches.
type strTable struct {
	slots []uint64 // hash<<32 | id+1, or 0 where free; len is a power of 2
}

// reset empties t for about n strings.
func (t *strTable) reset(n int) {
	size := 64
	for size < 2*n {
		size <<= 1
	}
	if len(t.slots) < size || len(t.slots) > 8*size {
		t.slots = make([]uint64, size)
		return
	}
	clear(t.slots)
}

// find returns the id of s, whose hash is h, among strs, or -1 and the
// slot where s goes.
func (t *strTable) find(s string, h uint32, strs []string) (int32, int) {
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		x := t.slots[i]
		if x == 0 {
			return -1, i
		}
		if uint32(x>>32) == h && strs[uint32(x)-1] == s {
			return int32(uint32(x)) - 1, i
		}
	}
}

// add puts id, of hash h, at slot (from find); n is how many ids t holds
// then. It grows t when it is half full.
func (t *strTable) add(slot int, id int32, h uint32, n int) {
	t.slots[slot] = uint64(h)<<32 | uint64(id+1)
	if 2*n <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]uint64, 2*len(old))
	mask := len(t.slots) - 1
	for _, x := range old {
		if x != 0 {
			i := int(x>>32) & mask
			for t.slots[i] != 0 {
				i = (i + 1) & mask
			}
			t.slots[i] = x
		}
	}
}

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
	ids     strTable // of p.strs
	actor   map[actorKey]int32
	// The last actors of the steps that actorIndex found or added, with
	// their indices: most steps have the actor of a step before.
	recent  [4]recentActor
	nRecent int
	label   []byte // scratch: an actor's label
	webhook map[string]int32
	inStep  bool
	inSteps []bool // local id -> in stepOrder

	// By the local id of a path: the value the pod's last change of it
	// set, and the path of the change after it.
	paths []pathState
	// The paths that change predicts (local ids+1, or 0): that of the
	// first change of the last step with changes, that of the next change,
	// and the path of the change before.
	firstPath, nextPath, prevPath int32
}

type pathState struct {
	last string // valid when set
	set  bool
	next int32 // local id+1 of the path of the change after the last of this one, or 0
}

func (e *podEncoder) encode(lc *explain.Lifecycle) *HTMLPod {
	s := &e.scratch
	*s = HTMLPod{b: s.b[:0], holes: s.holes[:0], times: s.times[:0], strs: s.strs[:0], hashes: s.hashes[:0], uses: s.uses[:0],
		forced: s.forced[:0], stepOrder: s.stepOrder[:0], actors: s.actors[:0], webhooks: s.webhooks[:0]}
	e.p = s
	e.ids.reset(len(e.inSteps)) // about the size of the pod before
	clear(e.actor)
	e.nRecent = 0
	clear(e.webhook)
	e.inSteps = e.inSteps[:0]
	e.paths = e.paths[:0]
	e.firstPath = 0
	e.pod(lc)
	s.list = appendListEntry(s.list[:0], lc)
	s.listStart, s.listEnd = lc.RecordingEnd.UnixMilli(), lc.RecordingEnd.UnixMilli()
	if len(lc.Steps) > 0 {
		s.listStart = lc.Steps[0].Time.UnixMilli()
	}
	e.p = nil
	// The pod keeps slices of its size; the scratch ones are reused.
	p := &HTMLPod{b: slices.Clone(s.b), holes: slices.Clone(s.holes), times: slices.Clone(s.times), err: s.err,
		strs: slices.Clone(s.strs), hashes: slices.Clone(s.hashes), uses: slices.Clone(s.uses), forced: slices.Clone(s.forced),
		stepOrder: slices.Clone(s.stepOrder), actors: slices.Clone(s.actors), webhooks: slices.Clone(s.webhooks),
		list: slices.Clone(s.list), listStart: s.listStart, listEnd: s.listEnd}
	clear(s.strs) // let go of the pod's strings
	clear(s.webhooks)
	clear(e.paths)
	e.recent = [4]recentActor{}
	return p
}

// appendListEntry appends the pod's entry in the page's list, but its
// times: [namespace, name, uid, outcome, [[id, severity, headline]...],
// [phase...], revisions, events, plain strings all.
func appendListEntry(b []byte, lc *explain.Lifecycle) []byte {
	b = append(b, '[')
	for _, s := range []string{lc.Namespace, lc.Name, lc.UID, lc.Outcome} {
		b = append(appendJSONString(b, s), ',')
	}
	b = append(b, '[')
	for i, f := range lc.Findings {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = append(appendJSONString(b, f.ID), ',')
		b = append(appendJSONString(b, f.Severity.String()), ',')
		b = append(appendJSONString(b, f.Headline), ']')
	}
	b = append(b, "],["...)
	for i, ph := range lc.Phases {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, ph.Name)
	}
	b = append(b, "],"...)
	b = strconv.AppendInt(b, int64(len(lc.Steps)), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(len(lc.Events)), 10)
	return b
}

func (e *podEncoder) raw(s string) { e.p.b = append(e.p.b, s...) }

func (e *podEncoder) sep(i int) {
	if i > 0 {
		e.p.b = append(e.p.b, ',')
	}
}

func (e *podEncoder) int(n int64) { e.p.b = strconv.AppendInt(e.p.b, n, 10) }

func (e *podEncoder) hole(kind holeKind, id int32) {
	if uint32(id) >= 1<<(32-holeKindBits) && e.p.err == nil {
		e.p.err = fmt.Errorf("a pod's data has more than %d strings, times or actors", 1<<(32-holeKindBits))
	}
	e.p.holes = append(e.p.holes, hole{at: int32(len(e.p.b)), x: uint32(id)<<holeKindBits | uint32(kind)})
}

// timeHole writes ms, Unix ms, as ms from the base.
func (e *podEncoder) timeHole(ms int64) {
	e.hole(holeTime, int32(len(e.p.times)))
	e.p.times = append(e.p.times, ms)
}

// jsonSafe are the bytes that encoding/json writes as they are (in
// strings, as it escapes HTML): ASCII but for control characters, '"',
// '\\', '<', '>' and '&'.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune(`"\<>&`, c)
	}
	return t
}()

// appendJSONString appends the JSON of s as json.Marshal writes it (the
// same escapes, HTML's included; TestAppendJSONString holds it to that),
// without its reflection and allocations.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control characters, and <, > and &
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// intern returns the local id of s, counting a use.
func (e *podEncoder) intern(s string) int32 {
	p := e.p
	h := strHash(s)
	id, slot := e.ids.find(s, h, p.strs)
	if id < 0 {
		id = int32(len(p.strs))
		p.strs = append(p.strs, s)
		p.hashes = append(p.hashes, h)
		p.uses = append(p.uses, 0)
		p.forced = append(p.forced, false)
		e.inSteps = append(e.inSteps, false)
		e.ids.add(slot, id, h, len(p.strs))
	}
	e.use(id)
	return id
}

// use counts a use of local id.
func (e *podEncoder) use(id int32) {
	if e.inStep && !e.inSteps[id] {
		e.inSteps[id] = true
		e.p.stepOrder = append(e.p.stepOrder, id)
	}
	e.p.uses[id]++
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
func (e *podEncoder) actorIndex(a *diff.Actor) {
	// The page shows who, and how it is known.
	e.label = a.AppendLabel(e.label[:0])
	// An actor the pod had before changes nothing but the reference (its
	// strings' uses, counted and taken back; they are in the steps'
	// order already): one of the last few is found by its strings.
	for _, r := range e.recent[:min(e.nRecent, len(e.recent))] {
		if r.manager == a.Manager && r.who == string(e.label) {
			e.hole(holeActor, r.index)
			return
		}
	}
	who := string(e.label)
	k := actorKey{e.sharedID(a.Manager), e.sharedID(who)}
	i, ok := e.actor[k]
	if !ok {
		i = int32(len(e.p.actors))
		e.actor[k] = i
		e.p.actors = append(e.p.actors, k)
	} else {
		e.p.uses[k.manager]--
		e.p.uses[k.who]--
	}
	e.recent[e.nRecent%len(e.recent)] = recentActor{a.Manager, who, i}
	e.nRecent++
	e.hole(holeActor, i)
}

type recentActor struct {
	manager, who string
	index        int32
}

// webhookIndex writes the index of w in the webhook table.
func (e *podEncoder) webhookIndex(w admission.Webhook) {
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

func (e *podEncoder) webhookList(ws []admission.Webhook) {
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

	ids    strTable // of strs: ids in order of first use
	strs   []string // by id
	uses   []int32  // by id
	podOf  []int32  // id -> the pod that used it first
	shared []bool   // id -> used by more than one pod, or by the tables
	rank   []int32  // id -> index in the top-level table
	ranked []int32  // the ids of the top-level table

	global    [][]int32 // per pod: local id -> id
	actorOf   [][]int32 // per pod: local actor -> index in actors
	webhookOf [][]int32 // per pod: local webhook -> index in webhooks

	actor    map[actorKey]int32 // by ids
	actors   []actorKey
	webhook  map[string]int32 // JSON -> index
	webhooks []string

	// The pod being written: its own table (local id -> index, or -1;
	// local ids by index) and which of its strings its steps have used so
	// far.
	localRank []int32
	locals    []int32
	seenStep  []bool
	refs      []byte  // the references to its strings (see str) but -1
	refAt     []int32 // local id -> where its reference starts in refs; then the end
}

func newPageWriter(tr *Trace, pods []*HTMLPod, sink *dataSink) *pageWriter {
	n := 64
	for _, p := range pods {
		n += len(p.strs) / 2
	}
	w := &pageWriter{sink: sink, pods: pods, actor: map[actorKey]int32{}, webhook: map[string]int32{},
		global: make([][]int32, len(pods)), actorOf: make([][]int32, len(pods)), webhookOf: make([][]int32, len(pods))}
	w.ids.reset(n)
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
		h := p.hashes[l]
		id, slot := w.ids.find(s, h, w.strs)
		if id < 0 {
			id = int32(len(w.strs))
			w.strs = append(w.strs, s)
			w.uses = append(w.uses, 0)
			w.podOf = append(w.podOf, i)
			w.shared = append(w.shared, false)
			w.ids.add(slot, id, h, len(w.strs))
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
	for r, id := range order {
		w.rank[id] = int32(r)
	}
	w.ranked = order
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

// stringJSON writes s as json.Marshal does: a table of strings is
// written as it writes a []string.
func (w *pageWriter) stringJSON(s string) { w.b = appendJSONString(w.b, s) }

func (w *pageWriter) write(tr *Trace) {
	w.raw(`{"format":"podtrace-report/4","file":`)
	w.json(tr.File)
	w.raw(`,"generated":`)
	w.json(tr.Generated)
	w.raw(`,"sessions":`)
	w.json(tr.Sessions)
	w.raw(`,"base":`)
	w.int(w.base)
	w.raw(`,"strings":`)
	w.raw("[")
	for r, id := range w.ranked {
		w.sep(r)
		w.stringJSON(w.strs[id])
	}
	w.raw("]")
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
	w.raw(`],"list":[`)
	for i, p := range w.pods {
		w.sep(i)
		w.b = append(w.b, p.list...)
		w.raw(",")
		w.int(p.listStart - w.base)
		w.raw(",")
		w.int(p.listEnd - w.base)
		w.raw("]")
	}
	// Each pod on a line of its own, the first after the only newline of
	// what comes before: the page parses the rest of the data at once, and
	// a pod's only when it opens.
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
		w.raw("\n")
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
	w.raw("\n]}")
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
			w.locals = append(w.locals, l)
		}
	}
	for l := range p.strs {
		if !w.shared[g[l]] && w.localRank[l] < 0 {
			w.localRank[l] = int32(len(w.locals))
			w.locals = append(w.locals, int32(l))
		}
	}
	// The references to its strings, written once.
	w.refs = w.refs[:0]
	w.refAt = slices.Grow(w.refAt[:0], n+1)[:n+1]
	for l := range p.strs {
		if r := w.localRank[l]; r >= 0 {
			w.refs = strconv.AppendInt(w.refs, -2-int64(r), 10)
		} else {
			w.refs = strconv.AppendInt(w.refs, int64(w.rank[g[l]]), 10)
		}
		w.refAt[l+1] = int32(len(w.refs))
	}
	at := 0
	for _, h := range p.holes {
		w.b = append(w.b, p.b[at:h.at]...)
		at = int(h.at)
		id := h.id()
		switch h.kind() {
		case holeString, holeStepString:
			w.str(id, h.kind() == holeStepString)
		case holeTime:
			w.int(p.times[id] - w.base)
		case holeActor:
			w.int(int64(w.actorOf[i][id]))
		case holeWebhook:
			w.int(int64(w.webhookOf[i][id]))
		case holeStrings:
			w.raw("[")
			for r, l := range w.locals {
				w.sep(r)
				w.stringJSON(p.strs[l])
			}
			w.raw("]")
		default: // holePath+op
			w.int(int64(w.rank[g[id]])*3 + int64(h.kind()-holePath))
		}
	}
	w.b = append(w.b, p.b[at:]...)
}

// str writes a reference to string l of the pod: n >= 0 for the
// top-level strings[n]; n <= -2 for the pod's strings[-n-2]; in the steps,
// -1 for the next string of the pod that its steps had not used yet.
func (w *pageWriter) str(l int32, inStep bool) {
	if inStep && w.localRank[l] >= 0 && !w.seenStep[l] {
		w.seenStep[l] = true
		w.raw("-1")
		return
	}
	w.b = append(w.b, w.refs[w.refAt[l]:w.refAt[l+1]]...)
}

func (e *podEncoder) pod(p *explain.Lifecycle) {
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
	if len(p.Gaps) > 0 {
		e.raw(`,"gaps":[`)
		for i, g := range p.Gaps {
			e.sep(i)
			e.raw("[")
			e.time(g.Start)
			e.raw(",")
			e.time(g.End)
			e.raw(",")
			e.str(g.Text())
			e.raw("]")
		}
		e.raw("]")
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
		e.str(r.Identity())
		e.raw(",")
		e.str(r.Agent())
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
		e.str(d.Identity())
		e.raw(",")
		e.str(d.Agent())
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
		e.raw(",")
		e.str(d.Policy)
		e.raw(",")
		e.str(d.Binding)
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
	for i := range steps {
		s := &steps[i]
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
		for j := range s.Actors {
			e.sep(j)
			e.actorIndex(&s.Actors[j])
		}
		e.raw("],[")
		manager := ""
		if len(s.Actors) == 1 {
			manager = s.Actors[0].Manager
		}
		e.nextPath = e.firstPath
		for j := range s.Changes {
			e.sep(j)
			e.change(&s.Changes[j], manager, j == 0)
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
func (e *podEncoder) change(c *diff.Change, manager string, first bool) {
	e.raw("[")
	// Steps change the same paths in the same order, more often than
	// not: the path that came after the last one did is tried before the
	// path is hashed.
	var path int32
	if n := e.nextPath; n > 0 && e.p.strs[n-1] == c.Path {
		path = n - 1
		e.use(path)
		e.p.forced[path] = true
	} else {
		path = e.sharedID(c.Path)
	}
	for len(e.paths) <= int(path) {
		e.paths = append(e.paths, pathState{})
	}
	if first {
		e.firstPath = path + 1
	} else if n := e.nextPath; n == 0 || n-1 != path {
		e.paths[e.prevPath].next = path + 1
	}
	e.prevPath = path
	e.nextPath = e.paths[path].next
	e.hole(holePath+holeKind(opCode(c.Op)), path)
	e.raw(",")
	ps := &e.paths[path]
	value := c.New
	if c.Op == diff.OpRemove {
		value = c.Old
	}
	e.str(value)
	last := ""
	if ps.set {
		last = ps.last
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
	ps.set = true
	if c.Op == diff.OpRemove {
		ps.last = ""
	} else {
		ps.last = c.New
	}
}
