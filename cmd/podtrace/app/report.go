package app

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

type reportOptions struct {
	streams   Streams
	db        string
	namespace string
	pod       string
	format    string // -o
	oldFormat string // --format, deprecated for -o
	html      bool
	out       string
	color     string
	compare   cli.StringSlice
	showInfo  bool
	redact    redactFlags

	pair []podRef // --compare
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
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: o.format, Destination: &o.format, Usage: "output format: text, markdown or html (one self-contained page; with --out FILE)"},
			&cli.BoolFlag{Name: "html", Destination: &o.html, Usage: "same as -o html"},
			outFlag(&o.out),
			&cli.StringFlag{Name: "color", Value: o.color, Destination: &o.color, Usage: "colour the text: auto, always or never"},
			&cli.StringSliceFlag{Name: "compare", Destination: &o.compare, Usage: "also compare these two pods, [NAMESPACE/]NAME each: --compare A --compare B, or --compare A,B"},
			&cli.BoolFlag{Name: "show-info", Destination: &o.showInfo, Usage: "list the info findings (how each pod ended), counted by kind otherwise (folded in HTML)"},
			// Deprecated: the format is -o, as in every command.
			&cli.StringFlag{Name: "format", Hidden: true, Destination: &o.oldFormat},
		}, o.redact.flags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("report takes no arguments (got %q): use --pod NAME to pick a pod", c.Args().First())
			}
			if err := o.Complete(c); err != nil {
				return err
			}
			if pods := o.compare.Value(); len(pods) > 0 {
				if len(pods) != 2 {
					return usagef("--compare takes two pods, as --compare A --compare B or --compare A,B (got %d: %s)", len(pods), strings.Join(pods, ", "))
				}
				for _, p := range pods {
					ref := parsePodRef(p, o.namespace)
					if ref.name == "" {
						return usagef("--compare %q names no pod: give NAMESPACE/NAME or NAME", p)
					}
					o.pair = append(o.pair, ref)
				}
			}
			if err := o.redact.Complete(); err != nil {
				return err
			}
			return o.Run()
		},
	}
}

// Complete reads the format from -o, --html and the deprecated spellings:
// --format FMT, and -o FILE (before -o was the format, it was the file).
func (o *reportOptions) Complete(c *cli.Context) error {
	if c.IsSet("output") && !slices.Contains(reportFormats, o.format) && (strings.ContainsAny(o.format, "./") || o.format == "-") {
		// report -o report.html, from before -o was the format.
		if c.IsSet("out") {
			return usagef("-o %s and --out %s: -o is the output format now (%s); give the file with --out alone", o.format, o.out, orList(reportFormats))
		}
		warnDeprecated(c, o.streams, "-o FILE", "--out FILE (-o is the output format)")
		o.out, o.format = o.format, "text"
	}
	if c.IsSet("format") {
		warnDeprecated(c, o.streams, "--format "+o.oldFormat, "-o "+o.oldFormat)
		if c.IsSet("output") && o.format != "text" && o.format != o.oldFormat {
			return usagef("--format %s and -o %s disagree: give -o alone", o.oldFormat, o.format)
		}
		o.format = o.oldFormat
	}
	if o.html {
		if c.IsSet("output") && o.format != "html" && o.format != "text" {
			return usagef("--html and -o %s disagree: --html is -o html", o.format)
		}
		o.format = "html"
	}
	if err := checkFormat(o.format, reportFormats...); err != nil {
		return err
	}
	if o.format == "html" {
		return htmlToTerminal(o.streams, o.out, "podtrace report")
	}
	return nil
}

var reportFormats = []string{"text", "markdown", "html"}

// Run loads and replays every pod asked for and writes the report.
func (o *reportOptions) Run() error {
	if o.out == "-" {
		o.out = "" // standard output, as without --out
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
	tr, err := loadTrace(db, traceLoad{namespace: o.namespace, name: o.pod, redact: &o.redact, html: o.format == "html", compare: true})
	db.Close()
	if err != nil {
		return err
	}
	if o.pair != nil {
		sides, err := loadSides(o.db, o.pair, &o.redact, o.streams)
		if err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
		tr.Pair = compare.Compare(sides[0], sides[1])
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
		err = report.HTML(bw, tr, report.HTMLOptions{ShowInfo: o.showInfo})
	case "markdown":
		err = report.Markdown(bw, tr, report.TextOptions{ShowInfo: o.showInfo})
	default:
		color := o.color == "always" || (o.color == "auto" && o.out == "" && isTerminal(o.streams.Out))
		width := 0
		if o.out == "" {
			width = terminalWidth(o.streams.Out)
		}
		err = report.Text(bw, tr, report.TextOptions{Color: color, ShowInfo: o.showInfo, Width: width})
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

// traceLoad says what loadTrace loads: the pods in namespace (when
// given) named name (when given), redacted (nil: not), with the page data
// of each prepared for HTML, and the trace's divided cohorts compared.
type traceLoad struct {
	namespace, name string
	redact          *redactFlags
	html            bool
	compare         bool
}

// compareCohortsUpTo is how many of a trace's divided cohorts a report
// compares, worst first: each comparison replays two pods again. The others
// are named with the command that compares them.
const compareCohortsUpTo = 10

// loadTrace replays every recorded pod (in namespace ns and named name, when
// given) on GOMAXPROCS workers, each with a redactor of its own. Each
// worker holds one pod's input at a time; the lifecycles keep the store's
// order until they are sorted, and the error is that of the first pod, in
// that order, that failed. With html, each worker also encodes the page
// data of the pods it replays (report.PrepareHTML), so that the page is
// mostly written while pods are replayed. With compare, each worker keeps
// what grouping needs of each pod (compare.MemberOf), and the trace's
// divided cohorts are compared (compareCohorts).
func loadTrace(db *store.DB, l traceLoad) (*report.Trace, error) {
	ctx, found, err := scanTrace(db, store.ObjectFilter{Kind: "Pod", Namespace: l.namespace, Name: l.name})
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
	if l.redact != nil {
		for w := range finish {
			finish[w] = l.redact.forWorker()
		}
	}
	var lcs []*explain.Lifecycle // nil when there is no pod, as before
	if len(pods) > 0 {
		lcs = make([]*explain.Lifecycle, len(pods))
	}
	errs := make([]error, len(pods))
	var prepared []*report.HTMLPod
	if l.html {
		prepared = make([]*report.HTMLPod, len(pods))
	}
	var members []compare.Member
	if l.compare {
		members = make([]compare.Member, len(pods))
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
				if members != nil {
					members[i] = compare.MemberOf(lcs[i])
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
	if members != nil {
		if tr.Cohorts, err = compareCohorts(db, tc, pods, compare.Divided(members), l.redact); err != nil {
			return nil, err
		}
	}
	report.SortPods(tr.Pods)
	return tr, nil
}

// compareCohorts compares the first compareCohortsUpTo cohorts: their
// typical members are replayed again, whole (the report let go of their
// revisions), on GOMAXPROCS workers, and redacted as the report is.
func compareCohorts(db *store.DB, tc *traceContext, pods []store.Object, cohorts []*compare.Cohort, red *redactFlags) ([]*compare.Cohort, error) {
	if len(cohorts) == 0 {
		return nil, nil
	}
	byUID := make(map[string]store.Object, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	var typical []store.Object
	for _, c := range cohorts[:min(len(cohorts), compareCohortsUpTo)] {
		for _, p := range c.Typical() {
			typical = append(typical, byUID[p.UID])
		}
	}
	sides := make([]compare.Side, len(typical))
	errs := make([]error, len(typical))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(typical)) {
		wg.Go(func() {
			var finish func(*explain.Lifecycle)
			var objects *redact.Redactor
			if red != nil {
				finish, objects = red.forWorker(), red.objects()
			}
			for i := int(next.Add(1) - 1); i < len(typical); i = int(next.Add(1) - 1) {
				in, err := loadInput(db, tc, typical[i])
				if err != nil {
					errs[i] = err
					continue
				}
				lc, err := explain.Replay(in, diff.Options{})
				if err != nil {
					errs[i] = fmt.Errorf("replay pod %s/%s: %w", typical[i].Namespace, typical[i].Name, err)
					continue
				}
				if finish != nil {
					finish(lc)
				}
				sides[i], errs[i] = compareSide(db, tc, in, lc, objects)
			}
		})
	}
	wg.Wait()
	bySide := make(map[string]compare.Side, len(typical))
	for i, p := range typical {
		if errs[i] != nil {
			return nil, errs[i]
		}
		bySide[p.UID] = sides[i]
	}
	for _, c := range cohorts[:min(len(cohorts), compareCohortsUpTo)] {
		_ = c.CompareTypical(func(p compare.Pod) (compare.Side, error) { return bySide[p.UID], nil })
	}
	return cohorts, nil
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
// record uses it too (recordGCPercent). It returns the function that puts
// the previous setting back (for callers of Run in a longer-lived process:
// tests, embedders).
func batchGC(percent int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(old) }
}
