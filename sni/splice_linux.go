package sni

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spliceDir is one direction of a spliced tunnel between two TCP
// connections. It never holds a pipe while waiting: it parks in the
// runtime poller until src is readable (syscall.RawConn.Read), then, in
// the same callback, splices what is queued into a pipe taken from the
// server's pool (SPLICE_F_NONBLOCK: EAGAIN means nothing yet and the pipe
// goes back before parking, 0 means end of stream), and splices the pipe
// out to dst (syscall.RawConn.Write). An idle tunnel holds its two
// sockets and nothing else.
type spliceDir struct {
	t                *tunnel
	src, dst         sock
	srcRC, dstRC     syscall.RawConn
	srcSide, dstSide string
	counter          *atomic.Int64
	dir              string
	pipes            *pipePool
	p                *pipe // held only while bytes are in flight
	st               *spliceTunnel
	parker           *parker
	parkAfter        time.Duration         // <= 0: never park
	lastRead         time.Time             // last time bytes were read (or the goroutine started)
	token            uint64                // parked under this token; guarded by parker.mu
	registered       bool                  // src is in the parker's epoll set
	callback         func(fd uintptr) bool // d.onReady, bound once
	writing          bool                  // callback: onWritable rather than onReadable
	armed            bool                  // onWritable armed dst's write deadline

	// Results of the callbacks.
	filled int
	moved  int
	opErr  error
}

// spliceChunk bounds one splice: the pipe's size, so that one splice(2)
// pair moves it, and so that the idle clock sees progress every chunk.
const spliceChunk = 1 << 20

// spliceDirs are the two directions of a spliced tunnel, held by value in
// the session.
type spliceDirs [2]spliceDir

// init sets up both directions between two TCP connections.
func (dirs *spliceDirs) init(st *spliceTunnel, client, upstream sock) (up, down direction, err error) {
	if st.pipes == nil {
		return nil, nil, errors.ErrUnsupported
	}
	crc, err := client.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	urc, err := upstream.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	dirs[0].init(st, client, upstream, crc, urc, sideClient, sideUpstream)
	dirs[1].init(st, upstream, client, urc, crc, sideUpstream, sideClient)
	return &dirs[0], &dirs[1], nil
}

// wake restarts the parked directions (the tunnel failed or is being
// closed: they must see it).
func (dirs *spliceDirs) wake(p *parker) {
	for i := range dirs {
		p.wake(&dirs[i])
	}
}

// init sets every field but token, which the parker may be reading.
func (d *spliceDir) init(st *spliceTunnel, src, dst sock, srcRC, dstRC syscall.RawConn, srcSide, dstSide string) {
	d.st, d.t, d.pipes, d.parker, d.parkAfter = st, &st.tunnel, st.pipes, st.s.parker, time.Duration(st.s.parkAfter.Load())
	d.src, d.dst, d.srcRC, d.dstRC, d.srcSide, d.dstSide = src, dst, srcRC, dstRC, srcSide, dstSide
	d.counter, d.dir = st.counters(srcSide)
	d.callback = d.onReady
}

// run moves bytes until EOF (then half-closes dst, unless the other
// direction has ended already), an error or idleness.
func (d *spliceDir) run() error {
	err := d.move()
	if err != errParked { // parked: d belongs to the parker now
		d.dropPipe()
	}
	return err
}

func (d *spliceDir) move() error {
	d.lastRead = time.Now()
	d.src.SetReadDeadline(d.nextDeadline())
	for {
		n, err := d.fill()
		if err != nil {
			return err
		}
		if n == 0 {
			if !d.t.lastEOF() {
				d.dst.CloseWrite()
			}
			return nil
		}
		if err := d.drain(); err != nil {
			return err
		}
	}
}

// fill parks until src is readable, then splices what is queued into a
// pipe: n > 0 bytes in the pipe, or 0 at end of stream.
func (d *spliceDir) fill() (int, error) {
	for {
		d.writing = false
		err := d.srcRC.Read(d.callback)
		switch {
		case err == nil && d.opErr != nil:
			return 0, &sideError{d.srcSide, d.opErr}
		case err == nil:
			return d.filled, nil
		case !isTimeout(err):
			return 0, &sideError{d.srcSide, err}
		}
		now := time.Now()
		idle := d.idleDeadline()
		if !idle.IsZero() && !now.Before(idle) {
			return 0, errIdle
		}
		if d.parkAfter > 0 && !now.Before(d.lastRead.Add(d.parkAfter)) {
			d.src.SetReadDeadline(idle) // a wake-up reads at once
			if d.parker.park(d) {
				return 0, errParked
			}
			continue // could not park: wait here, for the idle timeout only
		}
		d.src.SetReadDeadline(d.nextDeadline())
	}
}

// idleDeadline is when the tunnel reaches timeouts.idle if no byte moves
// either way before; zero: never. Any goroutine may call it.
func (d *spliceDir) idleDeadline() time.Time {
	if d.t.idle <= 0 {
		return time.Time{}
	}
	return time.Unix(0, d.t.last.Load()).Add(d.t.idle)
}

// nextDeadline is src's read deadline while the direction waits in its
// goroutine: the idle deadline, or the time to park if that is sooner.
func (d *spliceDir) nextDeadline() time.Time {
	dl := d.idleDeadline()
	if d.parkAfter > 0 {
		if park := d.lastRead.Add(d.parkAfter); dl.IsZero() || park.Before(dl) {
			dl = park
		}
	}
	return dl
}

// onReadable runs with src's descriptor each time the poller says it may
// be readable. Returning false parks until the next readiness event, and
// then no pipe is held.
func (d *spliceDir) onReadable(fd uintptr) bool {
	d.opErr = nil
	if d.p == nil {
		p, err := d.pipes.get()
		if err != nil {
			d.opErr = err
			return true
		}
		d.p = p
	}
	for {
		n, err := unix.Splice(int(fd), nil, d.p.w, nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			d.pipes.put(d.p)
			d.p = nil
			return false
		}
		d.filled, d.opErr = int(n), err
		d.p.n = int(n)
		return true
	}
}

// drain splices the pipe's bytes out to dst. The write deadline
// (timeouts.idle without progress) is armed only when dst is full and the
// direction has to wait, which is rare.
func (d *spliceDir) drain() error {
	d.moved, d.opErr, d.writing, d.armed = 0, nil, true, false
	err := d.dstRC.Write(d.callback)
	if d.armed {
		d.dst.SetWriteDeadline(time.Time{})
	}
	d.lastRead = d.t.touch()
	d.t.account(d.counter, d.dir, int64(d.moved))
	switch {
	case d.opErr != nil:
		return &sideError{d.failedSide(), d.opErr}
	case isTimeout(err):
		return errIdle // dst accepted nothing for the idle timeout
	case err != nil:
		return &sideError{d.dstSide, err}
	}
	d.pipes.put(d.p)
	d.p = nil
	return nil
}

// onReady is the callback of both RawConn calls.
func (d *spliceDir) onReady(fd uintptr) bool {
	if d.writing {
		return d.onWritable(fd)
	}
	return d.onReadable(fd)
}

// onWritable splices the pipe out to dst's descriptor until it is empty
// (true) or dst is full (false: wait for writability, after arming a write
// deadline of timeouts.idle from the last progress).
func (d *spliceDir) onWritable(fd uintptr) bool {
	progressed := false
	for d.p.n > 0 {
		n, err := unix.Splice(d.p.r, nil, int(fd), nil, d.p.n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch err {
		case nil:
			d.p.n -= int(n)
			d.moved += int(n)
			progressed = true
		case unix.EINTR:
		case unix.EAGAIN:
			if d.t.idle > 0 && (progressed || !d.armed) {
				d.dst.SetWriteDeadline(time.Now().Add(d.t.idle))
				d.armed = true
			}
			return false
		default:
			d.opErr = err
			return true
		}
	}
	return true
}

// dropPipe closes a pipe still holding bytes that can no longer be
// delivered, or returns an empty one.
func (d *spliceDir) dropPipe() {
	if d.p != nil {
		d.pipes.put(d.p)
		d.p = nil
	}
}

// failedSide tells which side a failed splice was about: the one whose
// socket the kernel closed (a reset), else src.
func (d *spliceDir) failedSide() string {
	if tcpClosed(d.dst) && !tcpClosed(d.src) {
		return d.dstSide
	}
	return d.srcSide
}

// tcpStateClose is TCP_CLOSE of linux/tcp_states.h: a socket that was
// reset or fully closed.
const tcpStateClose = 7

func tcpClosed(c sock) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	cerr := rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		closed = err != nil || info.State == tcpStateClose
	})
	return closed || errors.Is(cerr, net.ErrClosed)
}
