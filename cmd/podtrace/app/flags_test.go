package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestConventions: kubectl's spellings, the same in every command; the
// commands every kubectl user types first; flags before the command.
func TestConventions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stdout  []string
		stderr  []string
		without []string // in neither stream
	}{
		{name: "help", args: []string{"help"}, stdout: []string{"USAGE:", "explain", "completion"}},
		{name: "help of a command", args: []string{"help", "explain"}, stdout: []string{"--uid", "--db"}},
		{name: "help of no command", args: []string{"help", "explian"}, code: 2, stderr: []string{`unknown command "explian" (did you mean explain?)`}},
		{name: "--help still works", args: []string{"--help"}, stdout: []string{"USAGE:"}},
		{name: "version", args: []string{"version"}, stdout: []string{"podtrace version v"}},
		{name: "version as json", args: []string{"version", "-o", "json"}, stdout: []string{`"version": "v`, `"goVersion": "go`}},
		{name: "version as yaml", args: []string{"version", "-o", "yaml"}, stdout: []string{"version: v", "goVersion: go"}},
		{name: "completion bash", args: []string{"completion", "bash"}, stdout: []string{"complete -o bashdefault -o default -F _podtrace_bash_complete podtrace", "--generate-bash-completion"}},
		{name: "completion zsh", args: []string{"completion", "zsh"}, stdout: []string{"#compdef podtrace", "compdef _podtrace_zsh_complete podtrace"}},
		{name: "completion fish", args: []string{"completion", "fish"}, stdout: []string{"complete -c podtrace", "explain"}},
		{name: "completion of no shell", args: []string{"completion", "tcsh"}, code: 2, stderr: []string{`unknown shell "tcsh": want bash, zsh or fish`}},

		{name: "-n before the command", args: []string{"-n", "ci", "explain", "runner-job-1", "--db", sampleTrace, "-o", "json"}, stdout: []string{`"name": "runner-job-1"`}},
		{name: "--db and -n before the command", args: []string{"--db", sampleTrace, "-n", "ci", "diff", "runner-job-1", "-o", "yaml"}, stdout: []string{"name: runner-job-1", "namespace: ci"}},
		{name: "--db= before the command", args: []string{"--db=" + sampleTrace, "report", "-o", "markdown"}, stdout: []string{"## podtrace report"}},
		{name: "a flag the command lacks", args: []string{"--context", "kind", "import", "--audit-log", "x"}, code: 2,
			stderr: []string{"podtrace: error: --context does not apply to podtrace import (only record has it), see podtrace import --help\n"}},
		{name: "--kubeconfig before serve", args: []string{"--kubeconfig", "/tmp/x", "serve"}, code: 2,
			stderr: []string{"serve writes a kubeconfig, it reads none"}},
		{name: "a flag and no command", args: []string{"-n", "ci"}, code: 2, stderr: []string{"-n needs a command after it, e.g. podtrace -n ci explain POD"}},

		{name: "a duration's parse error", args: []string{"record", "--duration", "5"}, code: 2,
			stderr:  []string{`podtrace: error: invalid value "5" for --duration: not a duration; e.g. --duration 10m, see podtrace record --help` + "\n"},
			without: []string{" -duration", "parse error"}},
		{name: "a number's parse error", args: []string{"serve", "--speed", "fast"}, code: 2,
			stderr: []string{`invalid value "fast" for --speed: not a number; e.g. --speed 2.5, see podtrace serve --help`}},
		{name: "a bool's parse error", args: []string{"explain", "x", "--follow=maybe"}, code: 2,
			stderr: []string{`invalid value "maybe" for --follow: not true or false; e.g. --follow or --follow=false`}},
		{name: "a value missing, with the usage's example", args: []string{"record", "--listen"}, code: 2,
			stderr: []string{"flag --listen needs a value; e.g. --listen 127.0.0.1:9090, see podtrace record --help"}},

		{name: "-o of diff is a format", args: []string{"diff", "runner-job-1", "--db", sampleTrace, "-o", "yaml"}, stdout: []string{"name: runner-job-1"}},
		{name: "-o of compare is a format", args: []string{"compare", "ci/runner-job-1", "ci/runner-job-1", "--db", sampleTrace, "-o", "yaml"}, stdout: []string{"verdict:"}},
		{name: "-o of report is a format", args: []string{"report", "--db", sampleTrace, "-o", "markdown"}, stdout: []string{"## podtrace report"}, without: []string{"deprecated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(append([]string{"podtrace"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			for _, want := range tc.stdout {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
				}
			}
			for _, not := range tc.without {
				if strings.Contains(out.String()+errOut.String(), not) {
					t.Errorf("output has %q:\nstdout: %s\nstderr: %s", not, out.String(), errOut.String())
				}
			}
		})
	}
}

// TestCompletionWords: what the completion scripts ask podtrace for:
// the commands, and a command's flags that start as typed. urfave/cli
// reads the word being completed from os.Args.
func TestCompletionWords(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []string
		without []string
	}{
		{[]string{"podtrace", "--generate-bash-completion"}, []string{"record\n", "explain\n", "completion\n"}, nil},
		{[]string{"podtrace", "explain", "web", "--d", "--generate-bash-completion"}, []string{"--db\n"}, []string{"--uid"}},
		{[]string{"podtrace", "-n", "ci", "report", "--o", "--generate-bash-completion"}, []string{"--output\n", "--out\n"}, []string{"--format"}},
	} {
		old := os.Args
		os.Args = tc.args
		var out, errOut bytes.Buffer
		code := Main(tc.args, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		os.Args = old
		if code != 0 {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: completions %q lack %q", tc.args, out.String(), w)
			}
		}
		for _, w := range tc.without {
			if strings.Contains(out.String(), w) {
				t.Errorf("%v: completions %q have %q", tc.args, out.String(), w)
			}
		}
	}
}

// TestDeprecatedSpellings: the spellings from before the flags were made
// kubectl's work as they did, each with one warning that names the new
// one.
func TestDeprecatedSpellings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		warning string
		twice   bool   // two deprecated spellings, two warnings
		file    string // written, and starting with this
		prefix  string
		stdout  string // else in stdout
	}{
		{name: "report -o FILE", args: []string{"report", "-o", filepath.Join(dir, "r.txt")},
			warning: "podtrace report -o FILE is deprecated, use --out FILE (-o is the output format)", file: filepath.Join(dir, "r.txt"), prefix: "Trace "},
		{name: "report --html -o FILE", args: []string{"report", "--html", "-o", filepath.Join(dir, "r.html")},
			warning: "-o FILE is deprecated", file: filepath.Join(dir, "r.html"), prefix: "<!DOCTYPE html>"},
		{name: "report --format markdown -o FILE", args: []string{"report", "--format", "markdown", "-o", filepath.Join(dir, "r.md")},
			warning: "--format markdown is deprecated, use -o markdown", twice: true, file: filepath.Join(dir, "r.md"), prefix: "## podtrace report"},
		{name: "report --format markdown", args: []string{"report", "--format", "markdown"},
			warning: "--format markdown is deprecated", stdout: "## podtrace report"},
		{name: "report --html -o -", args: []string{"report", "--html", "-o", "-"},
			warning: "-o FILE is deprecated", stdout: "<!DOCTYPE html>"},
		{name: "export -o FILE", args: []string{"export", "-o", filepath.Join(dir, "e.db")},
			warning: "podtrace export -o FILE is deprecated, use --out FILE", file: filepath.Join(dir, "e.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(append([]string{"podtrace"}, append(tc.args, "--db", sampleTrace)...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, errOut.String())
			}
			want := 1
			if tc.twice {
				want = 2
			}
			if n := strings.Count(errOut.String(), "deprecated"); n != want || !strings.Contains(errOut.String(), tc.warning) {
				t.Errorf("stderr has %d deprecation warnings, want one saying %q:\n%s", n, tc.warning, errOut.String())
			}
			if tc.file != "" {
				b, err := os.ReadFile(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(b, []byte(tc.prefix)) {
					t.Errorf("%s starts %.60q, want %q", tc.file, b, tc.prefix)
				}
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %.200q lacks %q", out.String(), tc.stdout)
			}
		})
	}
}

// TestRecordDeprecatedOut: record -o FILE records into FILE, with the
// warning, and -o with a different --db is refused.
func TestRecordDeprecatedOut(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"podtrace", "record", "-o", "a.db", "--db", "b.db"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	if code != 2 || !strings.Contains(errOut.String(), "--db b.db and -o a.db name two trace files") {
		t.Errorf("exit %d, stderr %q; want 2 and the two files named", code, errOut.String())
	}
}

// openPTY opens a pseudo-terminal of cols columns and returns its terminal
// end, what a user's shell hands podtrace as standard output, and what was
// written to it so far.
func openPTY(t *testing.T, cols uint16) (*os.File, func() string) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlock the pseudo-terminal: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("pseudo-terminal number: %v", e)
	}
	ws := struct{ rows, cols, x, y uint16 }{40, cols, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptm.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Fatalf("size the pseudo-terminal: %v", e)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pts.Close() })
	// Drain what podtrace writes, so that a write never blocks.
	var mu sync.Mutex
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := ptm.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return pts, func() string {
		time.Sleep(200 * time.Millisecond) // the reader's last read
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}

// TestWrappedToTheTerminal: text to a terminal is wrapped at its width
// (the next: lines ran past 300 columns); to a pipe it is not.
func TestWrappedToTheTerminal(t *testing.T) {
	tty, written := openPTY(t, 80)
	var errOut bytes.Buffer
	if code := Main([]string{"podtrace", "explain", "runner-job-1", "--db", sampleTrace, "--color", "never"}, Streams{In: strings.NewReader(""), Out: tty, ErrOut: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	out := strings.ReplaceAll(written(), "\r\n", "\n")
	if !strings.Contains(out, "next: confirmed by the audit log") {
		t.Fatalf("explain wrote to the terminal:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		// One word longer than the room left (a ServiceAccount's name)
		// stays whole.
		if len([]rune(l)) > 80 && strings.Contains(strings.TrimSpace(l), " ") {
			t.Errorf("a line of %d columns on a terminal of 80: %q", len([]rune(l)), l)
		}
	}
	var pipe bytes.Buffer
	Main([]string{"podtrace", "explain", "runner-job-1", "--db", sampleTrace}, Streams{In: strings.NewReader(""), Out: &pipe, ErrOut: &errOut})
	long := 0
	for _, l := range strings.Split(pipe.String(), "\n") {
		long = max(long, len(l))
	}
	if long <= 80 {
		t.Errorf("to a pipe the longest line has %d columns: wrapped, want whole lines", long)
	}
}

// TestInfoFolded: info findings are one line each (explain) or a count
// (report), their evidence shown with --show-info.
func TestInfoFolded(t *testing.T) {
	for _, tc := range []struct {
		args          []string
		want, without []string
	}{
		{[]string{"explain", "runner-job-1"}, []string{"  INFO ended: deleted by a DELETE request\n    actor: podtrace-admin", "(the evidence of 1 info finding folded: --show-info shows it)"},
			[]string{"audit log: DELETE by podtrace-admin"}},
		{[]string{"explain", "runner-job-1", "--show-info"}, []string{"audit log: DELETE by podtrace-admin", "mechanism: delete"}, []string{"folded"}},
		{[]string{"report"}, []string{"  INFO ended: 1 pod (folded: --show-info lists them)"}, []string{"INFO ci/runner-job-1 ended"}},
		{[]string{"report", "--show-info"}, []string{"  INFO ci/runner-job-1 ended: deleted by a DELETE request"}, []string{"folded"}},
		{[]string{"report", "-o", "markdown"}, []string{"<details><summary>1 info finding (how pods ended)</summary>"}, nil},
	} {
		var out, errOut bytes.Buffer
		if code := Main(append([]string{"podtrace", "--db", sampleTrace}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		for _, w := range tc.without {
			if strings.Contains(out.String(), w) {
				t.Errorf("%v has %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

// TestNotToATerminal: an HTML page or a binary trace is refused on a
// terminal, with what to type instead; /dev/null and a file are fine.
func TestNotToATerminal(t *testing.T) {
	tty, _ := openPTY(t, 80)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name string
		args []string
		out  *os.File
		code int
		want string
	}{
		{"report -o html to a terminal", []string{"report", "-o", "html"}, tty, 2, "-o html writes one self-contained page for a browser, not for a terminal: add --out report.html (or redirect: podtrace report -o html > report.html)"},
		{"report --html to a terminal", []string{"report", "--html"}, tty, 2, "not for a terminal"},
		{"compare -o html to a terminal", []string{"compare", "ci/runner-job-1", "ci/runner-job-1", "-o", "html"}, tty, 2, "not for a terminal"},
		{"export to a terminal", []string{"export", "--out", "-"}, tty, 2, "the exported trace is a binary file; redirect standard output to a file (podtrace export --out - > ticket.db)"},
		{"report -o html to /dev/null", []string{"report", "-o", "html"}, devNull, 0, ""},
		{"export to /dev/null", []string{"export", "--out", "-"}, devNull, 0, "to standard output"},
		{"export -o - to /dev/null", []string{"export", "-o", "-"}, devNull, 0, "deprecated"},
		{"text to a terminal", []string{"explain", "runner-job-1"}, tty, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			code := Main(append([]string{"podtrace"}, append(tc.args, "--db", sampleTrace)...), Streams{In: strings.NewReader(""), Out: tc.out, ErrOut: &errOut})
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut.String(), tc.code, tc.want)
			}
		})
	}
}

// TestPluginNames: run as kubectl-podtrace, help and errors say kubectl
// podtrace, never kubectl kubectl podtrace.
func TestPluginNames(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff", "web", "--nosuch"}, "podtrace: error: unknown flag --nosuch, see kubectl podtrace diff --help\n"},
		{[]string{"frobnicate"}, `unknown command "frobnicate", see kubectl podtrace --help`},
		{[]string{"diff", "--db", sampleTrace}, "kubectl podtrace diff POD|deploy/NAME"},
		{[]string{"report", "--format", "markdown", "--db", sampleTrace}, "kubectl podtrace report --format markdown is deprecated"},
		{[]string{"record", "--duration", "5"}, "e.g. --duration 10m, see kubectl podtrace record --help"},
	} {
		var out, errOut bytes.Buffer
		Main(append([]string{"/home/u/.krew/bin/kubectl-podtrace"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		if !strings.Contains(errOut.String(), tc.want) || strings.Contains(errOut.String(), "kubectl kubectl") {
			t.Errorf("kubectl podtrace %s: stderr\n%s\nwant %q", strings.Join(tc.args, " "), errOut.String(), tc.want)
		}
	}
	var out bytes.Buffer
	Main([]string{"kubectl-podtrace", "help", "explain"}, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
	if !strings.Contains(out.String(), "kubectl podtrace explain [command options]") {
		t.Errorf("help of explain as a plugin:\n%s", out.String())
	}
}
