package sni

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/upstream"
)

// sessionConn is what the server's bookkeeping does with a session's
// connection, whichever engine runs it: close it (abort, finish, the
// tarpit) and cut it with a deadline in the past (an eviction, the start
// of Shutdown). The goroutine path's is its net.Conn; the event loop's
// is its handle on the loop's socket (*lconn), until it hands the
// connection to the goroutine path.
type sessionConn interface {
	Close() error
	SetDeadline(t time.Time) error
}

// loopLink is the session's side of the event loop's contract
// (loopSession in loop_linux.go): the few things a loop connection asks
// of its session and server, and nothing else of either. A loop
// connection holds it by value: linking costs no allocation, and its
// calls no indirection.
type loopLink struct {
	s  *Server
	ss *session
}

// errWouldBlock: the client has sent nothing more yet.
var errWouldBlock = errors.New("would block")

// loopLimits are the session's timeouts as the loop runs them.
type loopLimits struct {
	helloBy time.Time     // the whole ClientHello by then
	idle    time.Duration // timeouts.idle; <= 0: none
}

func (k *loopLink) limits() loopLimits {
	cfg := k.ss.cfg
	return loopLimits{helloBy: k.ss.start.Add(cfg.ClientHelloTimeout), idle: cfg.IdleTimeout}
}

// readHello reads what r holds of the ClientHello into the session's
// pooled buffer: true once it is whole (counted, and no longer a pending
// handshake); false, nil while the rest is on its way (r said
// errWouldBlock after bytes that may start a TLS record); an error (not
// TLS, malformed, closed) means the goroutine path must tell why.
func (k *loopLink) readHello(r io.Reader, now time.Time) (bool, error) {
	ss := k.ss
	if ss.helloBuf == nil {
		ss.helloBuf = getHelloBuf()
		ss.raw = (*ss.helloBuf)[:0]
	}
	raw, err := readClientHello(r, ss.raw, &ss.hello)
	ss.raw = raw
	switch {
	case err == nil:
	case errors.Is(err, errWouldBlock) && (len(raw) == 0 || looksLikeTLS(raw)):
		return false, nil
	default:
		return false, err
	}
	k.s.m.clientHello(now.Sub(ss.start))
	k.s.handshakeDone(ss)
	return true, nil
}

// route looks the server name up and returns the walk over the
// candidates of its splice route, started at now, when usable accepts each
// one's address; false: anything else (a bridge route, no route, a
// refused name, no candidate, an address usable refuses), which the
// goroutine path refuses or serves. On true the session is routed (its
// route is active).
func (k *loopLink) route(usable func(addr string) bool, now time.Time) (upstream.Attempts, bool) {
	ss := k.ss
	name := ss.hello.ServerName
	if name != "" && !names.IsHost(name) {
		return upstream.Attempts{}, false
	}
	r, ok := k.s.routes.Load().Lookup(name)
	if !ok || r.Mode != ModeSplice {
		return upstream.Attempts{}, false
	}
	hosts := r.Pool.Candidates()
	if len(hosts) == 0 {
		return upstream.Attempts{}, false
	}
	for _, h := range hosts {
		if !usable(h.Addr()) {
			return upstream.Attempts{}, false
		}
	}
	ss.route, ss.rm = r, k.s.m.forRoute(r)
	ss.rm.activeInc()
	return k.s.attempts(ss, hosts, now), true
}

// dialed reports the outcome of the attempt on a's current candidate
// (passive health, metrics, the rate-limited Warn of a failure), as
// Server.connect does; took is the time since the connect began. After a
// failure, false: stop trying (the server closes connections by force).
func (k *loopLink) dialed(a *upstream.Attempts, err error, took time.Duration) bool {
	k.s.attempted(k.s.ctx, k.ss, a, err, took)
	return err == nil || k.s.ctx.Err() == nil
}

// connectFailed ends the connect after every attempt of a failed, with
// the goroutine path's result and log line.
func (k *loopLink) connectFailed(a *upstream.Attempts) {
	k.s.connectFailed(k.ss, fmt.Errorf("route %q: %w", k.ss.route.Name, a.Err()))
}

// localAddrer tells a socket's local address, asked only when needed.
type localAddrer interface{ LocalAddr() net.Addr }

// replay appends to pend what the upstream must receive first: the
// route's PROXY header, if any (its destination is local's address), and
// the ClientHello bytes.
func (k *loopLink) replay(pend [][]byte, local localAddrer) ([][]byte, error) {
	ss := k.ss
	if v := ss.route.ProxyProtocol; v != ProxyProtocolNone {
		if ss.dest == nil {
			ss.dest = local.LocalAddr()
		}
		hdr, err := formatProxyHeader(v, ss.client, ss.dest)
		if err != nil {
			return pend, fmt.Errorf("format PROXY %s header: %w", v, err)
		}
		pend = append(pend, hdr)
	}
	if len(ss.raw) > 0 {
		pend = append(pend, ss.raw)
	}
	return pend, nil
}

// tunnelOpen counts the replayed ClientHello, releases its buffer and
// marks the session as past its handshakes (Shutdown waits for it).
func (k *loopLink) tunnelOpen() {
	ss := k.ss
	n := int64(len(ss.raw))
	ss.up.Add(n)
	ss.rm.addBytes(DirectionUpstream, n)
	ss.releaseHello()
	ss.inTunnel.Store(true)
}

// moved counts n bytes the tunnel moved toward the upstream (up) or the
// client.
func (k *loopLink) moved(up bool, n int) {
	if up {
		k.ss.up.Add(int64(n))
		k.ss.rm.addBytes(DirectionUpstream, int64(n))
		return
	}
	k.ss.down.Add(int64(n))
	k.ss.rm.addBytes(DirectionDownstream, int64(n))
}

// refuse ends a connection admission refused (open's result).
func (k *loopLink) refuse(res string, err error) { k.s.refuse(k.ss, res, err) }

// end ends the session with result (or what abort imposed) once the loop
// closed its sockets; routed: its route was active.
func (k *loopLink) end(result string, err error, routed bool) {
	ss := k.ss
	ss.end(result, err)
	if routed {
		ss.rm.activeDec()
	}
	k.s.finish(ss)
	k.s.wg.Done()
}

// handoff gives the session, with what the loop read so far, to the
// goroutine path on nc: to fromHello (routed false: the ClientHello is
// not read, or failed to parse) or to routed.
func (k *loopLink) handoff(nc net.Conn, routed bool) {
	s, ss := k.s, k.ss
	s.adopt(ss, nc)
	stage := s.fromHello
	if routed {
		stage = s.routed
	}
	go s.ended(ss, stage)
}

// adopt makes nc the session's connection, with the ClientHello deadline
// of the goroutine path and whatever was asked of the loop connection
// meanwhile: closed by abort, cut by an eviction or the start of
// Shutdown.
func (s *Server) adopt(ss *session, nc net.Conn) {
	nc.SetDeadline(ss.start.Add(ss.cfg.ClientHelloTimeout))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.conn, ss.ctl = nc, nc
	if ss.dest == nil {
		ss.dest = nc.LocalAddr()
	}
	switch {
	case ss.forced != "" && !ss.tarpit:
		nc.Close()
	case ss.tarpit, s.closing.Load() && !ss.inTunnel.Load():
		nc.SetDeadline(time.Unix(1, 0))
	}
}

// openLoopSession admits a connection the event loop accepted from
// client on listener, as accept does: it returns the session's link, and
// the refusal (listen.allow, the limits, a closing server) the loop must
// pass to refuse, if any. ctl is the loop's handle on the socket.
func (s *Server) openLoopSession(ctl sessionConn, listener string, client *net.TCPAddr, now time.Time) (loopLink, string, error) {
	ss := &session{ctl: ctl, listener: listener, kind: kindTLS, cfg: s.cfg.Load(), start: now, client: client}
	res, err := s.checkAllow(ss)
	if res == "" {
		res, err = s.track(ss)
	}
	if res == "" {
		s.enterHandshake(ss)
	}
	return loopLink{s: s, ss: ss}, res, err
}

// viaBalancer reports whether client is a trusted balancer
// (ProxyProtocolFrom), whose connections start with a PROXY header.
func (s *Server) viaBalancer(client net.Addr) bool {
	ps := s.cfg.Load().ProxyProtocolFrom
	return len(ps) > 0 && inPrefixes(ps, client)
}
