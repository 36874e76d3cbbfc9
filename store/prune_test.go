package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// obj builds records of one object for the pruning tests: small JSON with
// the identity, a resourceVersion that changes with each record, and the
// object's refs (owners, an Event's involvedObject).
type obj struct {
	apiVersion, kind, ns, name, uid string
	refs                            []string
	rv                              int
}

func newObj(kind, ns, name string, refs ...string) *obj {
	apiVersion := "v1"
	switch kind {
	case "ReplicaSet", "Deployment":
		apiVersion = "apps/v1"
	case "Job":
		apiVersion = "batch/v1"
	}
	return &obj{apiVersion: apiVersion, kind: kind, ns: ns, name: name, uid: "uid-" + strings.ToLower(kind) + "-" + name, refs: refs}
}

func (o *obj) rec(typ EventType, at time.Time) Record {
	o.rv++
	js := fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":"%d"},"status":{"n":%d}}`,
		o.apiVersion, o.kind, o.name, o.ns, o.uid, o.rv, o.rv)
	return Record{Observed: at, Type: typ, APIVersion: o.apiVersion, Kind: o.kind, Namespace: o.ns, Name: o.name,
		UID: o.uid, ResourceVersion: fmt.Sprint(o.rv), Refs: slices.Clone(o.refs), Object: []byte(js)}
}

// life returns the records of an object created at from, changed n-2
// times a second apart, and deleted at to (if not zero).
func (o *obj) life(from, to time.Time, n int) []Record {
	recs := []Record{o.rec(Added, from)}
	for i := 1; i < n-1 || to.IsZero() && i < n; i++ {
		recs = append(recs, o.rec(Updated, from.Add(time.Duration(i)*time.Second)))
	}
	if !to.IsZero() {
		recs = append(recs, o.rec(Deleted, to))
	}
	return recs
}

// pruneWriter is a Writer with retention and a clock the test moves, in a
// session.
type pruneWriter struct {
	*Writer
	clock time.Time
	warns []string
}

func newPruneWriter(t *testing.T, path string, r Retention, clock time.Time) *pruneWriter {
	t.Helper()
	pw := &pruneWriter{clock: clock}
	w, err := NewWriter(path, Options{Timeout: time.Second, NoCompact: true, Retention: r, Warn: func(m string) { pw.warns = append(pw.warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	pw.Writer = w
	w.now = func() time.Time { return pw.clock }
	if _, err := w.BeginSession(Session{Server: "https://127.0.0.1:6443", Started: clock}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return pw
}

// flush writes recs (stamped in the session) at the clock and returns what
// Flush returned; with no recs it moves the clock by AliveEvery first, so
// that the flush runs.
func (pw *pruneWriter) flush(t *testing.T, recs ...Record) {
	t.Helper()
	if len(recs) == 0 {
		pw.clock = pw.clock.Add(AliveEvery)
	}
	for i := range recs {
		recs[i].Session = pw.session
	}
	pw.Add(recs...)
	if _, err := pw.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// kept returns the "Kind ns/name" of every object in the trace.
func kept(t *testing.T, path string) []string {
	t.Helper()
	db := openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	objs, err := db.Objects(ObjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Kind+" "+o.Namespace+"/"+o.Name)
	}
	slices.Sort(out)
	return out
}

// TestPruneByAge: pods gone longer than the retention go, with their
// Events, their gone dependents and the owners nothing else keeps; live
// pods, what is about them or belongs to them, shared owners and
// cluster-scoped objects stay, their histories as they were.
func TestPruneByAge(t *testing.T) {
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	now := t0.Add(10 * 24 * time.Hour)
	old := t0.Add(time.Hour)           // gone 10 days ago
	recent := now.Add(-24 * time.Hour) // gone a day ago

	ns := newObj("Namespace", "", "ci")
	node := newObj("Node", "", "node-1")
	gone := newObj("Node", "", "node-gone")
	rsLive := newObj("ReplicaSet", "ci", "web-1")
	rsGone := newObj("ReplicaSet", "ci", "web-0")
	job := newObj("Job", "ci", "build")
	podA := newObj("Pod", "ci", "web-1-a", rsLive.uid) // gone long ago
	podB := newObj("Pod", "ci", "web-1-b", rsLive.uid) // live, changed long ago
	podC := newObj("Pod", "ci", "web-0-c", rsGone.uid) // gone long ago with its owner
	podD := newObj("Pod", "ci", "build-d", job.uid)    // gone recently, its owner long ago
	evA := newObj("Event", "ci", "web-1-a.1", podA.uid)
	evB := newObj("Event", "ci", "web-1-b.1", podB.uid)  // expired long ago: about a live pod
	evRS := newObj("Event", "ci", "web-1.1", rsLive.uid) // expired long ago: about a live owner
	evNode := newObj("Event", "default", "node-1.1", node.uid)
	evC := newObj("Event", "ci", "web-0-c.1", podC.uid)
	evRSGone := newObj("Event", "ci", "web-0.1", rsGone.uid)
	secA := newObj("Secret", "ci", "web-1-a-pull", podA.uid)     // gone with its pod
	secAlive := newObj("Secret", "ci", "web-1-a-keep", podA.uid) // not gone: stays
	secB := newObj("Secret", "ci", "web-1-b-pull", podB.uid)     // gone long ago, its pod live
	secD := newObj("Secret", "ci", "build-d-pull", podD.uid)     // gone long ago, its pod recently

	var recs []Record
	add := func(r ...Record) { recs = append(recs, r...) }
	add(ns.life(t0, time.Time{}, 2)...)
	add(node.life(t0, time.Time{}, 3)...)
	add(gone.life(t0, old, 2)...)
	add(rsLive.life(t0, time.Time{}, 3)...)
	add(rsGone.life(t0, old.Add(time.Minute), 3)...)
	add(job.life(t0, old, 2)...)
	add(podA.life(t0, old, 5)...)
	add(podB.life(t0, time.Time{}, 4)...)
	add(podC.life(t0, old, 4)...)
	add(evA.rec(Added, t0), evB.rec(Added, t0), evRS.rec(Added, t0), evNode.rec(Added, t0), evC.rec(Added, t0), evRSGone.rec(Added, t0))
	add(evB.rec(Deleted, old), evRS.rec(Deleted, old), evNode.rec(Deleted, old), evRSGone.rec(Deleted, old))
	add(secA.life(t0, old, 2)...)
	add(secAlive.life(t0, time.Time{}, 1)...)
	add(secB.life(t0, old, 2)...)
	add(secD.life(t0, old, 2)...)
	add(podD.life(t0, recent, 3)...)
	slices.SortStableFunc(recs, func(a, b Record) int { return a.Observed.Compare(b.Observed) })

	// Written while they happened, with no retention yet.
	w0, err := NewWriter(path, Options{NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	w0.Add(recs...)
	if _, err := w0.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w0.Close(); err != nil {
		t.Fatal(err)
	}
	histories := func(uids ...string) map[string][]Record {
		db := openDB(t, path, Options{ReadOnly: true})
		defer db.Close()
		out := map[string][]Record{}
		for _, uid := range uids {
			h, err := db.History(uid)
			if err != nil {
				t.Fatal(err)
			}
			out[uid] = h
		}
		return out
	}
	keptUIDs := []string{ns.uid, node.uid, gone.uid, rsLive.uid, job.uid, podB.uid, podD.uid, evB.uid, secAlive.uid, secB.uid, secD.uid}
	before := histories(keptUIDs...)

	w := newPruneWriter(t, path, Retention{Age: 7 * 24 * time.Hour}, now)
	w.flush(t) // the session's first flush prunes
	want := []string{
		"Event ci/web-1-b.1",     // about a live pod
		"Job ci/build",           // its pod is kept
		"Namespace /ci",          // cluster-scoped
		"Node /node-1",           // cluster-scoped
		"Node /node-gone",        // cluster-scoped, even gone
		"Pod ci/build-d",         // gone a day ago
		"Pod ci/web-1-b",         // live
		"ReplicaSet ci/web-1",    // live, owns a live pod
		"Secret ci/build-d-pull", // belongs to a kept pod
		"Secret ci/web-1-a-keep", // not gone
		"Secret ci/web-1-b-pull", // belongs to a live pod
	}
	if diff := cmp.Diff(want, kept(t, path)); diff != "" {
		t.Errorf("kept after pruning (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, histories(keptUIDs...), recordOpts); diff != "" {
		t.Errorf("histories of the kept objects changed (-before +after):\n%s", diff)
	}

	db := openDB(t, path, Options{ReadOnly: true})
	refs, err := db.Referring(rsLive.uid)
	if err != nil || len(refs) != 1 || refs[0].UID != podB.uid {
		t.Errorf("Referring(live ReplicaSet) = %v, %v; want its live pod alone", refs, err)
	}
	prunes, err := db.Prunes()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantPrune := []Prune{{
		Session: 1, Reason: PruneAge, Retain: 7 * 24 * time.Hour, First: w.clock, Last: w.clock,
		Pods: 2, Objects: 9, OldestGone: old, NewestGone: old, Before: w.clock.Add(-7 * 24 * time.Hour),
	}}
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		f := p.Last().String()
		return f == ".Records" || f == ".Bytes"
	}, cmp.Ignore())
	if diff := cmp.Diff(wantPrune, prunes, ignore); diff != "" {
		t.Errorf("Prunes (-want +got):\n%s", diff)
	}
	// Pods A and C (5 and 4), their Events (1 each), the gone owner and its
	// Event (3 and 2), the gone Secret (2), the Events about the live
	// owner and the node (2 each).
	if p := prunes[0]; p.Records != 5+4+1+1+3+2+2+2+2 || p.Bytes == 0 {
		t.Errorf("pruned %d records, %d bytes; want 22 records", p.Records, p.Bytes)
	}
	if st := w.PruneStats(); st.Age.Pods != 2 || st.Age.Objects != 9 || st.Transactions != 1 || st.UsedBytes == 0 {
		t.Errorf("PruneStats = %+v", st)
	}

	// Again: nothing more to prune, and what was recorded stays so.
	w.flush(t)
	w.flush(t)
	db = openDB(t, path, Options{ReadOnly: true})
	again, _ := db.Prunes()
	db.Close()
	if diff := cmp.Diff(prunes, again); diff != "" {
		t.Errorf("pruning again changed what was recorded (-before +after):\n%s", diff)
	}
	if st := w.PruneStats(); st.Transactions != 1 {
		t.Errorf("pruning again ran %d transactions in all, want the first alone", st.Transactions)
	}

	// A late record about a pruned pod is a new object; the write caches
	// forgot the pruned ones. Seqs go on rising (checkIndexes).
	late := evA.rec(Updated, w.clock)
	live := podB.rec(Updated, w.clock)
	w.flush(t, late, live)
	db = openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	if h, err := db.History(evA.uid); err != nil || len(h) != 1 {
		t.Errorf("late Event about a pruned pod: %d records, %v; want 1", len(h), err)
	}
	if h, err := db.History(podB.uid); err != nil || len(h) != 5 {
		t.Errorf("live pod: %d records, %v; want 5", len(h), err)
	}
}

// The file's last record is never pruned, so that the next record's Seq is
// still greater than every Seq the file held, for readers that follow it
// (and for writers of older builds). It is pruned after the next record.
func TestPruneKeepsTheLastRecord(t *testing.T) {
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	pod := newObj("Pod", "ci", "last")
	w0, err := NewWriter(path, Options{NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	w0.Add(pod.life(t0, t0.Add(time.Minute), 3)...)
	if _, err := w0.Flush(); err != nil {
		t.Fatal(err)
	}
	w0.Close()

	w := newPruneWriter(t, path, Retention{Age: time.Hour}, t0.Add(24*time.Hour))
	w.flush(t)
	if got := kept(t, path); len(got) != 1 {
		t.Fatalf("kept %v, want the pod whose deletion is the last record", got)
	}
	other := newObj("Pod", "ci", "next")
	w.flush(t, other.rec(Added, w.clock))
	if got, want := kept(t, path), []string{"Pod ci/next"}; !slices.Equal(got, want) {
		t.Errorf("kept %v after the next record, want %v", got, want)
	}
	db := openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	h, err := db.History(other.uid)
	if err != nil || len(h) != 1 || h[0].Seq != 4 {
		t.Errorf("the next record: %+v, %v; want Seq 4", h, err)
	}
}

// With a size budget the oldest gone pods go first, until the pages in use
// are under 90% of it; live pods stay, even when the budget cannot be met
// without them, and the Writer says so once.
func TestPruneBySize(t *testing.T) {
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	rv := 0
	var recs []Record
	const gonePods, livePods = 300, 40
	for i := range gonePods + livePods {
		p := newFakePod(i, "ci", &rv)
		created := t0.Add(time.Duration(i) * time.Second)
		for k := range 6 {
			r := p.record(0)
			r.Observed = created.Add(time.Duration(k) * time.Millisecond)
			if k == 5 && i < gonePods {
				// Deleted in an order that is not that of their creation.
				r.Type = Deleted
				r.Observed = t0.Add(time.Hour + time.Duration((i*7)%gonePods)*time.Second)
			}
			recs = append(recs, r)
		}
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return a.Observed.Compare(b.Observed) })
	w0, err := NewWriter(path, Options{NoCompact: true})
	if err != nil {
		t.Fatal(err)
	}
	w0.Add(recs...)
	if _, err := w0.Flush(); err != nil {
		t.Fatal(err)
	}
	w0.Close()
	db := openDB(t, path, Options{})
	full, _, err := db.pageBytes()
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	budget := full / 2
	w := newPruneWriter(t, path, Retention{MaxBytes: budget}, t0.Add(2*time.Hour))
	for range 20 {
		w.flush(t)
	}
	if got := w.PruneStats().UsedBytes; got > budget*9/10 || got == 0 {
		t.Errorf("pages in use %d after pruning, want at most 90%% of the budget %d (%d before)", got, budget, full)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	pods, err := db.Objects(ObjectFilter{Kind: "Pod"})
	if err != nil {
		t.Fatal(err)
	}
	prunes, _ := db.Prunes()
	db.Close()
	var live int
	newestPruned := time.Time{}
	keptGone := map[string]time.Time{}
	for _, p := range pods {
		if !p.Deleted {
			live++
		} else {
			keptGone[p.UID] = p.LastObserved
		}
	}
	if live != livePods {
		t.Errorf("%d live pods kept, want all %d", live, livePods)
	}
	if len(prunes) != 1 || prunes[0].Reason != PruneSize || prunes[0].MaxBytes != budget || prunes[0].Pods == 0 {
		t.Fatalf("Prunes = %+v, want one for size", prunes)
	}
	newestPruned = prunes[0].NewestGone
	if got, want := prunes[0].Pods+len(keptGone), gonePods; got != want {
		t.Errorf("%d pruned + %d kept gone pods, want %d", prunes[0].Pods, len(keptGone), want)
	}
	for uid, at := range keptGone {
		if !at.After(newestPruned) {
			t.Errorf("gone pod %s kept (deleted %s) while one deleted later (%s) was pruned: not oldest first", uid, at, newestPruned)
		}
	}
	if !prunes[0].Before.Equal(newestPruned) || !prunes[0].OldestGone.Equal(t0.Add(time.Hour)) {
		t.Errorf("Prune %+v: want the oldest deletion %s first, Before = NewestGone", prunes[0], t0.Add(time.Hour))
	}
	if len(w.warns) != 0 {
		t.Errorf("warned %q; the budget can be met", w.warns)
	}
	w.Close()

	// A budget below the live pods' history: every gone pod goes, the live
	// stay, and the Writer says once that it cannot do more.
	w2 := newPruneWriter(t, path, Retention{MaxBytes: 64 << 10}, t0.Add(3*time.Hour))
	// A record after the last deletion, which is otherwise kept (see
	// TestPruneKeepsTheLastRecord).
	w2.flush(t, newObj("Pod", "ci", "late").rec(Added, w2.clock))
	for range 30 {
		w2.flush(t)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	pods, _ = db.Objects(ObjectFilter{Kind: "Pod"})
	db.Close()
	live = 0
	for _, p := range pods {
		if !p.Deleted {
			live++
		}
	}
	if live != livePods+1 || len(pods) != live {
		t.Errorf("%d pods kept under a budget too small, %d live; want the %d live ones alone", len(pods), live, livePods+1)
	}
	if len(w2.warns) != 1 || !strings.Contains(w2.warns[0], "nothing more can be pruned") {
		t.Errorf("warnings %q; want one saying nothing more can be pruned", w2.warns)
	}
}

// A trace written before the gone index (or by an older build since) is
// indexed by the first pruning Writer, in transactions of its own, then
// pruned like any.
func TestPruneIndexesAnOlderTrace(t *testing.T) {
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	var recs []Record
	var live []string
	for i := range 50 {
		p := newObj("Pod", "ci", fmt.Sprintf("p%d", i))
		end := t0.Add(time.Hour)
		if i%5 == 0 {
			end = time.Time{}
			live = append(live, "Pod ci/"+p.name)
		}
		recs = append(recs, p.life(t0, end, 3)...)
	}
	recs = append(recs, newObj("Node", "", "n").rec(Added, t0.Add(2*time.Hour)))
	db := openDB(t, path, Options{})
	writeAll(t, db, recs, 40)
	// As an older build leaves it: no index, no mark.
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketGone); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete(metaGoneSeq)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	w := newPruneWriter(t, path, Retention{Age: time.Hour}, t0.Add(3*time.Hour))
	w.flush(t)
	slices.Sort(live)
	if got := kept(t, path); !slices.Equal(got, append([]string{"Node /n"}, live...)) {
		t.Errorf("kept %v, want the node and the live pods %v", got, live)
	}
	db = openDB(t, path, Options{ReadOnly: true})
	defer db.Close()
	err = db.view(func(tx *bolt.Tx) error {
		if gs := string(tx.Bucket(bucketMeta).Get(metaGoneSeq)); gs == "" {
			return fmt.Errorf("no %s after the catch-up", metaGoneSeq)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// A prune transaction deletes a bounded number of keys and takes
// milliseconds; a flush prunes for a bounded time and leaves the rest to
// the next: pruning never holds the file long while records wait.
func TestPruneTransactionIsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10,000 pods")
	}
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	rv := 0
	const pods = 10000
	db := openDB(t, path, Options{})
	for b := 0; b < pods; b += 1000 {
		var recs []Record
		for i := b; i < b+1000; i++ {
			p := newFakePod(i, "ci", &rv)
			for k := range 5 {
				r := p.record(0)
				r.Observed = t0.Add(time.Duration(i)*time.Millisecond + time.Duration(k)*time.Microsecond)
				if k == 4 {
					r.Type = Deleted
				}
				recs = append(recs, r)
			}
			recs = append(recs, fakeEvent(p, i, 0))
		}
		if err := db.Write(recs); err != nil {
			t.Fatal(err)
		}
	}
	// The last record is a live node's: every pod may go.
	if err := db.Write([]Record{newObj("Node", "", "n").rec(Added, t0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	spare := filepath.Join(t.TempDir(), "spare.db")
	if data, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(spare, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// prune flushes until every pod is pruned, and returns the stats, the
	// flushes and the longest flush.
	prune := func(path string) (PruneStats, int, time.Duration) {
		w := newPruneWriter(t, path, Retention{Age: time.Hour}, t0.Add(48*time.Hour))
		var flushes int
		var longest time.Duration
		for flushes < 1000 {
			began := time.Now()
			w.flush(t)
			flushes++
			longest = max(longest, time.Since(began))
			if st := w.PruneStats(); st.Age.Pods == pods {
				break
			}
		}
		st := w.PruneStats()
		if st.Age.Pods != pods {
			t.Fatalf("pruned %d pods, want %d", st.Age.Pods, pods)
		}
		return st, flushes, longest
	}
	st, flushes, longest := prune(path)
	t.Logf("FIGURE prune: %d pods (%d records, %s) in %d transactions over %d flushes; longest transaction %s, longest flush %s",
		st.Age.Pods, st.Age.Records, sizeText(st.Age.Bytes), st.Transactions, flushes, st.MaxTx.Round(time.Microsecond), longest.Round(time.Microsecond))
	// 60,000 records in transactions of at most pruneTxKeys keys each.
	if st.Transactions < 10 {
		t.Errorf("%d transactions: want many small ones", st.Transactions)
	}
	// Generous on a shared machine: a transaction of 4,096 keys takes a few
	// milliseconds; the flush budget is pruneFlushTime plus one transaction.
	if st.MaxTx > time.Second {
		t.Errorf("longest prune transaction %s, want well under a second", st.MaxTx)
	}
	if longest > pruneFlushTime+st.MaxTx+time.Second {
		t.Errorf("longest flush %s, want at most the pruning budget %s and one transaction", longest, pruneFlushTime)
	}

	// Past its budget a flush leaves the rest to the next: with no budget
	// at all, each flush prunes in one transaction. (How many flushes the
	// 100 ms budget takes depends on the machine's speed.)
	defer func(d time.Duration) { pruneFlushTime = d }(pruneFlushTime)
	pruneFlushTime = 0
	st, flushes, _ = prune(spare)
	if flushes < st.Transactions {
		t.Errorf("with no pruning budget, %d transactions over %d flushes: want one a flush", st.Transactions, flushes)
	}
}

// Churn with retention: once pruning keeps up, bbolt reuses the pages it
// frees and the file's pages stop growing.
func TestPruneFileStopsGrowing(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 12,000 pods")
	}
	path := tracePath(t)
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	rv := 0
	w := newPruneWriter(t, path, Retention{Age: time.Minute}, t0)
	live := map[int]*fakePod{}
	var sizes []int64
	events := 0
	// A minute of churn per round: 200 pods created and 200 deleted (each
	// lives 2 minutes), with revisions between.
	for round := range 60 {
		var recs []Record
		for i := round * 200; i < round*200+200; i++ {
			p := newFakePod(i, "ci", &rv)
			live[i] = p
			r := p.record(0)
			r.Observed = w.clock
			recs = append(recs, r)
		}
		for i, p := range live {
			r := p.record(0)
			r.Observed = w.clock
			if i < (round-1)*200 {
				r.Type = Deleted
				delete(live, i)
			}
			events++
			recs = append(recs, r, fakeEvent(p, events, 0))
		}
		w.clock = w.clock.Add(time.Minute)
		w.flush(t, recs...)
		for w.pruning.more {
			w.flush(t)
		}
		db := openDB(t, path, Options{ReadOnly: true})
		st, err := db.Stats()
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.DataBytes)
	}
	t.Logf("FIGURE churn with retention: pages %s after 10 minutes, %s after 30, %s after 60", sizeText(sizes[9]), sizeText(sizes[29]), sizeText(sizes[59]))
	if sizes[59] > sizes[29]+sizes[29]/20 {
		t.Errorf("the file's pages grew from %d to %d between minutes 30 and 60 of steady churn: freed pages not reused", sizes[29], sizes[59])
	}
}
