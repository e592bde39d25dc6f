package sni

import (
	"context"
	"net"
)

// Listen opens a TCP listener for Serve or ServeConnect whose accepted
// connections have no TCP keepalive: timeouts.idle already closes tunnels
// to dead peers, and Go's default keepalive costs four setsockopt(2) calls
// per accepted connection.
func Listen(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), network, addr)
}
