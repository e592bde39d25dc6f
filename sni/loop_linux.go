package sni

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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
type eventLoop struct {
	s      *Server
	epfd   int
	evfd   int      // eventfd: a command is queued
	file   *os.File // epfd in the runtime poller
	rc     syscall.RawConn
	conns  map[uint64]*lconn
	lns    map[uint64]*loopListener
	nextID uint64
	events []unix.EpollEvent
	now    time.Time
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
func newEventLoop(s *Server) (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	// Non-blocking, so that os.NewFile hands it to the runtime poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	f := os.NewFile(uintptr(epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		unix.Close(evfd)
		return nil, err
	}
	l := &eventLoop{
		s: s, epfd: epfd, evfd: evfd, file: f, rc: rc,
		conns:    make(map[uint64]*lconn),
		lns:      make(map[uint64]*loopListener),
		events:   make([]unix.EpollEvent, loopEvents),
		paused:   make(map[*loopListener]time.Time),
		backoffs: make(map[*loopListener]time.Duration),
		done:     make(chan struct{}),
	}
	go l.run()
	return l, nil
}

// startLoops starts the server's loops on first use; an error means the
// goroutine path serves instead.
func (s *Server) startLoops() ([]*eventLoop, error) {
	s.loopsOnce.Do(func() {
		n := runtime.GOMAXPROCS(0)
		for range n {
			l, err := newEventLoop(s)
			if err != nil {
				s.loopsErr = err
				for _, l := range s.loops {
					l.stop()
				}
				s.loops = nil
				return
			}
			s.loops = append(s.loops, l)
		}
	})
	return s.loops, s.loopsErr
}

// stopLoops ends the loops; call it once no connection is left.
func (s *Server) stopLoops() {
	s.loopsOnce.Do(func() {}) // no loop may start after this
	for _, l := range s.loops {
		l.stop()
	}
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
		one := [8]byte{1}
		unix.Write(l.evfd, one[:])
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
			l.s.log.Error("event loop stopped", "err", err)
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
			n, werr = rawEpollWaitNow(l.epfd, l.events)
			if werr != unix.EINTR {
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

func (l *eventLoop) dispatch(ev *unix.EpollEvent) {
	tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
	if tok == 0 {
		var b [8]byte
		unix.Read(l.evfd, b[:])
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
	in := ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	out := ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0
	if tok&3 == tokClient {
		c.cr, c.cw = c.cr || in, c.cw || out
		c.chup = c.chup || ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	} else {
		c.ur, c.uw = c.ur || in, c.uw || out
		c.uerr = c.uerr || ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0
		c.uhup = c.uhup || ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	}
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
	return stop
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
	unix.Close(l.evfd)
}

// getPipe returns an empty pipe from the loop's pool, or a new one.
func (l *eventLoop) getPipe() (*pipe, error) {
	if n := len(l.pipes); n > 0 {
		p := l.pipes[n-1]
		l.pipes = l.pipes[:n-1]
		return p, nil
	}
	return l.s.pipes.get()
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
	tok := c.id<<2 | kind
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET,
		Fd:     int32(uint32(tok)), Pad: int32(uint32(tok >> 32)),
	}
	if err := rawEpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}
