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
// chose. The upstream is dialed once the client's handshake is complete
// (on a route with ClientAuth: once its certificate was verified): the
// client is offered the protocol the route's ALPN memory remembers for
// its list, or else predicts, and the dial checks it. A ClientHello
// alone buys no upstream handshake, whatever list it offers. Only while
// a route has learned nothing yet, a few dials are made during a
// client's handshake to learn (alpnMemory.startLearning). It is created
// per connection.
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
	promised string               // the protocol the client was given before the dial
	after    bool                 // the dial runs after the client's handshake
	// learned is the answer of a dial made during the client's handshake,
	// remembered once that handshake completes.
	learned *learnedALPN

	// wait is the wait for the first byte of the client's first request
	// once its handshake is done (FirstRequestTimeout).
	wait requestWait
}

// learnedALPN is one upstream's answer to the client's list.
type learnedALPN struct{ addr, proto string }

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
	defer t.wait.seen() // ends the wait, and so the pending state, once the connection ends
	client, err := t.handshake(bc)
	if h := t.ss.route.Handler; h != nil {
		t.serveTerminated(h, pc, client, err)
		return
	}
	if err == nil && t.up == nil {
		err = t.dialAfterHandshake()
	} else if err == nil {
		t.rememberLearned()
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
	t.wait.arm(t.s, t.ss) // after the dial: the upstream's time is not the client's
	t.ss.end(t.copy(client))
}

// RemoteAddr is the client's address: the PROXY header's source where one
// was received. GetCertificate sees it through ClientHelloInfo.Conn (the
// minter's rate per client).
func (c *bridgeConn) RemoteAddr() net.Addr { return c.t.ss.client }

// SetDeadline, SetReadDeadline and SetWriteDeadline set the client
// connection's deadlines, the TLS layer's and a BridgeHandler's alike,
// unless the connection was cut (session.cut): then they keep it cut.
func (c *bridgeConn) SetDeadline(t time.Time) error {
	return c.t.ss.guardDeadline(c.Conn.SetDeadline, t)
}

func (c *bridgeConn) SetReadDeadline(t time.Time) error {
	return c.t.ss.guardDeadline(c.Conn.SetReadDeadline, t)
}

func (c *bridgeConn) SetWriteDeadline(t time.Time) error {
	return c.t.ss.guardDeadline(c.Conn.SetWriteDeadline, t)
}

// handshake completes the client's TLS handshake under the ClientHello
// timeout, plus the connect timeout while the route's ALPN memory is
// cold (GetConfigForClient may dial the upstream then). The connection
// stays in the handshake budget meanwhile (Server.forward).
func (t *bridgeTarget) handshake(bc *bridgeConn) (*tls.Conn, error) {
	d := t.ss.cfg.ClientHelloTimeout
	if t.ss.route.Handler == nil && t.ss.route.alpn.cold() {
		d += t.ss.cfg.ConnectTimeout
	}
	deadline := time.Now().Add(d)
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
	if t.ss.answerCheckResult(res) == resultAnswerCheck {
		return // a gateway's answer check leaves after the ServerHello: no client fault
	}
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
// the protocol the upstream will choose: the one the route's ALPN memory
// remembers for the client's list, or predicts (the upstream is dialed
// after the handshake and checked); only while the route has learned
// nothing, the one the upstream chooses now, dialed with the client's
// list. An error makes crypto/tls send an internal_error alert.
func (t *bridgeTarget) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	t.hello = hello
	if t.ss.route.Handler != nil {
		return t.handlerConfig(), nil
	}
	if !t.ss.route.available() {
		t.connErr = fmt.Errorf("route %q: %w (every upstream is down, draining or in maintenance)", t.ss.route.Name, ErrNoHealthyUpstream)
		return nil, t.connErr
	}
	proto, ok := t.ss.route.alpn.recall(hello.SupportedProtos)
	if !ok && t.ss.route.ClientAuth == nil && t.ss.route.alpn.startLearning() {
		return t.dialToLearn(hello)
	}
	if !ok {
		proto = t.ss.route.alpn.predict(hello.SupportedProtos)
	}
	t.promised = proto
	return t.serveConfig(proto), nil
}

// dialToLearn dials the upstream during the client's handshake, with the
// client's list, and offers the client what the upstream chose: the cold
// start of a route's ALPN memory.
func (t *bridgeTarget) dialToLearn(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	defer t.ss.route.alpn.endLearning()
	c, release, err := t.s.boundedConnect(hello.Context(), t.ss, t.dialTLS(hello))
	if err != nil {
		t.connErr = err
		return nil, err
	}
	t.up, t.release = c.(*tls.Conn), release
	t.promised = t.up.ConnectionState().NegotiatedProtocol
	return t.serveConfig(t.promised), nil
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
// done (and its certificate verified), for a connection promised a
// protocol. The client has been told nothing else yet, so a failed dial
// still moves on to the next candidate.
func (t *bridgeTarget) dialAfterHandshake() error {
	t.after = true
	c, release, err := t.s.boundedConnect(t.s.ctx, t.ss, t.dialTLS(t.hello))
	if err != nil {
		t.connErr = err
		return err
	}
	t.up, t.release = c.(*tls.Conn), release
	return nil
}

// dialTLS returns the dialFunc of this connection: TCP, the TLS handshake
// with the client's list and, after the client's handshake, the check of
// the protocol it was promised. A wrong server certificate, a refused
// client certificate or a broken promise is a failed dial: the next
// candidate is tried.
func (t *bridgeTarget) dialTLS(hello *tls.ClientHelloInfo) dialFunc {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		t.early = nil // a failed candidate's, never the client's
		c, err := t.handshakeOffering(ctx, addr, hello, hello.SupportedProtos)
		if err != nil {
			return nil, err
		}
		got := c.ConnectionState().NegotiatedProtocol
		if !t.after {
			t.learned = &learnedALPN{addr: addr, proto: got} // remembered once the client's handshake completes
			return c, nil
		}
		t.ss.route.alpn.learn(addr, hello.SupportedProtos, got)
		if got == t.promised {
			return c, nil
		}
		c.NetConn().Close()
		t.early = nil
		return t.keepPromise(ctx, addr, hello, got)
	}
}

// keepPromise dials addr again offering only the protocol the client was
// promised, after the upstream chose got for the client's whole list: an
// upstream that speaks the promised protocol too chooses it from a list
// of one, and the client and the upstream agree. One that does not fails
// the dial (errALPNMismatch); the memory knows its answer from now on.
func (t *bridgeTarget) keepPromise(ctx context.Context, addr string, hello *tls.ClientHelloInfo, got string) (net.Conn, error) {
	var offer []string
	if t.promised != "" {
		offer = []string{t.promised}
	}
	c, err := t.handshakeOffering(ctx, addr, hello, offer)
	if err != nil {
		return nil, fmt.Errorf("%w: the client was given %q, the upstream chose %q (remembered from now on) and refused %q alone: %w",
			errALPNMismatch, t.promised, got, t.promised, err)
	}
	if again := c.ConnectionState().NegotiatedProtocol; again != t.promised {
		c.NetConn().Close()
		return nil, fmt.Errorf("%w: the client was given %q, the upstream chose %q (remembered from now on), and %q when offered %q alone",
			errALPNMismatch, t.promised, got, again, t.promised)
	}
	return c, nil
}

// handshakeOffering completes one upstream leg offering the ALPN list
// offer, with the redial without classical key exchanges when the
// upstream declined them, and the wait for its verdict on the client
// certificate.
func (t *bridgeTarget) handshakeOffering(ctx context.Context, addr string, hello *tls.ClientHelloInfo, offer []string) (*tls.Conn, error) {
	c, lc, err := t.upstreamHandshake(ctx, addr, hello, offer, false)
	if err != nil && lc != nil && lc.classical {
		t.ss.route.declines.note(lc.sessionKey, time.Now())
		c, lc, err = t.upstreamHandshake(ctx, addr, hello, offer, true)
	}
	if err != nil {
		return nil, err
	}
	if err := t.confirmClientAuth(ctx, c, lc); err != nil {
		lc.raw.Close()
		return nil, err
	}
	return c, nil
}

// upstreamHandshake dials addr and completes the upstream leg's TLS
// handshake offering offer; full forbids resuming with classical key
// exchanges. A failed handshake returns its legConfig too: when it had
// offered classical groups only (lc.classical), the upstream declined the
// session (errResumptionDeclined) or refused the offer (an upstream that
// accepts only post-quantum groups), so handshakeOffering notes it in the
// route's declineMemory and dials again with crypto/tls's default.
func (t *bridgeTarget) upstreamHandshake(ctx context.Context, addr string, hello *tls.ClientHelloInfo, offer []string, full bool) (*tls.Conn, *legConfig, error) {
	raw, err := t.s.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	lc := &legConfig{route: t.ss.route, addr: addr, raw: raw, full: full}
	c := tls.Client(raw, lc.config(hello, offer))
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, lc, fmt.Errorf("TLS handshake: %w", err)
	}
	return c, lc, nil
}

// rememberLearned records, once the client's handshake is complete, the
// answer of a dial made during it.
func (t *bridgeTarget) rememberLearned() {
	if l := t.learned; l != nil {
		t.ss.route.alpn.learn(l.addr, t.hello.SupportedProtos, l.proto)
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

// copy copies both ways.
func (t *bridgeTarget) copy(client *tls.Conn) (string, error) {
	if len(t.early) > 0 {
		n, err := client.Write(t.early)
		t.ss.down.Add(int64(n))
		t.ss.rm.addBytes(DirectionDownstream, int64(n))
		if err != nil {
			return resultClientError, &sideError{sideClient, err}
		}
	}
	tn := newTunnel(t.ss, client, t.up, t.ss.cfg.IdleTimeout)
	up := tn.copier(client, t.up, sideClient, sideUpstream, DirectionUpstream)
	up.first = t.wait.seen
	return tn.run(up.run, tn.copier(t.up, client, sideUpstream, sideClient, DirectionDownstream).run)
}
