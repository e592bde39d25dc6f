package httpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/sni"
)

// nodeConn is one node connection served by the bridge: the BridgeConn
// with what its end is made of recorded (the first read error, whether
// the idle timer or an upstream failure ended it), its requests in
// flight, and how to make it close at the next request boundary.
type nodeConn struct {
	*sni.BridgeConn
	ip   netip.Addr // the node's address, for the forwarding headers
	port int        // the listener's port the node connected to (Host may name it)
	log  *slog.Logger

	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	readErr   atomic.Pointer[error]  // the last read error
	guard     *resetGuard            // HTTP/2: counts the node's stream resets; nil for HTTP/1.1
	flooded   atomic.Pointer[string] // the guard's counts once it ended the connection
	allDone   chan struct{}          // closed by the last end after finish

	mu       sync.Mutex
	active   int         // requests in flight
	served   int         // requests begun
	idle     *time.Timer // runs while active == 0; nil without an idle timeout
	idled    bool        // the idle timer ended the connection
	upstream bool        // the last request was aborted by the upstream
	finished bool        // the connection is done: no request starts any more
	draining bool
	drainFn  func() // makes the server close at the next request boundary
}

func newNodeConn(c *sni.BridgeConn, log *slog.Logger) *nodeConn {
	return &nodeConn{
		BridgeConn: c, ip: addrIP(c.Client), port: addrPort(c.LocalAddr()), log: log,
		closed: make(chan struct{}), allDone: make(chan struct{}),
	}
}

// addrPort is the port of a listener address, 0 when it has none.
func addrPort(a net.Addr) int {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Port
	}
	if a == nil {
		return 0
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return int(ap.Port())
}

// Read records the last error reading from the node. (net/http's
// HTTP/1.1 server ends its background read after each request with a
// past deadline: a deadline error is only the node's fault on a
// connection that never got a request served.)
//
// On HTTP/2 the bytes pass through the connection's resetGuard: once the
// node has reset most of its streams, the server gets no further frame,
// only errResetFlood.
func (c *nodeConn) Read(b []byte) (int, error) {
	if c.guard != nil && c.guard.tripped {
		return 0, errResetFlood
	}
	n, err := c.BridgeConn.Read(b)
	if c.guard != nil && n > 0 {
		if m := c.guard.pass(b[:n]); m < n {
			n, err = m, nil
			if m == 0 {
				err = errResetFlood
			}
		}
	}
	if err != nil {
		c.readErr.Store(&err)
	}
	return n, err
}

// guardResets makes the node's HTTP/2 frames pass a resetGuard, which
// calls flood once with its counts when it ends the connection.
func (c *nodeConn) guardResets(flood func(counts string)) {
	c.guard = newResetGuard(func(counts string) {
		c.flooded.Store(&counts)
		flood(counts)
	})
}

// Close closes the connection once and wakes what waits for its end.
func (c *nodeConn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		err = c.BridgeConn.Close()
		close(c.closed)
	})
	return err
}

// startIdle arms the idle timer with the connection's IdleTimeout and
// sets how the server drains it.
func (c *nodeConn) startIdle(drain func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drainFn = drain
	if c.IdleTimeout > 0 {
		c.idle = time.AfterFunc(c.IdleTimeout, c.onIdle)
	}
}

// onIdle ends a connection that had no request in flight for IdleTimeout.
func (c *nodeConn) onIdle() {
	c.mu.Lock()
	if c.active > 0 {
		c.mu.Unlock()
		return
	}
	c.idled = true
	c.mu.Unlock()
	c.drain("idle")
}

// begin counts a request in flight and stops the idle timer; false when
// the connection is finished (an HTTP/2 handler started after the
// connection ended), and the request must not be served.
func (c *nodeConn) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return false
	}
	c.active++
	c.served++
	c.idled, c.upstream = false, false
	if c.idle != nil {
		c.idle.Stop()
	}
	return true
}

// end counts a request done, noting whether the upstream aborted it.
func (c *nodeConn) end(upstreamAborted bool) {
	c.mu.Lock()
	c.active--
	c.upstream = upstreamAborted
	if c.active == 0 && c.idle != nil && !c.draining && !c.finished {
		c.idle.Reset(c.IdleTimeout)
	}
	if c.active == 0 && c.finished {
		close(c.allDone)
	}
	c.mu.Unlock()
}

// finish marks the connection done, stops its idle timer and waits for
// the requests still in flight.
func (c *nodeConn) finish() {
	c.mu.Lock()
	c.finished = true
	if c.idle != nil {
		c.idle.Stop()
	}
	n := c.active
	c.mu.Unlock()
	if n > 0 {
		<-c.allDone
	}
}

// drain makes the connection close at the next request boundary (HTTP/1.1:
// after the current response; HTTP/2: GOAWAY, then close once the streams
// in flight are done).
// why is logged at Debug: idle, draining (the gateway), retired (Close).
func (c *nodeConn) drain(why string) {
	c.mu.Lock()
	if c.draining || c.drainFn == nil {
		c.draining = true
		c.mu.Unlock()
		return
	}
	c.draining = true
	c.log.Debug("node connection closes at the next request boundary", "route", c.Route, "client", c.Client, "reason", why)
	if c.idle != nil {
		c.idle.Stop()
	}
	fn := c.drainFn
	c.mu.Unlock()
	fn()
}

// hasServed reports whether a request has begun on the connection.
func (c *nodeConn) hasServed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served > 0
}

// isDraining reports whether the connection closes at the next boundary.
func (c *nodeConn) isDraining() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining
}

// watch drains the connection when the gateway drains and closes it when
// ctx ends (the server closing connections by force), until it is closed.
func (c *nodeConn) watch(ctx context.Context) {
	select {
	case <-c.Draining:
		c.drain("draining")
	case <-ctx.Done():
		_ = c.Close()
		return
	case <-c.closed:
		return
	}
	select {
	case <-ctx.Done():
		_ = c.Close()
	case <-c.closed:
	}
}

// result is how the connection ended, for ServeBridge: nil for a normal
// end, else an error wrapping one of sni's kinds.
func (c *nodeConn) result() error {
	c.mu.Lock()
	idled, up, served := c.idled, c.upstream, c.served
	c.mu.Unlock()
	switch {
	case idled:
		return fmt.Errorf("no request for %v: %w", c.IdleTimeout, sni.ErrBridgeIdle)
	case up:
		return fmt.Errorf("a response was aborted: %w", sni.ErrBridgeUpstream)
	}
	if counts := c.flooded.Load(); counts != nil {
		return fmt.Errorf("HTTP/2 rapid reset: the node reset %s it opened: %w", *counts, sni.ErrBridgeClient)
	}
	p := c.readErr.Load()
	if p == nil {
		return nil
	}
	switch err := *p; {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		if served > 0 {
			return nil
		}
		return fmt.Errorf("no complete request within the read header timeout: %w", sni.ErrBridgeClient)
	default:
		return fmt.Errorf("reading from the node: %w: %w", err, sni.ErrBridgeClient)
	}
}

// oneConnListener hands http.Server.Serve one connection, then blocks in
// Accept until that connection is closed.
type oneConnListener struct {
	c    *nodeConn
	once atomic.Bool
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	if l.once.CompareAndSwap(false, true) {
		return l.c, nil
	}
	<-l.c.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

// connKey carries the *nodeConn of a request.
type connKey struct{}

func connFrom(ctx context.Context) *nodeConn {
	c, _ := ctx.Value(connKey{}).(*nodeConn)
	return c
}

var _ http.Handler = (*Bridge)(nil)
