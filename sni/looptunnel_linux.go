package sni

import (
	"os"

	"github.com/snigate/snigate/internal/rawnet"
)

// loopDir is one way of a loop tunnel, as a copier is on the goroutine
// path: it owns its two ends and what is in flight between them.
type loopDir struct {
	src, dst *loopEnd
	up       bool   // client to upstream: counted as bytes_up
	p        *pipe  // held only while bytes are in flight
	held     []byte // copied bytes dst has not taken yet
	eof      bool   // src reached end of stream: dst is half-closed
	stream   bool   // a read filled the loop's buffer: splice from now on
}

// startTunnel moves the connection to its splice phase.
func (l *eventLoop) startTunnel(c *lconn) {
	c.state = stTunnel
	c.last = l.now
	l.due(c.deadline())
	l.pumpBoth(c)
}

// pumpBoth moves what both directions can move now.
func (l *eventLoop) pumpBoth(c *lconn) {
	more := l.pump(c, &c.dirs[0])
	if c.state != stTunnel {
		return
	}
	if l.pump(c, &c.dirs[1]) || more {
		if c.state == stTunnel {
			l.queue(c)
		}
	}
}

// pump moves d until its source or destination would block, it ends, or
// it used its budget (then true: it has more to do). First what dst did
// not take last time, then what src has. Small bursts are read into the
// loop's buffer and written out (a read shorter than the buffer emptied
// the socket, so no read ends in EAGAIN); a read that fills the buffer
// marks the direction as a stream, which from then on splices through a
// pipe held only while bytes are in it.
func (l *eventLoop) pump(c *lconn, d *loopDir) bool {
	for range pumpBudget {
		var ok bool
		switch {
		case len(d.held) > 0:
			ok = l.flushHeld(c, d)
		case d.p != nil && d.p.n > 0:
			ok = l.flushPipe(c, d)
		case d.eof:
			return false
		case !d.src.r:
			l.dropPipe(d)
			return false
		default:
			ok = l.fill(c, d)
		}
		if !ok {
			return false
		}
	}
	return true
}

// flushHeld writes out the copied bytes dst did not take.
func (l *eventLoop) flushHeld(c *lconn, d *loopDir) bool {
	if !d.dst.w {
		return false
	}
	n, err := rawnet.Write(d.dst.fd, d.held)
	if !l.wrote(c, d, n, err) {
		return false
	}
	d.held = d.held[n:]
	if len(d.held) == 0 {
		d.held = nil
	}
	return true
}

// flushPipe splices the pipe's bytes out to dst.
func (l *eventLoop) flushPipe(c *lconn, d *loopDir) bool {
	if !d.dst.w {
		return false
	}
	n, err := rawnet.Splice(d.p.r, d.dst.fd, d.p.n)
	if !l.wrote(c, d, n, err) {
		return false
	}
	d.p.n -= n
	return true
}

// fill reads what src has: into a pipe for a stream, else into the
// loop's buffer, which copied writes out.
func (l *eventLoop) fill(c *lconn, d *loopDir) bool {
	var n int
	var err error
	if d.stream {
		if d.p == nil {
			if d.p, err = l.getPipe(); err != nil {
				l.fail(c, &sideError{c.side(d.src), err})
				return false
			}
		}
		n, err = rawnet.Splice(d.src.fd, d.p.w, spliceChunk)
	} else {
		n, err = rawnet.Read(d.src.fd, l.buf[:])
	}
	switch {
	case err == rawnet.EINTR:
		return true
	case err == rawnet.EAGAIN:
		d.src.r = false
		l.dropPipe(d)
		return false
	case err != nil:
		l.fail(c, &sideError{c.side(d.src), os.NewSyscallError("read", err)})
		return false
	case n == 0:
		l.endOfStream(c, d)
		return false
	case d.stream:
		d.p.n = n
		return true
	}
	return l.copied(c, d, n)
}

// copied writes out n bytes read into the loop's buffer and keeps what
// dst does not take. A short read emptied the socket (unless an end of
// stream waits behind it), a full one starts a stream.
func (l *eventLoop) copied(c *lconn, d *loopDir, n int) bool {
	if n < len(l.buf) && !d.src.hup {
		d.src.r = false
	} else if n == len(l.buf) && !l.copyOnly {
		d.stream = true
	}
	w := 0
	if d.dst.w {
		var err error
		w, err = rawnet.Write(d.dst.fd, l.buf[:n])
		l.wrote(c, d, w, err)
		if c.state != stTunnel {
			return false // the write failed: the tunnel is over
		}
	}
	if w < n {
		d.held = append([]byte(nil), l.buf[w:n]...)
		return false
	}
	return true
}

// endOfStream half-closes dst once src ended, unless the other direction
// has ended already: then the tunnel is over.
func (l *eventLoop) endOfStream(c *lconn, d *loopDir) {
	d.eof = true
	l.dropPipe(d)
	if c.dirs[0].eof && c.dirs[1].eof {
		l.end(c, resultOK, nil)
		return
	}
	rawnet.ShutdownWrite(d.dst.fd)
}

// wrote accounts n bytes written to d's destination; false when the
// direction must stop: dst is full (err EAGAIN) or failed (the tunnel
// ends).
func (l *eventLoop) wrote(c *lconn, d *loopDir, n int, err error) bool {
	switch err {
	case nil:
	case rawnet.EINTR:
		return true
	case rawnet.EAGAIN:
		d.dst.w = false
		return false
	default:
		l.fail(c, &sideError{c.side(d.dst), os.NewSyscallError("write", err)})
		return false
	}
	c.last = l.now
	c.ss.moved(d.up, n)
	return true
}

// dropPipe returns an empty pipe to the pool.
func (l *eventLoop) dropPipe(d *loopDir) {
	if d.p != nil && d.p.n == 0 {
		l.putPipe(d.p)
		d.p = nil
	}
}

// fail ends the tunnel on its first error.
func (l *eventLoop) fail(c *lconn, err error) {
	res, verr := tunnelVerdict(err, c.idle)
	l.end(c, res, verr)
}
