package sni

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/inetaf/tcpproxy"
)

// clientAuthProbe bounds the wait, after a TLS 1.3 upstream handshake in
// which the upstream asked for a client certificate, for the upstream's
// verdict on it (TLS 1.3 reports a rejected client certificate only after
// the client's handshake is complete). A NewSessionTicket or data ends the
// wait at once.
const clientAuthProbe = 250 * time.Millisecond

// bridgeTarget terminates the client's TLS and opens a TLS connection to
// the upstream during the client's handshake, so that the client gets the
// ALPN protocol the upstream chose. It is created per connection.
type bridgeTarget struct {
	s       *Server
	ss      *session
	up      *tls.Conn // set by configForClient
	release func()
	connErr error
	early   []byte // application data the upstream sent during the probe
}

var _ tcpproxy.Target = (*bridgeTarget)(nil)

// bridgeConn is the connection handed to tls.Server: the peeked client
// connection plus the target, which GetConfigForClient finds through
// ClientHelloInfo.Conn.
type bridgeConn struct {
	*tcpproxy.Conn
	t *bridgeTarget
}

// HandleConn implements tcpproxy.Target: c is the client connection with
// its ClientHello in c.(*tcpproxy.Conn).Peeked. It closes c.
func (t *bridgeTarget) HandleConn(c net.Conn) {
	defer c.Close()
	pc, ok := c.(*tcpproxy.Conn)
	if !ok {
		pc = &tcpproxy.Conn{Conn: c}
	}
	client, err := t.handshake(pc)
	if t.up != nil {
		defer t.release()
		defer t.up.NetConn().Close()
	}
	if err != nil {
		t.handshakeFailed(err)
		return
	}
	if pc.Peeked == nil {
		t.ss.releaseHello()
	}
	if !t.ss.setPeer(t.up.NetConn()) {
		return
	}
	t.ss.inTunnel.Store(true)
	t.ss.end(t.copy(client))
}

// handshake completes the client's TLS handshake, which dials the upstream
// from GetConfigForClient, under the ClientHello plus connect timeouts.
func (t *bridgeTarget) handshake(pc *tcpproxy.Conn) (*tls.Conn, error) {
	deadline := time.Now().Add(t.ss.cfg.ClientHelloTimeout + t.ss.cfg.ConnectTimeout)
	pc.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(t.s.ctx, deadline)
	defer cancel()
	t.ss.route.tickets.rotate(t.ss.route.serveTLS, time.Now())
	client := tls.Server(&bridgeConn{Conn: pc, t: t}, t.ss.route.serveTLS)
	if err := client.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	pc.SetDeadline(time.Time{})
	return client, nil
}

func (t *bridgeTarget) handshakeFailed(err error) {
	if t.connErr != nil {
		t.s.connectFailed(t.ss, t.connErr)
		return
	}
	res := resultClientError
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		res = t.s.timeoutResult()
	}
	err = fmt.Errorf("client TLS handshake: %w", err)
	t.ss.end(res, err)
	t.s.warnf(res+"/bridge-handshake/"+t.ss.route.Name, "client TLS handshake failed on a bridge route; "+
		"if the client reports an unknown authority, it does not trust the CA of the route's serve certificate",
		"route", t.ss.route.Name, "client", t.ss.clientString(), "sni", t.ss.hello.ServerName, "err", err)
}

// bridgeConfigForClient is every bridge route's GetConfigForClient.
func bridgeConfigForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	bc, ok := hello.Conn.(*bridgeConn)
	if !ok {
		return nil, errors.New("sni: bridge handshake on a connection the server did not accept")
	}
	return bc.t.configForClient(hello)
}

// configForClient connects to the upstream with the client's ALPN list and
// returns the client leg's configuration offering only the protocol the
// upstream chose. An error makes crypto/tls send an internal_error alert.
func (t *bridgeTarget) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	if t.up == nil {
		c, release, err := t.s.connect(hello.Context(), t.ss, t.dialTLS(hello))
		if err != nil {
			t.connErr = err
			return nil, err
		}
		t.up, t.release = c.(*tls.Conn), release
	}
	return t.ss.route.serveConfig(t.up.ConnectionState().NegotiatedProtocol), nil
}

// dialTLS returns the dialFunc of this connection: TCP, the TLS handshake
// and, when the upstream asked for a client certificate over TLS 1.3, its
// verdict on it. A wrong server certificate or a refused client
// certificate is a failed dial: the next candidate is tried.
func (t *bridgeTarget) dialTLS(hello *tls.ClientHelloInfo) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		raw, err := t.s.dial(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		lc := &legConfig{route: t.ss.route, addr: addr, raw: raw}
		c := tls.Client(raw, lc.config(hello))
		if err := c.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		if err := t.confirmClientAuth(ctx, c, lc); err != nil {
			raw.Close()
			return nil, err
		}
		return c, nil
	}
}

// confirmClientAuth waits, after a TLS 1.3 handshake in which the upstream
// requested a client certificate, until the upstream accepts it (a session
// ticket, data, or silence for clientAuthProbe) or refuses it (an alert).
func (t *bridgeTarget) confirmClientAuth(ctx context.Context, c *tls.Conn, lc *legConfig) error {
	if !lc.certRequested || c.ConnectionState().Version != tls.VersionTLS13 {
		return nil
	}
	deadline := time.Now().Add(clientAuthProbe)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	lc.raw.SetReadDeadline(deadline)
	lc.probing.Store(true)
	var b [1]byte
	n, err := c.Read(b[:])
	lc.probing.Store(false)
	lc.raw.SetReadDeadline(time.Time{})
	if n > 0 {
		t.early = append(t.early, b[:n]...)
	}
	if err != nil && !isTimeout(err) {
		return fmt.Errorf("upstream refused the client certificate (upstream_tls.cert/key): %w", err)
	}
	return nil
}

// copy runs the route's BridgeFunc, or copies both ways.
func (t *bridgeTarget) copy(client *tls.Conn) (string, error) {
	if len(t.early) > 0 {
		n, err := client.Write(t.early)
		t.ss.down.Add(int64(n))
		t.ss.rm.addBytes(DirectionDownstream, int64(n))
		if err != nil {
			return resultClientError, &sideError{sideClient, err}
		}
	}
	if f := t.ss.route.BridgeFunc; f != nil {
		return t.runBridgeFunc(f, client)
	}
	tn := newTunnel(t.ss, client, t.up, t.ss.cfg.IdleTimeout)
	return tn.run(tn.copier(client, t.up, sideClient, sideUpstream, DirectionUpstream).run,
		tn.copier(t.up, client, sideUpstream, sideClient, DirectionDownstream).run)
}

func (t *bridgeTarget) runBridgeFunc(f BridgeFunc, client *tls.Conn) (string, error) {
	up, down, err := f(t.s.ctx, client, t.up)
	t.ss.up.Add(up)
	t.ss.down.Add(down)
	t.ss.rm.addBytes(DirectionUpstream, up)
	t.ss.rm.addBytes(DirectionDownstream, down)
	var se *sideError
	switch {
	case err == nil:
		return resultOK, nil
	case errors.Is(err, errIdle):
		return resultIdle, err
	case errors.As(err, &se) && se.side == sideUpstream:
		return resultUpstreamError, err
	}
	return resultClientError, err
}
