package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

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
		Description: "Reads kube-apiserver audit logs (JSON lines, audit.k8s.io/v1, gzip or not), or their export by\n" +
			"GKE (Cloud Logging entries), EKS (CloudWatch Logs events, S3 export) or AKS (diagnostic logs,\n" +
			"Log Analytics rows), recognized by content, and keeps the requests about the pods recorded in\n" +
			"the trace: who created, updated, patched, bound, evicted or deleted them (a deletecollection\n" +
			"too, tied to the pods it deleted), the mutating webhooks' patches, and the requests that were\n" +
			"denied (evictions a PodDisruptionBudget refused). Says per file what the export's format\n" +
			"does not carry. Importing the same log twice adds nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to add to (recorded by podtrace record)", TakesFile: true},
			&cli.StringSliceFlag{Name: "audit-log", Destination: &logs, Usage: "an audit log or export: a file (plain or gzip), a directory of them, or - for standard input; repeat for more", TakesFile: true},
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
	stdin := 0
	for _, l := range o.logs {
		if l == stdinLog {
			if stdin++; stdin > 1 {
				return usagef("--audit-log - (standard input) is given twice")
			}
			continue
		}
		if _, err := os.Stat(l); err != nil {
			return usagef("--audit-log %s: %v", l, err)
		}
	}
	return nil
}

// importStats counts what an import read and kept.
type importStats struct {
	Files   int
	Lines   int  // lines, or records of JSON documents
	Records bool // some file was a JSON document
	Bytes   int64
	Kept    int
	Skipped map[string]int
}

func (s *importStats) skip(reason string) { s.Skipped[reason]++ }

// Run imports the logs.
func (o *importOptions) Run() error {
	began := time.Now()
	inputs, err := expandLogs(o.logs)
	if err != nil {
		return err
	}
	// Before the trace is opened: a wrong file adds nothing, half or whole.
	// Standard input is read once, by the import.
	var logs []auditInput
	for _, in := range inputs {
		if in.path != stdinLog {
			if err := checkAuditLog(in, o.streams.ErrOut); err != nil {
				if !in.inDir {
					return err
				}
				fmt.Fprintf(o.streams.ErrOut, "podtrace: warning: %v; skipped\n", err)
				continue
			}
		}
		logs = append(logs, in)
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
	var files []string
	for _, in := range logs {
		sum, err := imp.importFile(in, o.streams.In)
		if err != nil {
			db.Close()
			return fmt.Errorf("import %s: %w (the %d events written before are whole; importing again adds only the rest)", in.name(), err, imp.stats.Kept)
		}
		files = append(files, sum.String(in.name()))
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
	unit := "line"
	if s.Records {
		unit = "line or record"
		if s.Lines != 1 {
			unit = "lines or records"
		}
	}
	fmt.Fprintf(o.streams.Out, "imported %s, %s (%.1f MB) in %s (%.1f MB/s): %s kept\n",
		plural(s.Files, "file"), pluralUnit(s.Lines, unit), float64(s.Bytes)/(1<<20), elapsed.Round(time.Millisecond), mbs, plural(s.Kept, "event"))
	reasons := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(o.streams.Out, "  skipped %d: %s\n", s.Skipped[r], r)
	}
	for _, f := range files {
		fmt.Fprintln(o.streams.Out, f)
	}
	return nil
}

// keptBefore says the records before damage are kept.
func keptBefore(n int) string {
	if n == 1 {
		return "the record before it is kept"
	}
	return fmt.Sprintf("the %d records before it are kept", n)
}

// pluralUnit counts n of a unit whose plural the caller chose.
func pluralUnit(n int, unit string) string {
	if unit == "line or record" || unit == "lines or records" {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return plural(n, unit)
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
	file         *fileSummary   // of the file being read
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

// importFile streams one log. Damage in the log (a bad line, a damaged
// JSON document, a truncated gzip stream) is counted and warned about,
// never fatal; only a failure to write the trace is.
func (imp *auditImporter) importFile(in auditInput, stdin io.Reader) (*fileSummary, error) {
	imp.stats.Files++
	name := in.name()
	r, closeLog, err := openInput(in, stdin, &imp.stats.Bytes)
	if errors.Is(err, gzip.ErrHeader) {
		imp.stats.skip("unreadable gzip file")
		imp.warnf("unreadable gzip file", "%s: not a readable gzip file (%v); skipped", name, err)
		return newFileSummary("unreadable gzip file"), nil
	}
	if err != nil {
		return nil, err
	}
	defer closeLog()
	src := auditlog.NewSource(r)
	sum := newFileSummary(src.Shape())
	imp.stats.Records = imp.stats.Records || src.Shape() != "JSON lines"
	imp.file = sum
	line := 0
	for {
		e, err := src.Next(imp.want)
		if err != nil {
			var de *auditlog.DocumentError
			switch {
			case err == io.EOF:
			case errors.As(err, &de):
				reason := "damaged JSON document (rest of the file)"
				imp.stats.skip(reason)
				imp.warnf(reason, "%s:%d: %s; %s", name, de.Line, de.Text(), keptBefore(sum.records))
			case errors.Is(err, bufio.ErrTooLong):
				reason := fmt.Sprintf("line longer than %d MiB (rest of the file)", auditlog.MaxLine>>20)
				imp.stats.skip(reason)
				imp.warnf(reason, "%s:%d: a line longer than %d MiB; the rest of the file is skipped", name, line+1, auditlog.MaxLine>>20)
			case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader):
				imp.stats.skip("truncated or damaged gzip stream (rest of the file)")
				imp.warnf("truncated or damaged gzip stream (rest of the file)", "%s: gzip stream truncated or damaged after line %d (%v); the lines before it are kept", name, line, err)
			default:
				return nil, fmt.Errorf("read %s after line %d: %w", name, line, err)
			}
			return sum, nil
		}
		line = e.Line
		imp.stats.Lines++
		sum.records++
		if e.Unwrapped.Event != nil {
			sum.formats[e.Format]++
		}
		if err := imp.entry(name, &e); err != nil {
			return nil, err
		}
	}
}

const notRecorded = "pod not recorded in the trace"

// want skips the events about pod names the trace does not have before
// their lines are decoded in full.
func (imp *auditImporter) want(namespace, name string) string {
	if name == "" && imp.pods.hasNamespace(namespace) || name != "" && imp.pods.hasName(namespace, name) {
		return ""
	}
	return notRecorded
}

// entry adds the audit event of a record, unless it is skipped, about no
// recorded pod, or in the trace already.
func (imp *auditImporter) entry(name string, e *auditlog.Entry) error {
	if e.Skip != nil {
		imp.stats.skip(e.Skip.Reason)
		if e.Skip.Warning != "" {
			imp.warnf(e.Skip.Reason, "%s:%s: %s", name, e.Where(), e.Skip.Warning)
		}
		return nil
	}
	ev := &e.Event
	if imp.pendingIDs[ev.AuditID] {
		imp.stats.skip("already in the trace")
		return nil
	}
	var pods []string
	if ev.Collection {
		uids, ok, err := imp.pods.collection(ev, imp.matcher(ev))
		if err != nil {
			return err
		}
		if !ok {
			imp.stats.skip("deletecollection of no recorded pod")
			return nil
		}
		pods = uids
	} else {
		pod, _, ok := imp.pods.resolve(ev.Namespace, ev.Name, ev.UID, ev.Time)
		if !ok {
			imp.stats.skip(notRecorded)
			return nil
		}
		pods = []string{pod.UID}
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
	if imp.file != nil {
		imp.file.kept++
		for _, f := range e.Lacks {
			imp.file.lacks[f]++
		}
	}
	return imp.add(ev, bytes.TrimSpace(e.Unwrapped.Event), pods)
}

// matcher returns what tells whether a recorded pod matched the selectors
// of a deletecollection when it completed: its revision as of then, read
// from the trace (nil when the request had no selector).
func (imp *auditImporter) matcher(ev *auditlog.Event) func(uid string) (bool, error) {
	if ev.Selector.Labels == "" && ev.Selector.Fields == "" {
		return nil
	}
	ls, lerr := labels.Parse(ev.Selector.Labels)
	fs, ferr := fields.ParseSelector(ev.Selector.Fields)
	return func(uid string) (bool, error) {
		if lerr != nil || ferr != nil {
			return false, nil // a selector the API server would have refused
		}
		recs, err := imp.db.History(uid)
		if err != nil || len(recs) == 0 {
			return false, err
		}
		rec := recs[0]
		for _, r := range recs {
			if r.Observed.After(ev.Time) {
				break
			}
			rec = r
		}
		var pod corev1.Pod
		if err := json.Unmarshal(rec.Object, &pod); err != nil {
			return false, nil
		}
		return ls.Matches(labels.Set(pod.Labels)) && fs.Matches(podFields(&pod)), nil
	}
}

// podFields are the fields of a pod a field selector can name, as the API
// server sets them (pkg/registry/core/pod/strategy.go,
// PodToSelectableFields).
func podFields(p *corev1.Pod) fields.Set {
	set := fields.Set{
		"metadata.name":            p.Name,
		"metadata.namespace":       p.Namespace,
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             p.Status.PodIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
	return set
}

// add adds the event read from line to the batch, writing the batch first
// if line would make it too large.
func (imp *auditImporter) add(ev *auditlog.Event, line []byte, pods []string) error {
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
		rec = ev.RecordFor(imp.lines[start:len(imp.lines):len(imp.lines)], pods)
	} else {
		rec = ev.RecordFor(bytes.Clone(line), pods) // a line larger than a batch: a batch of its own
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
