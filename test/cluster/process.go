package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one component started by the cluster, in its own process group.
type process struct {
	name    string // component, e.g. "kube-apiserver"
	path    string // binary
	args    []string
	logPath string

	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // set before done is closed

	stopOnce      sync.Once
	stopRequested atomic.Bool // stop or kill was called: an exit is expected
}

// startProcess starts bin with args, stdout and stderr appended to logPath.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "+ %s %s\n", bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, path: bin, args: args, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Pid returns the process id, which is also its process group id.
func (p *process) Pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// signalGroup sends sig to the process group of p, as long as p has not been
// reaped (after that its pid may belong to someone else).
func (p *process) signalGroup(sig syscall.Signal) {
	if done, _ := p.exited(); done {
		return
	}
	if err := syscall.Kill(-p.Pid(), sig); err != nil {
		// The group may be gone already; the process itself then is too.
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends SIGTERM to the process group, then SIGKILL if the process has
// not exited after grace, and waits for it. Safe to call more than once.
func (p *process) stop(grace time.Duration) {
	p.stopRequested.Store(true)
	p.stopOnce.Do(func() {
		p.signalGroup(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
			p.signalGroup(syscall.SIGKILL)
			<-p.done
		}
	})
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *process) kill() {
	p.stopRequested.Store(true)
	p.stopOnce.Do(func() {
		p.signalGroup(syscall.SIGKILL)
		<-p.done
	})
}

// earlyExitError describes a process that exited while it should be running.
func (p *process) earlyExitError() error {
	_, err := p.exited()
	how := "exited"
	if err != nil {
		how = fmt.Sprintf("exited (%v)", err)
	}
	tail := logTail(p.logPath, tailLines)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%s %s while starting: %w%s", p.name, how, errPortTaken, tail)
	}
	return fmt.Errorf("%s %s while starting%s", p.name, how, tail)
}

// tailLines is how many lines of a component's log an error quotes.
const tailLines = 30

// logTail returns the last n lines of the log at path, formatted to follow an
// error message, or a note that the log cannot be read.
func logTail(path string, n int) string {
	lines, err := lastLines(path, n)
	if err != nil {
		return fmt.Sprintf("\n(cannot read %s: %v)", path, err)
	}
	return fmt.Sprintf("\nlast %d lines of %s:\n%s", len(lines), path, strings.Join(lines, "\n"))
}

// lastLines returns up to the last n lines of the file at path.
func lastLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const window = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-window, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil, err
	}
	data = bytes.TrimRight(data, "\n")
	if len(data) == 0 {
		return []string{"(empty)"}, nil
	}
	lines := strings.Split(string(data), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // the first line is probably cut
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, nil
}

// findBinaries returns the path of each named binary in dir, or an error
// wrapping ErrMissingBinaries that lists the missing ones.
func findBinaries(dir string, names ...string) (map[string]string, error) {
	paths := map[string]string{}
	var missing []string
	for _, name := range names {
		path := filepath.Join(dir, name)
		st, err := os.Stat(path)
		if err != nil || st.IsDir() || st.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
			continue
		}
		paths[name] = path
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s not found in %s; run `make cluster-binaries` (hack/build.sh) to build them",
			ErrMissingBinaries, strings.Join(missing, ", "), dir)
	}
	return paths, nil
}

// ErrMissingBinaries is returned by Start when a control plane binary is not
// where the cluster looks for it.
var ErrMissingBinaries = errors.New("missing control plane binaries")
