package app

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
	"sigs.k8s.io/yaml"
)

// The flags every command spells the same way, kubectl's:
//
//	--db FILE           the trace file (record writes it, the others read it)
//	-o, --output FMT    the output format: text, json, yaml, markdown, html
//	--out FILE          write the output to this file instead of standard output
//	-n, --namespace NS  --context NAME  --kubeconfig FILE
//
// A command's flags may also come before the command (podtrace -n shop
// explain web): hoist moves them after it.

// appFlags are the flags of podtrace itself, not of a command, and whether
// each takes a value.
var appFlags = map[string]bool{
	"profile": true, "profile-output": true,
	"help": false, "h": false, "version": false, "v": false,
	"generate-bash-completion": false,
}

// hoist moves the flags given before the command (podtrace -n shop explain
// web) after it (podtrace explain -n shop web), kubectl style, when the
// command has them; a flag the command does not have is a usage error
// that says which commands have it. podtrace's own flags stay where they
// are. Without a command, args are returned as they are.
func hoist(cmds []*cli.Command, name string, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	takesValue := map[string]bool{}
	for _, c := range cmds {
		for _, f := range c.Flags {
			_, isBool := f.(*cli.BoolFlag)
			for _, n := range f.Names() {
				takesValue[n] = takesValue[n] || !isBool
			}
		}
	}
	var own, moved []string
	var movedNames []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			// The command.
			cmd := findCommand(cmds, a)
			if cmd == nil || len(moved) == 0 {
				return args, nil
			}
			for _, n := range movedNames {
				if !hasFlag(cmd, n) {
					return nil, usagef("%s does not apply to %s %s (%s), see %s %s --help", dashed(n), name, cmd.Name, commandsWith(cmds, n, name), name, cmd.Name)
				}
				if n == "kubeconfig" && cmd.Name == "serve" {
					return nil, usagef("--kubeconfig before serve: serve writes a kubeconfig, it reads none; to name the file it writes, put the flag after the command: %s serve --kubeconfig FILE", name)
				}
			}
			out := append([]string{args[0]}, own...)
			out = append(out, a)
			out = append(out, moved...)
			return append(out, args[i+1:]...), nil
		}
		flagName, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if v, ok := appFlags[flagName]; ok {
			own = append(own, a)
			if v && !hasValue && i+1 < len(args) {
				i++
				own = append(own, args[i])
			}
			continue
		}
		v, known := takesValue[flagName]
		if !known {
			// urfave says it is unknown.
			return args, nil
		}
		moved = append(moved, a)
		movedNames = append(movedNames, flagName)
		if v && !hasValue && i+1 < len(args) {
			i++
			moved = append(moved, args[i])
		}
	}
	if len(moved) > 0 {
		return nil, usagef("%s needs a command after it, e.g. %s %s explain POD; see %s --help", dashed(movedNames[0]), name, strings.Join(moved, " "), name)
	}
	return args, nil
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func hasFlag(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return true
		}
	}
	return false
}

// commandsWith says which commands have the flag name: "only record has
// it", "record, diff and explain have it".
func commandsWith(cmds []*cli.Command, name, prog string) string {
	var with []string
	for _, c := range cmds {
		if hasFlag(c, name) {
			with = append(with, c.Name)
		}
	}
	switch len(with) {
	case 0:
		return "no command has it"
	case 1:
		return "only " + with[0] + " has it"
	}
	return strings.Join(with[:len(with)-1], ", ") + " and " + with[len(with)-1] + " have it"
}

// Go's flag package (which urfave/cli parses with) writes flags with one
// dash and hides why a value is wrong ("parse error"); usageMessage
// rewrites its messages kubectl's way, with an example of a good value.
var (
	invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)
	badSyntax    = regexp.MustCompile(`^bad flag syntax: (.*)$`)
)

// usageMessage rewrites a flag error of urfave/cli for cmd (nil: podtrace
// itself, whose flags are flags).
func usageMessage(msg string, flags []cli.Flag) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + dashed(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		f := findFlag(flags, name)
		return "flag " + dashed(name) + " needs a value" + example(f, name)
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		f := findFlag(flags, m[2])
		why := m[3]
		if why == "parse error" {
			why = "not " + want(f)
		}
		return fmt.Sprintf("invalid value %q for %s: %s%s", m[1], dashed(m[2]), why, example(f, m[2]))
	}
	if m := badSyntax.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("bad flag syntax %q: write --name=value or --name value, e.g. --db trace.db", m[1])
	}
	return msg
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// want says what kind of value f takes.
func want(f cli.Flag) string {
	switch f.(type) {
	case *cli.DurationFlag:
		return "a duration"
	case *cli.Float64Flag:
		return "a number"
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return "a whole number"
	case *cli.BoolFlag:
		return "true or false"
	}
	return "a valid value"
}

// eg finds the example a flag's usage gives: "... e.g. 10m (0: ...)".
var eg = regexp.MustCompile(`e\.g\. ([^ ,;()]+)`)

// example is "; e.g. --duration 10m": the example of f's usage, else one
// for its type.
func example(f cli.Flag, name string) string {
	if f == nil {
		return ""
	}
	if d, ok := f.(cli.DocGenerationFlag); ok {
		if m := eg.FindStringSubmatch(d.GetUsage()); m != nil {
			return fmt.Sprintf("; e.g. %s %s", dashed(name), m[1])
		}
	}
	switch f.(type) {
	case *cli.DurationFlag:
		return fmt.Sprintf("; e.g. %s 10m or %s 1h30m", dashed(name), dashed(name))
	case *cli.Float64Flag:
		return fmt.Sprintf("; e.g. %s 2.5", dashed(name))
	case *cli.BoolFlag:
		return fmt.Sprintf("; e.g. %s or %s=false", dashed(name), dashed(name))
	}
	return ""
}

// commandWord finds a podtrace command in a message: "see podtrace diff
// --help", "run podtrace report without --pod".
var commandWord = regexp.MustCompile("(kubectl )?podtrace (record|diff|explain|report|export|import|compare|serve|help|version|completion|--help|-h)\\b")

// asPlugin names kubectl podtrace where a message names podtrace's commands,
// for a podtrace run as a kubectl plugin.
func asPlugin(msg string) string {
	return commandWord.ReplaceAllStringFunc(msg, func(m string) string {
		if strings.HasPrefix(m, "kubectl ") {
			return m
		}
		return "kubectl " + m
	})
}

// pluginError is an error whose message names kubectl podtrace.
type pluginError struct{ err error }

func (e pluginError) Error() string { return asPlugin(e.err.Error()) }
func (e pluginError) Unwrap() error { return e.err }

// warnDeprecated says, once, that a flag's spelling is deprecated and what
// replaces it.
func warnDeprecated(c *cli.Context, streams Streams, old, now string) {
	msg := fmt.Sprintf("podtrace: warning: %s %s is deprecated, use %s (it works the same)\n", commandName(c), old, now)
	if isPlugin(c) {
		msg = asPlugin(msg)
	}
	fmt.Fprint(streams.ErrOut, msg)
}

// commandName is "podtrace diff" (or "kubectl podtrace diff").
func commandName(c *cli.Context) string {
	if c == nil || c.Command == nil {
		return "podtrace"
	}
	return "podtrace " + c.Command.Name
}

func isPlugin(c *cli.Context) bool {
	return c != nil && c.App != nil && c.App.Name == pluginName
}

const pluginName = "kubectl podtrace"

// outFlag is --out FILE: where output goes to a file.
func outFlag(dest *string) cli.Flag {
	return &cli.StringFlag{Name: "out", Destination: dest, TakesFile: true,
		Usage: "write the output to this file instead of standard output (- is standard output)"}
}

// output opens where a command's output goes: the file --out names (created
// or truncated), else standard output. close closes the file and says what
// was written.
func output(streams Streams, out string) (w io.Writer, close func() error, err error) {
	if out == "" || out == "-" {
		return streams.Out, func() error { return nil }, nil
	}
	f, err := os.Create(out)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	return f, func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %q: %w", out, err)
		}
		return nil
	}, nil
}

// checkFormat checks -o against the formats a command writes.
func checkFormat(format string, formats ...string) error {
	if slices.Contains(formats, format) {
		return nil
	}
	hint := ""
	if strings.ContainsAny(format, "./") {
		hint = fmt.Sprintf(" (-o is the output format; to write to a file: --out %s)", format)
	}
	return usagef("--output must be %s, not %q%s", orList(formats), format, hint)
}

// orList is "text, json or yaml".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// htmlToTerminal refuses to write an HTML page to a terminal: it is a file
// for a browser, not for reading.
func htmlToTerminal(streams Streams, out, cmd string) error {
	if (out == "" || out == "-") && isTerminal(streams.Out) {
		return usagef("-o html writes one self-contained page for a browser, not for a terminal: add --out report.html (or redirect: %s -o html > report.html)", cmd)
	}
	return nil
}

// writeYAML writes v as YAML, as kubectl -o yaml does: through its JSON.
func writeYAML(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// writeJSONTo writes v as indented JSON.
func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
