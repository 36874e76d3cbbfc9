package app

import (
	"bufio"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/diff"
	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/report"
	"github.com/podtrace/podtrace/store"
)

// podOptions are the options of the commands that show one pod: diff and
// explain.
type podOptions struct {
	streams      Streams
	db           string
	namespace    string
	uid          string
	output       string
	out          string
	color        string
	allFields    bool
	showDefaults bool
	follow       bool
	showInfo     bool
	redact       redactFlags

	pod string // the argument
}

func newPodOptions(streams Streams) *podOptions {
	return &podOptions{streams: streams, db: "podtrace.db", output: "text", color: "auto"}
}

func (o *podOptions) flags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "db", Value: o.db, Destination: &o.db, Usage: "trace file to read", TakesFile: true},
		&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Destination: &o.namespace, Usage: "namespace of the pod (default: the namespace it was recorded in, if only one)"},
		&cli.StringFlag{Name: "uid", Destination: &o.uid, Usage: "pick one incarnation of a pod name that was deleted and re-created (a UID or its prefix)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: o.output, Destination: &o.output, Usage: "output format: text, json or yaml"},
		outFlag(&o.out),
		&cli.StringFlag{Name: "color", Value: o.color, Destination: &o.color, Usage: "colour the text: auto (on a terminal), always or never"},
		&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Destination: &o.follow, Usage: "then keep reading the trace (one being recorded) every second and print what lands about the pod, until Ctrl-C"},
		&cli.BoolFlag{Name: "show-info", Destination: &o.showInfo, Usage: "show the evidence of info findings (how the pod ended), one line each otherwise"},
	}, o.redact.flags()...)
}

// Complete fills the pod argument.
func (o *podOptions) Complete(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("%s takes exactly one pod name or workload (got %d arguments): podtrace %s POD|deploy/NAME [-n NAMESPACE]", c.Command.Name, c.NArg(), c.Command.Name)
	}
	o.pod = c.Args().First()
	return nil
}

// Validate checks the flags, naming the one that is wrong.
func (o *podOptions) Validate() error {
	if err := checkFormat(o.output, "text", "json", "yaml"); err != nil {
		return err
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return usagef("--color must be auto, always or never, not %q", o.color)
	}
	if o.db == "" {
		return usagef("--db must name a trace file")
	}
	if o.follow && o.output != "text" {
		return usagef("--follow prints text: drop -o %s", o.output)
	}
	return o.redact.Complete()
}

// lifecycle loads and replays the pod.
func (o *podOptions) lifecycle() (*explain.Lifecycle, error) {
	db, err := openTrace(o.db)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	kind, name, isWorkload, err := workloadArg(o.pod)
	if err != nil {
		return nil, err
	}
	opts := diff.Options{Admission: diff.AdmissionOptions{ShowDefaults: o.showDefaults}}
	if isWorkload {
		return o.workloadLifecycle(db, kind, name, opts)
	}
	// One pass over the objects finds the pod and the trace's context.
	ctx, found, err := scanTrace(db, podFilter(o.namespace, name))
	if err != nil {
		return nil, err
	}
	pod, err := choosePod(db, found[0], o.namespace, name, o.uid, o.streams.ErrOut)
	if err != nil {
		return nil, err
	}
	tc, err := newContext(db, ctx)
	if err != nil {
		return nil, err
	}
	in, err := loadInput(db, tc, pod)
	if err != nil {
		return nil, err
	}
	lc, err := explain.Replay(in, opts)
	if err != nil {
		return nil, fmt.Errorf("replay pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	o.redact.apply(lc, o.streams)
	return lc, nil
}

// maxWorkloadPods bounds how many of a workload's pods, the newest, are
// replayed to find the one that went wrong.
const maxWorkloadPods = 100

// workloadLifecycle replays the pods a workload owns and returns the one
// chooseWorkloadPod picks.
func (o *podOptions) workloadLifecycle(db *store.DB, kind, name string, opts diff.Options) (*explain.Lifecycle, error) {
	if o.uid != "" {
		return nil, usagef("--uid picks an incarnation of a pod name, not a pod of %s", o.pod)
	}
	pods, err := workloadPods(db, o.namespace, kind, name)
	if err != nil {
		return nil, err
	}
	if len(pods) > maxWorkloadPods {
		fmt.Fprintf(o.streams.ErrOut, "podtrace: %s owns %d recorded pods; looking at the newest %d\n", o.pod, len(pods), maxWorkloadPods)
		pods = pods[:maxWorkloadPods]
	}
	tc, err := loadContext(db)
	if err != nil {
		return nil, err
	}
	var all []replayed
	for _, p := range pods {
		in, err := loadInput(db, tc, p)
		if err != nil {
			return nil, err
		}
		lc, err := explain.Replay(in, opts)
		if err != nil {
			return nil, fmt.Errorf("replay pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		all = append(all, replayed{p, lc})
	}
	lc := chooseWorkloadPod(all, o.pod, o.streams.ErrOut).lc
	o.redact.apply(lc, o.streams)
	return lc, nil
}

// action completes and validates the options, replays the pod and hands
// its lifecycle to render, writing to --out or standard output; with
// --follow, then follows the pod.
func (o *podOptions) action(render func(io.Writer, *explain.Lifecycle) error) cli.ActionFunc {
	return func(c *cli.Context) (err error) {
		if err := o.Complete(c); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		lc, err := o.lifecycle()
		if err != nil {
			return err
		}
		w, closeOut, err := output(o.streams, o.out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := closeOut(); err == nil {
				err = cerr
			}
		}()
		o.streams.Out = w
		if err := render(w, lc); err != nil || !o.follow {
			return err
		}
		return o.followPod(c.Context, lc, c.Command.Name == "explain")
	}
}

func (o *podOptions) textOptions() report.TextOptions {
	color := o.color == "always" || (o.color == "auto" && isTerminal(o.streams.Out))
	return report.TextOptions{Color: color, AllFields: o.allFields, ShowInfo: o.showInfo, Width: terminalWidth(o.streams.Out)}
}

// writeAs writes v as JSON or YAML.
func writeAs(w io.Writer, format string, v any) error {
	if format == "yaml" {
		return writeYAML(w, v)
	}
	return writeJSONTo(w, v)
}

// buffered runs write with a buffer in front of w: the renderers write a
// line at a time, and a diff of a thousand revisions has tens of thousands
// of lines, each a system call on a terminal or a pipe. What was written
// before an error still reaches the output, as it did unbuffered.
func buffered(out io.Writer, write func(io.Writer) error) error {
	bw := bufio.NewWriterSize(out, 64<<10)
	err := write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func diffCommand(streams Streams) *cli.Command {
	o := newPodOptions(streams)
	return &cli.Command{
		Name:      "diff",
		Usage:     "replay a pod's recorded history: what changed, when, and who changed it",
		ArgsUsage: "POD | deploy/NAME | rs/NAME | job/NAME | sts/NAME | ds/NAME",
		Flags: append(o.flags(),
			&cli.BoolFlag{Name: "all-fields", Destination: &o.allFields, Usage: "show every field set at creation, not only images, owners, finalizers and labels"},
			// Only diff prints the admission section.
			&cli.BoolFlag{Name: "show-defaults", Destination: &o.showDefaults, Usage: "in the admission section, also show what defaulting and the owning controller set"}),
		Action: o.action(func(out io.Writer, lc *explain.Lifecycle) error {
			if o.output != "text" {
				return writeAs(out, o.output, lc)
			}
			return buffered(out, func(w io.Writer) error { return report.Diff(w, lc, o.textOptions()) })
		}),
	}
}

func explainCommand(streams Streams) *cli.Command {
	o := newPodOptions(streams)
	return &cli.Command{
		Name:      "explain",
		Usage:     "say why a pod is stuck or how it ended, with the evidence from the recording",
		ArgsUsage: "POD | deploy/NAME | rs/NAME | job/NAME | sts/NAME | ds/NAME",
		Flags:     o.flags(),
		Action: o.action(func(out io.Writer, lc *explain.Lifecycle) error {
			if o.output != "text" {
				return writeAs(out, o.output, struct {
					Namespace string            `json:"namespace"`
					Name      string            `json:"name"`
					UID       string            `json:"uid"`
					Outcome   string            `json:"outcome"`
					Findings  []explain.Finding `json:"findings"`
				}{lc.Namespace, lc.Name, lc.UID, lc.Outcome, lc.Findings})
			}
			return buffered(out, func(w io.Writer) error { return report.Explain(w, lc, o.textOptions()) })
		}),
	}
}
