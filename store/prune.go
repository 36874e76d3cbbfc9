package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Retention bounds what a recording Writer keeps of the objects that are
// gone from the cluster (Options.Retention). A zero field is no bound.
//
// What is pruned, and what never is:
//
//   - A pod whose last record is a deletion (Deleted or
//     DeletedFinalStateUnknown) observed longer than Age ago goes with every
//     revision, and with what is about it or belongs to it alone: the Events
//     (and audit events) about it, and its dependents (the Secrets,
//     ConfigMaps, Services and PVCs it owned) once they are gone too (a
//     claim it does not own is an object of its own, below). A pod
//     whose last record is not a deletion is never pruned.
//   - An owner (a ReplicaSet, a Job...) goes once it is gone longer than
//     Age and no kept object but Events refers to it: a ReplicaSet that
//     still owns a recorded pod stays.
//   - Any other namespaced object gone longer than Age goes too (an Event
//     that expired, about a node), unless it is about, or belongs to, a pod
//     still kept: it then goes with that pod.
//   - Cluster-scoped objects are never pruned: namespaces, nodes, webhook
//     configurations, admission policies and their bindings, StorageClasses:
//     the context that every pod's replay reads.
//
// MaxBytes prunes the same way, by the same rules, but without waiting for
// Age: the oldest gone pods first, while the trace's pages in use exceed
// 95% of MaxBytes, until they are under 90%. bbolt never shrinks a file;
// it reuses the pages pruning frees, so once pruning keeps up the file
// stops growing, at about the pages in use plus its growth step (16 MiB).
// Writer.Close compacts it to the pages in use.
type Retention struct {
	Age      time.Duration
	MaxBytes int64
}

func (r Retention) enabled() bool { return r.Age > 0 || r.MaxBytes > 0 }

// PruneReason says why records were pruned.
type PruneReason string

const (
	// PruneAge: gone longer than Retention.Age.
	PruneAge PruneReason = "age"
	// PruneSize: the oldest gone, while the trace exceeded
	// Retention.MaxBytes.
	PruneSize PruneReason = "size"
)

const (
	// pruneTxKeys bounds the keys one prune transaction deletes, so that it
	// holds the file for milliseconds (TestPruneTransactionIsShort); an
	// object whose records alone exceed it is pruned in a transaction of
	// its own, since an object is pruned whole or not at all.
	pruneTxKeys = 4096
	// pruneScanKeys bounds the object summaries one transaction of the
	// gone index's catch-up reads.
	pruneScanKeys = 16384
	// pruneChunk is how many gone entries a prune transaction reads ahead.
	pruneChunk = 256
)

// PruneStats count what a Writer pruned since NewWriter.
type PruneStats struct {
	Age, Size PruneCounts
	// Transactions is the number of prune transactions committed; MaxTx is
	// the longest of them, from begin to commit, LastTx the last one's.
	Transactions int
	MaxTx        time.Duration
	LastTx       time.Duration
	// UsedBytes is the trace's pages in use (the file's pages less the
	// free ones) after the last flush's pruning; PageBytes the file's
	// pages, used or free (its high-water mark: bbolt grows the file ahead
	// of them); 0 before it.
	UsedBytes, PageBytes int64
}

// PruneCounts count pruned objects.
type PruneCounts struct {
	Pods    int
	Objects int // every object pruned, its pods included
	Records int
	Bytes   int64 // of keys and values deleted
}

func (c *PruneCounts) add(d PruneCounts) {
	c.Pods += d.Pods
	c.Objects += d.Objects
	c.Records += d.Records
	c.Bytes += d.Bytes
}

// pruneState is a Writer's retention state, guarded by its flushMu; stats
// is guarded by its mu.
type pruneState struct {
	// entries are the session's records in the pruned bucket, one per
	// reason, updated by each prune transaction.
	entries map[PruneReason]*pruneEntry
	// indexed: the gone index covers the file (see catchUp); scanFrom is
	// the next object number the catch-up reads.
	indexed  bool
	scanFrom uint32
	// more: the last flush stopped pruning on its time budget.
	more bool
	// sizing: the pages in use went over 95% of MaxBytes and are not yet
	// under 90%; stuck: warned that nothing more can be pruned; failing:
	// warned that pruning failed.
	sizing, stuck, failing bool
	stats                  PruneStats
}

type pruneEntry struct {
	key uint64
	rec Prune
}

// indexedGone tells whether o's deletion goes into the gone index:
// cluster-scoped objects are never pruned.
func indexedGone(o *Object) bool { return o.Namespace != "" }

// goneKey is o's key in the gone index: its deletion's time (Unix
// nanoseconds, 0 if unknown) then its number.
func goneKey(o *Object) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(max(unixNano(o.LastObserved), 0)))
	return binary.BigEndian.AppendUint32(k, o.num)
}

// pruneFlushTime bounds the time a flush spends pruning, after it has
// written its records: the rest waits for the next flush. A variable for
// the test that sets it to nothing (TestPruneTransactionIsShort).
var pruneFlushTime = 100 * time.Millisecond

// prune runs retention in db, which update has open, after the flush's
// records are written: for up to pruneFlushTime, in transactions of up to
// pruneTxKeys deleted keys, between which nothing holds the file longer.
func (w *Writer) prune(db *DB, now time.Time) error {
	r := w.opts.Retention
	if !r.enabled() || w.session == 0 {
		return nil
	}
	p := &w.pruning
	began := time.Now()
	over := func() bool { return time.Since(began) >= pruneFlushTime }
	p.more = false
	for !p.indexed {
		if err := w.catchUp(db); err != nil {
			return err
		}
		if !p.indexed && over() {
			p.more = true
			return nil
		}
	}
	if r.Age > 0 {
		cutoff := now.Add(-r.Age)
		for {
			more, err := w.pruneTx(db, PruneAge, now, unixNano(cutoff), 0)
			if err != nil {
				return err
			}
			if !more {
				break
			}
			if over() {
				p.more = true
				return nil
			}
		}
	}
	used, pages, err := db.pageBytes()
	if err != nil {
		return err
	}
	if r.MaxBytes > 0 {
		high, low := r.MaxBytes-r.MaxBytes/20, r.MaxBytes-r.MaxBytes/10
		for {
			if used > high {
				p.sizing = true
			}
			if used <= low {
				p.sizing, p.stuck = false, false
			}
			if !p.sizing {
				break
			}
			if over() {
				p.more = true
				return nil
			}
			more, err := w.pruneTx(db, PruneSize, now, math.MaxInt64, used-low)
			if err != nil {
				return err
			}
			if used, pages, err = db.pageBytes(); err != nil {
				return err
			}
			if !more {
				if !p.stuck {
					w.opts.warn("trace %q: its pages in use (%s) exceed 90%% of the size budget (%s) and nothing more can be pruned: the rest is the history of live pods, of gone ones the live refer to, and the namespaces, nodes and webhook configurations",
						w.path, sizeText(used), sizeText(r.MaxBytes))
					p.stuck = true
				}
				break
			}
		}
	}
	w.mu.Lock()
	p.stats.UsedBytes, p.stats.PageBytes = used, pages
	w.mu.Unlock()
	return nil
}

// sizeText formats n bytes like "1.5 MiB".
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// pageBytes returns the size of the file's pages less its free ones, and
// the size of its pages.
func (db *DB) pageBytes() (used, pages int64, err error) {
	if err := db.bolt.View(func(tx *bolt.Tx) error { pages = tx.Size(); return nil }); err != nil {
		return 0, 0, err
	}
	st := db.bolt.Stats()
	return pages - int64(st.FreePageN+st.PendingPageN)*int64(db.bolt.Info().PageSize), pages, nil
}

// catchUp indexes, in one transaction of up to pruneScanKeys summaries,
// the deletions of a trace whose gone index does not cover it: one written
// before the index, or by an older build since. Every deletion this
// Writer's encoder writes is indexed as it is written, so once the scan of
// the summaries is through, the index covers the file.
func (w *Writer) catchUp(db *DB) error {
	p := &w.pruning
	next, done := p.scanFrom, false
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		var last uint64
		if k, _ := tx.Bucket(bucketTime).Cursor().Last(); len(k) == 8 {
			last = binary.BigEndian.Uint64(k)
		}
		if gs := meta.Get(metaGoneSeq); gs != nil {
			if n, err := strconv.ParseUint(string(gs), 10, 64); err == nil && n == last {
				done = true
				return nil
			}
		}
		gone, err := tx.CreateBucketIfNotExists(bucketGone)
		if err != nil {
			return err
		}
		c := tx.Bucket(bucketObjects).Cursor()
		k, v := c.Seek(numKey(next))
		for n := 0; k != nil && n < pruneScanKeys; k, v = c.Next() {
			if len(k) != 4 {
				return fmt.Errorf("%w: object key %x", errValue, k)
			}
			o, err := parseObject(binary.BigEndian.Uint32(k), v)
			if err != nil {
				return err
			}
			if o.Deleted && indexedGone(&o) {
				if err := gone.Put(goneKey(&o), nil); err != nil {
					return err
				}
			}
			n++
		}
		if k != nil {
			next = binary.BigEndian.Uint32(k)
			return nil
		}
		done = true
		return meta.Put(metaGoneSeq, strconv.AppendUint(nil, last, 10))
	})
	if err != nil {
		return db.readError("index the deletions", err)
	}
	p.scanFrom, p.indexed = next, done
	return nil
}

// pruneTx runs one prune transaction for reason: it takes the gone index's
// entries oldest first, those up to cutoff (Unix nanoseconds), and prunes
// each that may be, with what goes with it, until it has deleted about
// pruneTxKeys keys or, for size, want bytes. more says that entries were
// left for another transaction.
func (w *Writer) pruneTx(db *DB, reason PruneReason, now time.Time, cutoff int64, want int64) (more bool, err error) {
	p := &w.pruning
	entry := p.entries[reason]
	var (
		next    Prune
		nextKey uint64
		pruned  []string // UIDs of the objects pruned
		freed   []string // UIDs whose numbers went
		counts  PruneCounts
	)
	began := time.Now()
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketGone) == nil {
			return nil
		}
		t := newPruneTx(tx, reason, cutoff)
		var err error
		more, err = t.run(want)
		if err != nil || t.counts.Objects == 0 {
			return err
		}
		counts, pruned, freed = t.counts, t.pruned, t.freedUIDs
		b, err := tx.CreateBucketIfNotExists(bucketPruned)
		if err != nil {
			return err
		}
		if entry != nil {
			next, nextKey = entry.rec, entry.key
		} else {
			if nextKey, err = b.NextSequence(); err != nil {
				return err
			}
			next = Prune{Session: w.session, Reason: reason, First: now}
			if reason == PruneAge {
				next.Retain = w.opts.Retention.Age
			} else {
				next.MaxBytes = w.opts.Retention.MaxBytes
			}
		}
		next.Last = now
		next.Pods += t.counts.Pods
		next.Objects += t.counts.Objects
		next.Records += t.counts.Records
		next.Bytes += t.counts.Bytes
		if next.OldestGone.IsZero() || !t.oldest.IsZero() && t.oldest.Before(next.OldestGone) {
			next.OldestGone = t.oldest
		}
		if t.newest.After(next.NewestGone) {
			next.NewestGone = t.newest
		}
		if reason == PruneAge {
			next.Before = fromUnixNano(cutoff)
		} else {
			next.Before = next.NewestGone
		}
		v, err := json.Marshal(next)
		if err != nil {
			return err
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, nextKey), v)
	})
	took := time.Since(began)
	if err != nil {
		return false, db.readError("prune", err)
	}
	if counts.Objects == 0 {
		return more, nil
	}
	if p.entries == nil {
		p.entries = map[PruneReason]*pruneEntry{}
	}
	p.entries[reason] = &pruneEntry{key: nextKey, rec: next}
	// What the encoder remembers of the pruned objects is no longer so:
	// a later record of one of their UIDs is a new object.
	db.writeMu.Lock()
	e := db.enc
	for _, uid := range pruned {
		e.last.delete(uid)
	}
	for _, uid := range freed {
		delete(e.nums, uid)
	}
	e.numsAll = false
	db.writeMu.Unlock()
	w.mu.Lock()
	st := &p.stats
	if reason == PruneAge {
		st.Age.add(counts)
	} else {
		st.Size.add(counts)
	}
	st.Transactions++
	st.LastTx = took
	st.MaxTx = max(st.MaxTx, took)
	w.mu.Unlock()
	return more, nil
}

// PruneStats says what the Writer pruned so far (see Options.Retention).
func (w *Writer) PruneStats() PruneStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pruning.stats
}

// pruneTx is one prune transaction's state.
type pruneTx struct {
	tx                            *bolt.Tx
	uids, objects, records, times *bolt.Bucket
	refs, gone                    *bolt.Bucket
	reason                        PruneReason
	cutoff                        int64 // owners and lone objects gone after it stay
	maxSeq                        uint64
	summaries                     map[uint32]*Object // read in this transaction; nil: none
	keys                          int                // deleted so far
	full                          bool               // the next plan waits for another transaction
	counts                        PruneCounts
	oldest, newest                time.Time // deletions of the pods pruned
	pruned, freedUIDs             []string
	seqs                          []uint64 // scratch
	candidates                    []string // UIDs whose numbers may go
}

func newPruneTx(tx *bolt.Tx, reason PruneReason, cutoff int64) *pruneTx {
	t := &pruneTx{
		tx: tx, uids: tx.Bucket(bucketUIDs), objects: tx.Bucket(bucketObjects), records: tx.Bucket(bucketRecords),
		times: tx.Bucket(bucketTime), refs: tx.Bucket(bucketRefs), gone: tx.Bucket(bucketGone),
		reason: reason, cutoff: cutoff, summaries: map[uint32]*Object{},
	}
	if k, _ := t.times.Cursor().Last(); len(k) == 8 {
		t.maxSeq = binary.BigEndian.Uint64(k)
	}
	return t
}

// run prunes from the oldest gone entry on; see Writer.pruneTx.
func (t *pruneTx) run(want int64) (more bool, err error) {
	var from []byte
	for {
		// Read a chunk of entries first: pruning deletes entries ahead.
		var chunk [][]byte
		c := t.gone.Cursor()
		k, _ := c.First()
		if from != nil {
			k, _ = c.Seek(from)
		}
		for ; k != nil && len(chunk) < pruneChunk; k, _ = c.Next() {
			if len(k) != 12 {
				return false, fmt.Errorf("%w: gone key %x", errValue, k)
			}
			if int64(binary.BigEndian.Uint64(k)) > t.cutoff {
				k = nil
				break
			}
			chunk = append(chunk, bytes.Clone(k))
		}
		for _, k := range chunk {
			if t.full || t.keys >= pruneTxKeys || want > 0 && t.counts.Bytes >= want {
				return true, t.finish()
			}
			if err := t.entry(k); err != nil {
				return false, err
			}
		}
		if k == nil {
			return false, t.finish()
		}
		from = k
	}
}

// entry handles one gone entry: it prunes its object, with what goes with
// it, if that may be done now, and removes the entry unless the object is
// to be pruned later.
func (t *pruneTx) entry(k []byte) error {
	at := int64(binary.BigEndian.Uint64(k))
	num := binary.BigEndian.Uint32(k[8:])
	o, err := t.summary(num)
	if err != nil {
		return err
	}
	if o == nil || !o.Deleted || max(unixNano(o.LastObserved), 0) != at || !indexedGone(o) {
		// Pruned already, recorded again since, or deleted again later
		// (that deletion has its own entry).
		return t.gone.Delete(k)
	}
	cutoff := t.cutoff
	if t.reason == PruneSize {
		// The oldest first: nothing gone after this one goes with it.
		cutoff = at
	}
	var plan []*Object
	if o.Kind == "Pod" {
		plan, err = t.plan(o, cutoff)
	} else {
		ok, err := t.prunable(o, nil, false, cutoff)
		if err != nil {
			return err
		}
		if !ok {
			// About or belonging to a pod still kept, or still referred
			// to: it goes with what keeps it, which looks at it again
			// (plan) when it goes.
			return t.gone.Delete(k)
		}
		plan, err = t.plan(o, cutoff)
	}
	if err != nil {
		return err
	}
	keys := 0
	for _, p := range plan {
		if p.LastSeq == t.maxSeq {
			// The file's last record: removing it would let the next
			// record take its Seq. Pruned after the next flush.
			return nil
		}
		keys += 2*int(p.Revisions) + 3 + len(p.Refs)
	}
	if t.keys > 0 && t.keys+keys > pruneTxKeys {
		t.full = true // the next transaction starts with it
		return nil
	}
	return t.delete(plan)
}

// plan returns root and what goes with it: the objects that refer to
// anything in the plan and may go with it (Events about it, gone
// dependents), and the objects it refers to that have nothing left to
// keep them (gone owners), transitively.
func (t *pruneTx) plan(root *Object, cutoff int64) ([]*Object, error) {
	in := map[uint32]bool{root.num: true}
	plan := []*Object{root}
	for i := 0; i < len(plan); i++ {
		o := plan[i]
		nums, err := t.referrers(o.num)
		if err != nil {
			return nil, err
		}
		for _, n := range nums {
			if in[n] {
				continue
			}
			x, err := t.summary(n)
			if err != nil {
				return nil, err
			}
			if x == nil {
				return nil, fmt.Errorf("%w: a ref to %q names object %d, which is missing", errValue, o.UID, n)
			}
			if ok, err := t.prunable(x, in, true, cutoff); err != nil {
				return nil, err
			} else if ok {
				in[n] = true
				plan = append(plan, x)
			}
		}
		for _, ref := range o.Refs {
			n, ok := t.number(ref)
			if !ok || in[n] {
				continue
			}
			w, err := t.summary(n)
			if err != nil {
				return nil, err
			}
			if w == nil {
				continue // never recorded, or pruned
			}
			if ok, err := t.prunable(w, in, false, cutoff); err != nil {
				return nil, err
			} else if ok {
				in[n] = true
				plan = append(plan, w)
			}
		}
	}
	return plan, nil
}

// prunable tells whether o, which is not a pod, may go with the objects in
// the plan (in): as a referrer of one of them (an Event about it, a
// dependent), or as an object they refer to or a gone entry of its own
// (an owner, an expired Event), which must then be gone since cutoff. It
// must be namespaced and gone (an Event about a pruned object need not be:
// it is about nothing kept), and it must not be about or belong to a pod
// still kept, nor be referred to by a kept object other than an Event.
func (t *pruneTx) prunable(o *Object, in map[uint32]bool, referrer bool, cutoff int64) (bool, error) {
	switch {
	case !indexedGone(o), o.Kind == "Pod":
		return false, nil
	case !o.Deleted && !(referrer && o.Kind == "Event"):
		return false, nil
	case !referrer && max(unixNano(o.LastObserved), 0) > cutoff:
		return false, nil
	}
	for _, ref := range o.Refs {
		n, ok := t.number(ref)
		if !ok || in[n] {
			continue
		}
		r, err := t.summary(n)
		if err != nil {
			return false, err
		}
		if r != nil && r.Kind == "Pod" {
			return false, nil // evidence about a pod still kept
		}
	}
	nums, err := t.referrers(o.num)
	if err != nil {
		return false, err
	}
	for _, n := range nums {
		if in[n] {
			continue
		}
		r, err := t.summary(n)
		if err != nil {
			return false, err
		}
		if r != nil && r.Kind != "Event" {
			return false, nil // a kept object refers to it
		}
	}
	return true, nil
}

// delete removes the objects of plan: their records and time entries,
// summaries, gone entries and refs, and the numbers of UIDs nothing refers
// to any more.
func (t *pruneTx) delete(plan []*Object) error {
	for _, o := range plan {
		prefix := numKey(o.num)
		t.seqs = t.seqs[:0]
		c := t.records.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			seq, ok := recordSeq(k, o.num)
			if !ok {
				return fmt.Errorf("%w: records key %x", errValue, k)
			}
			t.seqs = append(t.seqs, seq)
			t.counts.Bytes += int64(len(k) + len(v))
		}
		for _, seq := range t.seqs {
			if err := t.records.Delete(recordKey(nil, o.num, seq)); err != nil {
				return err
			}
			if err := t.times.Delete(binary.BigEndian.AppendUint64(nil, seq)); err != nil {
				return err
			}
			t.counts.Bytes += 12
		}
		t.counts.Records += len(t.seqs)
		if v := t.objects.Get(prefix); v != nil {
			t.counts.Bytes += int64(4 + len(v))
		}
		if err := t.objects.Delete(prefix); err != nil {
			return err
		}
		if err := t.gone.Delete(goneKey(o)); err != nil {
			return err
		}
		for _, ref := range o.Refs {
			n, ok := t.number(ref)
			if !ok {
				continue
			}
			if err := t.refs.Delete(binary.BigEndian.AppendUint32(numKey(n), o.num)); err != nil {
				return err
			}
			t.counts.Bytes += 8
			t.candidates = append(t.candidates, ref)
		}
		t.candidates = append(t.candidates, o.UID)
		t.keys += 2*len(t.seqs) + 3 + len(o.Refs)
		t.summaries[o.num] = nil
		t.pruned = append(t.pruned, o.UID)
		t.counts.Objects++
		if o.Kind == "Pod" {
			t.counts.Pods++
			if t.oldest.IsZero() || o.LastObserved.Before(t.oldest) {
				t.oldest = o.LastObserved
			}
			if o.LastObserved.After(t.newest) {
				t.newest = o.LastObserved
			}
		}
	}
	return nil
}

// finish removes the numbers of the UIDs that nothing in the trace has or
// refers to any more.
func (t *pruneTx) finish() error {
	for _, uid := range t.candidates {
		v := t.uids.Get([]byte(uid))
		if len(v) != 4 {
			continue
		}
		if t.objects.Get(v) != nil {
			continue
		}
		if k, _ := t.refs.Cursor().Seek(v); k != nil && bytes.HasPrefix(k, v) {
			continue // a kept object refers to it
		}
		if err := t.uids.Delete([]byte(uid)); err != nil {
			return err
		}
		t.keys++
		t.counts.Bytes += int64(len(uid) + 4)
		t.freedUIDs = append(t.freedUIDs, uid)
	}
	t.candidates = t.candidates[:0]
	return nil
}

// summary returns the summary of object num, or nil if it has none.
func (t *pruneTx) summary(num uint32) (*Object, error) {
	if o, ok := t.summaries[num]; ok {
		return o, nil
	}
	o, err := objectByNum(t.tx, numKey(num))
	if err != nil {
		return nil, err
	}
	t.summaries[num] = o
	return o, nil
}

// number returns the number of uid, if it has one.
func (t *pruneTx) number(uid string) (uint32, bool) {
	v := t.uids.Get([]byte(uid))
	if len(v) != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(v), true
}

// referrers returns the numbers of the objects that refer to object num.
func (t *pruneTx) referrers(num uint32) ([]uint32, error) {
	prefix := numKey(num)
	var out []uint32
	c := t.refs.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != 8 {
			return nil, fmt.Errorf("%w: refs key %x", errValue, k)
		}
		out = append(out, binary.BigEndian.Uint32(k[4:]))
	}
	return out, nil
}

// Prunes returns what retention pruned from the trace, one Prune per
// session and reason, in the order they were first made; none in a trace
// never pruned.
func (db *DB) Prunes() ([]Prune, error) {
	var out []Prune
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPruned)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var p Prune
			if err := json.Unmarshal(v, &p); err != nil {
				return fmt.Errorf("%w: pruned %x: %v", errValue, k, err)
			}
			out = append(out, p)
			return nil
		})
	})
	if err != nil {
		return nil, db.readError("read what was pruned", err)
	}
	return out, nil
}

// AddPrune records what retention pruned, as another trace said it (export
// carries it, so that a reader of the export knows the history is not all
// there).
func (db *DB) AddPrune(p Prune) error {
	if db.readOnly {
		return fmt.Errorf("record what was pruned in trace %q: %w", db.path, errReadOnly)
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketPruned)
		if err != nil {
			return err
		}
		n, err := b.NextSequence()
		if err != nil {
			return err
		}
		v, err := json.Marshal(p)
		if err != nil {
			return err
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, n), v)
	})
	if err != nil {
		return fmt.Errorf("record what was pruned in trace %q: %w", db.path, err)
	}
	return nil
}
