package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workload generates the records of a recording: pods going through their
// lifecycle with about 200 in flight at a time, their revisions interleaved
// as a recorder sees them, and events about them.
type workload struct {
	rv        int
	revisions int // revisions per pod
	events    int // events per pod
	next      int // next pod to start
	active    []*fakePod
	n         int
}

func newWorkload(revisions, events int) *workload {
	return &workload{rv: 1000, revisions: revisions, events: events}
}

// batch returns the next n records.
func (w *workload) batch(n int) []Record {
	recs := make([]Record, 0, n)
	for len(recs) < n {
		for len(w.active) < 200 {
			w.active = append(w.active, newFakePod(w.next, "ns-"+strconv.Itoa(w.next%7), &w.rv))
			w.next++
		}
		i := w.n % len(w.active)
		w.n++
		p := w.active[i]
		if p.rev > 0 && w.events > 0 && w.n%(w.revisions/w.events+1) == 0 {
			recs = append(recs, fakeEvent(p, w.n, 1))
			continue
		}
		recs = append(recs, p.record(1))
		if p.rev >= w.revisions {
			w.active[i] = w.active[len(w.active)-1]
			w.active = w.active[:len(w.active)-1]
		}
	}
	return recs
}

// cpuTime is the CPU time the process has used, in user and system mode:
// on a shared machine it says what a write costs better than the clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func jsonBytes(recs []Record) int {
	n := 0
	for _, r := range recs {
		n += len(r.Object)
	}
	return n
}

// benchDir returns a directory on disk for a benchmark's trace:
// $PODTRACE_BENCH_DIR, or one under the system's temporary directory.
func benchDir(b *testing.B) string {
	if d := os.Getenv("PODTRACE_BENCH_DIR"); d != "" {
		return d
	}
	d, err := os.MkdirTemp(diskTempDir, "podtrace-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// benchBatch is the records written per transaction in BenchmarkHistory's
// trace.
const benchBatch = 2000

// BenchmarkWrite measures ingest of pod revisions (about 3 KB of JSON each):
// revisions written per second, and the bytes the trace takes per revision
// and as a share of the JSON, as written and after Compact.
//
//	long-100rev:     pods of 100 revisions each, a few status fields apart
//	lifecycle-7rev:  pods created, scheduled, started, restarted, deleted in
//	                 7 revisions, and 2 events each
func BenchmarkWrite(b *testing.B) {
	for _, tc := range []struct {
		name              string
		revisions, events int
		batch             int // records per transaction: a flush of a Writer
	}{
		// A recorder that flushes every second at 50,000 revisions/s
		// writes batches of BatchSize; one that flushes every 40 ms, 2,000.
		{"long-100rev/batch=10000", 100, 0, BatchSize},
		{"long-100rev/batch=2000", 100, 0, 2000},
		{"lifecycle-7rev/batch=10000", 7, 2, BatchSize},
		{"lifecycle-7rev/batch=2000", 7, 2, 2000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(benchDir(b), "trace.db")
			db, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			w := newWorkload(tc.revisions, tc.events)
			js := 0
			var elapsed, cpu time.Duration
			b.ResetTimer()
			for done := 0; done < b.N; {
				b.StopTimer()
				batch := w.batch(min(tc.batch, b.N-done))
				js += jsonBytes(batch)
				b.StartTimer()
				start, startCPU := time.Now(), cpuTime()
				if err := db.Write(batch); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				cpu += cpuTime() - startCPU
				done += len(batch)
			}
			b.StopTimer()
			st, err := db.Stats()
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
			_, compacted, err := Compact(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(n/elapsed.Seconds(), "revisions/s")
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/rev")
			b.ReportMetric(float64(js)/n, "json-B/rev")
			b.ReportMetric(float64(st.DataBytes)/n, "disk-B/rev")
			b.ReportMetric(100*float64(st.DataBytes)/float64(js), "disk-%json")
			b.ReportMetric(100*float64(compacted)/float64(js), "compacted-%json")
			os.Remove(path)
		})
	}
}

// historyTrace is a trace for BenchmarkHistory: one pod of 1,000 revisions
// among the records of many others.
type historyTrace struct {
	path string
	uid  string
	want []Record
}

var historyTraces = map[int]*historyTrace{}

// buildHistoryTrace writes n records, among them the 1,000 revisions of one
// pod spread over the whole trace.
func buildHistoryTrace(b *testing.B, n int) *historyTrace {
	if ht := historyTraces[n]; ht != nil {
		return ht
	}
	dir, err := os.MkdirTemp(diskTempDir, "podtrace-history-")
	if err != nil {
		b.Fatal(err)
	}
	ht := &historyTrace{path: filepath.Join(dir, "trace.db")}
	w, err := NewWriter(ht.path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	rv := 0
	target := newFakePod(1<<30, "ci", &rv)
	ht.uid = target.uid
	wl := newWorkload(100, 2)
	every := n / 1000
	for i := 0; i < n; i += benchBatch {
		batch := wl.batch(min(benchBatch, n-i))
		for j := range batch {
			if (i+j)%every == 0 && target.rev < 1000 {
				batch[j] = target.record(1)
			}
		}
		w.Add(batch...)
		if _, err := w.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	historyTraces[n] = ht
	return ht
}

// BenchmarkHistory measures History of a pod with 1,000 revisions in a trace
// of 100,000 records ($PODTRACE_BENCH_RECORDS to change; 1000000 for a
// large one): opening the trace read-only, one range scan, decoding.
func BenchmarkHistory(b *testing.B) {
	n := 100_000
	if s := os.Getenv("PODTRACE_BENCH_RECORDS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1000 {
			b.Fatalf("PODTRACE_BENCH_RECORDS=%q: want a number of records >= 1000", s)
		}
	}
	b.Run("records="+strconv.Itoa(n), func(b *testing.B) {
		ht := buildHistoryTrace(b, n)
		var st Stats
		for b.Loop() {
			db, err := Open(ht.path, Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			recs, err := db.History(ht.uid)
			if err != nil {
				b.Fatal(err)
			}
			if len(recs) != 1000 {
				b.Fatalf("History: %d revisions, want 1000", len(recs))
			}
			if st.Records == 0 {
				st, _ = db.Stats()
			}
			db.Close()
		}
		b.ReportMetric(float64(st.FileBytes)/(1<<20), "trace-MiB")
	})
	// What `podtrace report` reads of a trace: every pod's history, its
	// Events' and its owners', almost all of it deltas. An op reads them
	// all; $PODTRACE_BENCH_TRACE names a recorded trace to read instead of
	// the generated one of 200 pods (e.g. the 1,000-pod trace of issue 7).
	b.Run("report", func(b *testing.B) {
		path := os.Getenv("PODTRACE_BENCH_TRACE")
		if path == "" {
			path = buildReportTrace(b, 200).path
		}
		db, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		pods, err := db.Objects(ObjectFilter{Kind: "Pod"})
		if err != nil {
			b.Fatal(err)
		}
		var recs, js int
		start := cpuTime()
		for b.Loop() {
			recs, js = readLikeReport(b, db, pods)
		}
		// The process's CPU time, the collector's included: on a shared
		// machine it says more than the clock.
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N)/float64(recs), "cpu-ns/record")
		b.ReportMetric(float64(recs), "records")
		b.ReportMetric(float64(js)/float64(recs), "json-B/record")
	})
}

// reportTrace is a trace for BenchmarkHistory's report case: pods of 100
// revisions, each with 4 Events of 25 revisions (their count going up), the
// shape of the traces `podtrace report` reads.
type reportTrace struct {
	path string
	pods []string // UIDs
}

var reportTraces = map[int]*reportTrace{}

// eventRevision returns revision count of Event k about pod p (fakeEvent
// k, its count and lastTimestamp moved on).
func eventRevision(p *fakePod, k, count int, session uint32) Record {
	r := fakeEvent(p, k, session)
	if count > 1 {
		r.Type = Updated
	}
	at := r.Observed.Format(time.RFC3339)
	r.Observed = r.Observed.Add(time.Duration(count-1) * 7 * time.Second)
	obj := strings.Replace(string(r.Object), `"count":1,`, `"count":`+strconv.Itoa(count)+`,`, 1)
	obj = strings.Replace(obj, `"lastTimestamp":"`+at+`"`, `"lastTimestamp":"`+r.Observed.Format(time.RFC3339)+`"`, 1)
	r.Object = []byte(obj)
	return r
}

// buildReportTrace writes the records of pods pods as a recorder sees them:
// every pod's revisions and its Events' interleaved with the others'.
func buildReportTrace(b *testing.B, pods int) *reportTrace {
	if rt := reportTraces[pods]; rt != nil {
		return rt
	}
	dir, err := os.MkdirTemp(diskTempDir, "podtrace-report-")
	if err != nil {
		b.Fatal(err)
	}
	rt := &reportTrace{path: filepath.Join(dir, "trace.db")}
	w, err := NewWriter(rt.path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	rv := 0
	fps := make([]*fakePod, pods)
	for i := range fps {
		fps[i] = newFakePod(i, "ns-"+strconv.Itoa(i%7), &rv)
		rt.pods = append(rt.pods, fps[i].uid)
	}
	// Their ReplicaSets, recorded as a recorder would.
	rss := map[string]bool{}
	for _, p := range fps {
		if !rss[p.rsUID] {
			rss[p.rsUID] = true
			w.Add(Record{Session: 1, Observed: p.created, Type: Initial, APIVersion: "apps/v1", Kind: "ReplicaSet",
				Namespace: p.ns, Name: p.rsName, UID: p.rsUID, ResourceVersion: "1",
				Object: []byte(`{"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"name":"` + p.rsName + `","namespace":"` + p.ns +
					`","uid":"` + p.rsUID + `","resourceVersion":"1"},"spec":{"replicas":500},"status":{"replicas":500}}`)})
		}
	}
	for round := range 100 {
		for i, p := range fps {
			w.Add(p.record(1))
			// 4 Events of 25 revisions each.
			w.Add(eventRevision(p, i*4+round%4, round/4+1, 1))
			if w.Pending() >= benchBatch {
				if _, err := w.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	reportTraces[pods] = rt
	return rt
}

// readLikeReport makes the store calls `podtrace report` makes for each pod
// (cmd/podtrace/app.loadInput): History of the pod, Referring, History of
// every object that refers to it and of its owners. It returns the number
// of records and of bytes of JSON read.
func readLikeReport(b *testing.B, db *DB, pods []Object) (recs, bytes int) {
	for _, p := range pods {
		h, err := db.History(p.UID)
		if err != nil {
			b.Fatal(err)
		}
		recs += len(h)
		bytes += jsonBytes(h)
		refs, err := db.Referring(p.UID)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range refs {
			h, err := db.History(o.UID)
			if err != nil {
				b.Fatal(err)
			}
			recs += len(h)
			bytes += jsonBytes(h)
		}
		for _, uid := range p.Refs {
			h, err := db.History(uid)
			if err != nil && !errors.Is(err, ErrNotFound) {
				b.Fatal(err)
			}
			recs += len(h)
			bytes += jsonBytes(h)
		}
	}
	return recs, bytes
}

// BenchmarkRewrite writes the records of a trace podtrace recorded
// ($PODTRACE_REWRITE, e.g. the trace.db `make bench-record` leaves in
// _output/bench) again, in the batches a recorder would have written: all
// the records observed within window of a batch's first, at most
// tracer.DefaultBatchSize (2,000). It reports the CPU time and allocations
// of the whole write per revision, and how many delta bases the write cache
// had let go and were read back from the file.
//
//	PODTRACE_REWRITE=_output/bench/trace.db go test ./store -run '^$' -bench Rewrite -benchmem -count 3
func BenchmarkRewrite(b *testing.B) {
	recs := rewriteRecords(b)
	for _, window := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second} {
		b.Run("window="+window.String(), func(b *testing.B) {
			var cpu time.Duration
			reloads := 0
			for range b.N {
				b.StopTimer()
				db, err := Open(filepath.Join(b.TempDir(), "trace.db"), Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := cpuTime()
				for _, batch := range rewriteBatches(recs, window) {
					if err := db.Write(batch); err != nil {
						b.Fatal(err)
					}
				}
				cpu += cpuTime() - start
				reloads += db.enc.reloads
				b.StopTimer()
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(b.N * len(recs))
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/rev")
			b.ReportMetric(float64(reloads)/n*100, "reloaded-%")
			b.ReportMetric(float64(len(recs)), "revisions")
		})
	}
}

// BenchmarkRewriteWriter is BenchmarkRewrite's batches of 1 s (as record
// flushes), 2, 5 and 10 s written through a Writer, as `podtrace record`
// writes them: each batch is handed to Add and written by a Flush, in one
// transaction of the file the Writer holds open while no reader asks for it;
// the Writer's cache keeps the records' JSON instead of copying it. The 1 s
// batches are also written with larger write caches than the default, to
// weigh what reading delta bases back costs (reloaded-%). The file is not
// compacted at the end.
//
//	PODTRACE_REWRITE=_output/bench/trace.db go test ./store -run '^$' -bench RewriteWriter -benchmem -count 3
func BenchmarkRewriteWriter(b *testing.B) {
	recs := rewriteRecords(b)
	for _, c := range []struct {
		window time.Duration
		cache  int // MiB; 0 for DefaultWriteCacheBytes
	}{{time.Second, 0}, {2 * time.Second, 0}, {5 * time.Second, 0}, {10 * time.Second, 0}, {time.Second, 16}, {time.Second, 32}, {time.Second, 64}, {time.Second, 128}} {
		name := "window=" + c.window.String()
		if c.cache != 0 {
			name += fmt.Sprintf("/cache=%dMiB", c.cache)
		}
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			reloads := 0
			for range b.N {
				b.StopTimer()
				w, err := NewWriter(filepath.Join(b.TempDir(), "trace.db"), Options{NoCompact: true, CacheBytes: c.cache << 20})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := cpuTime()
				for _, batch := range rewriteBatches(recs, c.window) {
					w.Add(batch...)
					if n, err := w.Flush(); err != nil || n != len(batch) {
						b.Fatalf("Flush: %d of %d records written, %v", n, len(batch), err)
					}
				}
				cpu += cpuTime() - start
				reloads += w.enc.reloads
				b.StopTimer()
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(b.N * len(recs))
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/rev")
			b.ReportMetric(float64(reloads)/n*100, "reloaded-%")
		})
	}
}

// rewriteBatches cuts recs into the batches a recorder would have written:
// the records observed within window of a batch's first, at most
// tracer.DefaultBatchSize (2,000).
func rewriteBatches(recs []Record, window time.Duration) [][]Record {
	var batches [][]Record
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && j-i < 2000 && recs[j].Observed.Sub(recs[i].Observed) <= window {
			j++
		}
		batches = append(batches, recs[i:j])
		i = j
	}
	return batches
}

// rewritePodsProto: the rewrite benchmarks hand the store pods as their
// protobuf, as record does; $PODTRACE_BENCH_PODS=json hands it their JSON.
var rewritePodsProto = os.Getenv("PODTRACE_BENCH_PODS") != "json"

// rewriteRecords returns the records of the trace $PODTRACE_REWRITE names,
// without their Seq and session, or skips the benchmark.
func rewriteRecords(b *testing.B) []Record {
	src := os.Getenv("PODTRACE_REWRITE")
	if src == "" {
		b.Skip("PODTRACE_REWRITE names no recorded trace")
	}
	in, err := Open(src, Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	var recs []Record
	err = in.Scan(func(r Record) error {
		r.Seq, r.Session = 0, 0
		if r.Kind == "Pod" && r.APIVersion == "v1" && rewritePodsProto {
			// As record hands pods to the store: their protobuf.
			_, pb, err := podProto(r.Object)
			if err != nil {
				return fmt.Errorf("pod %s/%s: %w", r.Namespace, r.Name, err)
			}
			r.Object, r.Proto = pb, true
		}
		recs = append(recs, r)
		return nil
	})
	in.Close()
	if err != nil {
		b.Fatal(err)
	}
	return recs
}
