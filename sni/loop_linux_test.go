package sni

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLoopTunnelsHoldNoGoroutine: a tunnel the event loop runs costs the
// gateway no goroutine at any time, not even before it goes idle (the
// goroutine path: two per tunnel until they park).
func TestLoopTunnelsHoldNoGoroutine(t *testing.T) {
	const tunnels = 100
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	openReady(t, w) // warm up: starts the loops
	before := runtime.NumGoroutine()
	for range tunnels {
		openReady(t, w)
	}
	// The test's echo upstream holds one goroutine per tunnel.
	perTunnel := float64(runtime.NumGoroutine()-before-tunnels) / tunnels
	if perTunnel > 0.05 {
		t.Fatalf("%d open tunnels hold %.2f gateway goroutines each, want 0", tunnels, perTunnel)
	}
	if n := w.srv.Handshaking(); n != 0 {
		t.Errorf("Handshaking = %d with every connection in its tunnel, want 0", n)
	}
}

// TestLoopShutdownClosesIdleTunnels: Shutdown's deadline closes the loop's
// tunnels with result shutdown.
func TestLoopShutdownClosesIdleTunnels(t *testing.T) {
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	c := openReady(t, w)
	if err := w.srv.Shutdown(shutdownCtx(t, 0)); err == nil {
		t.Fatal("Shutdown returned nil while a tunnel was open")
	}
	readAll(t, c)
	w.logs.wait(t, "msg=connection", "result=shutdown")
}

// TestLoopSocketsNoDelay: both sockets of a loop tunnel have TCP_NODELAY,
// as net gives every TCP connection (the client's is inherited from the
// listening socket, set once).
func TestLoopSocketsNoDelay(t *testing.T) {
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	openReady(t, w)
	w.srv.mu.Lock()
	var c *lconn
	for ss := range w.srv.sessions {
		c, _ = ss.ctl.(*lconn)
	}
	w.srv.mu.Unlock()
	if c == nil {
		t.Fatal("the tunnel is not the event loop's")
	}
	var fds map[string]int
	c.l.call(loopCmd{op: cmdFunc, fn: func() { fds = map[string]int{"client": c.client.fd, "upstream": c.upstream.fd} }})
	for name, fd := range fds {
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		if err != nil || v == 0 {
			t.Errorf("%s socket: TCP_NODELAY %d, %v; want 1", name, v, err)
		}
	}
}

// TestLoopSlowClientGetsEveryByte: an upstream writing faster than a
// client with a small receive window reads fills the client's socket, so
// the loop keeps what it could not write (held, on the copy path; bytes
// left in the pipe on the splice path) and stops reading the upstream
// until the client takes them; every byte arrives, in order.
func TestLoopSlowClientGetsEveryByte(t *testing.T) {
	const size, piece = 8 << 20, 1000
	up := newTCPUpstream(t, func(c *net.TCPConn) {
		readHelloThen(c)
		src := io.LimitReader(randStream(7), size)
		b := make([]byte, piece)
		for {
			n, err := io.ReadFull(src, b)
			if n > 0 {
				if _, werr := c.Write(b[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				break
			}
		}
		c.CloseWrite()
		io.Copy(io.Discard, c)
	})
	for _, copyOnly := range []bool{false, true} {
		w := newWorldWith(t, func(s *Server) { s.loopCopyOnly = copyOnly }, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, up.addr))
		slowRead(t, w, size)
	}
}

// slowRead opens a tunnel with a small receive window (set before the
// connect, so the window never shrinks), reads size bytes from it in small
// reads and checks them against randStream(7).
func slowRead(t *testing.T, w *world, size int) {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 8192) })
	}}
	c, err := d.Dial("tcp", w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(captureHello(t, &tls.Config{ServerName: "registry.example.com"}))
	got := sha256.New()
	b := make([]byte, 512)
	total := 0
	for {
		n, err := c.Read(b)
		got.Write(b[:n])
		total += n
		if err != nil {
			break
		}
	}
	want := sha256.New()
	io.CopyN(want, randStream(7), int64(size))
	if total != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("client got %d bytes (same bytes: %v), want %d in order", total, bytes.Equal(got.Sum(nil), want.Sum(nil)), size)
	}
}

// loopListenerOf returns the server's one event-loop listener.
func loopListenerOf(t *testing.T, w *world) *loopListener {
	t.Helper()
	w.srv.mu.Lock()
	defer w.srv.mu.Unlock()
	for ln := range w.srv.listeners {
		if lln, ok := ln.(*loopListener); ok {
			return lln
		}
	}
	t.Fatal("the listener is not served by the event loops")
	return nil
}

// setBlocking clears (or sets) O_NONBLOCK on fd's open file description.
func setBlocking(t *testing.T, fd int, blocking bool) {
	t.Helper()
	if err := unix.SetNonblock(fd, !blocking); err != nil {
		t.Fatal(err)
	}
}

// Regression: after a failed upgrade the listening socket's open file
// description (shared with the runtime's listener and with the new
// process) was left in blocking mode, and the event loops' accept4 then
// blocked in a RawSyscall holding the loop's P: every loop [running],
// every other goroutine starved, no handshake and no admin answer. A
// loop finds the socket blocking before it accepts, makes it
// non-blocking again and serves on: each tunnel opened after works.
func TestLoopAcceptsAfterListenerTurnsBlocking(t *testing.T) {
	w := newWorld(t, Config{}, "", spliceRoute(t, "registry", []string{"registry.example.com"}, readyEchoUpstream(t).addr))
	openReady(t, w) // the loops watch the listener
	ln := loopListenerOf(t, w)
	setBlocking(t, ln.fd, true)
	// Should a loop still sit in accept4, one more connection lets it out,
	// so that the server can stop (before the world's cleanup, which
	// runs after this one).
	t.Cleanup(func() {
		unix.SetNonblock(ln.fd, true)
		if c, err := net.Dial("tcp", w.addr); err == nil {
			c.Close()
		}
	})
	for i := range 3 {
		c := w.dial(t)
		c.SetDeadline(time.Now().Add(waitLimit)) // a bound on failure, not a wait
		c.Write(captureHello(t, &tls.Config{ServerName: "registry.example.com"}))
		b := make([]byte, 5)
		if _, err := io.ReadFull(c, b); err != nil || string(b) != "ready" {
			t.Fatalf("tunnel %d after the listening socket turned blocking: %q %v", i+1, b, err)
		}
	}
	flags, err := unix.FcntlInt(uintptr(ln.fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK == 0 {
		t.Errorf("listening socket flags %#o, %v: want O_NONBLOCK set again", flags, err)
	}
	w.logs.wait(t, "level=WARN", "listening socket found in blocking mode", "listener="+w.addr)
}
