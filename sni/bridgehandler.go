package sni

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/inetaf/tcpproxy"
)

// BridgeHandler serves a bridge route's node connections itself, once
// their TLS is terminated, instead of the server dialing one upstream
// connection per node connection and copying bytes (the HTTP-aware
// bridge, which keeps its own pool of upstream connections, is one). A
// route with a Handler offers the handler's protocols by ALPN and dials
// nothing itself; its connections are not refused when no upstream is
// healthy, so the handler can answer that in its own protocol.
type BridgeHandler interface {
	// NextProtos are the ALPN protocols offered to nodes, most preferred
	// first (for HTTP: "h2", "http/1.1").
	NextProtos() []string
	// ServeBridge serves c until the connection ends and returns how it
	// ended: nil for a normal end (the node closed it, or the handler
	// closed it after a complete exchange), else an error that
	// errors.Is one of ErrBridgeIdle, ErrBridgeUpstream or
	// ErrBridgeClient (any other error counts as the client's). ctx is
	// the connection's own: it is done when the server closes connections
	// by force. c.Draining is closed when the server begins to drain, so
	// the handler can finish what is in flight and close the connection
	// at the next request boundary. The server closes c after ServeBridge
	// returns.
	ServeBridge(ctx context.Context, c *BridgeConn) error
}

// Error kinds a BridgeHandler returns (wrapped with what happened): they
// become the connection's result in the log line and metrics.
var (
	// ErrBridgeIdle: the connection carried nothing for the idle timeout.
	ErrBridgeIdle = errors.New("idle")
	// ErrBridgeUpstream: the connection ended because of the upstream.
	ErrBridgeUpstream = errors.New("upstream failed")
	// ErrBridgeClient: the connection ended because of the node.
	ErrBridgeClient = errors.New("client failed")
)

// BridgeConn is a node's connection on a bridge route with its TLS
// terminated, as a BridgeHandler gets it. It is a net.Conn whose reads
// and writes are counted in the connection's bytes; RemoteAddr is the
// node's address (the PROXY header's source where one was received).
type BridgeConn struct {
	tc   *tls.Conn
	ss   *session
	wait *requestWait // ended by the first byte read

	// Route is the route's name, SNI the server name the node sent.
	Route, SNI string
	// Client is the node's address: the PROXY header's source where the
	// connection came through a trusted balancer, else its peer address.
	Client net.Addr
	// Node is the node's identity from its client certificate
	// (serve.client_ca), "" without one.
	Node string
	// Draining is closed when the server begins to drain.
	Draining <-chan struct{}
	// IdleTimeout is the server's timeouts.idle for this connection.
	IdleTimeout time.Duration
	// ID names the connection as its log line's `conn` does, for the
	// handler's own records (the HTTP bridge's audit log).
	ID string
}

// UsedUpstream records that a request on the connection went to the
// upstream at addr: the connection line names the upstreams used. Safe
// for concurrent use (HTTP/2 streams).
func (c *BridgeConn) UsedUpstream(addr string) { c.ss.usedUpstream(addr) }

var _ net.Conn = (*BridgeConn)(nil)

// Read reads from the node, counting the bytes upstream-bound.
func (c *BridgeConn) Read(b []byte) (int, error) {
	n, err := c.tc.Read(b)
	if n > 0 {
		c.wait.seen()
	}
	c.ss.up.Add(int64(n))
	c.ss.rm.addBytes(DirectionUpstream, int64(n))
	return n, err
}

// Write writes to the node, counting the bytes downstream-bound.
func (c *BridgeConn) Write(b []byte) (int, error) {
	n, err := c.tc.Write(b)
	c.ss.down.Add(int64(n))
	c.ss.rm.addBytes(DirectionDownstream, int64(n))
	return n, err
}

// Close sends close_notify and closes the connection.
func (c *BridgeConn) Close() error { return c.tc.Close() }

// LocalAddr is the listener's address the node connected to.
func (c *BridgeConn) LocalAddr() net.Addr { return c.tc.LocalAddr() }

// RemoteAddr is the node's address (Client).
func (c *BridgeConn) RemoteAddr() net.Addr { return c.Client }

// SetDeadline sets the node connection's deadlines.
func (c *BridgeConn) SetDeadline(t time.Time) error { return c.tc.SetDeadline(t) }

// SetReadDeadline sets the node connection's read deadline.
func (c *BridgeConn) SetReadDeadline(t time.Time) error { return c.tc.SetReadDeadline(t) }

// SetWriteDeadline sets the node connection's write deadline.
func (c *BridgeConn) SetWriteDeadline(t time.Time) error { return c.tc.SetWriteDeadline(t) }

// ConnectionState is the node leg's TLS state (negotiated protocol, peer
// certificates); net/http's HTTP/2 server reads it.
func (c *BridgeConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }

// serveHandler hands a terminated node connection to the route's Handler.
func (t *bridgeTarget) serveHandler(h BridgeHandler, client *tls.Conn) (string, error) {
	c := &BridgeConn{
		tc: client, ss: t.ss, wait: &t.wait,
		Route: t.ss.route.Name, SNI: t.ss.hello.ServerName, Client: t.ss.client,
		Node: t.ss.node, Draining: t.s.quit, IdleTimeout: t.ss.cfg.IdleTimeout,
		ID: t.s.ids.of(t.ss),
	}
	err := h.ServeBridge(t.s.ctx, c)
	switch {
	case err == nil:
		return resultOK, nil
	case errors.Is(err, ErrBridgeIdle):
		return resultIdle, err
	case errors.Is(err, ErrBridgeUpstream):
		return resultUpstreamError, err
	}
	return resultClientError, err
}

// handlerConfig is the client leg's configuration for a route with a
// Handler: the connection's (client certificates included), offering the
// handler's protocols, chosen by the server's preference, and full-size
// records from the first byte: crypto/tls's dynamic record sizing would
// send a connection's first responses in ~1.2 KiB records, one write
// system call each (a manifest on a fresh connection: 2-3 writes instead
// of one), which helps browsers on slow links, not nodes next to the
// gateway (nginx's ssl_buffer_size is 16 KiB too).
func (t *bridgeTarget) handlerConfig() *tls.Config {
	cfg := t.serveConfig("")
	cfg.NextProtos = t.ss.route.Handler.NextProtos()
	cfg.DynamicRecordSizingDisabled = true
	return cfg
}

// serveTerminated finishes a connection of a route with a Handler once
// the node's handshake is done (err is its outcome): nothing was dialed.
func (t *bridgeTarget) serveTerminated(h BridgeHandler, pc *tcpproxy.Conn, client *tls.Conn, err error) {
	if err != nil {
		t.handshakeFailed(err)
		return
	}
	t.ss.node = t.node // only now: TLS 1.3 checks the key's signature after VerifyConnection
	if pc.Peeked == nil {
		t.ss.releaseHello()
	}
	t.ss.inTunnel.Store(true)
	t.wait.arm(t.s, t.ss)
	t.ss.end(t.serveHandler(h, client))
}
