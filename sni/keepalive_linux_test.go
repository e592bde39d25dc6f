package sni

import (
	"context"
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// keepAliveOn reads SO_KEEPALIVE of c's socket.
func keepAliveOn(tb testing.TB, c net.Conn) bool {
	tb.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	var v int
	var gerr error
	rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE) })
	if gerr != nil {
		tb.Fatal(gerr)
	}
	return v != 0
}

// TestNoKeepAlive: the sockets of a tunnel cost no keepalive setsockopt
// calls: accepted ones from Listen, dialed ones from the default dialer
// (both "ip:port" and host names).
func TestNoKeepAlive(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() { ln.Close(); <-done }()
	s, err := New(Config{Logger: quiet}, &Table{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		t.Run(addr, func(t *testing.T) {
			c, err := s.dial(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if keepAliveOn(t, c) {
				t.Errorf("dialed %s with SO_KEEPALIVE on", addr)
			}
		})
	}
	for range 2 {
		a := <-accepted
		if keepAliveOn(t, a) {
			t.Error("Listen accepted a connection with SO_KEEPALIVE on")
		}
		a.Close()
	}
}
