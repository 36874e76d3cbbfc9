package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Ports are the 127.0.0.1 ports the control plane listens on. A zero port is
// picked free at start.
type Ports struct {
	EtcdClient        int
	EtcdPeer          int
	APIServer         int
	ControllerManager int // kube-controller-manager's secure (healthz) port
	Scheduler         int // kube-scheduler's secure (healthz) port
	Kwok              int // kwok's server (healthz)
}

// ErrPortInUse is returned by Start when a port asked for in Options.Ports is
// taken.
var ErrPortInUse = errors.New("port in use")

// portField names one port for error messages.
type portField struct {
	field string // name in Options.Ports
	user  string // who listens on it
	port  *int
}

func (p *Ports) fields() []portField {
	return []portField{
		{"EtcdClient", "etcd (clients)", &p.EtcdClient},
		{"EtcdPeer", "etcd (peers)", &p.EtcdPeer},
		{"APIServer", "kube-apiserver", &p.APIServer},
		{"ControllerManager", "kube-controller-manager", &p.ControllerManager},
		{"Scheduler", "kube-scheduler", &p.Scheduler},
		{"Kwok", "kwok", &p.Kwok},
	}
}

// allocate checks that the fixed ports are free and picks free ports for the
// others. The listeners used to pick are all held until every port is chosen,
// so that no port is picked twice.
func (p Ports) allocate() (Ports, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	fields := p.fields()
	seen := map[int]string{}
	for _, f := range fields {
		if *f.port == 0 {
			continue
		}
		if other, dup := seen[*f.port]; dup {
			return Ports{}, fmt.Errorf("port %d asked for twice, by Options.Ports.%s and Options.Ports.%s; give each component its own port (or 0 to pick a free one)",
				*f.port, other, f.field)
		}
		seen[*f.port] = f.field
		l, err := listenLoopback(*f.port)
		if err != nil {
			return Ports{}, fmt.Errorf("%w: 127.0.0.1:%d, wanted for %s (Options.Ports.%s), cannot be listened on: %v; stop what uses it or leave Options.Ports.%s 0 to pick a free port",
				ErrPortInUse, *f.port, f.user, f.field, err, f.field)
		}
		held = append(held, l)
	}
	for _, f := range fields {
		if *f.port != 0 {
			continue
		}
		l, err := listenFree()
		if err != nil {
			return Ports{}, fmt.Errorf("pick a free port on 127.0.0.1 for %s: %w", f.user, err)
		}
		held = append(held, l)
		*f.port = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// listenFree listens on a free loopback port below the kernel's ephemeral
// range when it can. A port picked from the ephemeral range (what port 0
// gives) is released before the component binds it, and in that window any
// outgoing connection on the machine (the API server's to etcd, other tests')
// may be handed the same port; ports below the range are only ever taken by
// someone who binds them by number.
func listenFree() (net.Listener, error) {
	if lo, hi, ok := belowEphemeral(); ok {
		for range 20 {
			if l, err := listenLoopback(lo + rand.IntN(hi-lo)); err == nil {
				return l, nil
			}
		}
	}
	return listenLoopback(0)
}

// belowEphemeral returns a range of ports [lo, hi) under the kernel's
// ephemeral port range, or false when the range is unknown or leaves no room.
func belowEphemeral() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	first, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0, false
	}
	const floor = 10000 // well above the registered services most hosts run
	if first-floor < 1000 {
		return 0, 0, false
	}
	return floor, first, true
}

// errPortTaken marks a component that exited because its port, picked free,
// was taken before it could bind it.
var errPortTaken = errors.New("port taken between picking and binding")

func listenLoopback(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// freePort picks one free port on 127.0.0.1.
func freePort() (int, error) {
	l, err := listenFree()
	if err != nil {
		return 0, fmt.Errorf("pick a free port on 127.0.0.1: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
