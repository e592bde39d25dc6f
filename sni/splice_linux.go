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
	src, dst         *net.TCPConn
	srcRC, dstRC     syscall.RawConn
	srcSide, dstSide string
	counter          *atomic.Int64
	dir              string
	pipes            *pipePool
	p                *pipe                 // held only while bytes are in flight
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
func (dirs *spliceDirs) init(t *tunnel, client, upstream *net.TCPConn) (up, down direction, err error) {
	pipes := t.pipes
	if pipes == nil {
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
	dirs[0].init(t, client, upstream, crc, urc, sideClient, sideUpstream, pipes)
	dirs[1].init(t, upstream, client, urc, crc, sideUpstream, sideClient, pipes)
	return &dirs[0], &dirs[1], nil
}

func (d *spliceDir) init(t *tunnel, src, dst *net.TCPConn, srcRC, dstRC syscall.RawConn, srcSide, dstSide string, pipes *pipePool) {
	counter, dir := t.counters(srcSide)
	*d = spliceDir{t: t, src: src, dst: dst, srcRC: srcRC, dstRC: dstRC, srcSide: srcSide, dstSide: dstSide,
		counter: counter, dir: dir, pipes: pipes}
	d.callback = d.onReady
}

// run moves bytes until EOF (then half-closes dst, unless the other
// direction has ended already), an error or idleness.
func (d *spliceDir) run() error {
	defer d.dropPipe()
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
		if _, active := d.t.rearmAt(d.src); !active {
			return 0, errIdle
		}
	}
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
	d.t.touch()
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

func tcpClosed(c *net.TCPConn) bool {
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
