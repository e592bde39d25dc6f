package sni

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/internal/rawnet"
	"github.com/snigate/snigate/upstream"
)

// States of a loop connection (the table is in loop_linux.go's doc).
const (
	stNew     uint8 = iota // accepted, not admitted yet
	stHello                // reading the ClientHello
	stConnect              // connecting to a candidate
	stReplay               // sending the PROXY header and the ClientHello
	stTunnel               // splicing both ways (one way once half-closed)
	stDone                 // closed, or handed off to the goroutine path
)

// Owners of a loop connection's client descriptor.
const (
	ownLoop     int32 = iota // the loop closes it
	ownReleased              // Close closes it (refused, held in the tarpit)
	ownClosed
)

// lconn is one connection the event loop runs. It is the session's
// handle on it too (sessionConn): the server's bookkeeping (abort, evict,
// Shutdown's deadlines, finish) reaches the loop through Close and
// SetDeadline. Every other field belongs to the loop's goroutine.
type lconn struct {
	l        *eventLoop
	ss       loopLink // its session, as loopSession
	id       uint64
	listener *loopListener
	own      atomic.Int32
	state    uint8
	queued   bool // in the loop's run queue

	client, upstream loopEnd
	// until is the current state's deadline: the whole ClientHello, then
	// each connect attempt's share of timeouts.connect.
	until time.Time

	// connect
	walk    upstream.Attempts // the candidates; holds the active count of the host connected
	started time.Time         // of the connect
	pend    [][]byte          // replay not written yet

	// tunnel
	dirs [2]loopDir    // up (client to upstream), down
	idle time.Duration // timeouts.idle; <= 0: none
	last time.Time     // a byte moved either way
}

var _ sessionConn = (*lconn)(nil)

// loopEnd is one socket of a loop connection and the readiness the
// (edge-triggered) events reported on it since the last EAGAIN.
type loopEnd struct {
	fd   int
	r, w bool // readable, writable: cleared by EAGAIN
	hup  bool // EPOLLRDHUP, EPOLLHUP or EPOLLERR: an end of stream waits
	err  bool // EPOLLERR or EPOLLHUP (a connect's outcome)
}

// seen records what an event reports.
func (e *loopEnd) seen(ev *rawnet.Event) {
	e.r = e.r || ev.Has(evReadable)
	e.w = e.w || ev.Has(evWritable)
	e.hup = e.hup || ev.Has(evHangUp)
	e.err = e.err || ev.Has(evFailed)
}

// newLconn returns the loop connection of the accepted socket fd; both
// directions know their ends from the start.
func (l *eventLoop) newLconn(fd int, ln *loopListener) *lconn {
	l.nextID++
	c := &lconn{l: l, id: l.nextID, listener: ln}
	c.client = loopEnd{fd: fd}
	c.upstream = loopEnd{fd: -1}
	c.dirs[0] = loopDir{src: &c.client, dst: &c.upstream, up: true}
	c.dirs[1] = loopDir{src: &c.upstream, dst: &c.client}
	return c
}

// side names e for errors and results.
func (c *lconn) side(e *loopEnd) string {
	if e == &c.client {
		return sideClient
	}
	return sideUpstream
}

// deadline is when the connection's current state times out.
func (c *lconn) deadline() time.Time {
	switch c.state {
	case stHello, stConnect, stReplay:
		return c.until
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
		if c.upstream.w {
			l.connectDone(c)
		}
	case stReplay:
		if c.upstream.w {
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

// readHello reads what the client sent and routes the connection once a
// whole ClientHello is there.
func (l *eventLoop) readHello(c *lconn) {
	if !c.client.r {
		return
	}
	done, err := c.ss.readHello(helloFD{&c.client}, l.now)
	switch {
	case err != nil:
		l.handoff(c, false) // not TLS, malformed, closed: the goroutine path says why
	case done:
		l.route(c)
	}
}

// helloFD reads the client's socket for readClientHello.
type helloFD struct{ e *loopEnd }

func (h helloFD) Read(b []byte) (int, error) {
	for {
		n, err := rawnet.Read(h.e.fd, b)
		switch {
		case err == rawnet.EINTR:
			continue
		case err == rawnet.EAGAIN:
			h.e.r = false
			return 0, errWouldBlock
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0:
			return 0, io.EOF
		}
		if n < len(b) && !h.e.hup {
			// A short read emptied the receive queue; bytes that come
			// later raise a new edge. Not so an end of stream that came
			// before: it stays to be read, with no edge to come.
			h.e.r = false
		}
		return n, nil
	}
}

// handoff gives the connection to the goroutine path: its socket to the
// runtime poller as a net.Conn, and the session, with what was read so
// far, to fromHello (routed false) or routed.
func (l *eventLoop) handoff(c *lconn, routed bool) {
	delete(l.conns, c.id)
	rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_DEL, c.client.fd, nil)
	c.state = stDone
	c.own.Store(ownClosed) // from now on the session's net.Conn owns it
	nc, err := fdNetConn(c.client.fd)
	if err != nil {
		c.ss.end(resultClientError, err, false)
		return
	}
	c.ss.handoff(nc, routed)
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

// The session's handle, called from any goroutine.

// Close asks the loop to end the connection, or closes a released socket.
func (c *lconn) Close() error {
	switch c.own.Load() {
	case ownLoop:
		c.l.post(loopCmd{op: cmdAbort, c: c})
	case ownReleased:
		if c.own.CompareAndSwap(ownReleased, ownClosed) {
			return rawnet.Close(c.client.fd)
		}
	}
	return nil
}

// SetDeadline in the past (Shutdown's start, an eviction) cuts a
// connection still reading its ClientHello; the loop keeps every other
// deadline itself.
func (c *lconn) SetDeadline(t time.Time) error {
	if !t.IsZero() && time.Now().After(t) && c.own.Load() == ownLoop {
		c.l.post(loopCmd{op: cmdExpire, c: c})
	}
	return nil
}

// LocalAddr asks the kernel for the client socket's local address (the
// destination of a PROXY header); loop goroutine only.
func (c *lconn) LocalAddr() net.Addr {
	sa, err := rawnet.LocalAddr(c.client.fd)
	if err != nil {
		return &net.TCPAddr{}
	}
	return sa.TCPAddr()
}

// end closes the connection's sockets and ends its session with result
// (or what abort imposed).
func (l *eventLoop) end(c *lconn, result string, err error) {
	delete(l.conns, c.id)
	if c.upstream.fd >= 0 {
		rawnet.Close(c.upstream.fd)
		c.upstream.fd = -1
	}
	for i := range c.dirs {
		if p := c.dirs[i].p; p != nil {
			l.putPipe(p)
			c.dirs[i].p = nil
		}
	}
	c.walk.Release()
	if c.own.CompareAndSwap(ownLoop, ownClosed) {
		rawnet.Close(c.client.fd)
	}
	routed := c.state >= stConnect
	c.state = stDone
	c.ss.end(result, err, routed)
}
