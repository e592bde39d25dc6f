package sni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
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
// (attemptDeadline), and returns the connection with the release func of
// the host's active count. Nothing has been sent to the client yet, so
// each failure moves on to the next candidate. Each outcome is reported
// to the pool (passive health).
func (s *Server) connect(ctx context.Context, ss *session, dial upstreamDialer) (net.Conn, func(), error) {
	hosts := ss.route.Pool.Candidates()
	if len(hosts) == 0 {
		return nil, nil, fmt.Errorf("route %q: %w (every upstream is down, draining or in maintenance)", ss.route.Name, ErrNoHealthyUpstream)
	}
	start := time.Now()
	deadline := start.Add(ss.cfg.ConnectTimeout)
	var errs []error
	for i, h := range hosts {
		release := h.Acquire()
		c, err := dial.dialUpstream(ctx, attemptDeadline(time.Now(), deadline, len(hosts)-i), h.Addr())
		reportDial(ctx, ss.route, h, err)
		if err == nil {
			ss.upstream = h.Addr()
			if ss.rm != nil {
				ss.rm.connect.Observe(time.Since(start).Seconds())
			}
			return c, release, nil
		}
		release()
		s.m.dialFailure(ss.route.Name, h.Addr())
		s.warnf(resultUpstreamError+"/"+ss.route.Name+"/"+h.Addr(), "upstream connection failed; trying the next candidate",
			"route", ss.route.Name, "upstream", h.Addr(), "err", err)
		errs = append(errs, fmt.Errorf("%s: %w", h.Addr(), err))
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			break
		}
	}
	return nil, nil, fmt.Errorf("route %q: %d of %d upstreams tried within timeouts.connect (%v), all failed: %w",
		ss.route.Name, len(errs), len(hosts), ss.cfg.ConnectTimeout, errors.Join(errs...))
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
