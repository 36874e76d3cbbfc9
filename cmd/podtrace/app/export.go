package app

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

// exportOptions are the options of `podtrace export`.
type exportOptions struct {
	streams   Streams
	db        string
	out       string
	namespace string
	pod       string
	since     string
	until     string
	selector  string
	oldOut    string // -o, deprecated for --out
	redact    redactFlags
	otlp      otlpFlags

	from, to time.Time
	sel      labels.Selector // --selector, parsed
}

func exportCommand(streams Streams) *cli.Command {
	o := &exportOptions{streams: streams, db: "podtrace.db"}
	return &cli.Command{
		Name:  "export",
		Usage: "write a smaller, redacted trace holding just the pods asked for, to attach to a ticket; or send their traces over OTLP (--otlp)",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read", TakesFile: true},
			&cli.StringFlag{Name: "out", Destination: &o.out, Usage: "trace file to write (must not exist); - for standard output, redirected to a file", TakesFile: true},
			// Deprecated: -o is the output format in every command.
			&cli.StringFlag{Name: "o", Hidden: true, Destination: &o.oldOut, TakesFile: true},
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Destination: &o.namespace, Usage: "only pods in this namespace"},
			&cli.StringFlag{Name: "pod", Destination: &o.pod, Usage: "only pods of this name"},
			&cli.StringFlag{Name: "since", Destination: &o.since, Usage: "only what happened from this time (RFC 3339) or this long before the end of the trace (e.g. 1h)"},
			&cli.StringFlag{Name: "until", Destination: &o.until, Usage: "only what happened up to this time (RFC 3339)"},
			&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Destination: &o.selector, Usage: "only pods whose labels, as last recorded, match this selector, e.g. app=web"},
		}, o.redact.flags()...), o.otlp.flags("send the pods' traces")...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("export takes no arguments (got %q): use --pod NAME and -n NAMESPACE", c.Args().First())
			}
			if c.IsSet("o") {
				if c.IsSet("out") && o.out != o.oldOut {
					return usagef("-o %s and --out %s name two files: give --out alone (-o is deprecated here)", o.oldOut, o.out)
				}
				warnDeprecated(c, streams, "-o FILE", "--out FILE")
				o.out = o.oldOut
			}
			if err := o.Validate(); err != nil {
				return err
			}
			if o.otlp.on() {
				return o.runOTLP(c.Context)
			}
			return o.Run()
		},
	}
}

// Validate checks the flags, naming the one that is wrong.
func (o *exportOptions) Validate() error {
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return usagef("--selector %q: %v", o.selector, err)
	}
	o.sel = sel
	if o.until != "" {
		t, err := time.Parse(time.RFC3339, o.until)
		if err != nil {
			return usagef("--until %q: want an RFC 3339 time such as 2026-12-01T10:00:00Z", o.until)
		}
		o.to = t
	}
	if o.otlp.on() {
		if o.out != "" {
			return usagef("--out and --otlp contradict each other: --out writes a trace file, --otlp sends the pods' traces; drop one")
		}
		if err := o.otlp.complete(); err != nil {
			return err
		}
		return o.redact.Complete()
	}
	if o.out == "" {
		return usagef("--out is required: the file to write the exported trace to, e.g. --out ticket.db (or --otlp ENDPOINT, to send the pods' traces)")
	}
	if o.out == "-" && isTerminal(o.streams.Out) {
		return usagef("--out -: the exported trace is a binary file; redirect standard output to a file (podtrace export --out - > ticket.db)")
	}
	if _, err := os.Stat(o.out); err == nil && o.out != "-" {
		return usagef("--out %s exists: export never overwrites a file; pick a new name", o.out)
	}
	return o.redact.Complete()
}

// traceEnd is where the trace ends: its sessions' last end.
func traceEnd(sessions []store.Session) time.Time {
	var end time.Time
	for _, s := range sessions {
		if e := s.End(); e.After(end) {
			end = e
		}
	}
	return end
}

// since resolves --since against the end of the trace.
func (o *exportOptions) sinceTime(end time.Time) (time.Time, error) {
	if o.since == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(o.since); err == nil {
		return end.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, o.since)
	if err != nil {
		return time.Time{}, usagef("--since %q: want a duration such as 1h or an RFC 3339 time", o.since)
	}
	return t, nil
}

// Run copies the chosen pods' stories into a new trace, redacted.
func (o *exportOptions) Run() error {
	if o.out != "-" {
		return o.run(o.out)
	}
	// Standard output (kubectl exec ... -- podtrace export --out - >
	// ticket.db): bbolt needs a file, so the trace is written to one of its
	// own and copied out.
	dir, err := os.MkdirTemp("", "podtrace-export-")
	if err != nil {
		return fmt.Errorf("export to standard output: a temporary file: %w", err)
	}
	defer os.RemoveAll(dir)
	o.out = filepath.Join(dir, "export.db")
	if err := o.run("standard output"); err != nil {
		return err
	}
	f, err := os.Open(o.out)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(o.streams.Out, f); err != nil {
		return fmt.Errorf("export to standard output: %w", err)
	}
	return nil
}

// run exports to o.out, named to the user as shown.
func (o *exportOptions) run(shown string) (err error) {
	src, err := openTrace(o.db)
	if err != nil {
		return err
	}
	defer src.Close()
	tc, err := loadContext(src)
	if err != nil {
		return err
	}
	pods, err := src.Objects(store.ObjectFilter{Kind: "Pod", Namespace: o.namespace, Name: o.pod})
	if err != nil {
		return err
	}
	if len(pods) == 0 {
		return fmt.Errorf("no pod%s%s recorded in %s: run podtrace report --db %s to list them", optName(o.pod), inNamespace(o.namespace), o.db, o.db)
	}
	if o.from, err = o.sinceTime(traceEnd(tc.sessions)); err != nil {
		return err
	}

	// Everything a pod's replay reads: its revisions, events, audit
	// records, dependents, owners, namespace, node, its namespace's
	// PodDisruptionBudgets, and the webhook configurations.
	histories := map[string][]store.Record{}
	for uid, recs := range tc.webhooks {
		histories[uid] = recs
	}
	// The redaction is counted as podtrace report counts it, on the pods'
	// replayed lifecycles: the values the report of the export shows
	// redacted. Every copy of them in every record is redacted.
	var lcs []*explain.Lifecycle
	chosen := 0
	for _, p := range pods {
		in, err := loadInput(src, tc, p)
		if err != nil {
			return err
		}
		if !matchesLabels(in, o.sel) {
			continue
		}
		chosen++
		if !o.redact.off {
			lc, err := o.redactedLifecycle(in)
			if err != nil {
				return fmt.Errorf("replay pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			if lc != nil {
				lcs = append(lcs, lc)
			}
		}
		histories[p.UID] = in.Pod
		for _, e := range append(in.Events, in.Audit...) {
			histories[e.UID] = append(histories[e.UID], e)
		}
		for uid, recs := range in.Related {
			histories[uid] = recs
		}
		for uid, recs := range in.Budgets {
			histories[uid] = recs
		}
		for _, recs := range in.OwnerEvents {
			for _, e := range recs {
				histories[e.UID] = append(histories[e.UID], e)
			}
		}
		// The nodes an unscheduled pod could have gone to; not the other
		// pods on them (in.NodePods), which are no part of this pod's story.
		for uid, recs := range in.Nodes {
			histories[uid] = recs
		}
	}
	if chosen == 0 {
		return fmt.Errorf("no recorded pod%s%s has labels matching %q: check --selector and -n", optName(o.pod), inNamespace(o.namespace), o.selector)
	}
	var recs []store.Record
	for _, h := range histories {
		recs = append(recs, o.window(h)...)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
	recs = dedupe(recs)

	if !o.redact.off {
		red := o.redact.redactor
		for i := range recs {
			if recs[i].Object, err = red.RedactObject(recs[i].Object); err != nil {
				return fmt.Errorf("export record %d (%s %s/%s): %w", recs[i].Seq, recs[i].Kind, recs[i].Namespace, recs[i].Name, err)
			}
		}
	} else {
		fmt.Fprintln(o.streams.ErrOut, "podtrace: WARNING: --no-redact: the exported trace carries env values, credentials and last-applied configuration as recorded; do not attach it to a ticket")
	}

	dst, err := store.Open(o.out, store.Options{Version: Version})
	if err != nil {
		return fmt.Errorf("export to %s: %w", shown, err)
	}
	defer func() {
		if dst != nil {
			dst.Close()
		}
		if err != nil {
			os.Remove(o.out) // never leave half an export behind
		}
	}()
	ids := map[uint32]uint32{}
	for _, s := range tc.sessions {
		old := s.ID
		stopped := s.Stopped
		s.Args = append(s.Args, "(exported by podtrace export)")
		ns, err := dst.BeginSession(s)
		if err != nil {
			return fmt.Errorf("export to %s: %w", shown, err)
		}
		ids[old] = ns.ID
		if !stopped.IsZero() {
			if err := dst.EndSession(ns.ID, stopped); err != nil {
				return fmt.Errorf("export to %s: %w", shown, err)
			}
		}
	}
	// What the recorder did not see, and what retention took away, are
	// part of the story: the export carries them. BeginSession wrote the
	// recorder-down gaps between the sessions again; the others are copied.
	for _, g := range tc.gaps {
		if g.Cause == store.GapRecorderDown {
			continue
		}
		g.Session = ids[g.Session]
		if err := dst.AddGap(g); err != nil {
			return fmt.Errorf("export to %s: %w", shown, err)
		}
	}
	prunes, err := src.Prunes()
	if err != nil {
		return err
	}
	for _, p := range prunes {
		p.Session = ids[p.Session]
		if err := dst.AddPrune(p); err != nil {
			return fmt.Errorf("export to %s: %w", shown, err)
		}
	}
	for i := range recs {
		recs[i].Session = ids[recs[i].Session]
		recs[i].Seq = 0
	}
	if err := dst.Write(recs); err != nil {
		return fmt.Errorf("export to %s: %w", shown, err)
	}
	err = dst.Close()
	dst = nil
	if err != nil {
		return fmt.Errorf("export to %s: %w", shown, err)
	}
	if _, _, err := store.Compact(o.out, store.Options{}); err != nil {
		return fmt.Errorf("compact %s: %w", shown, err)
	}
	st, err := os.Stat(o.out)
	if err != nil {
		return err
	}
	redaction := "redaction OFF (--no-redact)"
	if !o.redact.off {
		redaction = "redaction " + (&report.Trace{Pods: lcs}).Redaction()
	}
	fmt.Fprintf(o.streams.ErrOut, "exported %s, %s to %s (%s); %s\n",
		o.which(chosen), report.Plural(len(recs), "record"), shown, report.BytesText(st.Size()), redaction)
	return nil
}

// which says which pods were exported: all of them unless --pod or -n
// said which.
func (o *exportOptions) which(n int) string {
	pods := report.Plural(n, "pod")
	switch {
	case o.selector != "":
		return pods + optName(o.pod) + inNamespace(o.namespace) + " whose labels match " + o.selector
	case o.pod == "" && o.namespace == "":
		return "every pod of the trace (" + pods + "; --pod and -n pick some)"
	case o.pod == "":
		return "every pod in namespace " + o.namespace + " (" + pods + "; --pod picks one)"
	case o.namespace == "":
		return pods + " named " + o.pod
	}
	return pods + " named " + o.namespace + "/" + o.pod
}

// redactedLifecycle replays a pod as the export holds it (inside the
// window) and redacts it with a redactor of its own: what report counts.
// Nil when nothing of the pod is in the window.
func (o *exportOptions) redactedLifecycle(in diff.Input) (*explain.Lifecycle, error) {
	in.Pod = o.window(in.Pod)
	if len(in.Pod) == 0 {
		return nil, nil
	}
	in.Events = o.windowEach(in.Events)
	in.Audit = o.windowEach(in.Audit)
	related := make(map[string][]store.Record, len(in.Related))
	for uid, h := range in.Related {
		related[uid] = o.window(h)
	}
	in.Related = related
	budgets := make(map[string][]store.Record, len(in.Budgets))
	for uid, h := range in.Budgets {
		budgets[uid] = o.window(h)
	}
	in.Budgets = budgets
	lc, err := explain.Replay(in, diff.Options{})
	if err != nil {
		return nil, err
	}
	o.redact.redactor.Clone().Redact(lc)
	lc.DropRevisions()
	return lc, nil
}

// windowEach windows records of several objects, each object's history on
// its own, keeping their order.
func (o *exportOptions) windowEach(recs []store.Record) []store.Record {
	if o.from.IsZero() && o.to.IsZero() {
		return recs
	}
	kept := map[uint64]bool{}
	byUID := map[string][]store.Record{}
	for _, r := range recs {
		byUID[r.UID] = append(byUID[r.UID], r)
	}
	for _, h := range byUID {
		for _, r := range o.window(h) {
			kept[r.Seq] = true
		}
	}
	var out []store.Record
	for _, r := range recs {
		if kept[r.Seq] {
			out = append(out, r)
		}
	}
	return out
}

// window keeps the records of one history inside [from, to], and the last
// one before from, which says how the object stood when the window opened.
func (o *exportOptions) window(h []store.Record) []store.Record {
	if o.from.IsZero() && o.to.IsZero() {
		return h
	}
	var out []store.Record
	var before *store.Record
	for i := range h {
		r := h[i]
		switch {
		case !o.from.IsZero() && r.Observed.Before(o.from):
			before = &h[i]
		case !o.to.IsZero() && r.Observed.After(o.to):
		default:
			out = append(out, r)
		}
	}
	if before != nil && before.Type != store.Deleted && before.Type != store.DeletedUnknown {
		out = append([]store.Record{*before}, out...)
	}
	return out
}

// dedupe drops records listed twice (an object related to several pods).
func dedupe(recs []store.Record) []store.Record {
	out := recs[:0]
	for i, r := range recs {
		if i > 0 && r.Seq == recs[i-1].Seq {
			continue
		}
		out = append(out, r)
	}
	return out
}

func optName(name string) string {
	if name == "" {
		return ""
	}
	return " named " + name
}
