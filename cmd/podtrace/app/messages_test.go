package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessages: what a new user's first mistakes print, and the exit codes:
// 1 for a failure, 2 for a usage error, each error printed once.
func TestMessages(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	yaml := write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n")
	events := write("events.json", `{"kind":"Event","apiVersion":"v1","reason":"Scheduled"}`+"\n"+`{"kind":"Event","apiVersion":"v1","reason":"Pulled"}`+"\n")
	empty := write("empty.log", "\n")
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		stderr  []string // each must be in stderr
		stdout  []string // each must be in stdout
		without []string // none may be in stdout or stderr
	}{
		{name: "no command", args: nil, code: 0, stdout: []string{"USAGE:", "diff"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2,
			stderr: []string{`podtrace: error: unknown command "frobnicate", see podtrace --help` + "\n"}, without: []string{"No help topic"}},
		{name: "a typo", args: []string{"explian", "web"}, code: 2,
			stderr: []string{`unknown command "explian" (did you mean explain?), see podtrace --help`}},
		{name: "a prefix", args: []string{"rep"}, code: 2, stderr: []string{`(did you mean report?)`}},
		{name: "unknown flag of a command", args: []string{"diff", "web", "--nosuch"}, code: 2,
			stderr: []string{"podtrace: error: unknown flag --nosuch, see podtrace diff --help\n"}},
		{name: "unknown short flag", args: []string{"report", "-z"}, code: 2,
			stderr: []string{"podtrace: error: unknown flag -z, see podtrace report --help\n"}},
		{name: "unknown global flag", args: []string{"--nosuch"}, code: 2,
			stderr: []string{"podtrace: error: unknown flag --nosuch, see podtrace --help\n"}},
		{name: "flag without its value", args: []string{"diff", "web", "-n"}, code: 2,
			stderr: []string{"podtrace: error: flag -n needs a value, see podtrace diff --help\n"}},
		{name: "import of YAML", args: []string{"import", "--audit-log", yaml, "--db", sampleTrace}, code: 1,
			stderr: []string{"podtrace: error: " + yaml + ` is not a kube-apiserver audit log: first line is "apiVersion: v1"; podtrace import reads`}},
		{name: "import of core Events", args: []string{"import", "--audit-log", events, "--db", sampleTrace}, code: 1,
			stderr: []string{events + ` is not a kube-apiserver audit log: first line is "{\"kind\":\"Event\",\"apiVersion\":\"v1\",\"reason\":\"Scheduled\"}"`}},
		{name: "import of an empty log", args: []string{"import", "--audit-log", empty, "--db", copyTrace(t)}, code: 0,
			stderr: []string{"podtrace: warning: " + empty + " is empty\n"}, stdout: []string{"0 events kept"}},
		{name: "record help", args: []string{"record", "--help"}, code: 0,
			stdout: []string{"record all namespaces (the default)"}, without: []string{"(default: false)"}},
		{name: "explain help", args: []string{"explain", "--help"}, code: 0, stdout: []string{"--uid"}, without: []string{"show-defaults"}},
		{name: "diff help", args: []string{"diff", "--help"}, code: 0, stdout: []string{"--show-defaults"}, without: []string{"(default: false)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(append([]string{"podtrace"}, tc.args...), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
				}
			}
			for _, want := range tc.stdout {
				if !strings.Contains(out.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, out.String())
				}
			}
			for _, not := range tc.without {
				if strings.Contains(out.String()+errOut.String(), not) {
					t.Errorf("output has %q:\n%s%s", not, out.String(), errOut.String())
				}
			}
			if n := strings.Count(errOut.String(), "podtrace: error:"); n > 1 {
				t.Errorf("the error is printed %d times:\n%s", n, errOut.String())
			}
		})
	}
}
