package testnet

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Regression tests for the idiom this package replaces (listen on :0,
// close, use the port): there, each "cannot" below was possible.

// TestClosedAddrCannotBeTaken: nothing can listen on a ClosedAddr, and
// connecting to it is refused.
func TestClosedAddrCannotBeTaken(t *testing.T) {
	addr := ClosedAddr(t)
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("listened on the closed address %s", addr)
	}
	wantRefused(t, addr)
}

// TestHeldAddrListenAgain: the test listens on a HeldAddr, closes the
// listener, and listens on it again; in between the port refuses
// connections and a socket without SO_REUSEADDR, as connect's or
// another program's, cannot bind it.
func TestHeldAddrListenAgain(t *testing.T) {
	addr := HeldAddr(t)
	for range 2 {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen on the held address: %v", err)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial the listener on the held address: %v", err)
		}
		c.Close()
		ln.Close()
		wantRefused(t, addr)
		if err := bindPlain(t, addr); err == nil {
			t.Fatalf("a socket without SO_REUSEADDR bound the held address %s", addr)
		}
	}
}

func wantRefused(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
}

// bindPlain binds a new TCP socket without options to addr.
func bindPlain(t *testing.T, addr string) error {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	ap := netip.MustParseAddrPort(addr)
	return syscall.Bind(fd, &syscall.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())})
}
