// Package testnet gives tests loopback ports that nothing else can take.
//
// The usual way to find a port nothing listens on, listening on
// 127.0.0.1:0 and closing the listener, leaves the port free for any socket
// on the machine: another test's listener may bind it, or a connection
// elsewhere may use it as its local port, before the test is done with it.
// On a busy machine that turns "connection refused" into someone else's
// server, and "start the stopped upstream again on its port" into
// "address already in use". Here the port stays bound, by a TCP socket
// that never listens, until the test ends: connecting to it is refused,
// and neither bind(0) nor connect picks it.
//
//	addr := testnet.ClosedAddr(t) // an upstream that refuses connections
//	addr := testnet.HeldAddr(t)   // a port the test listens on, stops, listens on again
package testnet

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// ClosedAddr returns "127.0.0.1:PORT" on which nothing listens while tb
// runs: connecting is refused, and no socket can bind the port, not even
// one with SO_REUSEADDR. The port is released when tb ends.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	return hold(tb, false)
}

// HeldAddr returns "127.0.0.1:PORT" for tb's own listeners: a listener
// with SO_REUSEADDR (every net.Listen sets it) may bind it, close, and bind
// it again as often as the test likes. Whenever none listens, connecting
// is refused, and neither bind(0) nor connect anywhere on the machine takes
// the port. The port is released when tb ends.
func HeldAddr(tb testing.TB) string {
	tb.Helper()
	return hold(tb, true)
}

// hold binds a TCP socket to a free loopback port, without listening, and
// closes it when tb ends. reuse sets SO_REUSEADDR, which lets listeners
// with the same option share the port while the socket does not listen.
func hold(tb testing.TB, reuse bool) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatalf("testnet: socket: %v", err)
	}
	syscall.CloseOnExec(fd)
	tb.Cleanup(func() { syscall.Close(fd) })
	if reuse {
		if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
			tb.Fatalf("testnet: SO_REUSEADDR: %v", err)
		}
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("testnet: bind 127.0.0.1:0: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("testnet: getsockname: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
