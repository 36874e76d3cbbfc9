package app

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

type reportOptions struct {
	streams   Streams
	db        string
	namespace string
	pod       string
	format    string
	html      bool
	out       string
	color     string
	redact    redactFlags
}

func reportCommand(streams Streams) *cli.Command {
	o := &reportOptions{streams: streams, db: "podtrace.db", format: "text", color: "auto"}
	return &cli.Command{
		Name:  "report",
		Usage: "summarize a trace: every pod, its phases and findings; as text, markdown or one self-contained HTML file",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read", TakesFile: true},
			&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Destination: &o.namespace, Usage: "only pods in this namespace"},
			&cli.StringFlag{Name: "pod", Destination: &o.pod, Usage: "only pods of this name"},
			&cli.StringFlag{Name: "format", Value: o.format, Destination: &o.format, Usage: "text, markdown or html"},
			&cli.BoolFlag{Name: "html", Destination: &o.html, Usage: "same as --format html"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Destination: &o.out, Usage: "write to this file instead of standard output (- is standard output)", TakesFile: true},
			&cli.StringFlag{Name: "color", Value: o.color, Destination: &o.color, Usage: "colour the text: auto, always or never"},
		}, o.redact.flags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("report takes no arguments (got %q): use --pod NAME to pick a pod", c.Args().First())
			}
			if o.html {
				o.format = "html"
			}
			switch o.format {
			case "text", "markdown", "html":
			default:
				return usagef("--format must be text, markdown or html, not %q", o.format)
			}
			if err := o.redact.Complete(); err != nil {
				return err
			}
			return o.Run()
		},
	}
}

// Run loads and replays every pod asked for and writes the report.
func (o *reportOptions) Run() error {
	if o.out == "-" {
		o.out = "" // standard output, as without -o
	}
	gc := 200
	if o.format == "html" {
		gc = 300 // see batchGC
	}
	defer batchGC(gc)()
	db, err := openTrace(o.db)
	if err != nil {
		return err
	}
	tr, err := loadTrace(db, o.namespace, o.pod, o.redact.forWorker, o.format == "html")
	db.Close()
	if err != nil {
		return err
	}
	tr.File = o.db
	tr.Live = liveSession(o.db, tr.Sessions)
	if len(tr.Pods) > 0 {
		o.redact.warnOff(o.streams)
	}
	tr.Unredacted = o.redact.off
	if o.pod != "" && len(tr.Pods) == 0 {
		return fmt.Errorf("no pod named %q recorded%s in %s: run podtrace report without --pod to list them", o.pod, inNamespace(o.namespace), o.db)
	}
	w := o.streams.Out
	var f *os.File
	if o.out != "" {
		if f, err = os.Create(o.out); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	switch o.format {
	case "html":
		err = report.HTML(bw, tr, report.HTMLOptions{})
	case "markdown":
		err = report.Markdown(bw, tr, report.TextOptions{})
	default:
		color := o.color == "always" || (o.color == "auto" && o.out == "" && isTerminal(o.streams.Out))
		err = report.Text(bw, tr, report.TextOptions{Color: color})
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if f != nil {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write report %q: %w", o.out, err)
		}
		st, _ := os.Stat(o.out)
		fmt.Fprintf(o.streams.ErrOut, "wrote %s report of %s to %s (%s)\n", o.format, plural(len(tr.Pods), "pod"), o.out, plural(st.Size(), "byte"))
	}
	return nil
}

// now is time.Now, replaced in golden tests.
var now = time.Now

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// loadTrace replays every recorded pod (in namespace ns and named name, when
// given) on GOMAXPROCS workers. Each worker gets its finishing step from
// newFinish (when not nil) and applies it to every pod it replays. Each
// worker holds one pod's input at a time; the lifecycles keep the store's
// order until they are sorted, and the error is that of the first pod, in
// that order, that failed. With html, each worker also encodes the page
// data of the pods it replays (report.PrepareHTML), so that the page is
// mostly written while pods are replayed.
func loadTrace(db *store.DB, ns, name string, newFinish func() func(*explain.Lifecycle), html bool) (*report.Trace, error) {
	ctx, found, err := scanTrace(db, store.ObjectFilter{Kind: "Pod", Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	tc, err := newContext(db, ctx)
	if err != nil {
		return nil, err
	}
	pods := found[0]
	generated := now().UTC()
	workers := min(runtime.GOMAXPROCS(0), len(pods))
	finish := make([]func(*explain.Lifecycle), workers)
	if newFinish != nil {
		for w := range finish {
			finish[w] = newFinish()
		}
	}
	var lcs []*explain.Lifecycle // nil when there is no pod, as before
	if len(pods) > 0 {
		lcs = make([]*explain.Lifecycle, len(pods))
	}
	errs := make([]error, len(pods))
	var prepared []*report.HTMLPod
	if html {
		prepared = make([]*report.HTMLPod, len(pods))
	}
	var (
		next   atomic.Int64 // the index of the next pod to replay
		failed atomic.Int64 // the lowest index of a pod that failed, or len(pods)
		wg     sync.WaitGroup
	)
	failed.Store(int64(len(pods)))
	for w := range workers {
		wg.Go(func() {
			for {
				// Indices are taken in order: every pod before one that
				// failed is replayed, and none after it is started.
				i := next.Add(1) - 1
				if i >= failed.Load() {
					return
				}
				if lcs[i], errs[i] = loadPod(db, tc, pods[i], finish[w]); errs[i] != nil {
					lowerTo(&failed, i)
					return
				}
				if prepared != nil {
					prepared[i] = report.PrepareHTML(lcs[i])
					report.TrimPrepared(lcs[i])
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f < int64(len(pods)) {
		return nil, errs[f]
	}
	tr := &report.Trace{Sessions: tc.sessions, Gaps: tc.gaps, Pruned: tc.prunes, Generated: generated, Pods: lcs}
	if prepared != nil {
		tr.Prepared = make(map[*explain.Lifecycle]*report.HTMLPod, len(lcs))
		for i, lc := range lcs {
			tr.Prepared[lc] = prepared[i]
		}
	}
	report.SortPods(tr.Pods)
	return tr, nil
}

// lowerTo sets a to v if v is lower.
func lowerTo(a *atomic.Int64, v int64) {
	for old := a.Load(); v < old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// loadPod loads and replays one pod, and finishes its lifecycle.
func loadPod(db *store.DB, tc *traceContext, p store.Object, finish func(*explain.Lifecycle)) (*explain.Lifecycle, error) {
	in, err := loadInput(db, tc, p)
	if err != nil {
		return nil, err
	}
	lc, err := explain.Replay(in, diff.Options{})
	if err != nil {
		return nil, fmt.Errorf("replay pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if finish != nil {
		finish(lc)
	}
	// A report holds every pod's lifecycle until it is written.
	lc.DropRevisions()
	return lc, nil
}

// batchGC lets the heap of a report grow to 1+percent/100 times its live
// data instead of twice, unless the user set GOGC: a report replays every
// revision into lifecycles it holds until it writes, and the collector's
// marking was a fifth of its CPU. The text and markdown reports hold whole
// lifecycles: GOGC=200 (1,000 pods of 100 revisions: 10.1-10.7 -> 8.0-8.8 s
// of CPU, 600 -> 700-790 MB peak RSS). The HTML report holds each pod's
// page data and what is left of its lifecycle (report.TrimPrepared), less
// than half of that: at GOGC=200 it peaked at 320-330 MB, and GOGC=600
// (535-620 MB, below what 200 cost with whole lifecycles) took its CPU from
// 7.2-7.7 to 6.4-6.5 s in one side-by-side run. Since the replay allocates
// less, GOGC=300 costs what 600 did (8 runs each, alternated: 4.99 vs 5.00
// s CPU, 2.70 vs 2.71 s wall) at 312-330 MB instead of 434-498; 200 cost
// 4% more CPU (265-281 MB).
// record keeps Go's default: it runs for days within a memory budget. It
// returns the function that puts the previous setting back (for callers of
// Run in a longer-lived process: tests, embedders).
func batchGC(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}
