package rawnet

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitLimit bounds a wait that should end at once; it is a bound on
// failure, never a synchronisation.
const waitLimit = 10 * time.Second

// waitFD waits until fd reports one of events (poll(2)).
func waitFD(t *testing.T, fd int, events int16) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		n, err := unix.Poll(pfd, int(waitLimit/time.Millisecond))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			t.Fatalf("poll fd %d for %#x: %d, %v", fd, events, n, err)
		}
		return
	}
}

// listener returns a loopback listener (127.0.0.1 or ::1) and its socket,
// duplicated and non-blocking, closed at cleanup.
func listener(t *testing.T, network, addr string) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	rc, _ := ln.(*net.TCPListener).SyscallConn()
	fd := -1
	var derr error
	rc.Control(func(sfd uintptr) { fd, derr = DupCloexec(int(sfd)) })
	if derr != nil {
		t.Fatal(derr)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return ln, fd
}

// connected returns both ends of a TCP connection on network's loopback,
// as raw non-blocking descriptors: ours from SocketConnect, the peer's
// from Accept4.
func connected(t *testing.T, network, addr string) (client, server int) {
	t.Helper()
	ln, lfd := listener(t, network, addr)
	sa, err := SockaddrOf(netip.MustParseAddrPort(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	client, op, err := SocketConnect(&sa)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	t.Cleanup(func() { unix.Close(client) })
	waitFD(t, client, unix.POLLOUT)
	if errno, err := SocketError(client); err != nil || errno != 0 {
		t.Fatalf("SO_ERROR after connect: %v, %v", errno, err)
	}
	waitFD(t, lfd, unix.POLLIN)
	server, peer, err := Accept4(lfd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(server) })
	local, err := LocalAddr(client)
	if err != nil {
		t.Fatal(err)
	}
	lap, _ := local.AddrPort()
	pap, ok := peer.AddrPort()
	if !ok || pap != lap {
		t.Fatalf("Accept4 peer %v, want the client's local address %v", pap, lap)
	}
	return client, server
}

func TestAccept4SocketConnect(t *testing.T) {
	tests := []struct{ name, network, addr string }{
		{name: "ipv4", network: "tcp4", addr: "127.0.0.1:0"},
		{name: "ipv6", network: "tcp6", addr: "[::1]:0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, s := connected(t, tc.network, tc.addr)
			for _, fd := range []int{c, s} {
				flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
				if err != nil || flags&unix.O_NONBLOCK == 0 {
					t.Errorf("fd %d flags %#o, %v: want O_NONBLOCK", fd, flags, err)
				}
				fdf, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				if fdf&unix.FD_CLOEXEC == 0 {
					t.Errorf("fd %d: no FD_CLOEXEC", fd)
				}
			}
			if v, err := unix.GetsockoptInt(c, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
				t.Errorf("SocketConnect: TCP_NODELAY %d, %v; want 1", v, err)
			}
		})
	}
}

func TestAccept4EmptyQueue(t *testing.T) {
	_, lfd := listener(t, "tcp4", "127.0.0.1:0")
	unix.SetNonblock(lfd, true)
	if _, _, err := Accept4(lfd); err != EAGAIN {
		t.Fatalf("Accept4 on an empty queue: %v, want EAGAIN", err)
	}
}

func TestConnectRefusedSocketError(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	sa, _ := SockaddrOf(netip.MustParseAddrPort(addr))
	fd, op, err := SocketConnect(&sa)
	if err != nil {
		if op != "connect" || err != unix.ECONNREFUSED {
			t.Fatalf("SocketConnect: %s %v, want connect ECONNREFUSED or in progress", op, err)
		}
		return
	}
	defer Close(fd)
	waitFD(t, fd, unix.POLLOUT)
	errno, err := SocketError(fd)
	if err != nil || errno != unix.ECONNREFUSED {
		t.Fatalf("SO_ERROR %v, %v; want ECONNREFUSED", errno, err)
	}
	if err := Connect(fd, &sa); err == nil || err == EISCONN {
		t.Errorf("Connect again after a refusal: %v, want an error", err)
	}
}

func TestConnectAgainAnswersEISCONN(t *testing.T) {
	ln, _ := listener(t, "tcp4", "127.0.0.1:0")
	sa, _ := SockaddrOf(netip.MustParseAddrPort(ln.Addr().String()))
	fd, _, err := SocketConnect(&sa)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	waitFD(t, fd, unix.POLLOUT)
	// The first call after the connect completed reports its outcome (0),
	// every later one EISCONN.
	if err := Connect(fd, &sa); err != nil && err != EISCONN {
		t.Fatalf("Connect once connected: %v, want nil or EISCONN", err)
	}
	if err := Connect(fd, &sa); err != EISCONN {
		t.Fatalf("Connect on a connected socket: %v, want EISCONN", err)
	}
}

func TestReadWrite(t *testing.T) {
	c, s := connected(t, "tcp4", "127.0.0.1:0")
	b := make([]byte, 16)
	if _, err := Read(s, b); err != EAGAIN {
		t.Fatalf("Read with nothing sent: %v, want EAGAIN", err)
	}
	if n, err := Write(c, []byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	waitFD(t, s, unix.POLLIN)
	n, err := Read(s, b)
	if err != nil || string(b[:n]) != "hello" {
		t.Fatalf("Read = %q, %v; want hello", b[:n], err)
	}
}

func TestWritev(t *testing.T) {
	c, s := connected(t, "tcp4", "127.0.0.1:0")
	n, err := Writev(c, [][]byte{nil, []byte("PROXY "), {}, []byte("hello"), []byte("not sent")})
	if n != 11 || err != nil {
		t.Fatalf("Writev = %d, %v; want the first two non-empty buffers, 11 bytes", n, err)
	}
	got := readN(t, s, 11)
	if string(got) != "PROXY hello" {
		t.Fatalf("peer read %q", got)
	}
	if n, err := Writev(c, [][]byte{nil, {}}); n != 0 || err != nil {
		t.Errorf("Writev of nothing = %d, %v; want 0, nil", n, err)
	}
}

func readN(t *testing.T, fd, n int) []byte {
	t.Helper()
	var got []byte
	b := make([]byte, n)
	for len(got) < n {
		waitFD(t, fd, unix.POLLIN)
		m, err := Read(fd, b[:n-len(got)])
		if err == EAGAIN || err == EINTR {
			continue
		}
		if err != nil || m == 0 {
			t.Fatalf("read after %d bytes: %d, %v", len(got), m, err)
		}
		got = append(got, b[:m]...)
	}
	return got
}

func TestPipeSplice(t *testing.T) {
	c, s := connected(t, "tcp6", "[::1]:0")
	r, w, err := Pipe(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(r)
	defer Close(w)
	if _, err := Splice(s, w, 1<<16); err != EAGAIN {
		t.Fatalf("Splice from an empty socket: %v, want EAGAIN", err)
	}
	msg := bytes.Repeat([]byte("x"), 3000)
	Write(c, msg)
	waitFD(t, s, unix.POLLIN)
	n, err := Splice(s, w, 1<<16)
	if err != nil || n == 0 {
		t.Fatalf("Splice socket to pipe: %d, %v", n, err)
	}
	m, err := Splice(r, c, n) // back to the client's own peer: s reads it
	if err != nil || m != n {
		t.Fatalf("Splice pipe to socket: %d, %v; want %d", m, err, n)
	}
	if got := readN(t, s, n); !bytes.Equal(got, msg[:n]) {
		t.Fatal("spliced bytes differ")
	}
}

func TestShutdownWriteEndOfStream(t *testing.T) {
	c, s := connected(t, "tcp4", "127.0.0.1:0")
	if err := ShutdownWrite(c); err != nil {
		t.Fatal(err)
	}
	waitFD(t, s, unix.POLLIN)
	if n, err := Read(s, make([]byte, 4)); n != 0 || err != nil {
		t.Fatalf("Read after the peer's FIN: %d, %v; want end of stream", n, err)
	}
	if _, err := Write(s, []byte("still open")); err != nil {
		t.Errorf("the other direction: %v, want it open", err)
	}
}

func TestClose(t *testing.T) {
	r, w, err := Pipe(4096)
	if err != nil {
		t.Fatal(err)
	}
	Close(r)
	if err := Close(w); err != nil {
		t.Fatal(err)
	}
	if err := Close(w); err != unix.EBADF {
		t.Errorf("Close of a closed descriptor: %v, want EBADF", err)
	}
}

func TestEnsureNonblock(t *testing.T) {
	_, lfd := listener(t, "tcp4", "127.0.0.1:0")
	unix.SetNonblock(lfd, false)
	if was, err := EnsureNonblock(lfd); !was || err != nil {
		t.Fatalf("blocking socket: EnsureNonblock = %v, %v; want true, nil", was, err)
	}
	if was, err := EnsureNonblock(lfd); was || err != nil {
		t.Fatalf("non-blocking socket: EnsureNonblock = %v, %v; want false, nil", was, err)
	}
	if _, err := EnsureNonblock(-1); err != unix.EBADF {
		t.Errorf("EnsureNonblock(-1): %v, want EBADF", err)
	}
}

func TestSetNoDelay(t *testing.T) {
	_, lfd := listener(t, "tcp4", "127.0.0.1:0")
	unix.SetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 0)
	if err := SetNoDelay(lfd); err != nil {
		t.Fatal(err)
	}
	if v, _ := unix.GetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY); v == 0 {
		t.Error("TCP_NODELAY not set")
	}
}

func TestLocalAddr(t *testing.T) {
	ln, lfd := listener(t, "tcp6", "[::1]:0")
	sa, err := LocalAddr(lfd)
	if err != nil {
		t.Fatal(err)
	}
	if got := sa.TCPAddr().String(); got != ln.Addr().String() {
		t.Errorf("LocalAddr = %s, want %s", got, ln.Addr())
	}
}

func TestEpoll(t *testing.T) {
	epfd, err := EpollCreate()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(epfd)
	c, s := connected(t, "tcp4", "127.0.0.1:0")
	const tok = 0xdeadbeef_00000005 // both halves must come back
	ev := NewEvent(EPOLLIN|EPOLLRDHUP|EPOLLET, tok)
	if err := EpollCtl(epfd, EPOLL_CTL_ADD, s, &ev); err != nil {
		t.Fatal(err)
	}
	events := make([]Event, 4)
	if n, err := EpollWaitNow(epfd, events); n != 0 || err != nil {
		t.Fatalf("EpollWaitNow with nothing ready = %d, %v", n, err)
	}
	Write(c, []byte("x"))
	waitFD(t, epfd, unix.POLLIN)
	n, err := EpollWaitNow(epfd, events)
	if n != 1 || err != nil {
		t.Fatalf("EpollWaitNow = %d, %v; want 1 event", n, err)
	}
	if got := events[0].Token(); got != tok {
		t.Errorf("token %#x, want %#x", got, uint64(tok))
	}
	if !events[0].Has(EPOLLIN) || events[0].Has(EPOLLOUT) {
		t.Errorf("events %#x, want EPOLLIN only", events[0].Events)
	}
	if err := EpollCtl(epfd, EPOLL_CTL_DEL, s, nil); err != nil {
		t.Fatal(err)
	}
	if err := EpollCtl(epfd, EPOLL_CTL_DEL, s, nil); err != unix.ENOENT {
		t.Errorf("removing it twice: %v, want ENOENT", err)
	}
	if n, _ := EpollWaitNow(epfd, nil); n != 0 {
		t.Errorf("EpollWaitNow with no room = %d", n)
	}
}

func TestEventfd(t *testing.T) {
	evfd, err := Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(evfd)
	if _, err := Drain(evfd); err != EAGAIN {
		t.Fatalf("Drain of a zero counter: %v, want EAGAIN", err)
	}
	Signal(evfd)
	Signal(evfd)
	if v, err := Drain(evfd); v != 2 || err != nil {
		t.Fatalf("Drain = %d, %v; want 2 (two signals)", v, err)
	}
}

func TestDupCloexec(t *testing.T) {
	r, w, err := Pipe(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(r)
	defer Close(w)
	d, err := DupCloexec(w)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(d)
	if fdf, _ := unix.FcntlInt(uintptr(d), unix.F_GETFD, 0); fdf&unix.FD_CLOEXEC == 0 {
		t.Error("duplicate lacks FD_CLOEXEC")
	}
	Write(d, []byte("via dup"))
	b := make([]byte, 16)
	if n, err := Read(r, b); string(b[:n]) != "via dup" || err != nil {
		t.Fatalf("read %q, %v", b[:n], err)
	}
	if _, err := DupCloexec(-1); !errors.Is(err, os.ErrClosed) && err != unix.EBADF {
		t.Errorf("DupCloexec(-1): %v, want EBADF", err)
	}
}
