package app

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/podtrace/podtrace/explain"
	"github.com/podtrace/podtrace/redact"
)

// redactFlags are the redaction flags of every command that shows recorded
// objects: redaction is on unless --no-redact says otherwise, loudly.
type redactFlags struct {
	patterns cli.StringSlice
	off      bool

	redactor *redact.Redactor
	warned   bool
}

func (r *redactFlags) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "redact", Destination: &r.patterns, Usage: "also redact this env var, annotation or label key, or the matches of this regular expression (repeatable)"},
		&cli.BoolFlag{Name: "no-redact", Destination: &r.off, Usage: "show env values, credentials and last-applied configuration as recorded (do not share the output)"},
	}
}

// Complete builds the redactor, checking the patterns.
func (r *redactFlags) Complete() error {
	if r.off {
		if len(r.patterns.Value()) > 0 {
			return usagef("--redact and --no-redact contradict each other: drop one")
		}
		return nil
	}
	red, err := redact.New(r.patterns.Value())
	if err != nil {
		return &UsageError{Err: err}
	}
	r.redactor = red
	return nil
}

// apply redacts lc, or warns once that redaction is off.
func (r *redactFlags) apply(lc *explain.Lifecycle, s Streams) {
	if r.off {
		r.warnOff(s)
		return
	}
	r.redactor.Redact(lc)
}

// warnOff warns, once, that redaction is off.
func (r *redactFlags) warnOff(s Streams) {
	if r.off && !r.warned {
		fmt.Fprintln(s.ErrOut, "podtrace: WARNING: --no-redact: the output shows env values, credentials and last-applied configuration as recorded; do not attach it to a ticket")
		r.warned = true
	}
}

// forWorker returns what redacts lifecycles on one goroutine, as apply
// does, with a Redactor of its own; nil under --no-redact.
func (r *redactFlags) forWorker() func(*explain.Lifecycle) {
	if r.off {
		return nil
	}
	red := r.redactor.Clone()
	return func(lc *explain.Lifecycle) { red.Redact(lc) }
}

// objects returns a Redactor of its own for recorded objects
// (redact.Redactor.RedactObject), for one goroutine; nil under
// --no-redact.
func (r *redactFlags) objects() *redact.Redactor {
	if r.off {
		return nil
	}
	return r.redactor.Clone()
}
