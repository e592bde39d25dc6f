package sni

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// spliceDir is one direction of a spliced tunnel between two TCP
// connections. It never holds a pipe while waiting: it parks in the
// runtime poller until src is readable (syscall.RawConn.Read, reading
// nothing), asks the kernel how many bytes are queued (FIONREAD), and
// splices exactly that many with dst.ReadFrom(&io.LimitedReader{...}), so
// that Go's splice path returns its pipe pair to the pool without waiting
// for more. An idle tunnel holds its two sockets and nothing else.
type spliceDir struct {
	t                *tunnel
	src, dst         *net.TCPConn
	rc               syscall.RawConn
	srcSide, dstSide string
	counter          *atomic.Int64
	dir              string
	lr               io.LimitedReader
	readable         func(fd uintptr) bool // d.onReadable, bound once
	readDeadline     time.Time             // armed on src

	// Results of onReadable.
	queued int
	opErr  error
	peek   [1]byte
}

// spliceChunk bounds one splice: the pipe's size, so that one splice(2)
// pair moves it, and so that the idle clock and the write deadline see
// progress at least every chunk.
const spliceChunk = 1 << 20

// spliceDirections returns the two directions of a spliced tunnel.
func (t *tunnel) spliceDirections(client, upstream *net.TCPConn) (up, down func() error, err error) {
	u, err := t.newSpliceDir(client, upstream, sideClient, sideUpstream)
	if err != nil {
		return nil, nil, err
	}
	d, err := t.newSpliceDir(upstream, client, sideUpstream, sideClient)
	if err != nil {
		return nil, nil, err
	}
	return u.run, d.run, nil
}

func (t *tunnel) newSpliceDir(src, dst *net.TCPConn, srcSide, dstSide string) (*spliceDir, error) {
	rc, err := src.SyscallConn()
	if err != nil {
		return nil, err
	}
	counter, dir := t.counters(srcSide)
	d := &spliceDir{t: t, src: src, dst: dst, rc: rc, srcSide: srcSide, dstSide: dstSide, counter: counter, dir: dir}
	d.readable = d.onReadable
	if t.idle > 0 {
		d.readDeadline = t.started.Add(t.idle)
	}
	return d, nil
}

// run moves bytes until EOF (then half-closes dst), an error or idleness.
func (d *spliceDir) run() error {
	for {
		n, err := d.wait()
		if err != nil {
			return err
		}
		if n == 0 {
			d.dst.CloseWrite()
			return nil
		}
		if err := d.copy(min(n, spliceChunk)); err != nil {
			return err
		}
	}
}

// wait parks until src has bytes queued (n > 0) or reached EOF (n == 0).
func (d *spliceDir) wait() (int, error) {
	for {
		err := d.rc.Read(d.readable)
		switch {
		case err == nil && d.opErr != nil:
			return 0, &sideError{d.srcSide, d.opErr}
		case err == nil:
			return d.queued, nil
		case !isTimeout(err):
			return 0, &sideError{d.srcSide, err}
		}
		deadline, active := d.t.rearmAt(d.src)
		if !active {
			return 0, errIdle
		}
		d.readDeadline = deadline
	}
}

// onReadable runs with src's descriptor each time the poller says it may
// be readable; it reads nothing. Returning false parks until the next
// readiness event.
func (d *spliceDir) onReadable(fd uintptr) bool {
	d.opErr = nil
	for {
		n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if err != nil {
			d.opErr = err
			return true
		}
		if n > 0 {
			d.queued = n
			return true
		}
		// Nothing queued: end of stream, a socket error, or not yet.
		m, err := peek(fd, &d.peek)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return false
		case err != nil:
			d.opErr = err
			return true
		case m == 0:
			d.queued = 0
			return true
		}
		// A byte arrived between the two calls: count again.
	}
}

// peek is recv(fd, b, 1, MSG_PEEK|MSG_DONTWAIT): it tells end of stream
// (0), a pending byte (1) or nothing yet (EAGAIN) without consuming
// anything, and unlike unix.Recvfrom it does not allocate.
func peek(fd uintptr, b *[1]byte) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// copy splices the n queued bytes to dst.
func (d *spliceDir) copy(n int) error {
	for {
		start := d.t.touch()
		if d.t.idle > 0 {
			d.dst.SetWriteDeadline(start.Add(d.t.idle))
			d.keepReading(start)
		}
		d.lr.R, d.lr.N = d.src, int64(n)
		w, err := d.dst.ReadFrom(&d.lr)
		d.t.touch()
		d.t.account(d.counter, d.dir, w)
		if err == nil {
			return nil
		}
		if !isTimeout(err) {
			return &sideError{d.failedSide(), err}
		}
		if w > 0 || time.Since(start) >= d.t.idle {
			return errIdle // dst accepted nothing for the idle timeout
		}
		// src's read deadline passed between the wake-up and the splice:
		// nothing was read, the bytes are still queued. Re-arm and retry.
		d.readDeadline = time.Now().Add(d.t.idle)
		d.src.SetReadDeadline(d.readDeadline)
	}
}

// keepReading keeps src's read deadline beyond the write deadline of the
// chunk starting at now: Go's splice loop checks the read deadline before
// each drain, and a chunk can take several. It moves the deadline once per
// eighth of the idle timeout of activity, not per chunk, so an idle tunnel
// is still closed between 1 and 1.125 idle timeouts after its last byte.
func (d *spliceDir) keepReading(now time.Time) {
	if d.readDeadline.After(now.Add(d.t.idle)) {
		return
	}
	d.readDeadline = now.Add(d.t.idle + d.t.idle/8)
	d.src.SetReadDeadline(d.readDeadline)
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
