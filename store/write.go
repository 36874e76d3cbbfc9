package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

const (
	// snapshotEvery: at least every snapshotEvery-th revision of an object
	// is a snapshot, so reading one revision decodes at most that many.
	snapshotEvery = 32

	// appendFill is the FillPercent of objects, written in runs of rising
	// keys (by number); time, written in key order, fills pages. See
	// PERFORMANCE-NOTES.md and Compact.
	appendFill = 0.95
	// recordsFill is the FillPercent of records. Their keys rise per
	// object, but a batch adds to the runs of hundreds of objects, in the
	// middle of the bucket: pages split at 95% split again at the next
	// revision of an object in them. At 75%, writing a recorded trace of
	// the kwok workload again (BenchmarkRewrite) writes 6% fewer pages and
	// its file's high-water mark is 11% lower; Compact fills the pages at
	// the end either way.
	recordsFill = 0.75
)

// lastRev is the last revision written of one object: the base of the next
// revision's delta.
type lastRev struct {
	seq      uint64
	chain    int    // deltas since the last snapshot
	json     []byte // as stored: JSON, or a pod's protobuf when proto
	refs     []string
	observed int64 // Unix nanoseconds; 0 for none
	proto    bool
	// borrowed: json and refs are the caller's (a Writer's records), kept
	// instead of copied; their memory is never used again for another
	// revision.
	borrowed bool

	// obj is the object's summary as written with this revision, valid
	// while epoch is the encoder's: the file then holds nothing the
	// encoder did not write since, and the summary need not be read back.
	obj   Object
	epoch uint64
}

func lastRevSize(r *lastRev) int { return len(r.json) + lastRevOverhead + 40*len(r.refs) }

// lastRevOverhead is what a cached revision costs beside its JSON and refs:
// the lastRev with its summary, the cache's entry and map slot.
const lastRevOverhead = 400

// encoder is the write state of one trace file: the last revision of the
// objects written lately and the compression dictionaries. A Writer keeps it
// across the opens of its file.
type encoder struct {
	fileID string
	last   *lru[*lastRev]
	// spare holds revisions the cache dropped, for their memory (not
	// borrowed ones: that memory is the caller's); a few batches' worth
	// at most. reloaded are the delta bases the batch read back from the
	// file, spare once it is written; scratch is reload's second buffer.
	spare    []*lastRev
	reloaded []*lastRev
	scratch  []byte
	comp     *compressor

	// dicts decode the revisions reload reads back; reloads counts them.
	dicts   *dictSet
	reloads int

	// lastSeq is the Seq of the last record the encoder wrote into the
	// file. While the file's last Seq is still lastSeq, nobody else wrote
	// since, and the summaries the cache holds for epoch are the file's.
	// Else epoch moves on, and they are read back again.
	lastSeq uint64
	epoch   uint64
	current bool   // this batch: the file's last Seq was lastSeq
	prevSeq uint64 // this batch: the file's last Seq before it

	// nums caches the numbers of UIDs, up to maxNums of them; a number
	// never changes once committed. newNums are the numbers the batch
	// looked up or gave.
	nums, newNums map[string]uint32
	maxNums       int
	// numsAll: nums holds every UID of the file (the encoder numbered
	// them all, in a file nobody else wrote since), so a UID it lacks has
	// no number yet and is not looked up.
	numsAll bool

	// Per batch; reused.
	objects map[string]*Object
	chains  map[string]*chain
	order   []*chain // in first-touched order
	jobs    []job
	arena   []byte
	workers []*worker
	kind    kinds

	// zstdAbove: a snapshot whose delta against its dictionary is longer
	// than 1/zstdAbove of the JSON is also tried as a zstd frame; -1:
	// never. A zstd frame with a dictionary costs about 50 µs to make for
	// an object of a few KB (the encoder loads the dictionary each time).
	// Writing the trace of a kwok benchmark run again (3 runs each): at 4,
	// 0.94-1.11 s of CPU and values 4.4-4.8% of the JSON; at 3, 0.68-0.89 s
	// and 4.5-5.0%; never, 0.93-0.94 s and 4.8-5.0% (3 and never differ
	// by less than the noise in CPU).
	zstdAbove int
}

// job is the write of one record.
type job struct {
	r        *Record
	o        *Object
	seq      uint64
	identity bool   // the record's identity differs from its summary's
	madeDict bool   // its JSON is its kind's new dictionary
	value    []byte // the encoded value, from a worker's arena
}

// chain is the records of one object in a batch, encoded in order by one
// worker: each revision's delta is against the one before it.
type chain struct {
	uid  string
	jobs []int
	base *lastRev // the object's last revision before the batch, if cached and current
	last *lastRev // after the batch
}

// worker encodes values. Each has its own delta index and arena, so workers
// run in parallel on different objects.
type worker struct {
	e       *encoder
	delta   deltaEncoder
	arena   []byte
	scratch []byte

	kind kinds     // of the chain's records
	kd   *kindDict // the newest dictionary of kind.key, as of the chain's start
}

// kinds remembers the last kind key made, to make it once per run of
// records of one kind.
type kinds struct {
	apiVersion, kind, key string
	proto                 bool
}

func (k *kinds) of(r *Record) string {
	if k.key == "" || r.APIVersion != k.apiVersion || r.Kind != k.kind || r.Proto != k.proto {
		k.apiVersion, k.kind, k.proto, k.key = r.APIVersion, r.Kind, r.Proto, kindKey(r)
	}
	return k.key
}

func newEncoder(cacheBytes int) *encoder {
	e := &encoder{
		last:      newLRU(cacheBytes, lastRevSize),
		comp:      newCompressor(),
		objects:   map[string]*Object{},
		chains:    map[string]*chain{},
		nums:      map[string]uint32{},
		maxNums:   min(max(cacheBytes/128, minNums), maxNums),
		newNums:   map[string]uint32{},
		zstdAbove: 3,
	}
	e.last.evicted = func(r *lastRev) {
		if !r.borrowed && len(e.spare) < maxSpare {
			e.spare = append(e.spare, r)
		}
	}
	return e
}

// maxSpare bounds encoder.spare.
const maxSpare = 256

// cacheRev returns a revision with room for a JSON of n bytes: the cache's
// own for uid (unless borrowed), one it dropped, or a new one.
func (e *encoder) cacheRev(uid string, n int) *lastRev {
	fits := func(r *lastRev) bool { return cap(r.json) >= n && cap(r.json) <= 2*n }
	if old, ok := e.last.peek(uid); ok && !old.borrowed && fits(old) {
		return old
	}
	for len(e.spare) > 0 {
		r := e.spare[len(e.spare)-1]
		e.spare = e.spare[:len(e.spare)-1]
		if fits(r) {
			return r
		}
	}
	return &lastRev{json: make([]byte, 0, n)}
}

// Write appends recs to the trace in one transaction. It assigns each record
// its Seq, strictly increasing across the file, and sets recs[i].Seq. The
// records must not be changed while Write runs.
func (db *DB) Write(recs []Record) error { return db.write(recs, false, nil) }

// write is Write. owned says the records' Object and Refs are the DB's to
// keep (a Writer's): the write cache keeps them instead of a copy. also, if
// not nil, runs in the same transaction, after the records are put.
func (db *DB) write(recs []Record, owned bool, also func(*bolt.Tx) error) error {
	if db.readOnly {
		return fmt.Errorf("write to trace %q: %w", db.path, errReadOnly)
	}
	if len(recs) == 0 {
		if also == nil {
			return nil
		}
		if err := db.bolt.Update(also); err != nil {
			return fmt.Errorf("write to trace %q: %w", db.path, err)
		}
		return nil
	}
	for i := range recs {
		if err := validate(&recs[i]); err != nil {
			return fmt.Errorf("write to trace %q: record %d: %w: %w", db.path, i, ErrInvalidRecord, err)
		}
	}
	db.writeMu.Lock()
	defer db.writeMu.Unlock()
	e := db.enc
	if e.fileID != db.id {
		// Another file than the one the caches describe.
		e.last.clear()
		e.comp.reset()
		e.dicts = nil
		clear(e.nums)
		e.numsAll = false
		e.lastSeq = 0
		e.fileID = db.id
	}
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := e.write(tx, recs); err != nil {
			return err
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		e.done()
		// The dictionaries may name ones the rollback dropped; the
		// batch's revisions were never made the delta bases.
		e.comp.reset()
		e.dicts = nil
		for i := range recs {
			recs[i].Seq = 0
		}
		return fmt.Errorf("write %d records to trace %q: %w", len(recs), db.path, err)
	}
	for _, c := range e.order {
		lj := &e.jobs[c.jobs[len(c.jobs)-1]]
		if r := lj.r; r.Type == Deleted || r.Type == DeletedUnknown {
			// Gone: no revision will follow to be a delta against it.
			e.last.delete(c.uid)
			continue
		}
		lr := c.last
		var r *lastRev
		if owned {
			// The Writer's records are the encoder's now: keep their JSON.
			if old, ok := e.last.peek(c.uid); ok {
				r = old
				if !r.borrowed && len(e.spare) < maxSpare {
					e.spare = append(e.spare, &lastRev{json: r.json[:0]})
				}
			} else {
				r = &lastRev{}
			}
			r.json, r.refs, r.borrowed = lr.json, lr.refs, true
		} else {
			// Copy: the JSON belongs to the caller.
			r = e.cacheRev(c.uid, len(lr.json))
			r.json = append(r.json[:0], lr.json...)
			r.refs, r.borrowed = slices.Clone(lr.refs), false
		}
		r.seq, r.chain, r.observed, r.proto = lr.seq, lr.chain, lr.observed, lr.proto
		r.obj, r.epoch = *lj.o, e.epoch
		r.obj.Refs = slices.Clip(r.obj.Refs) // appended to by copies only
		e.last.put(c.uid, r)
	}
	e.lastSeq = e.jobs[len(e.jobs)-1].seq
	if len(e.nums)+len(e.newNums) > e.maxNums {
		clear(e.nums)
		e.numsAll = false
	}
	for uid, num := range e.newNums {
		e.nums[uid] = num
	}
	e.done()
	return nil
}

func validate(r *Record) error {
	switch {
	case r.UID == "":
		return fmt.Errorf("%s %s/%s has no UID", r.Kind, r.Namespace, r.Name)
	case len(r.UID) > maxUIDLen || strings.IndexByte(r.UID, 0) >= 0:
		return fmt.Errorf("%s %s/%s: UID %q is not usable as a key", r.Kind, r.Namespace, r.Name, r.UID)
	case r.Kind == "":
		return fmt.Errorf("object %s has no kind", r.UID)
	case len(r.Object) == 0 && r.Type != DeletedUnknown:
		return fmt.Errorf("%s %s/%s (%s) has no object JSON", r.Kind, r.Namespace, r.Name, r.UID)
	case r.Proto && (r.APIVersion != "v1" || r.Kind != "Pod"):
		return fmt.Errorf("%s %s %s/%s (%s) comes as protobuf, which the store keeps only of v1 Pods", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
	}
	for _, ref := range r.Refs {
		if ref == "" || len(ref) > maxUIDLen || strings.IndexByte(ref, 0) >= 0 {
			return fmt.Errorf("%s %s/%s: ref %q is not a usable UID", r.Kind, r.Namespace, r.Name, ref)
		}
	}
	return nil
}

// write is Write's transaction: it resolves the records' objects, encodes
// their values (in parallel, by object) and puts everything.
func (e *encoder) write(tx *bolt.Tx, recs []Record) error {
	b := buckets{
		uids: tx.Bucket(bucketUIDs), objects: tx.Bucket(bucketObjects), records: tx.Bucket(bucketRecords),
		times: tx.Bucket(bucketTime), refs: tx.Bucket(bucketRefs), dicts: tx.Bucket(bucketDicts),
	}
	b.records.FillPercent = recordsFill
	b.objects.FillPercent = appendFill
	b.times.FillPercent = 1.0
	if err := e.comp.sync(b.dicts); err != nil {
		return err
	}
	if err := e.resolve(&b, recs); err != nil {
		return err
	}
	if err := e.encode(); err != nil {
		return err
	}

	arena := e.arena[:0]
	for i := range e.jobs {
		j := &e.jobs[i]
		start := len(arena)
		arena = recordKey(arena, j.o.num, j.seq)
		arena = binary.BigEndian.AppendUint32(arena, j.o.num)
		if err := b.records.Put(arena[start:start+12], j.value); err != nil {
			return err
		}
		if err := b.times.Put(arena[start+4:start+12], arena[start+12:]); err != nil {
			return err
		}
	}
	var gone *bolt.Bucket
	for _, c := range e.order {
		o := e.objects[c.uid]
		start := len(arena)
		arena = binary.BigEndian.AppendUint32(arena, o.num)
		arena = appendObject(arena, o)
		if err := b.objects.Put(arena[start:start+4], arena[start+4:]); err != nil {
			return err
		}
		if o.Deleted && indexedGone(o) {
			// Its deletion, for retention: found by time, oldest first.
			if gone == nil {
				var err error
				if gone, err = tx.CreateBucketIfNotExists(bucketGone); err != nil {
					return err
				}
			}
			if err := gone.Put(goneKey(o), nil); err != nil {
				return err
			}
		}
	}
	e.arena = arena[:0]
	if err := e.comp.flush(b.dicts); err != nil {
		return err
	}
	var jsonBytes uint64
	proto := false
	for i := range recs {
		jsonBytes += uint64(len(recs[i].Object))
		proto = proto || recs[i].Proto
	}
	meta := tx.Bucket(bucketMeta)
	if schema := strconv.Itoa(SchemaVersion); proto && string(meta.Get(metaSchema)) != schema {
		// A trace begun by an older build, which could not read these.
		if err := meta.Put(metaSchema, []byte(schema)); err != nil {
			return err
		}
	}
	total, _ := strconv.ParseUint(string(meta.Get(metaJSONBytes)), 10, 64)
	if err := meta.Put(metaJSONBytes, strconv.AppendUint(nil, total+jsonBytes, 10)); err != nil {
		return err
	}
	// The gone index covers this batch; it covers the file if it covered
	// everything before (else an older build wrote since, and a pruning
	// Writer indexes the file again first: see catchUp).
	if gs := meta.Get(metaGoneSeq); gs != nil {
		if n, err := strconv.ParseUint(string(gs), 10, 64); err == nil && n == e.prevSeq {
			return meta.Put(metaGoneSeq, strconv.AppendUint(nil, e.jobs[len(e.jobs)-1].seq, 10))
		}
	}
	return nil
}

// resolve assigns each record its Seq, finds or makes its object's summary
// and number, updates the summaries and the refs index, and groups the
// records into chains by object.
func (e *encoder) resolve(b *buckets, recs []Record) error {
	e.jobs = slices.Grow(e.jobs[:0], len(recs))[:len(recs)]
	var seq uint64
	if k, _ := b.times.Cursor().Last(); k != nil {
		if len(k) != 8 {
			return fmt.Errorf("%w: time key %x", errValue, k)
		}
		seq = binary.BigEndian.Uint64(k)
	}
	e.prevSeq = seq
	e.current = e.lastSeq != 0 && seq == e.lastSeq
	if !e.current {
		// Written by someone else since, or not by this encoder yet: the
		// cached summaries may be stale.
		e.epoch++
		e.numsAll = false
	}
	if b.uids.Sequence() == 0 {
		// No UID has a number yet: nums will know every one.
		clear(e.nums)
		e.numsAll = true
	}
	for i := range recs {
		r := &recs[i]
		seq++
		r.Seq = seq
		o, err := e.object(b, r)
		if err != nil {
			return err
		}
		c := e.chains[r.UID]
		if c == nil {
			c = &chain{uid: r.UID}
			// The cached revision is a delta base only if it is still the
			// object's last in the file; else it is read back from the file.
			if o.Revisions > 0 {
				if base, ok := e.last.get(r.UID); ok && base.seq == o.LastSeq {
					c.base = base
				} else {
					c.base = e.reload(b, o)
				}
			}
			e.chains[r.UID] = c
			e.order = append(e.order, c)
		}
		if len(r.Object) == 0 {
			r.Object, r.Proto = e.lastObject(c, recs, r)
		}
		c.jobs = append(c.jobs, i)
		e.jobs[i] = job{
			r: r, o: o, seq: seq,
			identity: o.Revisions > 0 && (r.APIVersion != o.APIVersion || r.Kind != o.Kind || r.Namespace != o.Namespace || r.Name != o.Name),
			madeDict: e.comp.dict(e.kind.of(r), r.Object),
		}

		if o.Revisions == 0 {
			o.FirstSeq, o.FirstObserved = seq, r.Observed
		}
		o.LastSeq, o.LastObserved = seq, r.Observed
		o.Revisions++
		o.Deleted = r.Type == Deleted || r.Type == DeletedUnknown
		for _, ref := range r.Refs {
			if slices.Contains(o.Refs, ref) {
				continue
			}
			o.Refs = append(o.Refs, ref)
			num, _, err := e.number(b, ref)
			if err != nil {
				return err
			}
			key := binary.BigEndian.AppendUint32(make([]byte, 0, 8), num)
			if err := b.refs.Put(binary.BigEndian.AppendUint32(key, o.num), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastObject is the object of a DeletedUnknown record that came without
// one: the object as last recorded, earlier in the batch or in the file, or,
// for an object the trace never saw, its identity alone.
func (e *encoder) lastObject(c *chain, recs []Record, r *Record) (obj json.RawMessage, proto bool) {
	if len(c.jobs) > 0 {
		last := &recs[c.jobs[len(c.jobs)-1]]
		return last.Object, last.Proto
	}
	if c.base != nil {
		// A copy: the cache reuses its revisions' memory.
		return bytes.Clone(c.base.json), c.base.proto
	}
	type identity struct {
		Namespace       string `json:"namespace,omitempty"`
		Name            string `json:"name"`
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
	}
	data, _ := json.Marshal(struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Metadata   identity `json:"metadata"`
	}{r.APIVersion, r.Kind, identity{r.Namespace, r.Name, r.UID, r.ResourceVersion}})
	return data, false
}

// reload reads the last revision of o back from the file, for an object
// the cache let go of, so that the bytes on disk do not depend on the size
// of the cache. A revision that cannot be read makes the next one a
// snapshot (nil): the damage is the reader's to report, not the writer's.
func (e *encoder) reload(b *buckets, o *Object) *lastRev {
	var last uint32
	if k, _ := b.dicts.Cursor().Last(); len(k) == 4 {
		last = binary.BigEndian.Uint32(k)
	}
	if e.dicts == nil || e.dicts.last != last {
		ds, err := loadDicts(b.dicts)
		if err != nil {
			return nil
		}
		e.dicts = ds
	}
	// The revision read back is the base of this batch only: its memory
	// comes from, and goes back to, the revisions the cache dropped.
	r := e.spareRev()
	bufs := [2][]byte{r.json[:0], e.scratch}
	rev, chain, err := lastRevision(b.records, e.dicts, o, &bufs)
	e.scratch = bufs[1]
	if err != nil {
		return nil
	}
	e.reloads++
	*r = lastRev{seq: o.LastSeq, chain: chain, json: rev.json, refs: rev.refs, observed: rev.observed, proto: rev.proto}
	e.reloaded = append(e.reloaded, r)
	return r
}

// spareRev returns a revision the cache dropped, or a new one.
func (e *encoder) spareRev() *lastRev {
	if n := len(e.spare); n > 0 {
		r := e.spare[n-1]
		e.spare = e.spare[:n-1]
		return r
	}
	return &lastRev{}
}

// maxNums bounds the cache of object numbers (about 100 to 150 bytes an
// entry): one entry per 128 bytes of the cache budget, within these bounds,
// so that a writer given a small cache (podtrace import) stays small. The
// upper bound is what the 4 MiB budget gave before the default grew to
// 8 MiB: the room went to revisions, not to more numbers.
const (
	minNums = 1024
	maxNums = 32_768
)

// done forgets the batch.
func (e *encoder) done() {
	for i, r := range e.reloaded {
		if len(e.spare) < maxSpare {
			e.spare = append(e.spare, r)
		}
		e.reloaded[i] = nil
	}
	e.reloaded = e.reloaded[:0]
	clear(e.newNums)
	clear(e.objects)
	clear(e.chains)
	clear(e.order)
	e.order = e.order[:0]
	clear(e.jobs)
	e.jobs = e.jobs[:0]
	for _, w := range e.workers {
		w.arena = w.arena[:0]
	}
}

// parallelMin is the smallest batch worth encoding on several goroutines.
const parallelMin = 64

// encode encodes the values of the batch's records: the chains are shared
// among up to GOMAXPROCS workers.
func (e *encoder) encode() error {
	n := 1
	if len(e.jobs) >= parallelMin {
		n = min(runtime.GOMAXPROCS(0), len(e.order), maxWorkers)
	}
	for len(e.workers) < n {
		e.workers = append(e.workers, &worker{e: e})
	}
	var next atomic.Int64
	run := func(w *worker) error {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(e.order) {
				return nil
			}
			if err := w.chain(e.order[i]); err != nil {
				return err
			}
		}
	}
	if n == 1 {
		return run(e.workers[0])
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 1; k < n; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = run(e.workers[k])
		}()
	}
	errs[0] = run(e.workers[0])
	wg.Wait()
	return errors.Join(errs...)
}

// maxWorkers bounds the encoding goroutines of one write.
const maxWorkers = 4

// chain encodes the records of one object in order.
func (w *worker) chain(c *chain) error {
	prev := c.base
	var cur lastRev
	w.kd = nil
	for _, i := range c.jobs {
		j := &w.e.jobs[i]
		if key := w.kind.key; w.kind.of(j.r) != key || w.kd == nil {
			w.kd = w.e.comp.newest(w.kind.key)
		}
		chainLen, err := w.value(j, prev)
		if err != nil {
			return err
		}
		r := j.r
		cur = lastRev{seq: j.seq, chain: chainLen, json: r.Object, refs: r.Refs, observed: unixNano(r.Observed), proto: r.Proto}
		prev = &cur
	}
	c.last = &lastRev{}
	*c.last = cur
	return nil
}

// value encodes the value of j, a delta against prev when prev is not nil
// and that pays, and returns the number of deltas since the last snapshot.
func (w *worker) value(j *job, prev *lastRev) (int, error) {
	r := j.r
	start := len(w.arena)
	if prev == nil || prev.chain >= snapshotEvery-1 {
		var err error
		w.arena, err = w.appendSnapshotValue(w.arena, j)
		j.value = w.arena[start:]
		return 0, err
	}
	listRefs := !slices.Equal(prev.refs, r.Refs)
	w.arena = appendValue(w.arena, r, payloadDelta, listRefs, j.identity, prev.observed)
	bstart := len(w.arena)
	w.arena = binary.AppendUvarint(w.arena, uint64(w.kd.id))
	w.arena = w.delta.appendDelta(w.arena, prev.json, w.kd.deltaIndex(), r.Object)
	if len(w.arena)-bstart <= len(r.Object)/8 {
		j.value = w.arena[start:]
		return prev.chain + 1, nil
	}
	// A big delta: keep whichever of it and a snapshot is smaller.
	delta := bytes.Clone(w.arena[start:])
	var err error
	if w.arena, err = w.appendSnapshotValue(w.arena[:start], j); err != nil {
		return 0, err
	}
	if len(w.arena)-start <= len(delta) {
		j.value = w.arena[start:]
		return 0, nil
	}
	w.arena = append(w.arena[:start], delta...)
	j.value = w.arena[start:]
	return prev.chain + 1, nil
}

// buckets are the buckets a write transaction changes.
type buckets struct {
	uids, objects, records, times, refs, dicts *bolt.Bucket
}

// number returns the number of uid, giving it the next one if it has none;
// fresh says it did.
func (e *encoder) number(b *buckets, uid string) (num uint32, fresh bool, err error) {
	if n, ok := e.nums[uid]; ok {
		return n, false, nil
	}
	if n, ok := e.newNums[uid]; ok {
		return n, false, nil
	}
	key := []byte(uid)
	var v []byte
	if !e.numsAll {
		v = b.uids.Get(key)
	}
	if v != nil {
		if len(v) != 4 {
			return 0, false, fmt.Errorf("%w: uids value %x of %q", errValue, v, uid)
		}
		num = binary.BigEndian.Uint32(v)
	} else {
		n, err := b.uids.NextSequence()
		if err != nil {
			return 0, false, err
		}
		if n > math.MaxUint32 {
			return 0, false, fmt.Errorf("the trace holds %d objects, its limit", uint32(math.MaxUint32))
		}
		num, fresh = uint32(n), true
		if err := b.uids.Put(key, numKey(num)); err != nil {
			return 0, false, err
		}
	}
	e.newNums[uid] = num
	return num, fresh, nil
}

// object returns the summary of r's object, loading it on first use in the
// batch. A new object gets r's identity and no revisions.
func (e *encoder) object(b *buckets, r *Record) (*Object, error) {
	if o := e.objects[r.UID]; o != nil {
		return o, nil
	}
	if lr, ok := e.last.peek(r.UID); ok && lr.epoch == e.epoch && e.current {
		// The summary as this encoder last wrote it, which nobody changed.
		o := new(Object)
		*o = lr.obj
		e.objects[r.UID] = o
		return o, nil
	}
	num, fresh, err := e.number(b, r.UID)
	if err != nil {
		return nil, err
	}
	o := &Object{UID: r.UID, APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, num: num}
	if fresh {
		// A new number has no summary yet.
	} else if v := b.objects.Get(numKey(num)); v != nil {
		parsed, err := parseObject(num, v)
		if err != nil {
			return nil, err
		}
		o = &parsed
	}
	e.objects[r.UID] = o
	return o, nil
}

// appendSnapshotValue appends the value of j as a snapshot: the smallest of
// a delta against its kind's dictionary, a zstd frame compressed with it and
// the JSON itself.
func (w *worker) appendSnapshotValue(dst []byte, j *job) ([]byte, error) {
	r := j.r
	kd := w.kd
	start := len(dst)
	dst = appendValue(dst, r, payloadDictDelta, len(r.Refs) > 0, j.identity, 0)
	bstart := len(dst)
	dst = w.appendDictDelta(dst, kd, r.Object)
	if !j.madeDict && poorlyCompressed(len(dst)-bstart, len(r.Object)) {
		// The kind's dictionary lacks much of what this object has (a
		// pod that started running, when all it knew was pending pods):
		// make one that has it.
		if nkd := w.e.comp.grow(w.kind.key, r.Object); nkd != nil {
			kd, w.kd = nkd, nkd
			dst = w.appendDictDelta(dst[:bstart], kd, r.Object)
		}
	}
	payload := byte(payloadDictDelta)
	if n := len(dst) - bstart; w.e.zstdAbove > 0 && n*w.e.zstdAbove > len(r.Object) {
		// Still poor: zstd's entropy coding may do better than a delta.
		enc, err := kd.encoder()
		if err != nil {
			return dst, err
		}
		w.scratch = enc.EncodeAll(r.Object, w.scratch[:0])
		if len(w.scratch) < n {
			dst, payload = append(dst[:bstart], w.scratch...), payloadZstd
		}
	}
	if len(dst)-bstart >= len(r.Object) {
		dst, payload = append(dst[:bstart], r.Object...), payloadRaw
	}
	dst[start+1] = dst[start+1]&^payloadMask | payload
	return dst, nil
}

// appendDictDelta appends the body of a dict-delta: kd's id and the delta
// from kd to json.
func (w *worker) appendDictDelta(dst []byte, kd *kindDict, json []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(kd.id))
	return w.delta.appendDelta(dst, nil, kd.deltaIndex(), json)
}

// poorlyCompressed: a snapshot of n bytes for a JSON of size bytes shows a
// dictionary that lacks what the JSON has; objects of a kind that only differ
// in names, UIDs and times take less than a tenth.
func poorlyCompressed(n, size int) bool { return size >= dictGrowMin && n*4 > size }

var errReadOnly = errors.New("it is open read-only; open it without Options.ReadOnly to write")
