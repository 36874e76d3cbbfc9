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
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Version is podtrace's version, set at build time with -ldflags -X.
var Version = "v0.1.0-dev"

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
func Run(ctx context.Context, args []string, streams Streams) error {
	prof := &profiler{}
	app := &cli.App{
		Name:                 "podtrace",
		Usage:                "record, replay and explain the life of Kubernetes pods",
		Version:              Version,
		Reader:               streams.In,
		Writer:               streams.Out,
		ErrWriter:            streams.ErrOut,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Commands:             commands(streams),
		Flags:                profileFlags(prof),
		Before:               prof.start,
		After:                prof.stop,
		// Errors are printed once, by Main.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &UsageError{Err: err}
		},
	}
	return app.RunContext(ctx, interspersed(app.Commands, args))
}

// interspersed moves a command's flags before its arguments, so that
// `podtrace diff POD -n NS` works as kubectl users expect: urfave/cli stops
// reading flags at the first argument.
func interspersed(cmds []*cli.Command, args []string) []string {
	if len(args) < 3 {
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
		if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
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
		serveCommand(streams),
	}
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return &UsageError{Err: err} }
	}
	return cmds
}
