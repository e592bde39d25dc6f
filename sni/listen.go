package sni

import (
	"context"
	"net"
	"sync"
)

// Listen opens a TCP listener for Serve or ServeConnect whose accepted
// connections have no TCP keepalive: timeouts.idle already closes tunnels
// to dead peers, and Go's default keepalive costs four setsockopt(2) calls
// per accepted connection. On Linux, Serve runs its connections in the
// server's event loops (see eventLoop).
func Listen(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		return nil, err
	}
	return WrapListener(ln), nil
}

// Listener is a TCP listener from Listen or WrapListener. Serve can hand
// its descriptor to the event loops because it learns of Close, which
// takes it out of them; a bare *net.TCPListener is served by an accept
// goroutine instead.
type Listener struct {
	*net.TCPListener
	once   sync.Once
	closed chan struct{}
}

// WrapListener makes a TCP listener opened elsewhere (an inherited
// socket) one the event loops can serve; any other listener is returned
// as it is.
func WrapListener(ln net.Listener) net.Listener {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return ln
	}
	setListenerNoDelay(tl)
	return &Listener{TCPListener: tl, closed: make(chan struct{})}
}

// Close closes the listener; the event loops stop accepting from it.
func (l *Listener) Close() error {
	err := l.TCPListener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}
