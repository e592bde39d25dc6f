package sni

import (
	"os"

	"golang.org/x/sys/unix"
)

// startTunnel moves the connection to its splice phase.
func (l *eventLoop) startTunnel(c *lconn) {
	ss := c.ss
	c.state = stTunnel
	c.idle = ss.cfg.IdleTimeout
	c.last = l.now
	ss.inTunnel.Store(true)
	l.due(c.deadline())
	l.pumpBoth(c)
}

// pumpBoth moves what both directions can move now.
func (l *eventLoop) pumpBoth(c *lconn) {
	more := l.pump(c, 0)
	if c.state != stTunnel {
		return
	}
	if l.pump(c, 1) || more {
		if c.state == stTunnel {
			l.queue(c)
		}
	}
}

// pump moves one direction (0: client to upstream, 1: upstream to
// client) until its source or destination would block, it ends, or it
// used its budget (then true: it has more to do). Small bursts are read
// into the loop's buffer and written out (a read shorter than the buffer
// emptied the socket, so no read ends in EAGAIN); a read that fills the
// buffer marks the direction as a stream, which from then on splices
// through a pipe held only while bytes are in it. At end of stream the
// destination is half-closed, unless the other direction has ended
// already: then the tunnel is over.
func (l *eventLoop) pump(c *lconn, i int) bool {
	d := &c.dirs[i]
	src, dst, srcR, dstW, srcHup := c.cfd, c.ufd, &c.cr, &c.uw, c.chup
	srcSide, dstSide := sideClient, sideUpstream
	if i == 1 {
		src, dst, srcR, dstW, srcHup = c.ufd, c.cfd, &c.ur, &c.cw, c.uhup
		srcSide, dstSide = sideUpstream, sideClient
	}
	for range pumpBudget {
		switch {
		case len(d.held) > 0: // what dst did not take last time
			if !*dstW {
				return false
			}
			n, err := rawWrite(dst, d.held)
			if !l.wrote(c, i, n, err, dstW, dstSide) {
				return false
			}
			d.held = d.held[n:]
			if len(d.held) == 0 {
				d.held = nil
			}
			continue
		case d.p != nil && d.p.n > 0:
			if !*dstW {
				return false
			}
			n, err := rawSplice(d.p.r, dst, d.p.n)
			if !l.wrote(c, i, n, err, dstW, dstSide) {
				return false
			}
			d.p.n -= n
			continue
		case d.eof:
			return false
		case !*srcR:
			l.dropPipe(d)
			return false
		}
		var n int
		var err error
		if d.stream {
			if d.p == nil {
				if d.p, err = l.getPipe(); err != nil {
					l.fail(c, &sideError{srcSide, err})
					return false
				}
			}
			n, err = rawSplice(src, d.p.w, spliceChunk)
		} else {
			n, err = rawRead(src, l.buf[:])
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			*srcR = false
			l.dropPipe(d)
			return false
		case err != nil:
			l.fail(c, &sideError{srcSide, os.NewSyscallError("read", err)})
			return false
		case n == 0:
			d.eof = true
			l.dropPipe(d)
			c.ended++
			if c.ended == 2 {
				l.end(c, resultOK, nil)
				return false
			}
			rawShutdownWrite(dst)
			return false
		case d.stream:
			d.p.n = n
			continue
		}
		// Copied: a short read emptied the socket (unless an end of
		// stream waits behind it), a full one starts a stream.
		if n < len(l.buf) && !srcHup {
			*srcR = false
		} else if n == len(l.buf) && !l.s.loopCopyOnly {
			d.stream = true
		}
		w := 0
		if *dstW {
			w, err = rawWrite(dst, l.buf[:n])
			l.wrote(c, i, w, err, dstW, dstSide)
			if c.state != stTunnel {
				return false // the write failed: the tunnel is over
			}
		}
		if w < n {
			d.held = append([]byte(nil), l.buf[w:n]...)
			return false
		}
	}
	return true
}

// wrote accounts n bytes written to dst; false when the direction must
// stop: dst is full (err EAGAIN) or failed (the tunnel ends).
func (l *eventLoop) wrote(c *lconn, i, n int, err error, dstW *bool, dstSide string) bool {
	switch err {
	case nil:
	case unix.EINTR:
		return true
	case unix.EAGAIN:
		*dstW = false
		return false
	default:
		l.fail(c, &sideError{dstSide, os.NewSyscallError("write", err)})
		return false
	}
	c.last = l.now
	if i == 0 {
		c.ss.up.Add(int64(n))
		c.ss.rm.addBytes(DirectionUpstream, int64(n))
	} else {
		c.ss.down.Add(int64(n))
		c.ss.rm.addBytes(DirectionDownstream, int64(n))
	}
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
