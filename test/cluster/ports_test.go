package cluster

import (
	"net"
	"testing"
)

// TestListenFreeBelowEphemeral: picked ports stay out of the range the kernel
// hands to outgoing connections, where a released port can be taken before
// the component binds it.
func TestListenFreeBelowEphemeral(t *testing.T) {
	lo, hi, ok := belowEphemeral()
	if !ok {
		t.Skip("the kernel's ephemeral port range is unknown here, or leaves no room below it")
	}
	for range 50 {
		l, err := listenFree()
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port < lo || port >= hi {
			t.Fatalf("listenFree picked %d, want a port in [%d, %d)", port, lo, hi)
		}
	}
}
