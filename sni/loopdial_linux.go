package sni

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/snigate/snigate/internal/rawnet"
)

// route starts the connect of a splice route whose candidates are IP
// literals; everything else (a bridge route, no route, a refused name, no
// candidate, a host name) goes to the goroutine path, which refuses or
// serves it as it always has.
func (l *eventLoop) route(c *lconn) {
	walk, ok := c.ss.route(rawDialable, l.now)
	if !ok {
		l.handoff(c, true)
		return
	}
	c.walk = walk
	c.started = l.now
	c.state = stConnect
	l.dial(c)
}

// rawDialable reports whether addr is an IP literal without a zone, which
// the loop connects to itself (a zone needs net's interface lookup).
func rawDialable(addr string) bool {
	ap, err := netip.ParseAddrPort(addr)
	return err == nil && ap.Addr().Zone() == ""
}

// hostAddr is the address of the candidate being tried.
func (c *lconn) hostAddr() net.Addr {
	if h := c.walk.Current(); h != nil {
		if ap, err := netip.ParseAddrPort(h.Addr()); err == nil {
			return net.TCPAddrFromAddrPort(ap)
		}
	}
	return nil
}

// dial starts connect(2) to the walk's next candidate, within its share of
// timeouts.connect; with none left (or no time), the connect has failed.
func (l *eventLoop) dial(c *lconn) {
	h, until, ok := c.walk.Next(l.now)
	if !ok {
		c.ss.connectFailed(&c.walk)
		l.end(c, "", nil)
		return
	}
	ap, _ := netip.ParseAddrPort(h.Addr())
	c.until = until
	l.due(c.until)
	c.state = stConnect
	sa, err := rawnet.SockaddrOf(ap)
	if err != nil {
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: err})
		return
	}
	fd, op, err := rawnet.SocketConnect(&sa)
	if err != nil {
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError(op, err)})
		return
	}
	c.upstream = loopEnd{fd: fd}
	if err := l.register(fd, c, tokUpstream); err != nil {
		l.attemptFailed(c, err)
		return
	}
	// The writable event tells the connect's outcome (connectDone).
}

// connectDone runs once the connecting socket is writable: connected,
// unless it also reported an error or hang-up, whose cause SO_ERROR tells.
func (l *eventLoop) connectDone(c *lconn) {
	if c.upstream.err {
		errno, gerr := rawnet.SocketError(c.upstream.fd)
		if gerr != nil && !errors.As(gerr, &errno) {
			errno = rawnet.EIO
		}
		if errno == 0 {
			errno = rawnet.ECONNRESET // hung up without an error: reset
		}
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: c.hostAddr(), Err: os.NewSyscallError("connect", errno)})
		return
	}
	c.ss.dialed(&c.walk, nil, l.now.Sub(c.started))
	pend, err := c.ss.replay(c.pend[:0], c)
	if err != nil {
		l.attemptFailed(c, err)
		return
	}
	c.pend = pend
	c.state = stReplay
	l.writeReplay(c)
}

// writeReplay sends the PROXY header and the ClientHello bytes (one
// writev, unless the socket is full), then starts the tunnel.
func (l *eventLoop) writeReplay(c *lconn) {
	for len(c.pend) > 0 {
		n, err := rawnet.Writev(c.upstream.fd, c.pend)
		switch err {
		case nil:
		case rawnet.EINTR:
			continue
		case rawnet.EAGAIN:
			c.upstream.w = false
			return
		default:
			l.attemptFailed(c, fmt.Errorf("send ClientHello: %w", os.NewSyscallError("writev", err)))
			return
		}
		c.pend = consumed(c.pend, n)
	}
	c.ss.tunnelOpen()
	c.pend = nil
	c.walk.Done()
	l.startTunnel(c)
}

// consumed drops the first n bytes written from bufs.
func consumed(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n >= len(bufs[0]) {
			n -= len(bufs[0])
			bufs = bufs[1:]
		} else {
			bufs[0] = bufs[0][n:]
			n = 0
		}
	}
	return bufs
}

// attemptFailed records a failed attempt, as Server.connect does, and
// tries the next candidate while time is left.
func (l *eventLoop) attemptFailed(c *lconn, err error) {
	retry := c.ss.dialed(&c.walk, err, l.now.Sub(c.started))
	if c.upstream.fd >= 0 {
		rawnet.Close(c.upstream.fd)
		c.upstream.fd = -1
	}
	if !retry {
		c.ss.connectFailed(&c.walk)
		l.end(c, "", nil)
		return
	}
	l.dial(c)
}
