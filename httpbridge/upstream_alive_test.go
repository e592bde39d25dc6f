//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbridge

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestUpstreamProbeSeesWaitingBytes: an idle connection is fit for a request
// while its socket has nothing to read, and unfit once the peer sent a
// byte nobody asked for or closed it; the probe reads nothing.
func TestUpstreamProbeSeesWaitingBytes(t *testing.T) {
	tests := []struct {
		name string
		peer func(net.Conn)
		want bool
	}{
		{name: "quiet", peer: func(net.Conn) {}, want: true},
		{name: "bytes unasked", peer: func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 200 OK\r\n")) }},
		{name: "closed", peer: func(c net.Conn) { _ = c.Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := tcpPair(t)
			tc.peer(peer)
			if !tc.want {
				waitReadable(t, c)
			}
			probe := newUpProbe(c)
			if got := probe.idle(); got != tc.want {
				t.Fatalf("idle() = %v, want %v", got, tc.want)
			}
			if !tc.want && tc.name == "bytes unasked" {
				b := make([]byte, 4)
				if n, _ := c.Read(b); string(b[:n]) != "HTTP" {
					t.Errorf("after the probe the socket gave %q: the probe consumed bytes", b[:n])
				}
			}
		})
	}
}

// tcpPair is a loopback TCP connection and its peer.
func tcpPair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close(); _ = peer.Close() })
	return c, peer
}

// waitReadable waits, in the runtime's poller, until c has something to
// read (a byte or its end), reading nothing.
func waitReadable(tb testing.TB, c net.Conn) {
	tb.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitLimit)) // a failure deadline
	defer c.SetReadDeadline(time.Time{})
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return n >= 0 || err != syscall.EAGAIN
	})
	if err != nil {
		tb.Fatal(err)
	}
}
