package cluster

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What a real node changes on the machine outside its directory, and how
// Stop (or the next start, after a run that was killed) undoes it:
//
//	cgroups        CgroupRoot in every hierarchy: processes left in them
//	               killed, then removed depth first
//	bridge         ptbr-ID, with the pods' veths: deleted
//	sysctls        net.ipv4.ip_forward (the CNI bridge), vm.overcommit_memory,
//	               vm.panic_on_oom, kernel.panic, kernel.panic_on_oops,
//	               kernel.keys.root_maxkeys and root_maxbytes (the kubelet):
//	               restored once no real node is left on the machine
//	paths          /var/lib/cni (libcni's cache: this node's entries removed),
//	               /var/lib/kubelet/device-plugins, /var/log/containers (the
//	               kubelet's links to container logs: this node's removed),
//	               /run/containerd (shim sockets: this node's removed): each
//	               removed with the last node when it did not exist before
//	mounts         under Dir (the kubelet's root, volumes, container rootfs,
//	               network namespaces): unmounted, deepest first
//	processes      containerd's shims and the containers: killed, after the
//	               kubelet and containerd are stopped
//
// Each running node is recorded in registryDir (as JSON, with the pid of the
// process that started it), and the machine's original state in host.json,
// written by the first node. All changes to the registry hold an exclusive
// flock on /run, which always exists, so that the lock file is never left
// behind.
const registryDir = "/run/podtrace-nodes"

// tunedSysctls are the sysctls a real node changes (see above).
var tunedSysctls = []string{
	"net.ipv4.ip_forward",
	"vm.overcommit_memory",
	"vm.panic_on_oom",
	"kernel.panic",
	"kernel.panic_on_oops",
	"kernel.keys.root_maxkeys",
	"kernel.keys.root_maxbytes",
}

// hostPaths are the paths outside a node's directory that a kubelet or
// containerd may create even when configured not to use them.
var hostPaths = []string{
	"/var/lib/cni",
	"/var/lib/kubelet",
	"/var/log/containers",
	"/var/log/pods",
	"/run/containerd",
	"/var/lib/containerd",
	"/opt/containerd",
}

// nodeRecord is a real node in the registry.
type nodeRecord struct {
	ID         string
	Owner      int    // pid of the process that started the node
	OwnerStart string // its start time, so that a reused pid does not pass for it
	Dir        string
	Address    string // containerd's socket
	Network    string // CNI network name
	Bridge     string
	Subnet     string
	CgroupRoot string
	Pids       map[string]procRecord // Kubelet, Containerd
}

// procRecord is a process a node started: its pid and binary.
type procRecord struct {
	Pid    int
	Binary string
}

// hostRecord is the machine's state before the first real node.
type hostRecord struct {
	Sysctls map[string]string
	Absent  []string
}

// hostSupport says why this machine cannot run a real node, if it cannot.
func hostSupport() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it needs root (the kubelet and runc mount, create cgroups and network interfaces); this is uid %d", ErrNoRealNode, os.Geteuid())
	}
	if len(cgroupMounts()) == 0 {
		return fmt.Errorf("%w: no cgroup file system is mounted (see /proc/self/mountinfo)", ErrNoRealNode)
	}
	if cgroupV1() {
		for _, c := range []string{"memory", "cpu", "pids", "cpuset"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
				return fmt.Errorf("%w: the cgroup v1 %s controller is not mounted at /sys/fs/cgroup/%s", ErrNoRealNode, c, c)
			}
		}
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: the ip command (iproute2) is missing; it removes the node's bridge", ErrNoRealNode)
	}
	if _, err := hostIP(); err != nil {
		return err
	}
	return nil
}

// hostIP is the address the kubelet registers: that of the interface with
// the default route, else of the first other interface with a global IPv4
// address (the kubelet refuses loopback).
func hostIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	defaultIface := ""
	if data, err := os.ReadFile("/proc/net/route"); err == nil {
		for _, line := range strings.Split(string(data), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 2 && f[1] == "00000000" {
				defaultIface = f[0]
				break
			}
		}
	}
	slices.SortStableFunc(ifaces, func(a, b net.Interface) int {
		switch {
		case a.Name == defaultIface:
			return -1
		case b.Name == defaultIface:
			return 1
		}
		return 0
	})
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || strings.HasPrefix(iface.Name, bridgePrefix) {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", fmt.Errorf("%w: no network interface with an IPv4 address other than loopback (the kubelet refuses loopback)", ErrNoRealNode)
}

// bridgePrefix starts the name of every real node's bridge.
const bridgePrefix = "ptbr-"

// cgroupMount is one mounted cgroup hierarchy.
type cgroupMount struct {
	path string // e.g. /sys/fs/cgroup/memory
	v2   bool
}

// cgroupMounts lists the cgroup hierarchies mounted on the machine.
func cgroupMounts() []cgroupMount {
	var out []cgroupMount
	for _, m := range mountInfo() {
		switch m.fstype {
		case "cgroup":
			out = append(out, cgroupMount{path: m.point})
		case "cgroup2":
			out = append(out, cgroupMount{path: m.point, v2: true})
		}
	}
	return out
}

// cgroupV1 reports whether the machine runs cgroup v1 (or hybrid): then
// the kubelet must be told not to refuse it.
func cgroupV1() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err != nil
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point  string
	fstype string
}

func mountInfo() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source super
		f := strings.Fields(sc.Text())
		sep := slices.Index(f, "-")
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			continue
		}
		out = append(out, mount{point: unescapeMount(f[4]), fstype: f[sep+1]})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// createCgroupRoot creates the kubelet's cgroupRoot in every hierarchy; in
// cgroup v1 a new cpuset starts with no CPUs nor memory nodes, so it gets its
// parent's.
func createCgroupRoot(root string) error {
	for _, m := range cgroupMounts() {
		dir := filepath.Join(m.path, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		if m.v2 {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(m.path, f))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("set %s of cgroup %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// withRegistry runs fn holding the registry's lock.
func withRegistry(fn func() error) error {
	lock, err := os.Open("/run")
	if err != nil {
		return fmt.Errorf("real node registry: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("real node registry: lock /run: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing unlocks too
	return fn()
}

// readRecords returns the registered nodes. Call with the lock held.
func readRecords() ([]nodeRecord, error) {
	files, err := filepath.Glob(filepath.Join(registryDir, "node-*.json"))
	if err != nil {
		return nil, err
	}
	var recs []nodeRecord
	for _, f := range files {
		var r nodeRecord
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			return nil, fmt.Errorf("real node registry: %s: %w; remove it once its node is cleaned up", f, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func recordFile(id string) string { return filepath.Join(registryDir, "node-"+id+".json") }

// writeJSON writes v to path through a temporary file and a rename.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// registerNode records a new node, with a free subnet and names of its own,
// and the machine's original state if it is the first.
func registerNode(dir, address string) (nodeRecord, error) {
	var rec nodeRecord
	err := withRegistry(func() error {
		if err := os.MkdirAll(registryDir, 0o755); err != nil {
			return err
		}
		recs, err := readRecords()
		if err != nil {
			return err
		}
		hostFile := filepath.Join(registryDir, "host.json")
		if _, err := os.Stat(hostFile); errors.Is(err, os.ErrNotExist) {
			h := hostRecord{Sysctls: map[string]string{}}
			for _, s := range tunedSysctls {
				if v, err := readSysctl(s); err == nil {
					h.Sysctls[s] = v
				}
			}
			for _, p := range hostPaths {
				if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
					h.Absent = append(h.Absent, p)
				}
			}
			if err := writeJSON(hostFile, h); err != nil {
				return err
			}
		}
		subnet, err := freeSubnet(recs)
		if err != nil {
			return err
		}
		b := make([]byte, 4)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		id := hex.EncodeToString(b)
		rec = nodeRecord{
			ID: id, Owner: os.Getpid(), OwnerStart: procStart(os.Getpid()),
			Dir: dir, Address: address, Network: "podtrace-" + id, Bridge: bridgePrefix + id,
			Subnet: subnet, CgroupRoot: "/podtrace-" + id, Pids: map[string]procRecord{},
		}
		return writeJSON(recordFile(id), rec)
	})
	return rec, err
}

// setPid records a process the node started.
func (r *nodeRecord) setPid(name string, pid int, bin string) error {
	return withRegistry(func() error {
		r.Pids[name] = procRecord{Pid: pid, Binary: bin}
		return writeJSON(recordFile(r.ID), r)
	})
}

// freeSubnet picks a /24 in 10.89.0.0/16 that no registered node uses and
// that overlaps none of the machine's addresses.
func freeSubnet(recs []nodeRecord) (string, error) {
	var addrs []net.IP
	if ifAddrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifAddrs {
			if ipn, ok := a.(*net.IPNet); ok {
				addrs = append(addrs, ipn.IP)
			}
		}
	}
	for i := range 256 {
		subnet := fmt.Sprintf("10.89.%d.0/24", i)
		_, ipn, _ := net.ParseCIDR(subnet)
		taken := slices.ContainsFunc(recs, func(r nodeRecord) bool { return r.Subnet == subnet }) ||
			slices.ContainsFunc(addrs, ipn.Contains)
		if !taken {
			return subnet, nil
		}
	}
	return "", errors.New("no free pod subnet in 10.89.0.0/16 for a real node")
}

// procStart returns a process's start time in clock ticks since boot, or "".
func procStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// Fields after the command: state is field 3, starttime field 22.
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func readSysctl(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/")))
	return strings.TrimSpace(string(data)), err
}

func writeSysctl(name, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/")), []byte(value+"\n"), 0o644)
}

// CleanStaleNodes cleans up after real nodes whose process died without
// stopping them (a test binary killed by a timeout, a supervisor killed with
// SIGKILL): their processes, mounts, cgroups, bridge, and the machine's
// settings once no node is left. Start runs it before starting real nodes;
// `cluster down` runs it too. logf may be nil.
func CleanStaleNodes(logf func(string, ...any)) error {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if _, err := os.Stat(registryDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var stale []nodeRecord
	err := withRegistry(func() error {
		recs, err := readRecords()
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.OwnerStart == "" || procStart(r.Owner) != r.OwnerStart {
				stale = append(stale, r)
			}
		}
		if len(recs) == 0 {
			return restoreHost(logf)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range stale {
		logf("cluster: cleaning up after real node %s (in %s), left by process %d which is gone", r.ID, r.Dir, r.Owner)
		if err := cleanNode(r, logf); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(r.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanNode undoes what the node r did on the machine; its kubelet and
// containerd should be stopped already (any still running is killed). Once
// no other node is registered, the machine's settings are restored. It
// returns what is left, e.g. a mount that would not go: then Dir must not be
// removed.
func cleanNode(r nodeRecord, logf func(string, ...any)) error {
	if r.ID == "" || r.Dir == "" || r.CgroupRoot == "" {
		return nil // never registered: nothing to undo, and no names to match
	}
	var errs []error
	// Processes: the daemons, their shims, then whatever is left in the
	// node's cgroups (the containers).
	for _, p := range r.Pids {
		if p.Pid > 0 && runsBinary(p.Pid, p.Binary) {
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			waitProcessGone(p.Pid, 5*time.Second)
		}
	}
	for _, pid := range shimPids(r.Address) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		waitProcessGone(pid, 5*time.Second)
	}
	if err := killCgroupProcs(r.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(r.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroups(r.CgroupRoot); err != nil {
		errs = append(errs, err)
	}
	if err := exec.Command("ip", "link", "show", "dev", r.Bridge).Run(); err == nil {
		if out, err := exec.Command("ip", "link", "delete", "dev", r.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %v: %s", r.Bridge, err, strings.TrimSpace(string(out))))
		}
	}
	// libcni caches each attachment as <network>-<container>-<interface>.
	cached, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", r.Network+"-*"))
	for _, f := range cached {
		if err := os.Remove(f); err != nil {
			errs = append(errs, err)
		}
	}
	// The kubelet's links to container logs under the node's directory.
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, r.Dir+"/") {
			_ = os.Remove(l)
		}
	}
	// containerd's shim sockets: /run/containerd/s/sha256(address/ns/id).
	tasks, _ := filepath.Glob(filepath.Join(r.Dir, "containerd", "state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, t := range tasks {
		ns, id := filepath.Base(filepath.Dir(t)), filepath.Base(t)
		sum := sha256.Sum256([]byte(filepath.Join(r.Address, ns, id)))
		_ = os.Remove(filepath.Join("/run/containerd/s", hex.EncodeToString(sum[:])))
	}
	err := withRegistry(func() error {
		if err := os.Remove(recordFile(r.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		recs, err := readRecords()
		if err != nil || len(recs) > 0 {
			return err
		}
		return restoreHost(logf)
	})
	if err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restoreHost puts back the sysctls and removes the paths that did not
// exist before the first real node, then the registry. Call with the lock
// held and no node registered.
func restoreHost(logf func(string, ...any)) error {
	hostFile := filepath.Join(registryDir, "host.json")
	data, err := os.ReadFile(hostFile)
	if errors.Is(err, os.ErrNotExist) {
		return os.RemoveAll(registryDir)
	}
	if err != nil {
		return err
	}
	var h hostRecord
	if err := json.Unmarshal(data, &h); err != nil {
		return fmt.Errorf("%s: %w", hostFile, err)
	}
	var errs []error
	for name, want := range h.Sysctls {
		if got, err := readSysctl(name); err == nil && got != want {
			if err := writeSysctl(name, want); err != nil {
				errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", name, want, err))
			} else {
				logf("cluster: restored sysctl %s=%s (was %s)", name, want, got)
			}
		}
	}
	for _, p := range h.Absent {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.RemoveAll(registryDir)
}

// runsBinary reports whether process pid runs bin.
func runsBinary(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.TrimSuffix(exe, " (deleted)") == bin
}

// shimPids returns the containerd shims serving the containerd at address.
func shimPids(address string) []int {
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != containerdShim {
			continue
		}
		if i := slices.Index(args, "-address"); i >= 0 && i+1 < len(args) && args[i+1] == address {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitProcessGone waits until pid no longer exists (or is a zombie).
func waitProcessGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'Z' {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupDirs returns the cgroup directories at and below root in every
// hierarchy, deepest first.
func cgroupDirs(root string) []string {
	var dirs []string
	for _, m := range cgroupMounts() {
		top := filepath.Join(m.path, root)
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs
}

// killCgroupProcs kills every process in the cgroups below root (thawing
// frozen ones first) and waits for them to go.
func killCgroupProcs(root string) error {
	if root == "" || root == "/" {
		return nil
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []int
		for _, dir := range cgroupDirs(root) {
			if _, err := os.Stat(filepath.Join(dir, "freezer.state")); err == nil {
				_ = os.WriteFile(filepath.Join(dir, "freezer.state"), []byte("THAWED"), 0o644)
			}
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(left, pid) {
					left = append(left, pid)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in cgroup %s after SIGKILL", left, root)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroups removes the cgroups at and below root, deepest first.
func removeCgroups(root string) error {
	if root == "" || root == "/" {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var last error
		for _, dir := range cgroupDirs(root) {
			if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
				last = fmt.Errorf("remove cgroup %s: %w", dir, err)
			}
		}
		if last == nil || time.Now().After(deadline) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unmountUnder unmounts every mount at or below dir, deepest first, and
// checks that none is left.
func unmountUnder(dir string) error {
	if dir == "" || dir == "/" {
		return nil
	}
	under := func() []string {
		var points []string
		for _, m := range mountInfo() {
			if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
				points = append(points, m.point)
			}
		}
		slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
		return points
	}
	for range 10 {
		points := under()
		if len(points) == 0 {
			return nil
		}
		for _, p := range points {
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
	if left := under(); len(left) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(left, ", "))
	}
	return nil
}

// HostState is what a real node may change on the machine as a whole: the
// sysctls, whether the paths it may create exist, the firewall rules.
type HostState struct {
	Sysctls  map[string]string
	Paths    map[string]bool
	Iptables string // iptables-save without its comments and counters, or ""
}

// SnapshotHost returns the machine's state as a real node may change it.
func SnapshotHost() HostState {
	s := HostState{Sysctls: map[string]string{}, Paths: map[string]bool{}}
	for _, name := range tunedSysctls {
		if v, err := readSysctl(name); err == nil {
			s.Sysctls[name] = v
		}
	}
	for _, p := range append(slices.Clone(hostPaths), registryDir) {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	if out, err := exec.Command("iptables-save").Output(); err == nil {
		var rules []string
		for _, l := range strings.Split(string(out), "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if i := strings.IndexByte(l, '['); strings.HasPrefix(l, ":") && i > 0 {
				l = l[:i] // chain policy counters
			}
			rules = append(rules, l)
		}
		s.Iptables = strings.Join(rules, "\n")
	}
	return s
}

// Changes lists how the machine differs from s now.
func (s HostState) Changes() []string {
	now := SnapshotHost()
	var out []string
	for _, name := range tunedSysctls {
		if s.Sysctls[name] != now.Sysctls[name] {
			out = append(out, fmt.Sprintf("sysctl %s is %s, was %s", name, now.Sysctls[name], s.Sysctls[name]))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(s.Paths)) {
		if was := s.Paths[p]; now.Paths[p] != was {
			out = append(out, fmt.Sprintf("%s exists: %t, was %t", p, now.Paths[p], was))
		}
	}
	if s.Iptables != now.Iptables {
		out = append(out, fmt.Sprintf("iptables rules changed:\n%s\nwere:\n%s", now.Iptables, s.Iptables))
	}
	return out
}

// OtherRealNodes reports whether real nodes are registered on the machine
// (by this process or another): while there are, the machine's sysctls and
// paths stay as the first one set them.
func OtherRealNodes() bool {
	files, _ := filepath.Glob(filepath.Join(registryDir, "node-*.json"))
	return len(files) > 0
}

// Leftovers lists what the node left on the machine: it is empty after Stop.
func (n *RealNode) Leftovers() []string {
	var out []string
	for _, p := range n.host.Pids {
		if p.Pid > 0 && runsBinary(p.Pid, p.Binary) {
			out = append(out, fmt.Sprintf("process %d (%s)", p.Pid, p.Binary))
		}
	}
	for _, pid := range shimPids(n.host.Address) {
		out = append(out, fmt.Sprintf("shim process %d", pid))
	}
	for _, m := range mountInfo() {
		if m.point == n.Dir || strings.HasPrefix(m.point, n.Dir+"/") {
			out = append(out, "mount "+m.point)
		}
	}
	for _, d := range cgroupDirs(n.CgroupRoot) {
		out = append(out, "cgroup "+d)
	}
	if err := exec.Command("ip", "link", "show", "dev", n.Bridge).Run(); err == nil {
		out = append(out, "network interface "+n.Bridge)
	}
	cached, _ := filepath.Glob(filepath.Join("/var/lib/cni/results", n.host.Network+"-*"))
	for _, f := range cached {
		out = append(out, "libcni cache "+f)
	}
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, n.Dir+"/") {
			out = append(out, "log link "+l)
		}
	}
	if _, err := os.Stat(recordFile(n.host.ID)); err == nil {
		out = append(out, "registry entry "+recordFile(n.host.ID))
	}
	if _, err := os.Stat(n.Dir); err == nil && os.Getenv(KeepEnv) != "1" {
		out = append(out, "directory "+n.Dir)
	}
	return out
}
