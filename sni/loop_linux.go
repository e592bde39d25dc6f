package sni

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/snigate/snigate/internal/rawnet"
	"github.com/snigate/snigate/upstream"
)

// eventLoop drives the connections of the TLS listeners on raw
// descriptors, HAProxy's way: accept, the ClientHello, the upstream
// connect, the replay and the spliced tunnel are steps of a state machine
// run from one epoll set, with no goroutine, runtime-poller registration
// or timer per connection. A server runs one loop per core (GOMAXPROCS);
// each loop is one goroutine that waits in the runtime poller on its
// epoll descriptor (so it blocks no thread) and owns its connections: only
// it touches them, and other goroutines reach them through its command
// queue. Anything off the common path — a bridge route, a refusal, a
// malformed ClientHello, a PROXY header, a host-name upstream — is handed
// to the goroutine path (session.go) with the bytes read so far, which
// then behaves exactly as if it had read them itself.
//
// The loop reaches its server and sessions only through loopHost and
// loopSession, and the kernel only through internal/rawnet. The states of
// a connection (sni/README.md, "Event loop", has the table with results):
//
//	state        event                                     next
//	accepting    admitted                                  reading hello (stHello)
//	accepting    refused (allow, limits, closing)          closed
//	accepting    a trusted balancer's connection           handed off, unread
//	reading      a whole ClientHello, IP splice route      dialing (stConnect)
//	reading      anything else, its deadline               handed off (fromHello, routed)
//	dialing      connected                                 replaying (stReplay), then tunnel
//	dialing      error, the attempt's deadline             dialing the next, or closed
//	tunnel       a destination full                        draining that way (held bytes)
//	tunnel       end of stream one way                     half-closed
//	half-closed  end of stream the other way               closed (ok)
//	tunnel       an error, timeouts.idle                   closed
//	any          abort (Close, Shutdown)                   closed (stDone)
type eventLoop struct {
	h        loopHost
	copyOnly bool // (tests) no splice: every tunnel copies through buf
	epfd     int
	evfd     int      // eventfd: a command is queued
	file     *os.File // epfd in the runtime poller
	rc       syscall.RawConn
	conns    map[uint64]*lconn
	lns      map[uint64]*loopListener
	nextID   uint64
	events   []rawnet.Event
	now      time.Time
	// sweepAt is when the next deadline falls (ClientHello, connect
	// attempt, idle, a paused listener); zero: none.
	sweepAt  time.Time
	armedAt  time.Time         // epoll file's read deadline as last set
	runq     []*lconn          // connections with work left after their budget
	pipes    []*pipe           // free pipes
	buf      [copyBufSize]byte // small bursts are copied through it
	paused   map[*loopListener]time.Time
	backoffs map[*loopListener]time.Duration

	mu      sync.Mutex
	cmds    []loopCmd
	stopped bool
	done    chan struct{}
}

// loopHost is everything an event loop asks of its server (loopserve_linux.go
// has the server's side).
type loopHost interface {
	// open admits a connection accepted on listener from client at now,
	// with ctl the session's handle on it; res != "" refuses it, and the
	// loop passes the refusal to the session's refuse.
	open(ctl sessionConn, listener string, client *net.TCPAddr, now time.Time) (ls loopLink, res string, err error)
	// viaBalancer: client is a trusted balancer, whose connection the
	// goroutine path serves from its PROXY header on (serve).
	viaBalancer(client *net.TCPAddr) bool
	serve(nc net.Conn, listener string)
	stopping() bool // closing or stopped accepting: accept errors are expected
	newPipe() (*pipe, error)
	logger() *slog.Logger
	warnf(reason, msg string, args ...any)
}

// loopSession is everything a loop connection asks of its session: the
// method set of loopLink (looplink.go), which a connection holds by value
// (no allocation, no indirection); the loop calls nothing else of it.
// Calls never allocate on the tunnel's path.
type loopSession interface {
	limits() loopLimits
	// readHello reads from r: true once the ClientHello is whole; false,
	// nil: more to come; an error: hand the connection off.
	readHello(r io.Reader, now time.Time) (bool, error)
	// route returns the walk, started at now, over the candidates of a
	// splice route whose every address usable accepts; false: hand off,
	// routed.
	route(usable func(addr string) bool, now time.Time) (upstream.Attempts, bool)
	// dialed reports the outcome of the attempt on the walk's current
	// candidate (passive health); after a failure, false means try no
	// other candidate.
	dialed(a *upstream.Attempts, err error, took time.Duration) bool
	connectFailed(a *upstream.Attempts)
	replay(pend [][]byte, local localAddrer) ([][]byte, error)
	tunnelOpen()
	moved(up bool, n int)
	refuse(res string, err error)
	end(result string, err error, routed bool)
	handoff(nc net.Conn, routed bool)
}

var _ loopSession = (*loopLink)(nil)

// Kinds of epoll token: the low two bits; the rest is the id.
const (
	tokClient   = 1
	tokUpstream = 2
	tokListener = 3
)

type cmdOp uint8

const (
	cmdAbort  cmdOp = iota + 1 // a session was aborted (Close, Shutdown)
	cmdExpire                  // a session's deadline was set in the past
	cmdAddListener
	cmdDropListener
	cmdStop
	cmdFunc // run fn in the loop (tests)
)

// loopCmd is a request from another goroutine; done, when not nil, is
// closed once the loop has carried it out.
type loopCmd struct {
	op   cmdOp
	c    *lconn
	ln   *loopListener
	fn   func()
	done chan struct{}
}

// Loop limits.
const (
	loopEvents   = 256 // events taken per epoll_wait
	acceptBatch  = 64  // accepts per listener event before others get a turn
	pumpBudget   = 16  // splice chunks per direction before others get a turn
	loopPipePool = 32  // free pipes a loop keeps
)

// loopSweepMin is the shortest time between two deadline sweeps.
const loopSweepMin = 10 * time.Millisecond

// newEventLoop opens the epoll set and starts the loop's goroutine.
func newEventLoop(h loopHost, copyOnly bool) (*eventLoop, error) {
	epfd, evfd, err := openEpoll()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		rawnet.Close(evfd)
		return nil, err
	}
	l := &eventLoop{
		h: h, copyOnly: copyOnly, epfd: epfd, evfd: evfd, file: f, rc: rc,
		conns:    make(map[uint64]*lconn),
		lns:      make(map[uint64]*loopListener),
		events:   make([]rawnet.Event, loopEvents),
		paused:   make(map[*loopListener]time.Time),
		backoffs: make(map[*loopListener]time.Duration),
		done:     make(chan struct{}),
	}
	go l.run()
	return l, nil
}

// openEpoll opens a non-blocking epoll set (so that os.NewFile hands it
// to the runtime poller) watching an eventfd under token 0.
func openEpoll() (epfd, evfd int, err error) {
	if epfd, err = rawnet.EpollCreate(); err != nil {
		return -1, -1, os.NewSyscallError("epoll_create1", err)
	}
	if evfd, err = rawnet.Eventfd(); err != nil {
		rawnet.Close(epfd)
		return -1, -1, os.NewSyscallError("eventfd", err)
	}
	ev := rawnet.NewEvent(rawnet.EPOLLIN, 0)
	op := "epoll_ctl"
	err = rawnet.EpollCtl(epfd, rawnet.EPOLL_CTL_ADD, evfd, &ev)
	if err == nil {
		op = "fcntl"
		_, err = rawnet.EnsureNonblock(epfd)
	}
	if err != nil {
		rawnet.Close(epfd)
		rawnet.Close(evfd)
		return -1, -1, os.NewSyscallError(op, err)
	}
	return epfd, evfd, nil
}

// post queues a command for the loop; false when the loop has stopped.
func (l *eventLoop) post(c loopCmd) bool {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.cmds = append(l.cmds, c)
	first := len(l.cmds) == 1
	l.mu.Unlock()
	if first {
		rawnet.Signal(l.evfd)
	}
	return true
}

// call posts a command and waits until the loop has carried it out.
func (l *eventLoop) call(c loopCmd) {
	c.done = make(chan struct{})
	if l.post(c) {
		<-c.done
	}
}

func (l *eventLoop) stop() {
	l.call(loopCmd{op: cmdStop})
	<-l.done
}

// run is the loop's goroutine.
func (l *eventLoop) run() {
	defer close(l.done)
	defer l.closeAll()
	for {
		n, err := l.wait()
		l.now = time.Now()
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			l.h.logger().Error("event loop stopped", "err", err)
			return
		}
		for i := range n {
			l.dispatch(&l.events[i])
		}
		if l.commands() {
			return
		}
		l.runQueued()
		if !l.sweepAt.IsZero() && !l.now.Before(l.sweepAt) {
			l.sweep()
		}
		l.arm()
	}
}

// wait returns the next batch of events, waiting in the runtime poller
// while the set has none (and no connection has work queued); it returns
// os.ErrDeadlineExceeded at sweepAt.
func (l *eventLoop) wait() (int, error) {
	var n int
	var werr error
	err := l.rc.Read(func(uintptr) bool {
		for {
			n, werr = rawnet.EpollWaitNow(l.epfd, l.events)
			if werr != rawnet.EINTR {
				break
			}
		}
		return n != 0 || werr != nil || len(l.runq) > 0
	})
	if err == nil {
		err = werr
	}
	return max(n, 0), err
}

// arm sets the poller deadline that ends wait at the next sweep.
func (l *eventLoop) arm() {
	if l.sweepAt.Equal(l.armedAt) {
		return
	}
	l.armedAt = l.sweepAt
	l.file.SetReadDeadline(l.sweepAt)
}

// due makes sure a sweep runs no later than t.
func (l *eventLoop) due(t time.Time) {
	if t.IsZero() {
		return
	}
	if l.sweepAt.IsZero() || t.Before(l.sweepAt) {
		l.sweepAt = t
	}
}

// Readiness an event reports.
const (
	evReadable = rawnet.EPOLLIN | rawnet.EPOLLRDHUP | rawnet.EPOLLHUP | rawnet.EPOLLERR
	evWritable = rawnet.EPOLLOUT | rawnet.EPOLLHUP | rawnet.EPOLLERR
	evHangUp   = rawnet.EPOLLRDHUP | rawnet.EPOLLHUP | rawnet.EPOLLERR
	evFailed   = rawnet.EPOLLERR | rawnet.EPOLLHUP
)

func (l *eventLoop) dispatch(ev *rawnet.Event) {
	tok := ev.Token()
	if tok == 0 {
		rawnet.Drain(l.evfd)
		return
	}
	id := tok >> 2
	if tok&3 == tokListener {
		if ln := l.lns[id]; ln != nil {
			l.accept(ln)
		}
		return
	}
	c := l.conns[id]
	if c == nil {
		return // ended earlier in this batch
	}
	e := &c.client
	if tok&3 == tokUpstream {
		e = &c.upstream
	}
	e.seen(ev)
	l.step(c)
}

// commands carries out the queued commands; true means stop.
func (l *eventLoop) commands() bool {
	l.mu.Lock()
	cmds := l.cmds
	l.cmds = nil
	l.mu.Unlock()
	stop := false
	for _, c := range cmds {
		switch c.op {
		case cmdAbort:
			if l.conns[c.c.id] == c.c {
				l.abort(c.c)
			}
		case cmdExpire:
			if l.conns[c.c.id] == c.c && c.c.state == stHello {
				l.handoff(c.c, false)
			}
		case cmdAddListener:
			l.addListener(c.ln)
		case cmdDropListener:
			l.dropListener(c.ln)
		case cmdStop:
			stop = true
		case cmdFunc:
			c.fn()
		}
		if c.done != nil {
			close(c.done)
		}
	}
	if stop {
		l.stopCommands()
	}
	return stop
}

// stopCommands refuses commands from now on and releases the callers of
// those queued meanwhile.
func (l *eventLoop) stopCommands() {
	l.mu.Lock()
	l.stopped = true
	rest := l.cmds
	l.cmds = nil
	l.mu.Unlock()
	for _, c := range rest {
		if c.done != nil {
			close(c.done)
		}
	}
}

// runQueued gives the connections that used their budget another turn.
func (l *eventLoop) runQueued() {
	if len(l.runq) == 0 {
		return
	}
	q := l.runq
	l.runq = nil
	for _, c := range q {
		c.queued = false
		if l.conns[c.id] == c {
			l.step(c)
		}
	}
}

// sweep ends what passed its deadline and finds the next one.
func (l *eventLoop) sweep() {
	now := l.now
	l.sweepAt = time.Time{}
	for ln, until := range l.paused {
		if !now.Before(until) {
			delete(l.paused, ln)
			l.watchListener(ln)
		} else {
			l.due(until)
		}
	}
	for _, c := range l.conns {
		dl := c.deadline()
		switch {
		case dl.IsZero():
		case !now.Before(dl):
			l.expired(c)
		default:
			l.due(dl)
		}
	}
	if !l.sweepAt.IsZero() {
		l.sweepAt = maxTime(l.sweepAt, now.Add(loopSweepMin))
	}
}

// closeAll releases what the loop holds once it stops: no connection is
// left by then (Shutdown and Close wait for them first).
func (l *eventLoop) closeAll() {
	for _, c := range l.conns {
		l.abort(c)
	}
	for _, ln := range l.lns {
		l.dropListener(ln)
	}
	for _, p := range l.pipes {
		p.close()
	}
	l.pipes = nil
	l.file.Close()
	rawnet.Close(l.evfd)
}

// getPipe returns an empty pipe from the loop's pool, or a new one.
func (l *eventLoop) getPipe() (*pipe, error) {
	if n := len(l.pipes); n > 0 {
		p := l.pipes[n-1]
		l.pipes = l.pipes[:n-1]
		return p, nil
	}
	return l.h.newPipe()
}

// putPipe returns an empty pipe to the pool; one holding bytes is closed.
func (l *eventLoop) putPipe(p *pipe) {
	if p.n == 0 && len(l.pipes) < loopPipePool {
		l.pipes = append(l.pipes, p)
		return
	}
	p.close()
}

// register adds fd to the set, edge-triggered for both directions, under
// the token of c's side kind.
func (l *eventLoop) register(fd int, c *lconn, kind uint64) error {
	ev := rawnet.NewEvent(rawnet.EPOLLIN|rawnet.EPOLLOUT|rawnet.EPOLLRDHUP|rawnet.EPOLLET, c.id<<2|kind)
	if err := rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}
