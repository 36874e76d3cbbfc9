// Package app builds the podtrace command line: one options struct per
// command (defaults, flags, then Complete -> Validate -> Run), errors printed
// once, at the top, by Main.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Version is podtrace's version, set at build time with -ldflags -X (make
// build and make install: the newest v* tag, else v0.1.0-dev+COMMIT). A
// plain go build or go install reads it from the build info instead:
// the module's version, or the commit it was built from (buildVersion).
var Version = devVersion

const devVersion = "v0.1.0-dev"

func init() {
	if Version == devVersion {
		info, ok := debug.ReadBuildInfo()
		if ok {
			Version = buildVersion(info)
		}
	}
}

// buildVersion is the version of a binary built without -ldflags -X: its
// module's version (go install ...@v0.2.0, or the pseudo-version Go
// derives from the commit of a checkout, v0.0.0-20261202071307-5fb427bf33b5),
// else devVersion with the commit (+0123456789ab, .dirty if the tree had
// changes), else devVersion (go test, -buildvcs=false, a git worktree, or
// a build outside a checkout).
func buildVersion(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = ".dirty"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return devVersion
	}
	return devVersion + "+" + rev + dirty
}

// Streams are the command's standard streams.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// UsageError is a mistake in the command line: Main exits 2 for it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// usagef returns a UsageError.
func usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Main runs podtrace with args and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error.
func Main(args []string, streams Streams) int {
	// A closed terminal (SIGHUP) stops a recording like Ctrl-C: flushed,
	// exit 0. Without it the process died with what was not flushed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := Run(ctx, args, streams)
	if err == nil {
		return 0
	}
	fmt.Fprintf(streams.ErrOut, "podtrace: error: %v\n", err)
	var usage *UsageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

// Run runs podtrace with args; Main cancels ctx on Ctrl-C, SIGTERM or SIGHUP.
// Installed as a kubectl plugin (kubectl-podtrace), its help and errors
// name it as kubectl runs it: kubectl podtrace.
func Run(ctx context.Context, args []string, streams Streams) error {
	name := "podtrace"
	if len(args) > 0 && filepath.Base(args[0]) == "kubectl-podtrace" {
		name = pluginName
	}
	err := run(ctx, name, args, streams)
	if err != nil && name == pluginName {
		return pluginError{err}
	}
	return err
}

func run(ctx context.Context, name string, args []string, streams Streams) error {
	prof := &profiler{}
	app := &cli.App{
		Name:                 name,
		Usage:                "record, replay and explain the life of Kubernetes pods",
		Description:          "Flags are kubectl's: --db FILE is the trace, -o the output format, --out FILE a file to write;\na command's flags may come before it too: " + name + " -n shop explain web",
		Version:              Version,
		Reader:               streams.In,
		Writer:               streams.Out,
		ErrWriter:            streams.ErrOut,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Commands:             commands(streams),
		// podtrace's help command takes the place of urfave's, which would
		// have added --help.
		Flags:  append(profileFlags(prof), cli.HelpFlag),
		Before: prof.start,
		After:  prof.stop,
		// Errors are printed once, by Main.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	app.OnUsageError = onUsageError(name, app.Flags)
	// Without a command: the help. With an unknown one, an error (urfave's
	// default runs the help on it: "No help topic for 'x'").
	app.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return unknownCommand(c.Args().First(), app.Commands)
		}
		return cli.ShowAppHelp(c)
	}
	args, err := hoist(app.Commands, name, args)
	if err != nil {
		return err
	}
	return app.RunContext(ctx, interspersed(app.Commands, args))
}

// onUsageError turns urfave's flag errors into UsageErrors that say where
// the usage is, kubectl style: "unknown flag --x, see podtrace diff --help",
// "invalid value "5" for --duration: not a duration; e.g. --duration 10m".
func onUsageError(command string, flags []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		return &UsageError{Err: fmt.Errorf("%s, see %s --help", usageMessage(err.Error(), flags), command)}
	}
}

// dashed writes a flag's name as it is typed: -n, --namespace.
func dashed(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// unknownCommand says that name is no command, and which one was likely
// meant: a command it is a prefix of, or one a typo or two away.
func unknownCommand(name string, cmds []*cli.Command) error {
	var guess []string
	for _, c := range cmds {
		// A typo or two in a long name, one in a short one.
		if strings.HasPrefix(c.Name, name) || editDistance(name, c.Name) <= min(2, len(name)/3) {
			guess = append(guess, c.Name)
		}
	}
	hint := ""
	if len(guess) > 0 {
		hint = " (did you mean " + strings.Join(guess, " or ") + "?)"
	}
	return &UsageError{Err: fmt.Errorf("unknown command %q%s, see podtrace --help", name, hint)}
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// interspersed moves a command's flags before its arguments, so that
// `podtrace diff POD -n NS` works as kubectl users expect: urfave/cli stops
// reading flags at the first argument.
func interspersed(cmds []*cli.Command, args []string) []string {
	if len(args) < 3 || args[len(args)-1] == "--generate-bash-completion" {
		// Shell completion reads the words as typed (a "--" would end it).
		return args
	}
	var cmd *cli.Command
	for _, c := range cmds {
		if c.HasName(args[1]) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, name := range f.Names() {
			takesValue[name] = !isBool
		}
	}
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && takesValue[name] {
			if i+1 == len(rest) {
				// Its value is missing: the flag last, for urfave to say
				// so (before "--", it would take "--" for its value).
				return append([]string{args[0], args[1]}, flags...)
			}
			i++
			flags = append(flags, rest[i])
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	if len(positional) > 0 {
		out = append(append(out, "--"), positional...)
	}
	return out
}

// commands lists podtrace's commands; each lives in a file of its own.
func commands(streams Streams) []*cli.Command {
	cmds := []*cli.Command{
		recordCommand(streams),
		diffCommand(streams),
		explainCommand(streams),
		reportCommand(streams),
		exportCommand(streams),
		importCommand(streams),
		compareCommand(streams),
		serveCommand(streams),
		helpCommand(),
		versionCommand(streams),
		completionCommand(streams),
	}
	for _, c := range cmds {
		c.OnUsageError = onUsageError("podtrace "+c.Name, c.Flags)
		// podtrace help COMMAND, not podtrace COMMAND help.
		c.HideHelpCommand = true
		for _, f := range c.Flags {
			// "(default: false)" contradicts a flag whose usage says what
			// it does when not given.
			if b, ok := f.(*cli.BoolFlag); ok {
				b.DisableDefaultText = true
			}
		}
	}
	return cmds
}
