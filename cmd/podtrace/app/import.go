package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/store"
	"github.com/podtrace/podtrace/tracer/auditlog"
)

// Audit events are stored as records of this apiVersion and kind (see
// package auditlog, which parses them for import and record alike).
const (
	auditAPIVersion = auditlog.APIVersion
	auditKind       = auditlog.Kind
)

// An import writes a transaction before it would hold more than importBatch
// records or importBatchBytes of their lines. Both bound its memory, whatever
// the size of the log: the lines of a batch are copied into one buffer of
// importBatchBytes, reused; and a transaction holds in memory each page of
// the trace's indexes that its records land on. Audit IDs are random keys,
// so in a large trace that is about two pages per record (some 15 KB of
// heap with bbolt's node), for importBatch records at most. Each batch costs
// a commit (two fdatasyncs). See BENCHMARKS.md.
const (
	importBatch      = 64
	importBatchBytes = 1 << 20
)

type importOptions struct {
	streams Streams
	db      string
	logs    []string
}

func importCommand(streams Streams) *cli.Command {
	o := &importOptions{streams: streams, db: "podtrace.db"}
	var logs cli.StringSlice
	return &cli.Command{
		Name:  "import",
		Usage: "add evidence recorded elsewhere to a trace: the API server's audit log about the recorded pods",
		Description: "Reads kube-apiserver audit logs (JSON lines, audit.k8s.io/v1, gzip or not) and keeps the\n" +
			"requests about the pods recorded in the trace: who created, updated, patched, bound,\n" +
			"evicted or deleted them, the mutating webhooks' patches, and the requests that were denied.\n" +
			"Importing the same log twice adds nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to add to (recorded by podtrace record)", TakesFile: true},
			&cli.StringSliceFlag{Name: "audit-log", Destination: &logs, Usage: "an audit log file (JSON lines, plain or gzip); repeat for rotated files", TakesFile: true},
		},
		Action: func(c *cli.Context) error {
			o.logs = logs.Value()
			if err := o.Validate(c); err != nil {
				return err
			}
			return o.Run()
		},
	}
}

// Validate checks the flags, naming the one that is wrong.
func (o *importOptions) Validate(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("import takes no arguments (got %q): name each log with --audit-log FILE", c.Args().Slice())
	}
	if len(o.logs) == 0 {
		return usagef("--audit-log is required: podtrace import --audit-log /var/log/kubernetes/audit.log --db TRACE")
	}
	if o.db == "" {
		return usagef("--db must name a trace file")
	}
	if _, err := os.Stat(o.db); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no trace %q: record one first with podtrace record --db %s, or name it with --db", o.db, o.db)
	}
	for _, l := range o.logs {
		if _, err := os.Stat(l); err != nil {
			return usagef("--audit-log %s: %v", l, err)
		}
	}
	return nil
}

// importStats counts what an import read and kept.
type importStats struct {
	Files   int
	Lines   int
	Bytes   int64
	Kept    int
	Skipped map[string]int
}

func (s *importStats) skip(reason string) { s.Skipped[reason]++ }

// Run imports the logs.
func (o *importOptions) Run() error {
	began := time.Now()
	// Before the trace is opened: a wrong file adds nothing, half or whole.
	for _, path := range o.logs {
		if err := checkAuditLog(path, o.streams.ErrOut); err != nil {
			return err
		}
	}
	// Each audit event is an object of its own, written once: caching its
	// last revision (a delta base for the next) would only hold memory.
	db, err := store.Open(o.db, store.Options{Timeout: 10 * time.Second, Version: Version, CacheBytes: 1 << 20})
	if err != nil {
		return err
	}
	imp, err := newAuditImporter(db, o.streams.ErrOut)
	if err != nil {
		db.Close()
		return err
	}
	for _, path := range o.logs {
		if err := imp.importFile(path); err != nil {
			db.Close()
			return fmt.Errorf("import %s: %w (the %d events written before are whole; importing again adds only the rest)", path, err, imp.stats.Kept)
		}
	}
	if err := imp.flush(); err != nil {
		db.Close()
		return fmt.Errorf("import: %w (the %d events written before are whole; importing again adds only the rest)", err, imp.stats.Kept)
	}
	if err := db.Close(); err != nil {
		return fmt.Errorf("close trace %q: %w", o.db, err)
	}
	s := imp.stats
	elapsed := time.Since(began)
	mbs := float64(s.Bytes) / (1 << 20) / max(elapsed.Seconds(), 1e-6)
	fmt.Fprintf(o.streams.Out, "imported %s, %s (%.1f MB) in %s (%.1f MB/s): %s kept\n",
		plural(s.Files, "file"), plural(s.Lines, "line"), float64(s.Bytes)/(1<<20), elapsed.Round(time.Millisecond), mbs, plural(s.Kept, "event"))
	reasons := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(o.streams.Out, "  skipped %d: %s\n", s.Skipped[r], r)
	}
	return nil
}

// openLog opens an audit log, gunzipping it if it is gzip.
func openLog(path string) (io.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 256<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return br, func() { f.Close() }, nil // importFile says it is damaged
		}
		return zr, func() { zr.Close(); f.Close() }, nil
	}
	return br, func() { f.Close() }, nil
}

// checkAuditLog fails if no line of the file at path is an audit event (of
// any audit.k8s.io version: a damaged or older log is warned about line by
// line, not refused). It reads up to the first event: the first line of
// an audit log.
func checkAuditLog(path string, warn io.Writer) error {
	r, closeLog, err := openLog(path)
	if err != nil {
		return err
	}
	defer closeLog()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), auditlog.MaxLine)
	var first []byte
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if auditlog.IsEvent(b) {
			return nil
		}
		if first == nil {
			first = bytes.Clone(b)
		}
	}
	if sc.Err() != nil {
		return nil // damage: importFile counts and warns about it
	}
	if first == nil {
		fmt.Fprintf(warn, "podtrace: warning: %s is empty\n", path)
		return nil
	}
	if len(first) > 80 {
		first = append(first[:77:77], "..."...)
	}
	return fmt.Errorf("%s is not a kube-apiserver audit log: first line is %q; podtrace import reads the JSON lines of audit.k8s.io/v1 Events that the API server writes to its --audit-log-path", path, first)
}

// auditImporter turns audit events into records of the pods they are about.
// Its memory does not grow with the log: the pods of the trace, the pending
// batch, and one line at a time. Whether an audit event is in the trace
// already is asked of the trace, one event at a time.
type auditImporter struct {
	db           *store.DB
	warn         io.Writer
	pods         *podIndex
	pending      []store.Record
	pendingIDs   map[string]bool // audit IDs in pending
	pendingBytes int
	lines        []byte // the pending records' objects, mostly; reused
	stats        importStats
	warned       map[string]int // warnings printed per reason
}

func newAuditImporter(db *store.DB, warn io.Writer) (*auditImporter, error) {
	imp := &auditImporter{db: db, warn: warn, pods: newPodIndex(), pendingIDs: map[string]bool{},
		stats: importStats{Skipped: map[string]int{}}, warned: map[string]int{}}
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return nil, err
	}
	// Objects lists each name's incarnations in the order first recorded.
	for _, p := range pods {
		imp.pods.addObject(p)
	}
	return imp, nil
}

// warnf prints a warning, at most 5 per reason (the reason the summary
// counts the line under); the summary counts them all.
func (imp *auditImporter) warnf(reason, format string, args ...any) {
	imp.warned[reason]++
	if imp.warned[reason] > 5 {
		return
	}
	fmt.Fprintf(imp.warn, "podtrace: warning: "+format+"\n", args...)
	if imp.warned[reason] == 5 {
		fmt.Fprintf(imp.warn, "podtrace: warning: no more warnings about lines skipped for %q: the summary counts them all\n", reason)
	}
}

// countingReader counts the bytes read from a file.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// importFile streams one log. Damage in the log (a bad line, a truncated
// gzip stream) is counted and warned about, never fatal; only a failure to
// write the trace is.
func (imp *auditImporter) importFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	imp.stats.Files++
	br := bufio.NewReaderSize(countingReader{f, &imp.stats.Bytes}, 256<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			imp.stats.skip("unreadable gzip file")
			imp.warnf("unreadable gzip file", "%s: not a readable gzip file (%v); skipped", path, err)
			return nil
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256<<10), auditlog.MaxLine) // grows for a longer line, up to MaxLine
	line := 0
	for sc.Scan() {
		line++
		imp.stats.Lines++
		if err := imp.line(path, line, sc.Bytes()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			reason := fmt.Sprintf("line longer than %d MiB (rest of the file)", auditlog.MaxLine>>20)
			imp.stats.skip(reason)
			imp.warnf(reason, "%s:%d: a line longer than %d MiB; the rest of the file is skipped", path, line+1, auditlog.MaxLine>>20)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader):
			imp.stats.skip("truncated or damaged gzip stream (rest of the file)")
			imp.warnf("truncated or damaged gzip stream (rest of the file)", "%s: gzip stream truncated or damaged after line %d (%v); the lines before it are kept", path, line, err)
		default:
			return fmt.Errorf("read %s after line %d: %w", path, line, err)
		}
	}
	return nil
}

const notRecorded = "pod not recorded in the trace"

// want skips the events about pod names the trace does not have before
// their lines are decoded in full.
func (imp *auditImporter) want(namespace, name string) string {
	if imp.pods.hasName(namespace, name) {
		return ""
	}
	return notRecorded
}

func (imp *auditImporter) line(path string, n int, b []byte) error {
	ev, skip := auditlog.Parse(b, imp.want)
	if skip != nil {
		imp.stats.skip(skip.Reason)
		if skip.Warning != "" {
			imp.warnf(skip.Reason, "%s:%d: %s", path, n, skip.Warning)
		}
		return nil
	}
	if imp.pendingIDs[ev.AuditID] {
		imp.stats.skip("already in the trace")
		return nil
	}
	pod, _, ok := imp.pods.resolve(ev.Namespace, ev.Name, ev.UID, ev.Time)
	if !ok {
		imp.stats.skip(notRecorded)
		return nil
	}
	// Asked only of the events about recorded pods: a few of the lines.
	in, err := imp.db.Has(ev.AuditID)
	if err != nil {
		return err
	}
	if in {
		imp.stats.skip("already in the trace")
		return nil
	}
	return imp.add(&ev, bytes.TrimSpace(b), pod.UID)
}

// add adds the event read from line to the batch, writing the batch first
// if line would make it too large.
func (imp *auditImporter) add(ev *auditlog.Event, line []byte, podUID string) error {
	if len(imp.pending) > 0 && (len(imp.pending) >= importBatch || imp.pendingBytes+len(line) > importBatchBytes) {
		if err := imp.flush(); err != nil {
			return err
		}
	}
	var rec store.Record
	if len(imp.lines)+len(line) <= importBatchBytes {
		if imp.lines == nil {
			imp.lines = make([]byte, 0, importBatchBytes)
		}
		// Within the capacity: the records before keep their bytes.
		start := len(imp.lines)
		imp.lines = append(imp.lines, line...)
		rec = ev.RecordOf(imp.lines[start:len(imp.lines):len(imp.lines)], podUID)
	} else {
		rec = ev.Record(line, podUID) // a line larger than a batch: a batch of its own
	}
	imp.pending = append(imp.pending, rec)
	imp.pendingIDs[ev.AuditID] = true
	imp.pendingBytes += len(rec.Object)
	return nil
}

// flush writes the pending records in one transaction: all or none of
// them.
func (imp *auditImporter) flush() error {
	if len(imp.pending) == 0 {
		return nil
	}
	if err := imp.db.Write(imp.pending); err != nil {
		return err
	}
	imp.stats.Kept += len(imp.pending)
	clear(imp.pending) // let a line larger than a batch go
	imp.pending = imp.pending[:0]
	clear(imp.pendingIDs)
	imp.pendingBytes = 0
	imp.lines = imp.lines[:0] // written: the store keeps no reference
	return nil
}

// isAudit reports whether an object of a trace is an imported audit event.
func isAudit(o store.Object) bool {
	return auditlog.IsRecord(o.APIVersion, o.Kind)
}
