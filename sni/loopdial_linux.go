package sni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"unsafe"

	"github.com/snigate/snigate/names"
	"golang.org/x/sys/unix"
)

// route looks the server name up and starts the connect of a splice
// route whose candidates are IP literals; everything else (a bridge
// route, no route, a refused name, no candidate, a host name) goes to the
// goroutine path, which refuses or serves it as it always has.
func (l *eventLoop) route(c *lconn) {
	ss := c.ss
	name := ss.hello.ServerName
	if name != "" && !names.IsHost(name) {
		l.handoff(c, true)
		return
	}
	r, ok := l.s.routes.Load().Lookup(name)
	if !ok || r.Mode != ModeSplice {
		l.handoff(c, true)
		return
	}
	hosts := r.Pool.Candidates()
	if len(hosts) == 0 {
		l.handoff(c, true)
		return
	}
	for _, h := range hosts {
		if ap, err := netip.ParseAddrPort(h.Addr()); err != nil || ap.Addr().Zone() != "" {
			l.handoff(c, true)
			return
		}
	}
	ss.route, ss.rm = r, l.s.m.forRoute(r)
	ss.rm.activeInc()
	c.hosts, c.next = hosts, 0
	c.started = l.now
	c.connBy = l.now.Add(ss.cfg.ConnectTimeout)
	c.state = stConnect
	l.dial(c)
}

// hostAddr is the address of the candidate being tried.
func (c *lconn) hostAddr() net.Addr {
	if c.next < len(c.hosts) {
		if ap, err := netip.ParseAddrPort(c.hosts[c.next].Addr()); err == nil {
			return net.TCPAddrFromAddrPort(ap)
		}
	}
	return nil
}

// dial starts connect(2) to the current candidate.
func (l *eventLoop) dial(c *lconn) {
	h := c.hosts[c.next]
	ap, _ := netip.ParseAddrPort(h.Addr())
	c.release = h.Acquire()
	c.attempt = attemptDeadline(l.now, c.connBy, len(c.hosts)-c.next)
	l.due(c.attempt)
	c.state = stConnect
	rs := newRawSockaddr(ap)
	fd, op, err := rawSocketConnect(&rs)
	if err != nil {
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError(op, err)})
		return
	}
	c.ufd, c.ur, c.uw, c.uerr, c.uhup = fd, false, false, false, false
	if err := l.register(fd, c, tokUpstream); err != nil {
		l.attemptFailed(c, err)
		return
	}
	// The writable event tells the connect's outcome (connectDone).
}

// connectDone runs once the connecting socket is writable: connected,
// unless it also reported an error or hang-up, whose cause SO_ERROR tells.
func (l *eventLoop) connectDone(c *lconn) {
	if c.uerr {
		err, gerr := unix.GetsockoptInt(c.ufd, unix.SOL_SOCKET, unix.SO_ERROR)
		errno := unix.Errno(err)
		if gerr != nil && !errors.As(gerr, &errno) {
			errno = unix.EIO
		}
		if errno == 0 {
			errno = unix.ECONNRESET // hung up without an error: reset
		}
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: c.hostAddr(), Err: os.NewSyscallError("connect", errno)})
		return
	}
	ss := c.ss
	h := c.hosts[c.next]
	reportDial(l.s.ctx, ss.route, h, nil)
	ss.upstream = h.Addr()
	if ss.rm != nil {
		ss.rm.connect.Observe(l.now.Sub(c.started).Seconds())
	}
	c.pend = c.pend[:0]
	if v := ss.route.ProxyProtocol; v != ProxyProtocolNone {
		if ss.dest == nil {
			ss.dest = localAddr(c.cfd)
		}
		hdr, err := formatProxyHeader(v, ss.client, ss.dest)
		if err != nil {
			l.attemptFailed(c, fmt.Errorf("format PROXY %s header: %w", v, err))
			return
		}
		c.pend = append(c.pend, hdr)
	}
	if len(ss.raw) > 0 {
		c.pend = append(c.pend, ss.raw)
	}
	c.state = stReplay
	l.writeReplay(c)
}

// writeReplay sends the PROXY header and the ClientHello bytes (one
// writev, unless the socket is full), then starts the tunnel.
func (l *eventLoop) writeReplay(c *lconn) {
	for len(c.pend) > 0 {
		n, err := rawWritev(c.ufd, c.pend)
		switch err {
		case nil:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			c.uw = false
			return
		default:
			l.attemptFailed(c, fmt.Errorf("send ClientHello: %w", os.NewSyscallError("writev", err)))
			return
		}
		for n > 0 && len(c.pend) > 0 {
			if n >= len(c.pend[0]) {
				n -= len(c.pend[0])
				c.pend = c.pend[1:]
			} else {
				c.pend[0] = c.pend[0][n:]
				n = 0
			}
		}
	}
	ss := c.ss
	n := int64(len(ss.raw))
	ss.up.Add(n)
	ss.rm.addBytes(DirectionUpstream, n)
	ss.releaseHello()
	c.pend, c.hosts, c.errs = nil, nil, nil
	l.startTunnel(c)
}

// attemptFailed records a failed attempt, as Server.connect does, and
// tries the next candidate while time is left.
func (l *eventLoop) attemptFailed(c *lconn, err error) {
	s, ss := l.s, c.ss
	h := c.hosts[c.next]
	reportDial(s.ctx, ss.route, h, err)
	if c.release != nil {
		c.release()
		c.release = nil
	}
	s.m.dialFailure(ss.route.Name, h.Addr())
	s.warnf(resultUpstreamError+"/"+ss.route.Name+"/"+h.Addr(), "upstream connection failed; trying the next candidate",
		"route", ss.route.Name, "upstream", h.Addr(), "err", err)
	c.errs = append(c.errs, fmt.Errorf("%s: %w", h.Addr(), err))
	if c.ufd >= 0 {
		rawClose(c.ufd)
		c.ufd = -1
	}
	c.next++
	if c.next < len(c.hosts) && s.ctx.Err() == nil && l.now.Before(c.connBy) {
		l.dial(c)
		return
	}
	cerr := fmt.Errorf("route %q: %d of %d upstreams tried within timeouts.connect (%v), all failed: %w",
		ss.route.Name, len(c.errs), len(c.hosts), ss.cfg.ConnectTimeout, errors.Join(c.errs...))
	s.connectFailed(ss, cerr)
	l.end(c, "", nil)
}

// localAddr asks the kernel for a socket's local address.
func localAddr(fd int) net.Addr {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l))); e != 0 {
		return &net.TCPAddr{}
	}
	return rawSockaddrTCP(&rsa)
}
