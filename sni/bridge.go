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
// the upstream, so that the client gets the ALPN protocol the upstream
// chose. When the route's ALPN memory knows what the upstreams choose for
// the client's list, the client's handshake completes first, offering that
// protocol, and the upstream is dialed only then: a ClientHello alone buys
// no upstream handshake. Otherwise (the first client with that list) the
// upstream is dialed during the client's handshake. It is created per
// connection.
type bridgeTarget struct {
	s       *Server
	ss      *session
	up      *tls.Conn // set by configForClient or dialAfterHandshake
	release func()
	connErr error
	early   []byte // application data the upstream sent during the probe

	authErr     error  // why the route's ClientAuth refused the client's certificate
	authResumed bool   // ... in a resumed session
	node        string // the identity ClientAuth accepted, the session's once the handshake is done

	hello    *tls.ClientHelloInfo // the client's, for a dial after its handshake
	deferred bool                 // the upstream is dialed after the client's handshake
	promised string               // the protocol the client was given then
}

// errALPNMismatch marks an upstream that chose another protocol than the
// one the ALPN memory promised the client: the dial fails (the next
// candidate is tried) rather than join mismatched protocols.
var errALPNMismatch = errors.New("upstream chose another ALPN protocol than the one remembered")

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
	bc := &bridgeConn{Conn: pc, t: t}
	if t.refuse(bc) {
		return
	}
	client, err := t.handshake(bc)
	if h := t.ss.route.Handler; h != nil {
		t.serveTerminated(h, pc, client, err)
		return
	}
	if err == nil && t.deferred {
		err = t.dialAfterHandshake()
	}
	if t.up != nil {
		defer t.release()
		defer t.up.NetConn().Close()
	}
	if err != nil {
		t.handshakeFailed(err)
		return
	}
	t.ss.node = t.node // only now: TLS 1.3 checks the key's signature after VerifyConnection
	if pc.Peeked == nil {
		t.ss.releaseHello()
	}
	if !t.ss.setPeer(t.up.NetConn()) {
		return
	}
	t.ss.inTunnel.Store(true)
	t.ss.end(t.copy(client))
}

// RemoteAddr is the client's address: the PROXY header's source where one
// was received. GetCertificate sees it through ClientHelloInfo.Conn (the
// minter's rate per client).
func (c *bridgeConn) RemoteAddr() net.Addr { return c.t.ss.client }

// handshake completes the client's TLS handshake, which dials the upstream
// from GetConfigForClient, under the ClientHello plus connect timeouts.
func (t *bridgeTarget) handshake(bc *bridgeConn) (*tls.Conn, error) {
	deadline := time.Now().Add(t.ss.cfg.ClientHelloTimeout + t.ss.cfg.ConnectTimeout)
	bc.SetDeadline(deadline)
	ctx, cancel := context.WithDeadline(t.s.ctx, deadline)
	defer cancel()
	t.ss.route.tickets.rotate(t.ss.route.serveTLS, time.Now())
	client := tls.Server(bc, t.ss.route.serveTLS)
	if err := client.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	bc.SetDeadline(time.Time{})
	return client, nil
}

func (t *bridgeTarget) handshakeFailed(err error) {
	switch {
	case errors.Is(t.connErr, errDialLimit):
		t.s.dialLimited(t.ss, t.connErr)
		return
	case t.connErr != nil:
		t.s.connectFailed(t.ss, t.connErr)
		return
	case t.authErr != nil:
		t.clientAuthFailed()
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

// configForClient returns the client leg's configuration offering only
// the protocol the upstream chose: the one the route's ALPN memory
// remembers for the client's list (the upstream is dialed after the
// handshake), else the one the upstream chooses now, dialed with the
// client's list. An error makes crypto/tls send an internal_error alert.
func (t *bridgeTarget) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	t.hello = hello
	if t.ss.route.Handler != nil {
		return t.handlerConfig(), nil
	}
	if proto, ok := t.ss.route.alpn.recall(hello.SupportedProtos); ok && t.up == nil && t.ss.route.available() {
		t.deferred, t.promised = true, proto
		return t.serveConfig(proto), nil
	}
	if t.up == nil {
		c, release, err := t.s.boundedConnect(hello.Context(), t.ss, t.dialTLS(hello))
		if err != nil {
			t.connErr = err
			return nil, err
		}
		t.up, t.release = c.(*tls.Conn), release
	}
	return t.serveConfig(t.up.ConnectionState().NegotiatedProtocol), nil
}

// availability is the optional capability of a route's Upstreams that
// tells, without taking a turn of the rotation, whether any host would be
// a candidate (*upstream.Pool has it). A route whose upstreams are all
// down, draining or in maintenance is refused during the client's
// handshake, with an alert, rather than after it.
type availability interface{ Available() bool }

func (r *Route) available() bool {
	a, ok := r.Pool.(availability)
	return !ok || a.Available()
}

// dialAfterHandshake dials the upstream once the client's handshake is
// done, for a connection promised a protocol from the ALPN memory. The
// client has been told nothing else yet, so a failed dial still moves on
// to the next candidate.
func (t *bridgeTarget) dialAfterHandshake() error {
	c, release, err := t.s.boundedConnect(t.s.ctx, t.ss, t.dialTLS(t.hello))
	if err != nil {
		t.connErr = err
		return err
	}
	t.up, t.release = c.(*tls.Conn), release
	return nil
}

// dialTLS returns the dialFunc of this connection: TCP, the TLS handshake
// and, when the upstream asked for a client certificate over TLS 1.3, its
// verdict on it. A wrong server certificate or a refused client
// certificate is a failed dial: the next candidate is tried.
func (t *bridgeTarget) dialTLS(hello *tls.ClientHelloInfo) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		c, lc, err := t.upstreamHandshake(ctx, addr, hello, false)
		if err != nil && lc != nil && lc.classical {
			t.ss.route.declines.note(lc.sessionKey, time.Now())
			c, lc, err = t.upstreamHandshake(ctx, addr, hello, true)
		}
		if err != nil {
			return nil, err
		}
		if err := t.confirmClientAuth(ctx, c, lc); err != nil {
			lc.raw.Close()
			return nil, err
		}
		if err := t.learnALPN(addr, c); err != nil {
			lc.raw.Close()
			return nil, err
		}
		return c, nil
	}
}

// upstreamHandshake dials addr and completes the upstream leg's TLS
// handshake; full forbids resuming with classical key exchanges. A failed
// handshake returns its legConfig too: when it had offered classical
// groups only (lc.classical), the upstream declined the session
// (errResumptionDeclined) or refused the offer (an upstream that accepts
// only post-quantum groups), so dialTLS notes it in the route's
// declineMemory and dials again with crypto/tls's default.
func (t *bridgeTarget) upstreamHandshake(ctx context.Context, addr string, hello *tls.ClientHelloInfo, full bool) (*tls.Conn, *legConfig, error) {
	raw, err := t.s.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	lc := &legConfig{route: t.ss.route, addr: addr, raw: raw, full: full}
	c := tls.Client(raw, lc.config(hello))
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, lc, fmt.Errorf("TLS handshake: %w", err)
	}
	return c, lc, nil
}

// learnALPN records what the upstream at addr chose for the client's
// list and, for a connection promised a protocol, fails the dial when the
// upstream chose another.
func (t *bridgeTarget) learnALPN(addr string, c *tls.Conn) error {
	got := c.ConnectionState().NegotiatedProtocol
	t.ss.route.alpn.learn(addr, t.hello.SupportedProtos, got)
	if t.deferred && got != t.promised {
		return fmt.Errorf("%w: the client was given %q, the upstream chose %q (remembered from now on)", errALPNMismatch, t.promised, got)
	}
	return nil
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
