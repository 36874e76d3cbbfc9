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
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/store"
)

// Audit events are stored as records of this apiVersion and kind; the kind
// is also core/v1's Event, so the apiVersion tells them apart.
const (
	auditAPIVersion = "audit.k8s.io/v1"
	auditKind       = "Event"
)

// importBatch is how many audit records one transaction writes.
const importBatch = 2000

// maxAuditLine bounds one line of an audit log: a RequestResponse event
// holds two copies of a pod, rarely more than a few hundred KiB.
const maxAuditLine = 64 << 20

// keptVerbs and keptSubresources are the requests about pods that import
// keeps: the writes that shape a pod's life.
var (
	keptVerbs        = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}
	keptSubresources = map[string]bool{"": true, "status": true, "binding": true, "eviction": true, "ephemeralcontainers": true, "resize": true}
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
		return fmt.Errorf("no trace %q: record one first with podtrace record -o %s, or name it with --db", o.db, o.db)
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
	db, err := store.Open(o.db, store.Options{Timeout: 10 * time.Second, Version: Version})
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
	fmt.Fprintf(o.streams.Out, "imported %d files, %d lines (%.1f MB) in %s (%.1f MB/s): %d events kept\n",
		s.Files, s.Lines, float64(s.Bytes)/(1<<20), elapsed.Round(time.Millisecond), mbs, s.Kept)
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

// auditImporter turns audit events into records of the pods they are about.
type auditImporter struct {
	db      *store.DB
	warn    io.Writer
	pods    map[string][]store.Object // "namespace/name" -> incarnations, oldest first
	seen    map[string]bool           // audit IDs in the trace or this import
	pending []store.Record
	stats   importStats
	warned  map[string]int // warnings printed per reason
}

func newAuditImporter(db *store.DB, warn io.Writer) (*auditImporter, error) {
	imp := &auditImporter{db: db, warn: warn, pods: map[string][]store.Object{}, seen: map[string]bool{},
		stats: importStats{Skipped: map[string]int{}}, warned: map[string]int{}}
	pods, err := db.Objects(store.ObjectFilter{Kind: "Pod"})
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		k := p.Namespace + "/" + p.Name
		imp.pods[k] = append(imp.pods[k], p)
	}
	for _, list := range imp.pods {
		sort.Slice(list, func(i, j int) bool { return list[i].FirstSeq < list[j].FirstSeq })
	}
	events, err := db.Objects(store.ObjectFilter{Kind: auditKind})
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.APIVersion == auditAPIVersion {
			imp.seen[e.UID] = true
		}
	}
	return imp, nil
}

// warnf prints a warning, at most 5 per reason; the summary counts them all.
func (imp *auditImporter) warnf(reason, format string, args ...any) {
	imp.warned[reason]++
	if imp.warned[reason] > 5 {
		return
	}
	fmt.Fprintf(imp.warn, "podtrace: warning: "+format+"\n", args...)
	if imp.warned[reason] == 5 {
		fmt.Fprintf(imp.warn, "podtrace: warning: more lines skipped for %s are counted, not shown\n", reason)
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
	br := bufio.NewReaderSize(countingReader{f, &imp.stats.Bytes}, 1<<20)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			imp.stats.skip("unreadable gzip file")
			imp.warnf("gzip", "%s: not a readable gzip file (%v); skipped", path, err)
			return nil
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxAuditLine)
	line := 0
	for sc.Scan() {
		line++
		imp.stats.Lines++
		if err := imp.line(path, line, sc.Bytes()); err != nil {
			return err
		}
		if len(imp.pending) >= importBatch {
			if err := imp.flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			imp.stats.skip(fmt.Sprintf("line longer than %d MiB (rest of the file)", maxAuditLine>>20))
			imp.warnf("long", "%s:%d: a line longer than %d MiB; the rest of the file is skipped", path, line+1, maxAuditLine>>20)
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader):
			imp.stats.skip("truncated or damaged gzip stream (rest of the file)")
			imp.warnf("truncated", "%s: gzip stream truncated or damaged after line %d (%v); the lines before it are kept", path, line, err)
		default:
			return fmt.Errorf("read %s after line %d: %w", path, line, err)
		}
	}
	return nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event that import reads.
type auditEvent struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		UID         string `json:"uid"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	StageTimestamp time.Time       `json:"stageTimestamp"`
	RequestObject  json.RawMessage `json:"requestObject"`
	ResponseObject json.RawMessage `json:"responseObject"`
}

// objectMeta is the part of a request or response object import reads.
type objectMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

func (imp *auditImporter) line(path string, n int, b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		imp.stats.skip("empty line")
		return nil
	}
	var ev auditEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		imp.stats.skip("malformed JSON")
		imp.warnf("malformed", "%s:%d: not a JSON audit event (%v); skipped", path, n, err)
		return nil
	}
	if ev.Kind != "Event" || ev.APIVersion != auditAPIVersion {
		imp.stats.skip("not an audit.k8s.io/v1 Event")
		imp.warnf("apiVersion", "%s:%d: %s %q is not an audit.k8s.io/v1 Event; skipped", path, n, ev.APIVersion, ev.Kind)
		return nil
	}
	if ev.AuditID == "" || ev.StageTimestamp.IsZero() {
		imp.stats.skip("no auditID or stageTimestamp")
		imp.warnf("incomplete", "%s:%d: audit event without auditID or stageTimestamp; skipped", path, n)
		return nil
	}
	if ev.Stage != "ResponseComplete" {
		imp.stats.skip("stage " + ev.Stage + " (only ResponseComplete is kept)")
		return nil
	}
	ref := ev.ObjectRef
	if ref == nil || ref.Resource != "pods" || ref.APIGroup != "" || ref.Name == "" {
		imp.stats.skip("not about a pod")
		return nil
	}
	if !keptVerbs[ev.Verb] || !keptSubresources[ref.Subresource] {
		imp.stats.skip("pod request not kept (reads, exec, logs...)")
		return nil
	}
	if imp.seen[ev.AuditID] {
		imp.stats.skip("already in the trace")
		return nil
	}
	var req, resp objectMeta
	_ = json.Unmarshal(ev.RequestObject, &req)
	_ = json.Unmarshal(ev.ResponseObject, &resp)
	uid := ref.UID
	if uid == "" && resp.Kind == "Pod" {
		uid = resp.Metadata.UID
	}
	if uid == "" && req.Kind == "Pod" {
		uid = req.Metadata.UID
	}
	pod, ok := imp.incarnation(ref.Namespace+"/"+ref.Name, uid, ev.StageTimestamp)
	if !ok {
		imp.stats.skip("pod not recorded in the trace")
		return nil
	}
	rv := ""
	if resp.Kind == "Pod" {
		rv = resp.Metadata.ResourceVersion
	}
	obj := make([]byte, len(b))
	copy(obj, b)
	imp.pending = append(imp.pending, store.Record{
		Observed:        ev.StageTimestamp,
		Type:            store.Added,
		APIVersion:      auditAPIVersion,
		Kind:            auditKind,
		Namespace:       ref.Namespace,
		Name:            ev.AuditID,
		UID:             ev.AuditID,
		ResourceVersion: rv,
		Refs:            []string{pod.UID},
		Object:          obj,
	})
	imp.seen[ev.AuditID] = true
	return nil
}

// auditSlack is how far before a pod's first observation an audit event
// about it may be: the CREATE completes before the informer sees the pod.
const auditSlack = 30 * time.Second

// incarnation picks the recorded pod the event is about: by UID when the
// event names one, else the incarnation whose recorded life holds t.
func (imp *auditImporter) incarnation(key, uid string, t time.Time) (store.Object, bool) {
	list := imp.pods[key]
	if uid != "" {
		for _, p := range list {
			if p.UID == uid {
				return p, true
			}
		}
		return store.Object{}, false
	}
	// The latest incarnation that began before t (with some slack) and
	// was not gone long before it.
	for i := len(list) - 1; i >= 0; i-- {
		p := list[i]
		if p.FirstObserved.IsZero() || !t.Before(p.FirstObserved.Add(-auditSlack)) {
			if p.Deleted && t.After(p.LastObserved.Add(auditSlack)) {
				return store.Object{}, false
			}
			return p, true
		}
	}
	return store.Object{}, false
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
	imp.pending = imp.pending[:0]
	return nil
}

// isAudit reports whether an object of a trace is an imported audit event.
func isAudit(o store.Object) bool {
	return o.Kind == auditKind && o.APIVersion == auditAPIVersion
}
