package sni

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/upstream"
	"golang.org/x/sys/unix"
)

// States of a loop connection.
const (
	stNew     uint8 = iota
	stHello         // reading the ClientHello
	stConnect       // connecting to a candidate
	stReplay        // sending the PROXY header and the ClientHello
	stTunnel        // splicing both ways
	stDone
)

// Owners of a loop connection's client descriptor.
const (
	ownLoop     int32 = iota // the loop closes it
	ownReleased              // Close closes it (refused, held in the tarpit)
	ownClosed
)

// lconn is one connection the event loop runs. It is the session's conn
// too: the server's bookkeeping (abort, evict, Shutdown's deadlines,
// finish) reaches the loop through its net.Conn methods. Every other field
// belongs to the loop's goroutine.
type lconn struct {
	l        *eventLoop
	ss       *session
	id       uint64
	cfd, ufd int
	own      atomic.Int32
	raddr    *net.TCPAddr
	listener *loopListener

	state          uint8
	cr, cw, ur, uw bool // readiness seen (edge-triggered): cleared by EAGAIN
	uerr           bool // the upstream socket reported EPOLLERR or EPOLLHUP
	chup, uhup     bool // the socket reported EPOLLRDHUP, EPOLLHUP or EPOLLERR
	queued         bool // in the loop's run queue

	// connect
	hosts    []*upstream.Host
	next     int // index of the candidate being tried
	release  func()
	started  time.Time // of the connect
	connBy   time.Time // timeouts.connect of the whole connect
	attempt  time.Time // of the attempt on the current candidate
	errs     []error
	pend     [][]byte // replay not written yet
	pendHead []byte   // the PROXY header, kept for pend

	// tunnel
	dirs  [2]loopDir
	ended int           // directions at end of stream
	idle  time.Duration // <= 0: none
	last  time.Time     // a byte moved either way
}

// loopDir is one way of a loop tunnel.
type loopDir struct {
	p      *pipe  // held only while bytes are in flight
	held   []byte // copied bytes the destination has not taken yet
	eof    bool   // src reached end of stream
	stream bool   // a read filled the loop's buffer: splice from now on
}

// deadline is when the connection's current state times out.
func (c *lconn) deadline() time.Time {
	switch c.state {
	case stHello:
		return c.ss.start.Add(c.ss.cfg.ClientHelloTimeout)
	case stConnect, stReplay:
		return c.attempt
	case stTunnel:
		if c.idle > 0 {
			return c.last.Add(c.idle)
		}
	}
	return time.Time{}
}

// expired handles a passed deadline.
func (l *eventLoop) expired(c *lconn) {
	switch c.state {
	case stHello:
		l.handoff(c, false) // the goroutine path reports the timeout
	case stConnect, stReplay:
		l.attemptFailed(c, &net.OpError{Op: "dial", Net: "tcp", Addr: c.hostAddr(), Err: os.ErrDeadlineExceeded})
	case stTunnel:
		l.fail(c, errIdle)
	}
}

// step runs the connection as far as its readiness allows.
func (l *eventLoop) step(c *lconn) {
	switch c.state {
	case stHello:
		l.readHello(c)
	case stConnect:
		if c.uw {
			l.connectDone(c)
		}
	case stReplay:
		if c.uw {
			l.writeReplay(c)
		}
	case stTunnel:
		l.pumpBoth(c)
	}
}

// queue gives c another turn after the other connections of this round.
func (l *eventLoop) queue(c *lconn) {
	if !c.queued {
		c.queued = true
		l.runq = append(l.runq, c)
	}
}

// readHello reads what the client sent and parses it when a whole
// ClientHello is there.
func (l *eventLoop) readHello(c *lconn) {
	if !c.cr {
		return
	}
	ss := c.ss
	if ss.helloBuf == nil {
		ss.helloBuf = getHelloBuf()
		ss.raw = (*ss.helloBuf)[:0]
	}
	raw, err := readClientHello(helloFD{c}, ss.raw, &ss.hello)
	ss.raw = raw
	switch {
	case err == nil:
	case errors.Is(err, errWouldBlock) && (len(raw) == 0 || looksLikeTLS(raw)):
		return // the rest is on its way
	default:
		l.handoff(c, false) // not TLS, malformed, closed: the goroutine path says why
		return
	}
	l.s.m.clientHello(l.now.Sub(ss.start))
	l.s.handshakeDone(ss)
	l.route(c)
}

// errWouldBlock: the client has sent nothing more yet.
var errWouldBlock = errors.New("would block")

// helloFD reads the client's socket for readClientHello.
type helloFD struct{ c *lconn }

func (h helloFD) Read(b []byte) (int, error) {
	for {
		n, err := rawRead(h.c.cfd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			h.c.cr = false
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		if n < len(b) && !h.c.chup {
			// A short read emptied the receive queue; bytes that come
			// later raise a new edge. Not so an end of stream that came
			// before: it stays to be read, with no edge to come.
			h.c.cr = false
		}
		return n, nil
	}
}

// handoff gives the connection to the goroutine path: its socket to the
// runtime poller as a net.Conn, and the session, with what was read so
// far, to fromHello (routed false) or routed.
func (l *eventLoop) handoff(c *lconn, routed bool) {
	s, ss := l.s, c.ss
	delete(l.conns, c.id)
	rawEpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.cfd, nil)
	c.state = stDone
	c.own.Store(ownClosed) // from now on ss.conn is the net.Conn
	nc, err := fdNetConn(c.cfd)
	if err != nil {
		ss.end(resultClientError, err)
		s.finish(ss)
		s.wg.Done()
		return
	}
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
	ss.conn = nc
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

// abort ends a connection that Close or Shutdown aborted: its result is
// the one abort imposed.
func (l *eventLoop) abort(c *lconn) {
	if c.state == stHello || c.state == stNew {
		l.end(c, resultClientError, net.ErrClosed)
		return
	}
	l.end(c, "", net.ErrClosed)
}

// The net.Conn side of a loop connection, called from any goroutine.

func (c *lconn) Read([]byte) (int, error)  { return 0, errLoopConn }
func (c *lconn) Write([]byte) (int, error) { return 0, errLoopConn }

var errLoopConn = errors.New("sni: connection owned by the event loop")

// Close asks the loop to end the connection, or closes a released socket.
func (c *lconn) Close() error {
	switch c.own.Load() {
	case ownLoop:
		c.l.post(loopCmd{op: cmdAbort, c: c})
	case ownReleased:
		if c.own.CompareAndSwap(ownReleased, ownClosed) {
			return unix.Close(c.cfd)
		}
	}
	return nil
}

func (c *lconn) LocalAddr() net.Addr  { return c.listener.Addr() }
func (c *lconn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline in the past (Shutdown's start, an eviction) cuts a
// connection still reading its ClientHello; the loop keeps every other
// deadline itself.
func (c *lconn) SetDeadline(t time.Time) error {
	if !t.IsZero() && time.Now().After(t) && c.own.Load() == ownLoop {
		c.l.post(loopCmd{op: cmdExpire, c: c})
	}
	return nil
}

func (c *lconn) SetReadDeadline(t time.Time) error  { return c.SetDeadline(t) }
func (c *lconn) SetWriteDeadline(t time.Time) error { return c.SetDeadline(t) }

// end closes the connection's sockets and ends its session with result
// (or what abort imposed).
func (l *eventLoop) end(c *lconn, result string, err error) {
	s, ss := l.s, c.ss
	delete(l.conns, c.id)
	if c.ufd >= 0 {
		rawClose(c.ufd)
		c.ufd = -1
	}
	for i := range c.dirs {
		if p := c.dirs[i].p; p != nil {
			l.putPipe(p)
			c.dirs[i].p = nil
		}
	}
	if c.release != nil {
		c.release()
		c.release = nil
	}
	if c.own.CompareAndSwap(ownLoop, ownClosed) {
		rawClose(c.cfd)
	}
	routed := c.state >= stConnect
	c.state = stDone
	ss.end(result, err)
	if routed {
		ss.rm.activeDec()
	}
	s.finish(ss)
	s.wg.Done()
}
