package sni

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// direction is one way of a tunnel: it moves bytes until EOF (then
// half-closes its destination), an error or idleness.
type direction interface{ run() error }

// spliceTunnel is the splice phase of a session: the upstream connection,
// the copying state of both directions, and the bookkeeping of the
// goroutines that run them. It lives inside the session (one allocation
// per connection). Once the tunnel is set up, the accept goroutine, whose
// stack grew while it parsed the ClientHello and dialed, returns; each
// direction runs in a fresh goroutine with a small stack, and the last one
// to return ends the session.
type spliceTunnel struct {
	tunnel
	s       *Server
	dirs    spliceDirs
	up      net.Conn
	release func()
	left    atomic.Int32 // directions still running
}

// splice connects the session to an upstream, replays the ClientHello and
// runs the tunnel until the client-to-upstream direction ends or parks.
// It returns resultDetached when the tunnel's goroutines own the session
// from then on.
func (s *Server) splice(ss *session) (string, error) {
	ss.conn.SetDeadline(time.Time{})
	st := new(spliceTunnel)
	ss.splice = st
	st.s, st.ss = s, ss
	up, release, err := s.connect(s.ctx, ss, st)
	if err != nil {
		s.connectFailed(ss, err)
		return "", nil
	}
	if !ss.setPeer(up) {
		up.Close()
		release()
		return "", nil
	}
	st.up, st.release = up, release
	ss.releaseHello()
	ss.inTunnel.Store(true)
	st.start()
	return resultDetached, nil
}

// dialUpstream implements upstreamDialer: TCP, then the PROXY header and
// the ClientHello bytes, so that a failed write is retried on the next
// candidate too.
func (st *spliceTunnel) dialUpstream(ctx context.Context, deadline time.Time, addr string) (net.Conn, error) {
	up, err := st.dialTCP(ctx, deadline, addr)
	if err != nil {
		return nil, err
	}
	if err := st.replay(deadline, up); err != nil {
		up.Close()
		return nil, err
	}
	return up, nil
}

// dialNet opens a TCP connection to addr with the server's dialer.
func (st *spliceTunnel) dialNet(ctx context.Context, addr string) (net.Conn, error) {
	return st.s.dial(ctx, "tcp", addr)
}

func (st *spliceTunnel) replay(deadline time.Time, up net.Conn) error {
	ss := st.ss
	// A fresh socket's send buffer (tcp_wmem's default, 16 KiB) takes a
	// small replay whole, so only a large one can block and needs the
	// deadline (two timer updates per connection saved).
	if len(ss.raw) > replayNoDeadline {
		up.SetWriteDeadline(deadline)
		defer up.SetWriteDeadline(time.Time{})
	}
	var err error
	if v := ss.route.ProxyProtocol; v != ProxyProtocolNone {
		hdr, ferr := formatProxyHeader(v, ss.client, ss.dest)
		if ferr != nil {
			return fmt.Errorf("format PROXY %s header: %w", v, ferr)
		}
		err = writeBuffers(up, hdr, ss.raw)
	} else if len(ss.raw) > 0 {
		_, err = up.Write(ss.raw)
	}
	if err != nil {
		return fmt.Errorf("send ClientHello: %w", err)
	}
	n := int64(len(ss.raw))
	ss.up.Add(n)
	ss.rm.addBytes(DirectionUpstream, n)
	return nil
}

// writeBuffers writes bufs to c in one system call where c can (rawDial's
// *sockConn), else as net.Buffers does.
func writeBuffers(c net.Conn, bufs ...[]byte) error {
	if bw, ok := c.(interface {
		writeBuffers([][]byte) (int64, error)
	}); ok {
		_, err := bw.writeBuffers(bufs)
		return err
	}
	nb := net.Buffers(bufs)
	_, err := nb.WriteTo(c)
	return err
}

// replayNoDeadline is the largest ClientHello replay written without a
// write deadline; a PROXY header adds at most 232 bytes.
const replayNoDeadline = 4 << 10

// start runs both directions, counted in the server's WaitGroup until the
// session is finished: down in a new goroutine, up in this one until it
// ends or parks.
func (st *spliceTunnel) start() {
	ss := st.ss
	st.init(ss, ss.conn, st.up, ss.cfg.IdleTimeout)
	st.pipes = st.s.pipes
	up, down := st.directions()
	st.left.Store(2)
	st.s.wg.Add(1) // the session holds one already: one per direction
	go st.runDirection(down)
	// Up runs in the accept goroutine: a short connection costs no third
	// goroutine, and a long idle one parks within 200ms, which returns
	// this goroutine and frees its grown stack.
	st.runDirection(up)
}

// sock is a TCP socket a spliced direction reads or writes: a
// *net.TCPConn, or the *sockConn of rawDial.
type sock interface {
	net.Conn
	CloseWrite() error
	SyscallConn() (syscall.RawConn, error)
}

// directions returns the spliced directions when both sides are TCP
// (Linux), else copying ones.
func (st *spliceTunnel) directions() (up, down direction) {
	cu, ok1 := st.client.(*net.TCPConn)
	uu, ok2 := st.upstream.(sock)
	if ok1 && ok2 {
		if up, down, err := st.dirs.init(st, cu, uu); err == nil {
			return up, down
		}
	}
	return st.copier(st.client, st.upstream, sideClient, sideUpstream, DirectionUpstream),
		st.copier(st.upstream, st.client, sideUpstream, sideClient, DirectionDownstream)
}

// runDirection is the body of a direction's goroutine; the last one ends
// the session.
func (st *spliceTunnel) runDirection(d direction) {
	err := d.run()
	if err == errParked {
		return // the parker resumes it; it keeps its count in s.wg
	}
	if err != nil {
		st.fail(err)
		st.dirs.wake(st.s.parker)
	}
	if st.left.Add(-1) == 0 {
		st.finish()
	}
	st.s.wg.Done()
}

// resume runs a direction the parker woke in a new goroutine.
func (st *spliceTunnel) resume(d direction) { go st.runDirection(d) }

// finish records the tunnel's outcome, closes both sockets and ends the
// session as serveConn would have.
func (st *spliceTunnel) finish() {
	ss := st.ss
	ss.end(st.verdict())
	st.up.Close()
	ss.conn.Close()
	st.release()
	ss.rm.activeDec()
	st.s.finish(ss)
}
