// Command cluster runs podtrace's local control plane (see package
// github.com/podtrace/podtrace/test/cluster) in the background, for the demo
// and for trying podtrace by hand:
//
//	cluster up   [-dir _output/cluster] [-nodes 1] [-real-nodes 0] [-audit-policy FILE] [-timeout 3m]
//	cluster down [-dir _output/cluster]
//
// up starts a supervisor process, detached from the terminal, that starts the
// control plane and stops it on SIGTERM; up returns once the cluster is ready
// and prints the `export KUBECONFIG=...` line to use it. The directory holds:
//
//	kubeconfig        admin kubeconfig
//	supervisor.pid    the supervisor's pid
//	supervisor.log    its log (start-up progress, errors)
//	pids/<name>.pid   each component's pid and binary
//	data/             the cluster's data: certificates, etcd, logs/
//
// down stops exactly those processes: it asks the supervisor to stop the
// cluster, and if the supervisor is gone, stops the recorded components
// itself, after checking that each pid still runs the recorded binary, and
// undoes what real nodes left on the machine (cluster.CleanStaleNodes).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podtrace/podtrace/test/cluster"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: error: %v\n", err)
		var usage usageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

const usage = `usage: cluster up   [-dir DIR] [-nodes N] [-real-nodes N] [-audit-policy FILE] [-timeout D]
       cluster down [-dir DIR]`

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("no command\n" + usage)}
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", filepath.Join("_output", "cluster"), "directory for the kubeconfig, pid files, logs and data")
	nodes := fs.Int("nodes", 1, "number of kwok nodes")
	realNodes := fs.Int("real-nodes", 0, "number of real nodes (kubelet, containerd, runc; needs root and `make node-binaries`)")
	audit := fs.String("audit-policy", "", "audit policy file; the audit log goes to DIR/data/logs/audit.log")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the cluster to be ready")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{fmt.Errorf("%v\n%s", err, usage)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q\n%s", fs.Arg(0), usage)}
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	s := state{dir: abs}
	switch args[0] {
	case "up":
		if *nodes < 1 {
			return usageError{fmt.Errorf("-nodes must be at least 1, not %d", *nodes)}
		}
		if *realNodes < 0 {
			return usageError{fmt.Errorf("-real-nodes must be 0 or more, not %d", *realNodes)}
		}
		if *realNodes > 0 {
			if err := cluster.RealNodeSupport(""); err != nil {
				return err
			}
		}
		return s.up(out, *nodes, *realNodes, *audit, *timeout)
	case "down":
		return s.down(out)
	case "supervise":
		return s.supervise(*nodes, *realNodes, *audit, *timeout)
	default:
		return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usage)}
	}
}

// state is the directory describing a background cluster.
type state struct{ dir string }

func (s state) path(parts ...string) string {
	return filepath.Join(append([]string{s.dir}, parts...)...)
}

func (s state) up(out io.Writer, nodes, realNodes int, auditFile string, timeout time.Duration) error {
	if pid, ok := s.supervisor(); ok {
		return fmt.Errorf("a local control plane is already running (supervisor pid %d, %s); run `make cluster-down` first", pid, s.dir)
	}
	if err := s.cleanup(); err != nil {
		return err
	}
	if auditFile != "" {
		if _, err := os.Stat(auditFile); err != nil {
			return fmt.Errorf("audit policy: %w", err)
		}
		abs, err := filepath.Abs(auditFile)
		if err != nil {
			return err
		}
		auditFile = abs
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(s.path("supervisor.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "supervise", "-dir", s.dir, "-nodes", strconv.Itoa(nodes), "-real-nodes", strconv.Itoa(realNodes),
		"-audit-policy", auditFile, "-timeout", timeout.String())
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// A session of its own: Ctrl-C in this terminal does not reach it, and it
	// outlives this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	if err := os.WriteFile(s.path("supervisor.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	if realNodes > 0 {
		fmt.Fprintf(out, "starting the local control plane (%d kwok node(s), %d real node(s)) in %s ...\n", nodes, realNodes, s.dir)
	} else {
		fmt.Fprintf(out, "starting the local control plane (%d node(s)) in %s ...\n", nodes, s.dir)
	}
	began := time.Now()
	deadline := time.After(timeout + 30*time.Second)
	for {
		if data, err := os.ReadFile(s.path("ready")); err == nil {
			fmt.Fprintf(out, "%s", data)
			fmt.Fprintf(out, "ready in %s; stop it with `make cluster-down`\n\nexport KUBECONFIG=%s\n",
				time.Since(began).Round(100*time.Millisecond), s.path("kubeconfig"))
			return nil
		}
		select {
		case err := <-exited:
			_ = os.Remove(s.path("supervisor.pid"))
			return fmt.Errorf("the control plane did not start (supervisor: %v); last lines of %s:\n%s",
				err, s.path("supervisor.log"), tail(s.path("supervisor.log"), 30))
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the control plane is not ready after %s; see %s", timeout, s.path("supervisor.log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// supervise runs in the background: it starts the cluster, records the pids,
// and stops the cluster on SIGTERM, SIGINT or SIGHUP.
func (s state) supervise(nodes, realNodes int, auditFile string, timeout time.Duration) error {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "supervisor: %v while starting; stopping\n", sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	opts := cluster.Options{
		Dir:             s.path("data"),
		Nodes:           nodes,
		RealNodes:       realNodes,
		Timeout:         timeout,
		NoSignalHandler: true,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		},
	}
	if auditFile != "" {
		policy, err := os.ReadFile(auditFile)
		if err != nil {
			return fmt.Errorf("audit policy: %w", err)
		}
		opts.AuditPolicy = string(policy)
	}
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	cancel() // ends the start-up signal goroutine; sigs now waits below
	defer func() {
		if err := c.Stop(); err != nil {
			// Stop keeps the data when a real node left a mount in it.
			fmt.Fprintf(os.Stderr, "supervisor: %v\n", err)
		} else {
			_ = s.cleanup()
		}
		_ = os.Remove(s.path("supervisor.pid"))
		fmt.Fprintln(os.Stderr, "supervisor: stopped")
	}()

	kubeconfig, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.path("kubeconfig"), kubeconfig, 0o600); err != nil {
		return err
	}
	if err := os.MkdirAll(s.path("pids"), 0o755); err != nil {
		return err
	}
	bins := c.Binaries()
	for name, pid := range c.Pids() {
		bin := bins[name]
		line := fmt.Sprintf("%d %s\n", pid, bin)
		if err := os.WriteFile(s.path("pids", name+".pid"), []byte(line), 0o644); err != nil {
			return err
		}
	}
	var summary strings.Builder
	fmt.Fprintf(&summary, "API server %s, nodes %s\n", c.Server, strings.Join(c.Nodes, ", "))
	for _, n := range c.RealNodes {
		fmt.Fprintf(&summary, "real node %s (kubelet, containerd, runc): address %s, pods on %s; its images: %s, %s (imagePullPolicy: Never)\n",
			n.Name, n.IP, n.Subnet, cluster.BusyboxImage, cluster.PauseImage)
	}
	fmt.Fprintf(&summary, "logs in %s\n", c.LogDir)
	if c.AuditLog != "" {
		fmt.Fprintf(&summary, "audit log %s\n  (podtrace record --audit-log %s --db trace.db follows it; podtrace import --audit-log adds it afterwards)\n", c.AuditLog, c.AuditLog)
	} else {
		fmt.Fprintf(&summary, "no audit log (started without -audit-policy): podtrace's audit evidence is missing\n")
	}
	if err := os.WriteFile(s.path("ready"), []byte(summary.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "supervisor: ready in %s; waiting for SIGTERM\n", c.Ready.Round(time.Millisecond))
	sig := <-sigs
	fmt.Fprintf(os.Stderr, "supervisor: %v; stopping the cluster\n", sig)
	return nil
}

// down stops the background cluster recorded in the directory.
func (s state) down(out io.Writer) error {
	pid, running := s.supervisor()
	if !running && !s.hasPidFiles() {
		if err := s.cleanup(); err != nil {
			return err
		}
		fmt.Fprintf(out, "no local control plane running in %s\n", s.dir)
		return nil
	}
	if running {
		fmt.Fprintf(out, "stopping the local control plane (supervisor pid %d) ...\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 60*time.Second) {
			fmt.Fprintf(out, "supervisor %d still running after 60s; killing it\n", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
	// Components left behind by a supervisor that could not stop them.
	files, _ := filepath.Glob(s.path("pids", "*.pid"))
	for _, f := range files {
		pid, bin, err := readPidFile(f)
		if err != nil || !runs(pid, bin) {
			continue
		}
		fmt.Fprintf(out, "stopping %s (pid %d)\n", strings.TrimSuffix(filepath.Base(f), ".pid"), pid)
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		if !waitGone(pid, 5*time.Second) && runs(pid, bin) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
	if err := s.cleanup(); err != nil {
		return err
	}
	_ = os.Remove(s.path("supervisor.pid"))
	fmt.Fprintln(out, "stopped")
	return nil
}

// supervisor returns the recorded supervisor's pid and whether that process
// is still a supervisor for this directory.
func (s state) supervisor() (int, bool) {
	data, err := os.ReadFile(s.path("supervisor.pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return pid, false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	ours := len(args) >= 4 && args[1] == "supervise" && args[2] == "-dir" && args[3] == s.dir
	return pid, ours
}

func (s state) hasPidFiles() bool {
	files, _ := filepath.Glob(s.path("pids", "*.pid"))
	return len(files) > 0
}

// cleanup removes what a run leaves in the directory, except the logs of the
// supervisor, after undoing what real nodes of a supervisor that could not
// stop them left on the machine (processes, mounts, cgroups, bridge,
// sysctls). It never removes through a mount.
func (s state) cleanup() error {
	if err := cluster.CleanStaleNodes(func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }); err != nil {
		return err
	}
	if m := mountsUnder(s.path("data")); len(m) > 0 {
		return fmt.Errorf("%s is still mounted, and more (%d mounts under %s): a real node is still running there, or could not be cleaned up; not removing it",
			m[0], len(m), s.path("data"))
	}
	for _, p := range []string{"pids", "data", "kubeconfig", "ready"} {
		if err := os.RemoveAll(s.path(p)); err != nil {
			return err
		}
	}
	return nil
}

// mountsUnder lists the mount points at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

func readPidFile(path string) (int, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0, "", fmt.Errorf("%s: want \"PID BINARY\"", path)
	}
	pid, err := strconv.Atoi(f[0])
	return pid, f[1], err
}

// runs reports whether process pid runs the binary bin.
func runs(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == bin
}

// waitGone waits for process pid to disappear.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && isZombie(st) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// isZombie reads the state field of /proc/<pid>/stat.
func isZombie(stat []byte) bool {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
