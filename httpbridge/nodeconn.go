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

	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/sni"
)

// nodeConn is one node connection served by the bridge: the BridgeConn
// with what its end is made of recorded (the first read error, whether
// the idle timer or an upstream failure ended it), its requests in
// flight, and how to make it close at the next request boundary.
type nodeConn struct {
	*sni.BridgeConn
	fwd  oci.Forwarded // its forwarding headers, made once for the connection's requests
	addr string        // Client as ip:port, for the logs and the audit
	port int           // the listener's port the node connected to (Host may name it)
	log  *slog.Logger

	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	closeFunc func()                                  // ends the requests' contexts (set before the connection is served); nil for none
	readErr   atomic.Pointer[error]                   // the last read error
	guard     *resetGuard                             // HTTP/2: counts the node's stream resets; nil for HTTP/1.1
	flooded   atomic.Pointer[string]                  // the guard's counts once it ended the connection
	allDone   chan struct{}                           // closed by the last end after finish
	heard     atomic.Bool                             // a byte arrived from the node
	armOnRead atomic.Pointer[func()]                  // HTTP/2: the drain to arm at the server's first read
	eventFunc func(*nodeConn, connEvent)              // tests: Bridge.eventFunc
	timerFunc func(time.Duration, func()) *time.Timer // tests: Bridge.idleTimerFunc; nil: time.AfterFunc

	mu       sync.Mutex
	active   int         // requests in flight
	served   int         // requests begun
	idle     *time.Timer // runs while active == 0; nil without an idle timeout
	idleGen  uint64      // the idle timer's arming; a firing of an older one does nothing
	idled    bool        // the idle timer ended the connection
	upstream bool        // the last request was aborted by the upstream
	finished bool        // the connection is done: no request starts any more
	retired  bool        // the bridge was replaced before the connection came: one exchange, then close
	draining bool        // a drain was asked: close at the next request boundary
	drainFn  func()      // makes the server close at the next request boundary; nil until armed
	drained  bool        // drainFn ran
}

func newNodeConn(c *sni.BridgeConn, log *slog.Logger) *nodeConn {
	return &nodeConn{
		BridgeConn: c, fwd: oci.NewForwarded(addrIP(c.Client)), addr: addrString(c.Client), port: addrPort(c.LocalAddr()), log: log,
		closed: make(chan struct{}), allDone: make(chan struct{}),
	}
}

// addrString is a as ip:port, "" for none.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
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

// Read records the last error reading from the node, and that the node
// spoke at all. (A drain ends the HTTP/1.x wait for a request with a
// past deadline: a deadline error is only the node's fault on a
// connection that never got a request served.)
//
// On HTTP/2 the bytes pass through the connection's resetGuard: once the
// node has reset most of its streams, the server gets no further frame,
// only errResetFlood. The server's first read arms its drain (armAtRead).
func (c *nodeConn) Read(b []byte) (int, error) {
	if fn := c.armOnRead.Load(); fn != nil && c.armOnRead.CompareAndSwap(fn, nil) {
		c.arm(*fn)
	}
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
	if n > 0 && c.heard.CompareAndSwap(false, true) {
		c.event(evHeard)
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
		if c.closeFunc != nil {
			c.closeFunc()
		}
	})
	return err
}

// connEvent is a point in a node connection's life where a test makes
// something happen (Bridge.eventFunc): a drain landing exactly there.
type connEvent int

const (
	evArming connEvent = iota // the server is about to arm the drain
	evArmed                   // the drain is armed
	evHeard                   // the first bytes from the node were read
)

func (c *nodeConn) event(e connEvent) {
	if c.eventFunc != nil {
		c.eventFunc(c, e)
	}
}

// retire makes a connection that came to a bridge already replaced serve
// one exchange, then close: its drain runs as its first request begins.
func (c *nodeConn) retire() {
	c.mu.Lock()
	c.retired = true
	c.mu.Unlock()
}

// arm sets how the server closes the connection at its next request
// boundary and starts the idle timer. The check for a drain asked before
// is the same step under the lock: such a drain runs fn now, and one
// asked after finds fn set.
func (c *nodeConn) arm(fn func()) {
	c.event(evArming)
	c.mu.Lock()
	c.drainFn = fn
	run := c.draining && !c.drained
	c.drained = c.drained || run
	if !c.draining && c.IdleTimeout > 0 {
		c.armIdleLocked()
	}
	c.mu.Unlock()
	if run {
		fn()
	}
	c.event(evArmed)
}

// armAtRead arms fn at the server's first read of the connection
// (HTTP/2: x/net/http2's ServeConn registers the connection for the
// GOAWAY of Shutdown before it reads; a Shutdown earlier sends nothing).
func (c *nodeConn) armAtRead(fn func()) { c.armOnRead.Store(&fn) }

// armIdleLocked starts a new idle timer; a firing of the one before does
// nothing.
func (c *nodeConn) armIdleLocked() {
	c.idleGen++
	gen := c.idleGen
	after := c.timerFunc
	if after == nil {
		after = time.AfterFunc
	}
	c.idle = after(c.IdleTimeout, func() { c.onIdle(gen) })
}

// stopIdleLocked stops the idle timer, also a firing already under way.
func (c *nodeConn) stopIdleLocked() {
	c.idleGen++
	if c.idle != nil {
		c.idle.Stop()
	}
}

// onIdle ends a connection that had no request in flight for IdleTimeout:
// the check that the timer is still the current one and the drain are one
// step, so a request that began and ended meanwhile keeps its connection.
func (c *nodeConn) onIdle(gen uint64) {
	c.mu.Lock()
	if gen != c.idleGen || c.active > 0 || c.draining || c.finished {
		c.mu.Unlock()
		return
	}
	c.idled = true
	act := c.drainLocked()
	c.mu.Unlock()
	c.act(act, "idle")
}

// begin counts a request in flight and stops the idle timer; false when
// the connection is finished (an HTTP/2 handler started after the
// connection ended), and the request must not be served. On a retired
// connection the first request drains it: its answer is the last.
func (c *nodeConn) begin() bool {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return false
	}
	c.active++
	c.served++
	c.idled, c.upstream = false, false
	c.stopIdleLocked()
	act := drainNone
	if c.retired {
		act = c.drainLocked()
	}
	c.mu.Unlock()
	c.act(act, "retired")
	return true
}

// end counts a request done, noting whether the upstream aborted it.
func (c *nodeConn) end(upstreamAborted bool) {
	c.mu.Lock()
	c.active--
	c.upstream = upstreamAborted
	if c.active == 0 && c.idle != nil && !c.draining && !c.finished {
		c.armIdleLocked()
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
	c.stopIdleLocked()
	n := c.active
	c.mu.Unlock()
	if n > 0 {
		<-c.allDone
	}
}

// drainAction is what ends a draining connection.
type drainAction int

const (
	drainNone    drainAction = iota // it drains already
	drainPending                    // not armed yet: arm runs the server's drain
	drainClose                      // the node has sent nothing: close, there is nothing to finish
	drainServer                     // the server's drain: close at the next request boundary
)

// drain makes the connection close at the next request boundary (HTTP/1.1:
// after the current response; HTTP/2: GOAWAY, then close once the streams
// in flight are done); a connection the node has sent nothing on yet
// closes now, armed or not.
// why is logged at Debug: idle, draining (the gateway), retired (Close).
func (c *nodeConn) drain(why string) {
	c.mu.Lock()
	act := c.drainLocked()
	c.mu.Unlock()
	c.act(act, why)
}

// drainLocked marks the connection draining and says what ends it. (The
// node's first byte can arrive as it decides: a request sent as the
// gateway closes, which the node sees as a close before any answer.)
func (c *nodeConn) drainLocked() drainAction {
	if c.draining {
		return drainNone
	}
	c.draining = true
	c.stopIdleLocked()
	switch {
	case !c.heard.Load():
		c.drained = true
		return drainClose
	case c.drainFn == nil:
		return drainPending
	}
	c.drained = true
	return drainServer
}

// act carries out a drain decided under the lock.
func (c *nodeConn) act(a drainAction, why string) {
	if a == drainNone {
		return
	}
	c.log.Debug("node connection closes at the next request boundary", "route", c.Route, "client", c.Client, "reason", why)
	switch a {
	case drainClose:
		_ = c.Close()
	case drainServer:
		c.drainFn()
	}
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

// connKey carries the *nodeConn of a request.
type connKey struct{}

func connFrom(ctx context.Context) *nodeConn {
	c, _ := ctx.Value(connKey{}).(*nodeConn)
	return c
}

var _ http.Handler = (*Bridge)(nil)
