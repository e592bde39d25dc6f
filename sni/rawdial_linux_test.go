package sni

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRawDialConnectsAndHalfCloses(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) { testRawDialConnects(t, host) })
	}
}

func testRawDialConnects(t *testing.T, host string) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no %s loopback here: %v", host, err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the dialer's FIN
		c.Write([]byte("bye"))
		got <- string(b)
	}()
	ap := netip.MustParseAddrPort(ln.Addr().String())
	c, err := rawDial(ap, time.Now().Add(5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.RemoteAddr().String() != ap.String() {
		t.Errorf("RemoteAddr %v, want %v", c.RemoteAddr(), ap)
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || la.Port == 0 || !la.IP.IsLoopback() {
		t.Errorf("LocalAddr %v, want a loopback address with a port", c.LocalAddr())
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello" {
		t.Fatalf("peer read %q, want hello", s)
	}
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "bye" {
		t.Fatalf("read %q, %v; want the peer's reply after our FIN", b, err)
	}
}

func TestRawDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = rawDial(netip.MustParseAddrPort(addr), time.Now().Add(5*time.Second), nil)
	var oe *net.OpError
	if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &oe) || oe.Op != "dial" {
		t.Fatalf("err %v, want a dial *net.OpError wrapping ECONNREFUSED", err)
	}
}

// stuckListener returns a loopback address whose accept queue is full, so
// that a further connect stays in SYN_SENT (the SYNs are dropped) until it
// is abandoned.
func stuckListener(t *testing.T) netip.AddrPort {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	// Fill the queue (backlog 0 admits one): connections nobody accepts.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", ap.String(), 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
		if i > 16 {
			t.Skip("the kernel keeps accepting connections into a full queue")
		}
	}
	return ap
}

func TestRawDialDeadline(t *testing.T) {
	ap := stuckListener(t)
	start := time.Now()
	_, err := rawDial(ap, time.Now().Add(150*time.Millisecond), nil)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v after %v, want a deadline error", err, time.Since(start))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the dial took %v with a 150ms deadline", d)
	}
}

func TestRawDialAbortedByClose(t *testing.T) {
	ap := stuckListener(t)
	conns := make(chan net.Conn, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := rawDial(ap, time.Time{}, func(c net.Conn) bool { conns <- c; return true })
		errc <- err
	}()
	(<-conns).Close() // what Server.Close does to a session's peer
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err %v, want the dial to end because its socket was closed", err)
	}
	_, err := rawDial(ap, time.Time{}, func(net.Conn) bool { return false })
	if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err %v, want net.ErrClosed when the session is closing already", err)
	}
}

// TestSpliceDialsIPsRawAndNamesThroughNet: an IP upstream is dialed with
// rawDial, a host name through net (which resolves it); both tunnels work.
func TestSpliceDialsIPsRawAndNamesThroughNet(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: "registry.example.com"})
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		readHelloThen(c)
		c.Write([]byte("ready"))
		io.Copy(io.Discard, c)
	})
	_, port, _ := net.SplitHostPort(up.addr)
	for _, tc := range []struct {
		addr, want string
	}{
		{up.addr, "*sni.sockConn"},
		{net.JoinHostPort("localhost", port), "*net.TCPConn"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			// The goroutine path (the event loop dials IPs itself and
			// hands host names to this path).
			w := newWorldWith(t, func(s *Server) { s.loopOff = true }, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, tc.addr))
			c := w.dial(t)
			c.Write(hello)
			b := make([]byte, 5)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "ready" {
				t.Fatalf("read %q, %v; log:\n%s", b, err, w.logs)
			}
			var types []string
			w.srv.mu.Lock()
			for ss := range w.srv.sessions {
				ss.mu.Lock() // the upstream connection, as abort sees it
				types = append(types, fmt.Sprintf("%T", ss.peer))
				ss.mu.Unlock()
			}
			w.srv.mu.Unlock()
			if len(types) != 1 || types[0] != tc.want {
				t.Errorf("upstream connections %v, want one %s", types, tc.want)
			}
		})
	}
}

// TestRawDialWriteBuffers: writev of several buffers larger than the
// socket buffers arrives whole and in order (partial writes, waits).
func TestRawDialWriteBuffers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := rawDial(netip.MustParseAddrPort(ln.Addr().String()), time.Now().Add(5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var bufs [][]byte
	var want []byte
	for i, n := range []int{107, 3 << 20, 0, 1, 5 << 20} {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*31 + j)
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	if err := writeBuffers(c, bufs...); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer got %d bytes, want the %d written, in order", len(b), len(want))
	}
}
