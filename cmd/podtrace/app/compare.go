package app

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podtrace/podtrace/compare"
	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

// compareOptions are the options of podtrace compare.
type compareOptions struct {
	streams   Streams
	db        string
	against   string
	namespace string
	uids      cli.StringSlice
	output    string
	out       string
	color     string
	selector  string
	redact    redactFlags

	sel labels.Selector

	pods [2]podRef // the arguments
}

// podRef names a pod: NAMESPACE/NAME or NAME, and the incarnation's UID.
type podRef struct {
	namespace, name, uid string
}

// parsePodRef reads NAMESPACE/NAME, or NAME in namespace ns.
func parsePodRef(arg, ns string) podRef {
	if n, name, ok := strings.Cut(arg, "/"); ok {
		return podRef{namespace: n, name: name}
	}
	return podRef{namespace: ns, name: arg}
}

func newCompareOptions(streams Streams) *compareOptions {
	return &compareOptions{streams: streams, db: "podtrace.db", output: "text", color: "auto"}
}

func (o *compareOptions) flags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read A (and B, without --against) from", TakesFile: true},
		&cli.StringFlag{Name: "against", Destination: &o.against, Usage: "trace file to read B from (default: --db)", TakesFile: true},
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Destination: &o.namespace, Usage: "namespace of a pod given as NAME (default: the namespace it was recorded in, if only one)"},
		&cli.StringSliceFlag{Name: "uid", Destination: &o.uids, Usage: "pick an incarnation (a UID or its prefix): the first --uid is A's, the second B's"},
		&cli.StringFlag{Name: "selector", Aliases: []string{"l"}, Destination: &o.selector, Usage: "compare a cohort: the pods whose labels match, grouped by how they ended (no pod arguments)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: o.output, Destination: &o.output, Usage: "output format: text, markdown, json, yaml, or html (one offline page, no script; with --out FILE)"},
		outFlag(&o.out),
		&cli.StringFlag{Name: "color", Value: o.color, Destination: &o.color, Usage: "colour the text: auto (on a terminal), always or never"},
	}, o.redact.flags()...)
}

// Complete reads the two pods from the arguments.
func (o *compareOptions) Complete(c *cli.Context) error {
	if o.selector != "" {
		if c.NArg() != 0 {
			return usagef("compare --selector takes no pod arguments (got %d): podtrace compare --selector KEY=VALUE [-n NAMESPACE] [--db TRACE]", c.NArg())
		}
		sel, err := labels.Parse(o.selector)
		if err != nil {
			return usagef("--selector %q: %v", o.selector, err)
		}
		o.sel = sel
		return nil
	}
	if c.NArg() != 2 {
		return usagef("compare takes two pods (got %d arguments): podtrace compare [NAMESPACE/]A [NAMESPACE/]B [--db TRACE] [--against TRACE]", c.NArg())
	}
	uids := o.uids.Value()
	for i := range o.pods {
		ref := parsePodRef(c.Args().Get(i), o.namespace)
		if i < len(uids) {
			ref.uid = uids[i]
		}
		o.pods[i] = ref
	}
	if o.against == "" {
		o.against = o.db
	}
	return nil
}

// Validate checks the flags, naming the one that is wrong.
func (o *compareOptions) Validate() error {
	if err := checkFormat(o.output, "text", "markdown", "json", "yaml", "html"); err != nil {
		return err
	}
	if o.output == "html" {
		if o.selector != "" {
			return usagef("--output html shows two pods: with --selector, use text, markdown, json or yaml")
		}
		if err := htmlToTerminal(o.streams, o.out, "podtrace compare A B"); err != nil {
			return err
		}
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return usagef("--color must be auto, always or never, not %q", o.color)
	}
	if o.db == "" {
		return usagef("--db must name a trace file")
	}
	if len(o.uids.Value()) > 2 {
		return usagef("--uid is given once for A and once for B, not %d times", len(o.uids.Value()))
	}
	for _, p := range o.pods {
		if o.sel == nil && p.name == "" {
			return usagef("a pod to compare has no name: give NAMESPACE/NAME or NAME")
		}
	}
	return o.redact.Complete()
}

// Run loads and replays both pods and writes their comparison.
func (o *compareOptions) Run() error {
	if o.sel != nil {
		return o.runCohort()
	}
	var sides [2]compare.Side
	var err error
	if o.against == o.db {
		// One trace: opened, scanned and its context loaded once.
		sides, err = o.sides(o.db, o.pods[:])
	} else {
		for i, path := range []string{o.db, o.against} {
			var s [2]compare.Side
			if s, err = o.sides(path, o.pods[i:i+1]); err == nil {
				sides[i] = s[0]
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	r := compare.Compare(sides[0], sides[1])
	return o.write(func(out io.Writer, color bool) error {
		switch o.output {
		case "json", "yaml":
			return writeAs(out, o.output, r)
		case "markdown":
			return buffered(out, func(w io.Writer) error { return report.CompareMarkdown(w, r, report.TextOptions{}) })
		case "html":
			return buffered(out, func(w io.Writer) error { return report.CompareHTML(w, r) })
		}
		return buffered(out, func(w io.Writer) error {
			return report.Compare(w, r, report.TextOptions{Color: color, Width: terminalWidth(out)})
		})
	})
}

// write hands render where the output goes (--out, else standard output)
// and whether to colour it.
func (o *compareOptions) write(render func(w io.Writer, color bool) error) (err error) {
	w, closeOut, err := output(o.streams, o.out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeOut(); err == nil {
			err = cerr
		}
	}()
	color := o.color == "always" || (o.color == "auto" && isTerminal(w))
	return render(w, color)
}

// sides loads the pods refs (one or two) from the trace at path, with the
// webhooks and the namespace compare needs beside each lifecycle.
func (o *compareOptions) sides(path string, refs []podRef) ([2]compare.Side, error) {
	return loadSides(path, refs, &o.redact, o.streams)
}

// loadSides loads the pods refs (one or two) from the trace at path and
// replays them, redacted by red, with what compare needs beside each
// lifecycle (compareSide).
func loadSides(path string, refs []podRef, red *redactFlags, streams Streams) ([2]compare.Side, error) {
	var out [2]compare.Side
	db, err := openTrace(path)
	if err != nil {
		return out, err
	}
	defer db.Close()
	var filters []store.ObjectFilter
	for _, ref := range refs {
		filters = append(filters, podFilter(ref.namespace, ref.name))
	}
	ctx, found, err := scanTrace(db, filters...)
	if err != nil {
		return out, err
	}
	tc, err := newContext(db, ctx)
	if err != nil {
		return out, err
	}
	var ins [2]diff.Input
	var pods [2]store.Object
	for i, ref := range refs {
		if pods[i], err = choosePod(db, found[i], ref.namespace, ref.name, ref.uid, streams.ErrOut); err != nil {
			return out, err
		}
		if ins[i], err = loadInput(db, tc, pods[i]); err != nil {
			return out, err
		}
	}
	// The replays share nothing they write: on two cores, side by side.
	var lcs [2]*explain.Lifecycle
	var errs [2]error
	var wg sync.WaitGroup
	for i := range refs {
		wg.Go(func() { lcs[i], errs[i] = explain.Replay(ins[i], diff.Options{}) })
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil {
			return out, fmt.Errorf("replay pod %s/%s: %w", pods[i].Namespace, pods[i].Name, errs[i])
		}
		red.apply(lcs[i], streams)
		if out[i], err = compareSide(db, tc, ins[i], lcs[i], red.objects()); err != nil {
			return out, err
		}
	}
	return out, nil
}

// compareSide is what compare reads of a replayed pod: its lifecycle (as
// redacted by the caller), the trace's webhooks, and the revisions of its
// namespace, their objects redacted by red (nil: not redacted), as the
// pod's own labels are.
func compareSide(db *store.DB, tc *traceContext, in diff.Input, lc *explain.Lifecycle, red *redact.Redactor) (compare.Side, error) {
	ns, err := tc.named(db, "Namespace", lc.Namespace)
	if err != nil {
		return compare.Side{}, err
	}
	if red != nil && len(ns) > 0 {
		ns = slices.Clone(ns) // the context's copy is shared
		for i := range ns {
			if len(ns[i].Object) == 0 {
				continue
			}
			if ns[i].Object, err = red.RedactObject(ns[i].Object); err != nil {
				return compare.Side{}, fmt.Errorf("namespace %s: %w", lc.Namespace, err)
			}
		}
	}
	return compare.Side{Lifecycle: lc, Webhooks: in.Webhooks, Namespace: ns}, nil
}

// runCohort replays the pods the selector matches and compares the ways
// they ended.
func (o *compareOptions) runCohort() error {
	db, err := openTrace(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, found, err := scanTrace(db, store.ObjectFilter{Kind: "Pod", Namespace: o.namespace})
	if err != nil {
		return err
	}
	tc, err := newContext(db, ctx)
	if err != nil {
		return err
	}
	var sides []compare.Side
	red := o.redact.objects()
	for _, pod := range found[0] {
		in, err := loadInput(db, tc, pod)
		if err != nil {
			return err
		}
		var m metav1.PartialObjectMetadata
		if len(in.Pod) == 0 || json.Unmarshal(in.Pod[0].Object, &m) != nil || !o.sel.Matches(labels.Set(m.Labels)) {
			continue
		}
		lc, err := explain.Replay(in, diff.Options{})
		if err != nil {
			return fmt.Errorf("replay pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		o.redact.apply(lc, o.streams)
		side, err := compareSide(db, tc, in, lc, red)
		if err != nil {
			return err
		}
		sides = append(sides, side)
	}
	if len(sides) == 0 {
		where := "in the trace"
		if o.namespace != "" {
			where = "in namespace " + o.namespace
		}
		return fmt.Errorf("no recorded pod %s has labels matching %q: check --selector and -n", where, o.selector)
	}
	c := compare.Cohorts(o.selector, sides)
	return o.write(func(out io.Writer, color bool) error {
		switch o.output {
		case "json", "yaml":
			return writeAs(out, o.output, c)
		case "markdown":
			return buffered(out, func(w io.Writer) error { return report.CohortMarkdown(w, c, report.TextOptions{}) })
		}
		return buffered(out, func(w io.Writer) error {
			return report.Cohort(w, c, report.TextOptions{Color: color, Width: terminalWidth(out)})
		})
	})
}

func compareCommand(streams Streams) *cli.Command {
	o := newCompareOptions(streams)
	return &cli.Command{
		Name:      "compare",
		Usage:     "put the life of a pod that worked beside one that did not, and name what differs",
		ArgsUsage: "[NAMESPACE/]A [NAMESPACE/]B | --selector KEY=VALUE",
		Flags:     o.flags(),
		Action: func(c *cli.Context) error {
			if err := o.Complete(c); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
}
