package sni

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// newDialer returns the upstream dialer: no TCP keepalive (timeouts.idle
// covers dead peers, and keepalive costs four setsockopt calls per
// connection).
func newDialer() *net.Dialer { return &net.Dialer{KeepAlive: -1} }

// dialTCP opens a TCP connection to addr: an "ip:port" is dialed directly
// (no resolver, no address list) unless Config.DialContext replaced the
// default dialer.
func (s *Server) dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	if s.tcpDialer != nil {
		if ap, err := netip.ParseAddrPort(addr); err == nil {
			c, err := s.tcpDialer.DialTCP(ctx, "tcp", netip.AddrPort{}, ap)
			if err != nil {
				return nil, err // a nil *TCPConn must not become a non-nil net.Conn
			}
			return c, nil
		}
	}
	return s.dial(ctx, "tcp", addr)
}

// dialFunc opens one upstream connection to addr, ready for the tunnel:
// TCP plus the PROXY header and ClientHello replay (splice), or TCP plus
// the TLS handshake (bridge).
type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

// connect tries the route's candidates in order until dial succeeds, all
// within ConnectTimeout, and returns the connection with the release func
// of the host's active count. Nothing has been sent to the client yet, so
// each failure moves on to the next candidate.
func (s *Server) connect(ctx context.Context, ss *session, dial dialFunc) (net.Conn, func(), error) {
	hosts := ss.route.Pool.Candidates()
	if len(hosts) == 0 {
		return nil, nil, fmt.Errorf("route %q: %w (every upstream is down, draining or in maintenance)", ss.route.Name, ErrNoHealthyUpstream)
	}
	ctx, cancel := context.WithTimeout(ctx, ss.cfg.ConnectTimeout)
	defer cancel()
	start := time.Now()
	var errs []error
	for _, h := range hosts {
		release := h.Acquire()
		c, err := dial(ctx, h.Addr())
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
		if ctx.Err() != nil {
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
