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

// pump splices one direction (0: client to upstream, 1: upstream to
// client) until its source or destination would block, it ends, or it
// used its budget (then true: it has more to do). A pipe is held only
// while bytes are in it. At end of stream the destination is half-closed,
// unless the other direction has ended already: then the tunnel is over.
func (l *eventLoop) pump(c *lconn, i int) bool {
	d := &c.dirs[i]
	src, dst, srcR, dstW := c.cfd, c.ufd, &c.cr, &c.uw
	srcSide, dstSide := sideClient, sideUpstream
	counter, dir := &c.ss.up, DirectionUpstream
	if i == 1 {
		src, dst, srcR, dstW = c.ufd, c.cfd, &c.ur, &c.cw
		srcSide, dstSide = sideUpstream, sideClient
		counter, dir = &c.ss.down, DirectionDownstream
	}
	for range pumpBudget {
		if d.p != nil && d.p.n > 0 {
			if !*dstW {
				return false
			}
			n, err := unix.Splice(d.p.r, nil, dst, nil, d.p.n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			switch err {
			case nil:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				*dstW = false
				return false
			default:
				l.fail(c, &sideError{dstSide, os.NewSyscallError("splice", err)})
				return false
			}
			d.p.n -= int(n)
			c.last = l.now
			counter.Add(n)
			c.ss.rm.addBytes(dir, n)
			continue
		}
		if d.eof {
			return false
		}
		if !*srcR {
			l.dropPipe(d)
			return false
		}
		if d.p == nil {
			p, err := l.getPipe()
			if err != nil {
				l.fail(c, &sideError{srcSide, err})
				return false
			}
			d.p = p
		}
		n, err := unix.Splice(src, nil, d.p.w, nil, spliceChunk, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			*srcR = false
			l.dropPipe(d)
			return false
		case err != nil:
			l.fail(c, &sideError{srcSide, os.NewSyscallError("splice", err)})
			return false
		case n == 0:
			d.eof = true
			l.dropPipe(d)
			c.ended++
			if c.ended == 2 {
				l.end(c, resultOK, nil)
				return false
			}
			unix.Shutdown(dst, unix.SHUT_WR)
			return false
		}
		d.p.n = int(n)
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
