package sni

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/snigate/snigate/internal/rawnet"
	"golang.org/x/sys/unix"
)

// sockConn is an upstream TCP connection that rawDial opened with
// socket(2) and connect(2) and handed to the runtime poller as an
// *os.File. It serves the splice path, which needs a socket, deadlines and
// a RawConn and nothing of net.Dialer's: no context watcher, no address
// resolution, no getsockname/getpeername after connecting.
type sockConn struct {
	f     *os.File
	rc    syscall.RawConn
	raddr *net.TCPAddr
}

// dialTCP opens the splice tunnel's upstream TCP connection: with
// rawDial when the address is an IP literal and no DialContext was
// configured, else (a host name, a zoned address) through the server's
// dialer. A raw dial in progress is the session's peer, so that Close
// aborts it at once.
func (st *spliceTunnel) dialTCP(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
	if st.s.rawDial {
		// A zoned (link-local) address goes through net, which maps the
		// zone to an interface index.
		if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Zone() == "" {
			if err := ctx.Err(); err != nil {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: err}
			}
			return rawDial(ap, deadline, st.ss.setPeer)
		}
	}
	return dialFunc(st.dialNet).dialUpstream(ctx, deadline, addr)
}

// rawDial connects to ap before deadline (zero: no deadline). onSocket,
// when not nil, is told the connection before connect's wait, so that the
// caller can close it to abort the dial; it returns false when the caller
// is closing already.
func rawDial(ap netip.AddrPort, deadline time.Time, onSocket func(net.Conn) bool) (*sockConn, error) {
	raddr := net.TCPAddrFromAddrPort(ap)
	fail := func(op string, err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: os.NewSyscallError(op, err)}
	}
	// With TCP_NODELAY, as net does for every TCP connection: spliced
	// bytes go out as they come, not held back for Nagle.
	sa, err := rawnet.SockaddrOf(ap)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: err}
	}
	fd, op, err := rawnet.SocketConnect(&sa)
	if err != nil {
		return nil, fail(op, err)
	}
	f := os.NewFile(uintptr(fd), "tcp "+ap.String())
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fail("connect", err)
	}
	c := &sockConn{f: f, rc: rc, raddr: raddr}
	if onSocket != nil && !onSocket(c) {
		f.Close()
		return nil, fail("connect", net.ErrClosed)
	}
	if werr := c.awaitConnect(&sa, deadline); werr != nil {
		f.Close()
		if errno, ok := werr.(syscall.Errno); ok {
			return nil, fail("connect", errno)
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: werr}
	}
	return c, nil
}

// awaitConnect waits until c's non-blocking connect to sa ends or
// deadline (zero: none) passes, and returns its error: the connection's
// own, os.ErrDeadlineExceeded, or net.ErrClosed when c was closed under
// the wait.
func (c *sockConn) awaitConnect(sa *rawnet.Sockaddr, deadline time.Time) error {
	if !deadline.IsZero() {
		c.f.SetWriteDeadline(deadline)
	}
	// Each RawConn call forgets readiness seen before it, so the callback
	// asks the kernel first: connect(2) again answers EISCONN once
	// connected, EALREADY while in progress (wait for writability), or
	// the connection's error.
	var soErr error
	werr := c.rc.Write(func(fd uintptr) bool {
		switch err := rawnet.Connect(int(fd), sa); err {
		case unix.EISCONN:
		case unix.EALREADY, unix.EINPROGRESS, unix.EINTR:
			return false
		case nil:
		default:
			soErr = err
		}
		return true
	})
	if !deadline.IsZero() {
		c.f.SetWriteDeadline(time.Time{})
	}
	switch {
	case werr == nil:
		werr = soErr
	case !errors.Is(werr, os.ErrDeadlineExceeded):
		// The only other way out of the wait: the socket was closed (the
		// session aborted). os.File's RawConn says "use of closed file".
		werr = net.ErrClosed
	}
	return werr
}

func (c *sockConn) Read(b []byte) (int, error)         { return c.f.Read(b) }
func (c *sockConn) Write(b []byte) (int, error)        { return c.f.Write(b) }
func (c *sockConn) Close() error                       { return c.f.Close() }
func (c *sockConn) RemoteAddr() net.Addr               { return c.raddr }
func (c *sockConn) SetDeadline(t time.Time) error      { return c.f.SetDeadline(t) }
func (c *sockConn) SetReadDeadline(t time.Time) error  { return c.f.SetReadDeadline(t) }
func (c *sockConn) SetWriteDeadline(t time.Time) error { return c.f.SetWriteDeadline(t) }

// writeBuffers writes bufs in one writev(2) when the socket takes them
// whole (a PROXY header and the ClientHello in one segment, as net does
// for a *net.TCPConn), looping on partial writes.
func (c *sockConn) writeBuffers(bufs [][]byte) (int64, error) {
	var total int64
	var werr error
	err := c.rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			n, err := unix.Writev(int(fd), bufs)
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN {
				return false
			}
			if err != nil {
				werr = err
				return true
			}
			total += int64(n)
			bufs = consumed(bufs, n)
			for len(bufs) > 0 && len(bufs[0]) == 0 {
				bufs = bufs[1:]
			}
		}
		return true
	})
	if err == nil && werr != nil {
		err = os.NewSyscallError("writev", werr)
	}
	if err != nil {
		return total, &net.OpError{Op: "write", Net: "tcp", Addr: c.raddr, Err: err}
	}
	return total, nil
}

// SyscallConn gives the socket to the splice directions.
func (c *sockConn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// LocalAddr asks the kernel; nothing on the hot path needs it.
func (c *sockConn) LocalAddr() net.Addr {
	var a net.Addr = &net.TCPAddr{}
	c.rc.Control(func(fd uintptr) {
		sa, err := unix.Getsockname(int(fd))
		if err != nil {
			return
		}
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			a = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		case *unix.SockaddrInet6:
			a = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
		}
	})
	return a
}

// CloseWrite sends a FIN: the direction toward the upstream ended.
func (c *sockConn) CloseWrite() error {
	var serr error
	err := c.rc.Control(func(fd uintptr) { serr = unix.Shutdown(int(fd), unix.SHUT_WR) })
	if err != nil {
		return err
	}
	if serr != nil {
		return &net.OpError{Op: "close", Net: "tcp", Addr: c.raddr, Err: os.NewSyscallError("shutdown", serr)}
	}
	return nil
}
