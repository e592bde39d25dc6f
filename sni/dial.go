package sni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/snigate/snigate/upstream"
)

// newDialer returns the upstream dialer: no TCP keepalive (timeouts.idle
// covers dead peers, and keepalive costs four setsockopt calls per
// connection). Dialer.DialTCP with a netip.AddrPort would skip the address
// parsing, but as of Go 1.26 it binds the zero local address explicitly
// (bind to port 0 before connect), which picks ephemeral ports without
// regard to the destination and exhausted them under the bench's
// connection rate; DialContext does not bind.
func newDialer() *net.Dialer { return &net.Dialer{KeepAlive: -1} }

// dialFunc opens one upstream connection to addr, ready for the tunnel:
// TCP plus the PROXY header and ClientHello replay (splice), or TCP plus
// the TLS handshake (bridge).
type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

// dialUpstream runs f under a context that ends at deadline.
func (f dialFunc) dialUpstream(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return f(ctx, addr)
}

// upstreamDialer opens one upstream connection to addr before deadline,
// ready for the tunnel; ctx is canceled when the server closes
// connections by force. A dialFunc is one.
type upstreamDialer interface {
	dialUpstream(ctx context.Context, deadline time.Time, addr string) (net.Conn, error)
}

// connect tries the route's candidates in order until dial succeeds, all
// within ConnectTimeout, each attempt within its share of the time left
// (upstream.Attempts), and returns the connection with the release func of
// the host's active count. Nothing has been sent to the client yet, so
// each failure moves on to the next candidate.
func (s *Server) connect(ctx context.Context, ss *session, dial upstreamDialer) (net.Conn, func(), error) {
	start := time.Now()
	a := s.attempts(ss, ss.route.Pool.Candidates(), start)
	for {
		h, until, ok := a.Next(time.Now())
		if !ok {
			break
		}
		c, err := dial.dialUpstream(ctx, until, h.Addr())
		s.attempted(ctx, ss, &a, err, time.Since(start))
		if err == nil {
			return c, a.Keep(), nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, nil, fmt.Errorf("route %q: %w", ss.route.Name, a.Err())
}

// attempts starts the walk over hosts, the route's candidates, at start,
// within timeouts.connect, reporting to the route's pool (passive health)
// when it takes reports.
func (s *Server) attempts(ss *session, hosts []*upstream.Host, start time.Time) upstream.Attempts {
	rep, _ := ss.route.Pool.(dialReporter)
	return upstream.NewAttempts(hosts, start, ss.cfg.ConnectTimeout, rep)
}

// attempted records how the attempt on a's current candidate went, the
// same for the goroutine path and the event loop: passive health (not for
// a failure the client's offer or a cancellation from outside (ctx)
// caused), the connect time or the failure's metric and rate-limited Warn;
// took is the time since the connect began.
func (s *Server) attempted(ctx context.Context, ss *session, a *upstream.Attempts, err error, took time.Duration) {
	h := a.Current()
	switch {
	case err == nil:
		a.Succeeded()
		ss.upstream = h.Addr()
		if ss.rm != nil {
			ss.rm.connect.Observe(took.Seconds())
		}
		return
	case ctx.Err() != nil || clientCaused(err):
		a.Excused(err)
	default:
		a.Failed(err)
	}
	name := ss.route.Name
	s.m.dialFailure(name, h.Addr())
	s.warnf(resultUpstreamError+"/"+name+"/"+h.Addr(), "upstream connection failed; trying the next candidate",
		"route", name, "upstream", h.Addr(), "err", err)
}

// connectResult maps a connect error to the connection's result.
func connectResult(err error) string {
	if errors.Is(err, ErrNoHealthyUpstream) {
		return resultNoUpstream
	}
	return resultUpstreamError
}

// connectFailed records a failed connect and logs it, rate-limited per
// route: the log names the route and why.
func (s *Server) connectFailed(ss *session, err error) {
	res := connectResult(err)
	ss.end(res, err)
	s.warnf(res+"/"+ss.route.Name, "no upstream connection for route; the client is refused (see `snigate ctl upstreams`)",
		"route", ss.route.Name, "client", ss.clientString(), "err", err)
}
