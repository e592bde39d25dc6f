package sni

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// loopListener is a TLS listener whose connections the event loops
// accept: every loop watches a duplicate of its descriptor (EPOLLEXCLUSIVE,
// so one loop wakes per connection). It stands for the listener in the
// server's set: closing it takes it out of every loop, then closes the
// listener itself.
type loopListener struct {
	net.Listener
	s     *Server
	fd    int // the loops' duplicate
	label string
	loops []*eventLoop
	ids   map[*eventLoop]uint64

	once    sync.Once
	dropped atomic.Bool // Close began: a loop must not watch it any more
	closed  chan struct{}
	fdDone  chan struct{} // the loops' duplicate is closed
	mu      sync.Mutex
	err     error // a fatal accept error, which Serve returns
}

// serveLoop serves ln from the event loops when it can: a TCP listener of
// kind TLS on a server that dials upstreams itself. ok false: the caller
// serves ln with its accept goroutine.
func (s *Server) serveLoop(ln net.Listener, kind string) (err error, ok bool) {
	wl, isOurs := ln.(*Listener)
	if !isOurs || kind != kindTLS || s.loopOff || !s.rawDial {
		return nil, false
	}
	loops, err := s.startLoops()
	if err != nil || len(loops) == 0 {
		return nil, false
	}
	rc, err := wl.SyscallConn()
	if err != nil {
		return nil, false
	}
	fd := -1
	var derr error
	if cerr := rc.Control(func(sfd uintptr) { fd, derr = unix.FcntlInt(sfd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil || derr != nil {
		return nil, false
	}
	// The loops' accept4 must never block (rawsys_linux.go).
	if _, err := rawEnsureNonblock(fd); err != nil {
		unix.Close(fd)
		return nil, false
	}
	// See setListenerNoDelay.
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	lln := &loopListener{Listener: ln, s: s, fd: fd, label: ln.Addr().String(), loops: loops,
		ids: make(map[*eventLoop]uint64), closed: make(chan struct{}), fdDone: make(chan struct{})}
	if !s.trackListener(lln) {
		lln.Close()
		return ErrServerClosed, true
	}
	defer s.untrackListener(lln)
	s.log.Info("listening", "listener", lln.label, "kind", kind)
	for _, l := range loops {
		l.call(loopCmd{op: cmdAddListener, ln: lln})
	}
	select {
	case <-lln.closed:
	case <-wl.closed: // closed by its owner (a reload that drops it)
		lln.Close()
	}
	<-lln.fdDone // the socket no longer listens once Serve returns
	lln.mu.Lock()
	defer lln.mu.Unlock()
	if lln.err != nil && !s.closing.Load() && !s.stopped.Load() {
		return lln.err, true
	}
	return ErrServerClosed, true
}

// Accept is not how a loop listener's connections arrive: it waits until
// the listener is closed.
func (ln *loopListener) Accept() (net.Conn, error) {
	<-ln.closed
	return nil, net.ErrClosed
}

// Close closes the listener and takes it out of every loop. It does not
// wait for the loops (its callers hold the server's lock, which a loop may
// be waiting for): the loops' duplicate is closed once each has dropped
// it, and until then a loop may still accept a connection, which the
// server then refuses or serves as any other.
func (ln *loopListener) Close() error {
	var err error
	ln.once.Do(func() {
		ln.dropped.Store(true)
		var dones []chan struct{}
		for _, l := range ln.loops {
			c := loopCmd{op: cmdDropListener, ln: ln, done: make(chan struct{})}
			if l.post(c) {
				dones = append(dones, c.done)
			}
		}
		go func() {
			for _, d := range dones {
				<-d
			}
			unix.Close(ln.fd)
			close(ln.fdDone)
		}()
		err = ln.Listener.Close()
		close(ln.closed)
	})
	return err
}

// fail ends the listener after an accept error that retrying cannot cure.
func (ln *loopListener) fail(err error) {
	ln.mu.Lock()
	if ln.err == nil {
		ln.err = err
	}
	ln.mu.Unlock()
	go ln.Close() // Close waits for this loop: not from it
}

func (l *eventLoop) addListener(ln *loopListener) {
	if ln.dropped.Load() {
		return
	}
	l.nextID++
	ln.mu.Lock()
	ln.ids[l] = l.nextID
	ln.mu.Unlock()
	l.lns[l.nextID] = ln
	l.watchListener(ln)
}

// watchListener adds ln's descriptor to the set.
func (l *eventLoop) watchListener(ln *loopListener) {
	id := l.listenerID(ln)
	if id == 0 || l.lns[id] != ln {
		return
	}
	tok := id<<2 | tokListener
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(uint32(tok)), Pad: int32(uint32(tok >> 32))}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.fd, &ev); err == unix.EINVAL {
		ev.Events = unix.EPOLLIN
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, ln.fd, &ev)
	}
}

func (l *eventLoop) listenerID(ln *loopListener) uint64 {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.ids[l]
}

// dropListener stops watching ln; the loop never touches its descriptor
// again.
func (l *eventLoop) dropListener(ln *loopListener) {
	id := l.listenerID(ln)
	if id == 0 || l.lns[id] != ln {
		return
	}
	delete(l.lns, id)
	delete(l.paused, ln)
	delete(l.backoffs, ln)
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.fd, nil)
}

// accept takes up to acceptBatch connections from ln, once it made sure
// that ln's socket is still non-blocking.
func (l *eventLoop) accept(ln *loopListener) {
	if !l.nonblocking(ln) {
		return
	}
	for range acceptBatch {
		fd, raddr, err := rawAccept4(ln.fd)
		switch err {
		case nil:
			delete(l.backoffs, ln)
			l.admit(ln, fd, raddr)
			continue
		case unix.EAGAIN:
			return
		case unix.EINTR, unix.ECONNABORTED:
			continue
		}
		if l.s.closing.Load() || l.s.stopped.Load() {
			return
		}
		serr := os.NewSyscallError("accept4", err)
		if !acceptRetryable(err) {
			ln.fail(fmt.Errorf("accept on %s: %w", ln.label, serr))
			l.dropListener(ln)
			return
		}
		// Out of descriptors or memory: stop watching ln a while, as the
		// accept goroutine's back-off does.
		b := nextBackoff(l.backoffs[ln])
		l.backoffs[ln] = b
		l.s.log.Warn("accept failed; retrying", "listener", ln.label, "err", serr, "backoff", b)
		rawEpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ln.fd, nil)
		until := l.now.Add(b)
		l.paused[ln] = until
		l.due(until)
		return
	}
}

// nonblocking makes ln's socket non-blocking again if anyone cleared
// O_NONBLOCK on it (a process it is shared with: the new one of a
// hand-over, a tool given the descriptor), so that accept4 cannot block.
// False: its flags cannot be read or set, and ln ends as after a fatal
// accept error (Serve returns it).
func (l *eventLoop) nonblocking(ln *loopListener) bool {
	restored, err := rawEnsureNonblock(ln.fd)
	if err != nil {
		ln.fail(fmt.Errorf("accept on %s: make the listening socket non-blocking: %w", ln.label, os.NewSyscallError("fcntl", err)))
		l.dropListener(ln)
		return false
	}
	if restored {
		l.s.warnf("listener_blocking", "listening socket found in blocking mode (a process sharing it cleared O_NONBLOCK); made non-blocking again", "listener", ln.label)
	}
	return true
}

// acceptRetryable reports the accept errors net treats as temporary.
func acceptRetryable(err error) bool {
	var errno interface{ Temporary() bool }
	if errors.As(err, &errno) && errno.Temporary() {
		return true
	}
	switch err {
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM, unix.EPERM, unix.EPROTO:
		return true
	}
	return false
}

// admit applies listen.allow and the connection limits to a new
// connection, as Server.accept does, and starts reading its ClientHello.
// One from a trusted balancer goes to the goroutine path, which reads its
// PROXY header first.
func (l *eventLoop) admit(ln *loopListener, fd int, raddr *net.TCPAddr) {
	s := l.s
	cfg := s.cfg.Load()
	if len(cfg.ProxyProtocolFrom) > 0 && inPrefixes(cfg.ProxyProtocolFrom, raddr) {
		c, err := fdNetConn(fd)
		if err != nil {
			s.log.Warn("accept failed", "listener", ln.label, "err", err)
			return
		}
		s.accept(c, ln.label, kindTLS)
		return
	}
	l.nextID++
	c := &lconn{l: l, id: l.nextID, cfd: fd, ufd: -1, raddr: raddr, listener: ln}
	ss := &session{conn: c, listener: ln.label, kind: kindTLS, cfg: cfg, start: l.now, client: raddr}
	c.ss = ss
	l.conns[c.id] = c // before track: an abort right after finds it
	res, err := s.checkAllow(ss)
	if res == "" {
		res, err = s.track(ss)
	}
	if res != "" {
		delete(l.conns, c.id)
		c.own.Store(ownReleased) // finish closes it, or the tarpit holds it
		s.refuse(ss, res, err)
		return
	}
	s.enterHandshake(ss)
	if err := l.register(fd, c, tokClient); err != nil {
		l.handoff(c, false)
		return
	}
	c.state = stHello
	// No read yet: adding the socket to the set reports it readable at
	// once if the ClientHello is there, so no read(2) ends in EAGAIN.
	l.due(c.deadline())
}

// fdNetConn hands a socket the loop owned to the runtime poller.
func fdNetConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "")
	c, err := net.FileConn(f)
	f.Close()
	return c, err
}

// setListenerNoDelay sets TCP_NODELAY on a listening socket: on Linux the
// connections it establishes inherit it (net sets it on each accepted
// connection instead), so the event loop saves a setsockopt(2) per
// connection. Set when the listener is opened, so that no connection
// established before lacks it.
func setListenerNoDelay(tl *net.TCPListener) {
	if rc, err := tl.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) })
	}
}
