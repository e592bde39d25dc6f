//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package httpbridge

import (
	"crypto/tls"
	"net"
	"syscall"
)

// upProbe looks, without reading, whether an idle connection's socket
// has anything to read: a registry's FIN or reset, a TLS alert
// (close_notify), or bytes it sent unasked (a broken registry writing
// past an answer's end). Any of them makes the connection unfit for the
// next request: an answer read from it could be a previous request's.
// net/http's Transport learns this from a read goroutine per connection;
// this costs one recv(MSG_PEEK|MSG_DONTWAIT) per reuse instead.
type upProbe struct {
	raw   syscall.RawConn
	fn    func(fd uintptr) bool // peek, made once
	quiet bool                  // the last peek found nothing to read
}

func newUpProbe(c net.Conn) *upProbe {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &upProbe{raw: raw}
	p.fn = p.peek
	return p
}

func (p *upProbe) peek(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.quiet = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	return true
}

// idle: the socket has nothing to read (nil p: cannot tell, idle).
func (p *upProbe) idle() bool {
	if p == nil {
		return true
	}
	p.quiet = false
	return p.raw.Read(p.fn) == nil && p.quiet
}
