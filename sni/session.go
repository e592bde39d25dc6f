package sni

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inetaf/tcpproxy"
	"github.com/snigate/snigate/internal/ratelog"
)

// Results: how a connection ended, the "result" of logs and metrics.
const (
	resultOK            = "ok"
	resultNotTLS        = "not_tls"
	resultPlainHTTP     = "plain_http"
	resultTimeout       = "timeout"
	resultTooLarge      = "too_large"
	resultBadHello      = "bad_hello"
	resultUnknownSNI    = "unknown_sni"
	resultBadSNI        = "bad_sni"
	resultNoUpstream    = "no_upstream"
	resultUpstreamError = "upstream_error"
	resultDenied        = "denied"
	resultLimit         = "limit"
	resultProxyHeader   = "proxy_header_error"
	resultIdle          = "idle_timeout"
	resultClientError   = "client_error"
	resultShutdown      = "shutdown"
	// resultDetached is never logged: handle returns it when the tunnel's
	// goroutines own the session from then on.
	resultDetached = "detached"
)

// Kinds of listener: the "kind" of the listening log line.
const (
	kindTLS     = "tls"
	kindConnect = "connect"
)

// session is one accepted connection, from accept to its log line.
type session struct {
	// conn is the goroutine path's connection: nil while the event loop
	// runs the session, which hands it a net.Conn (adopt) when it passes
	// the session on.
	conn net.Conn
	// ctl closes and cuts the connection whichever engine runs it: conn,
	// or the loop's handle on its socket. Set before the session is
	// tracked; changed (adopt) under Server.mu and mu.
	ctl      sessionConn
	listener string
	kind     string  // kindTLS or kindConnect
	cfg      *Config // the settings in force when it was accepted
	start    time.Time
	client   net.Addr // the PROXY header's source, else conn.RemoteAddr()
	dest     net.Addr // the PROXY header's destination, else conn.LocalAddr()
	hello    ClientHello
	table    *Table  // CONNECT: the table the request was checked against
	tunnelTo string  // CONNECT: the canonical host the ClientHello must name
	helloBuf *[]byte // pooled buffer behind raw, until released
	raw      []byte  // every byte read from the client so far
	route    *Route
	rm       *routeMetrics
	upstream string
	// node is the client's identity (NodeIdentity of its certificate) on
	// a route with ClientAuth, set once its handshake succeeded; "" else.
	node     string
	up, down atomic.Int64
	// splice is the goroutine-driven tunnel of a session the event loop
	// did not take (set before inTunnel); nil for the loop's own.
	splice   *spliceTunnel
	clientIP netip.Addr // the slot's client address
	pend     pending    // its place in the handshake budget while pending
	// The flags sit together: a connection's session is one allocation,
	// kept inside its size class.
	inTunnel atomic.Bool // past the handshakes: Shutdown waits for it
	// viaProxy: from a ProxyProtocolFrom balancer, admitted (listen.allow,
	// slots) once its PROXY header is read.
	viaProxy bool
	slot     bool // holds a max_connections slot (Server.mu)
	tarpit   bool // evicted: finish holds the socket in the tarpit (mu)

	mu     sync.Mutex
	peer   net.Conn // upstream connection, closed by abort
	forced string   // result imposed by abort
	result string
	err    error

	// id numbers the connection once asked (connIDs.of).
	id atomic.Uint64
	// handlerUpstreams are the upstreams a BridgeHandler's requests used
	// (UsedUpstream), beyond maxUpstreamsNamed only counted; guarded by mu.
	handlerUpstreams []string
	moreUpstreams    int
}

func newSession(c net.Conn, listener, kind string, cfg *Config) *session {
	return &session{conn: c, ctl: c, listener: listener, kind: kind, cfg: cfg, start: time.Now(), client: c.RemoteAddr(), dest: c.LocalAddr()}
}

// end records how the connection ended; the first call wins.
func (ss *session) end(result string, err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.result == "" {
		ss.result, ss.err = result, err
	}
}

// abort closes both connections and imposes result (Shutdown, Close).
func (ss *session) abort(result string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.forced == "" {
		ss.forced = result
	}
	ss.ctl.Close()
	if ss.peer != nil {
		ss.peer.Close()
	}
}

// evict ends a pending connection (reading its ClientHello or, on a
// bridge route, in its TLS handshake or before its first request), to
// make room in a full handshake budget: its read is unblocked and finish
// hands its socket to the tarpit instead of closing it.
func (ss *session) evict() { ss.cut(resultHandshakeLimit, errEvicted, true) }

// cut ends a connection that has not reached its tunnel's first byte
// from the client: it records result and err (unless a result is set),
// imposes result, unblocks the client's reads with a past deadline (a
// bridge connection keeps it, see bridgeConn.SetDeadline) and closes
// the upstream connection if one is open, which ends a tunnel waiting
// for the client. tarpit makes finish hold the socket in the tarpit.
func (ss *session) cut(result string, err error, tarpit bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.result == "" {
		ss.result, ss.err = result, err
	}
	if ss.forced == "" {
		ss.forced = result
	}
	ss.tarpit = ss.tarpit || tarpit
	ss.ctl.SetDeadline(time.Unix(1, 0))
	if ss.peer != nil {
		ss.peer.Close()
	}
}

// guardDeadline calls set (a deadline setter of the client connection)
// with t, or with a past time once the connection was cut: a reader
// arming its own deadline must not undo the cut.
func (ss *session) guardDeadline(set func(time.Time) error, t time.Time) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.forced != "" {
		t = time.Unix(1, 0)
	}
	return set(t)
}

// setPeer registers the upstream connection so that abort closes it; false
// means the session was aborted already and c must be closed.
func (ss *session) setPeer(c net.Conn) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.peer = c
	return ss.forced == ""
}

// forcedResult returns the result abort imposed, "" if none.
func (ss *session) forcedResult() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.forced
}

func (ss *session) outcome() (string, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.forced != "" {
		return ss.forced, ss.err
	}
	if ss.result == "" {
		return resultOK, ss.err
	}
	return ss.result, ss.err
}

// releaseHello returns the ClientHello buffer to its pool; call it once the
// bytes have been replayed and nothing refers to them.
func (ss *session) releaseHello() {
	if ss.helloBuf != nil {
		putHelloBuf(ss.helloBuf, ss.raw)
		ss.helloBuf, ss.raw = nil, nil
	}
}

func (ss *session) clientString() string {
	if ss.client == nil {
		return ""
	}
	return ss.client.String()
}

func (ss *session) routeName() string {
	if ss.route == nil {
		return ""
	}
	return ss.route.Name
}

// addrOf returns a's IP address, 4in6 unmapped.
func addrOf(a net.Addr) (netip.Addr, bool) {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(ta.IP)
		return ip.Unmap(), ok
	}
	if a == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap.Addr().Unmap(), err == nil
}

func inPrefixes(ps []netip.Prefix, a net.Addr) bool {
	ip, ok := addrOf(a)
	if !ok {
		return false
	}
	for _, p := range ps {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// serveConn runs one connection from its first byte to its log line.
// It holds one count of s.wg, which a spliced session hands to its
// tunnel.
func (s *Server) serveConn(ss *session) {
	s.ended(ss, s.handle)
}

// ended runs one stage function of a session and, unless the tunnel's
// goroutines own the session from then on, ends it with its result.
func (s *Server) ended(ss *session, stage func(*session) (string, error)) {
	res, err := stage(ss)
	if res == resultDetached {
		return
	}
	ss.end(res, err)
	s.finish(ss)
	s.wg.Done()
}

func (s *Server) handle(ss *session) (string, error) {
	if res, err := s.admit(ss); res != "" {
		return res, err
	}
	if ss.kind == kindConnect {
		if res, err := s.tunnelRequest(ss); res != "" {
			return res, err
		}
	}
	return s.fromHello(ss)
}

// fromHello runs a session from its ClientHello (what was read of it so
// far is in ss.raw) to its target.
func (s *Server) fromHello(ss *session) (string, error) {
	if res, err := s.readHello(ss); res != "" {
		return res, err
	}
	return s.routed(ss)
}

// routed runs a session whose ClientHello is read to its target.
func (s *Server) routed(ss *session) (string, error) {
	s.handshakeDone(ss)
	if res, err := s.checkTunnelSNI(ss); res != "" {
		return res, err
	}
	return s.forward(ss)
}

// readProxy reads the PROXY header of a connection from a trusted load
// balancer; its source becomes the client address.
func (s *Server) readProxy(ss *session) (string, error) {
	h, rest, err := readProxyHeader(ss.conn)
	if err != nil {
		if res := ss.forcedResult(); res != "" {
			return res, err
		}
		res := resultProxyHeader
		if errors.Is(err, os.ErrDeadlineExceeded) {
			res = s.timeoutResult()
		}
		s.warnf(res, "bad or missing PROXY header from a listen.proxy_protocol_from source; check the load balancer's proxy protocol setting",
			"listener", ss.listener, "client", ss.clientString(), "err", err)
		return res, err
	}
	if src, dst := proxySource(h); src != nil {
		ss.client, ss.dest = src, dst
	}
	ss.helloBuf = getHelloBuf()
	ss.raw = append((*ss.helloBuf)[:0], rest...)
	return "", nil
}

func (s *Server) timeoutResult() string {
	if s.closing.Load() {
		return resultShutdown
	}
	return resultTimeout
}

// readHello reads the ClientHello into the session's pooled buffer.
func (s *Server) readHello(ss *session) (string, error) {
	if ss.helloBuf == nil {
		ss.helloBuf = getHelloBuf()
		ss.raw = (*ss.helloBuf)[:0]
	}
	raw, err := readClientHello(ss.conn, ss.raw, &ss.hello)
	ss.raw = raw
	if err != nil {
		return s.helloFailed(ss, err)
	}
	s.m.clientHello(time.Since(ss.start))
	return "", nil
}

// helloFailed classifies a failed ClientHello read, answers plain HTTP
// with a 400, and logs a rate-limited Warn that says what to change.
func (s *Server) helloFailed(ss *session, err error) (string, error) {
	if res := ss.forcedResult(); res != "" {
		return res, err // closed by Shutdown or to make room: nothing to advise
	}
	res := s.helloResult(err)
	msg := helloAdvice[res]
	var pe *PlainHTTPError
	if errors.As(err, &pe) {
		s.answerPlainHTTP(ss, pe)
		switch {
		case ss.tunnelTo != "":
			msg = tunnelAdvice
		case pe.Method == "CONNECT":
			msg = connectAdvice
		}
	}
	if res != resultShutdown {
		s.warnf(res, msg, "listener", ss.listener, "client", ss.clientString(), "err", err)
	}
	return res, err
}

// helloAdvice is the Warn message for each ClientHello failure.
var helloAdvice = map[string]string{
	resultPlainHTTP:   "plain HTTP on a TLS listener: the client must use https://NAME:PORT (or the CONNECT listener, listen.connect, if it needs a proxy)",
	resultNotTLS:      "connection is not TLS: only TLS clients can use this listener",
	resultProxyHeader: "PROXY header from a source not in listen.proxy_protocol_from: add the load balancer's network there, or stop it sending PROXY headers",
	resultTooLarge:    "ClientHello larger than TLS allows: rejected",
	resultTimeout:     "no complete ClientHello within timeouts.client_hello: a stalled client, or one waiting for the server to speak first",
	resultBadHello:    "malformed or truncated ClientHello: rejected",
	resultClientError: "client connection failed while reading its ClientHello",
}

// tunnelAdvice is the Warn message for plain HTTP inside a CONNECT tunnel.
const tunnelAdvice = "plain HTTP inside a CONNECT tunnel: the tunnel expects TLS to the host it names; the client must use https:// through the proxy"

const connectAdvice = "HTTP CONNECT on a TLS listener: HTTPS_PROXY probably points at snigate's TLS port; unset it for routed names " +
	"(DNS already sends them here) or point it at the CONNECT listener (listen.connect)"

func (s *Server) helloResult(err error) string {
	var pe *PlainHTTPError
	switch {
	case errors.As(err, &pe):
		return resultPlainHTTP
	case errors.Is(err, errUnexpectedProxyHeader):
		return resultProxyHeader
	case errors.Is(err, ErrNotTLS):
		return resultNotTLS
	case errors.Is(err, ErrClientHelloTooLarge):
		return resultTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return s.timeoutResult()
	case errors.Is(err, errBadHello), errors.Is(err, io.ErrUnexpectedEOF):
		return resultBadHello
	}
	return resultClientError
}

// answerPlainHTTP sends the 400 that names the fix, then drains what the
// client sends until it closes or the ClientHello deadline passes, so that
// the response is not lost to a reset.
func (s *Server) answerPlainHTTP(ss *session, pe *PlainHTTPError) {
	_, port, _ := net.SplitHostPort(ss.conn.LocalAddr().String())
	if _, err := ss.conn.Write(badRequestResponse(pe, port, ss.tunnelTo)); err != nil {
		return
	}
	if cw, ok := ss.conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.CopyN(io.Discard, ss.conn, 64<<10)
}

// forward routes the connection and hands it to the route's target.
func (s *Server) forward(ss *session) (string, error) {
	table := ss.table // a CONNECT tunnel's: the one its request was checked against
	if table == nil {
		table = s.routes.Load()
	}
	if err := s.refuseInvalidName(ss); err != nil {
		return resultBadSNI, err
	}
	r, ok := table.Lookup(ss.hello.ServerName)
	if !ok {
		writeAlert(ss.conn, ss.hello.RecordVersion, alertUnrecognizedName)
		s.warnf(resultUnknownSNI, "no route for the server name the client sent: add it to a route's sni, or set default_route",
			"listener", ss.listener, "client", ss.clientString(), "sni", ss.hello.ServerName)
		return resultUnknownSNI, fmt.Errorf("%w %q", ErrUnknownServerName, ss.hello.ServerName)
	}
	ss.route, ss.rm = r, s.m.forRoute(r)
	if err := s.refuseTrailingDot(ss); err != nil {
		return resultBadSNI, err
	}
	ss.rm.activeInc()
	if r.Mode != ModeBridge {
		res, err := s.splice(ss)
		if res != resultDetached {
			ss.rm.activeDec()
		}
		return res, err
	}
	// Pending again, until the first byte of its first request: a whole
	// ClientHello and then silence must compete for the budget too.
	s.enterHandshake(ss)
	pc := &tcpproxy.Conn{HostName: ss.hello.ServerName, Peeked: ss.raw, Conn: ss.conn}
	(&bridgeTarget{s: s, ss: ss}).HandleConn(pc)
	ss.rm.activeDec()
	return "", nil // the target recorded the outcome
}

// finish closes the connection, untracks it, counts it and writes its log
// line: listener client sni route mode upstream result bytes_up bytes_down
// duration conn, then err when there is one.
func (s *Server) finish(ss *session) {
	ss.mu.Lock()
	tarpit := ss.tarpit
	ss.mu.Unlock()
	if tarpit {
		s.tarpit.hold(ss.ctl)
	} else {
		ss.ctl.Close()
	}
	s.handshakeDone(ss)
	result, level, err := ss.loggedOutcome()
	d := time.Since(ss.start)
	mode := ""
	if ss.route != nil {
		mode = string(ss.route.Mode)
		if ss.rm != nil {
			ss.rm.duration.Observe(d.Seconds())
		}
	}
	// Counted before untrack: a caller that saw the session go (Shutdown,
	// a test waiting for the sessions to end) reads its result in the
	// metrics.
	s.m.ended(ss.rm, ss.listener, result)
	s.untrack(ss)
	ss.releaseHello()
	access := cmp.Or(s.cfg.Load().AccessLog, s.log)
	if !access.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs, slog.String("listener", ss.listener), slog.String("client", ss.clientString()))
	if ss.route != nil && ss.route.ClientAuth != nil {
		attrs = append(attrs, slog.String("node", ss.node))
	}
	attrs = append(attrs,
		slog.String("sni", ss.hello.ServerName),
		slog.String("route", ss.routeName()),
		slog.String("mode", mode),
		slog.String("upstream", ss.upstreamString()),
		slog.String("result", result),
		slog.Int64("bytes_up", ss.up.Load()),
		slog.Int64("bytes_down", ss.down.Load()),
		slog.Duration("duration", d),
		slog.String("conn", s.ids.of(ss)),
	)
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	if refusal(result) {
		ok, suppressed := s.refused.Allow(result, time.Now())
		if !ok {
			return
		}
		if suppressed > 0 {
			attrs = append(attrs, slog.Int(ratelog.Key, suppressed))
		}
	}
	access.LogAttrs(context.Background(), level, "connection", attrs...)
}

// refusal reports whether result refuses a connection before anything
// was read from it that a log line could tell apart: one client at the
// cap (max_connections, max_connections_per_client), outside
// listen.allow, connecting during a drain, or a flood of slow handshakes
// closed to make room (max_handshakes) would otherwise write a line per
// connection (253 MB in 30 s at the cap). Their
// connection lines are rate-limited per result, with the count held
// back; snigate_connections_total counts every one. A bridge route's
// dial_limit and mint_limit are floods from one client too, and so are
// refused client certificates (client_cert_refused; the Warn line and
// snigate_client_auth_failures_total give the reason).
func refusal(result string) bool {
	switch result {
	case resultLimit, resultDenied, resultShutdown, resultClientLimit, resultHandshakeLimit, resultDialLimit, resultMintLimit, resultClientCert:
		return true
	}
	return false
}
