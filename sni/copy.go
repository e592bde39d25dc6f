package sni

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Sides of a tunnel, for errors and results.
const (
	sideClient   = "client"
	sideUpstream = "upstream"
)

// errIdle ends a tunnel that moved no byte either way for IdleTimeout.
var errIdle = errors.New("no bytes either way for timeouts.idle")

// sideError is a tunnel failure attributed to one side.
type sideError struct {
	side string
	err  error
}

func (e *sideError) Error() string { return e.side + ": " + e.err.Error() }
func (e *sideError) Unwrap() error { return e.err }

// tunnel is the copying phase of one connection: two directions sharing an
// idle clock. The first error aborts both directions.
type tunnel struct {
	ss       *session
	client   net.Conn
	upstream net.Conn
	idle     time.Duration // <= 0: no idle timeout
	last     atomic.Int64  // unix nanoseconds of the last byte moved
	started  time.Time
	eofs     atomic.Int32 // directions that ended at end of stream
	pipes    *pipePool    // splice pipes; nil: copy through a buffer
	errOnce  sync.Once
	err      error
}

// lastEOF counts a direction that reached end of stream and reports
// whether the other one had already: then the tunnel is about to close
// both sockets, and a half-close would be a wasted shutdown(2) (close
// sends the FIN).
func (t *tunnel) lastEOF() bool { return t.eofs.Add(1) == 2 }

func newTunnel(ss *session, client, upstream net.Conn, idle time.Duration) *tunnel {
	t := new(tunnel)
	t.init(ss, client, upstream, idle)
	return t
}

// init starts the idle clock of a tunnel between client and upstream and
// arms their read deadlines.
func (t *tunnel) init(ss *session, client, upstream net.Conn, idle time.Duration) {
	t.ss, t.client, t.upstream, t.idle = ss, client, upstream, idle
	now := t.touch()
	t.started = now
	var deadline time.Time // none: also clears a deadline left from the handshake phase
	if idle > 0 {
		deadline = now.Add(idle)
	}
	client.SetReadDeadline(deadline)
	upstream.SetReadDeadline(deadline)
}

// touch records activity now and returns the time.
func (t *tunnel) touch() time.Time {
	now := time.Now()
	t.last.Store(now.UnixNano())
	return now
}

// rearm is called when c's read deadline passed: if the tunnel moved bytes
// (either way) within the idle timeout, it pushes c's deadline to idle
// after that activity and reports true; otherwise the tunnel is idle.
func (t *tunnel) rearm(c net.Conn) bool {
	_, ok := t.rearmAt(c)
	return ok
}

// rearmAt is rearm that also returns the deadline it armed.
func (t *tunnel) rearmAt(c net.Conn) (time.Time, bool) {
	if t.idle <= 0 {
		return time.Time{}, false
	}
	deadline := time.Unix(0, t.last.Load()).Add(t.idle)
	if !time.Now().Before(deadline) {
		return time.Time{}, false
	}
	c.SetReadDeadline(deadline)
	return deadline, true
}

// fail records the first error and closes both connections so that the
// other direction returns too.
func (t *tunnel) fail(err error) {
	t.errOnce.Do(func() {
		t.err = err
		hardClose(t.client)
		hardClose(t.upstream)
	})
}

// run runs up (client to upstream) in the calling goroutine and down in a
// second one, and returns the tunnel's result once both have returned.
func (t *tunnel) run(up, down func() error) (string, error) {
	done := make(chan struct{})
	go runDirection(t, down, done)
	if err := up(); err != nil {
		t.fail(err)
	}
	<-done
	return t.verdict()
}

// runDirection is the second direction's goroutine body.
func runDirection(t *tunnel, dir func() error, done chan<- struct{}) {
	defer close(done)
	if err := dir(); err != nil {
		t.fail(err)
	}
}

func (t *tunnel) verdict() (string, error) { return tunnelVerdict(t.err, t.idle) }

// tunnelVerdict is the result of a tunnel that ended with err (nil: both
// directions reached end of stream) under idle timeout idle.
func tunnelVerdict(err error, idle time.Duration) (string, error) {
	switch {
	case err == nil:
		return resultOK, nil
	case errors.Is(err, errIdle):
		return resultIdle, fmt.Errorf("idle for %v: %w", idle, errIdle)
	case upstreamFault(err):
		return resultUpstreamError, err
	}
	return resultClientError, err
}

// upstreamFault reports an error attributed to the upstream side. It is a
// function of its own so that the errors.As target escapes to the heap only
// when there is an error.
func upstreamFault(err error) bool {
	var se *sideError
	return errors.As(err, &se) && se.side == sideUpstream
}

// counters returns the session counter and metrics direction for bytes
// read from side.
func (t *tunnel) counters(from string) (*atomic.Int64, string) {
	if from == sideClient {
		return &t.ss.up, DirectionUpstream
	}
	return &t.ss.down, DirectionDownstream
}

// account adds n bytes moved from side to the session and the metrics.
func (t *tunnel) account(counter *atomic.Int64, dir string, n int64) {
	counter.Add(n)
	t.ss.rm.addBytes(dir, n)
}

// copyBufSize matches the largest TLS record, so that a bridged direction
// moves one record per read.
const copyBufSize = 16 << 10

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copier is one direction of a tunnel between connections that are not
// both TCP (TLS connections in bridge mode): read, write, count.
type copier struct {
	t                *tunnel
	src, dst         net.Conn
	srcSide, dstSide string
	counter          *atomic.Int64
	dir              string
	// first, when set, is called once, at the first byte read from src
	// (a bridge client's first request: requestWait.seen).
	first func()
}

func (t *tunnel) copier(src, dst net.Conn, srcSide, dstSide, dir string) *copier {
	counter, _ := t.counters(srcSide)
	return &copier{t: t, src: src, dst: dst, srcSide: srcSide, dstSide: dstSide, counter: counter, dir: dir}
}

// run copies until EOF (then half-closes dst), an error or idleness.
func (c *copier) run() error {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	for {
		n, err := c.src.Read(*bp)
		if n > 0 {
			if c.first != nil {
				c.first()
				c.first = nil
			}
			if werr := c.write((*bp)[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			closeWrite(c.dst)
			return nil
		case !isTimeout(err):
			return &sideError{c.srcSide, err}
		case !c.t.rearm(c.src):
			return errIdle
		}
	}
}

func (c *copier) write(p []byte) error {
	now := c.t.touch()
	if c.t.idle > 0 {
		c.dst.SetWriteDeadline(now.Add(c.t.idle))
	}
	n, err := c.dst.Write(p)
	c.t.touch()
	c.t.account(c.counter, c.dir, int64(n))
	switch {
	case err == nil:
		return nil
	case isTimeout(err):
		return errIdle
	}
	return &sideError{c.dstSide, err}
}

// hardClose closes c's socket at once: for a TLS connection, without the
// close_notify that could block on a peer that does not read.
func hardClose(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	c.Close()
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// closeWrite half-closes c: close_notify and a TCP FIN for a TLS
// connection, a FIN for TCP.
func closeWrite(c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		tc.CloseWrite()
		c = tc.NetConn()
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
