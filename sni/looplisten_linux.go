package sni

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/snigate/snigate/internal/rawnet"
)

// loopListener is a TLS listener whose connections the event loops
// accept: every loop watches a duplicate of its descriptor (EPOLLEXCLUSIVE,
// so one loop wakes per connection). It stands for the listener in the
// server's set: closing it takes it out of every loop, then closes the
// listener itself.
type loopListener struct {
	net.Listener
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
			rawnet.Close(ln.fd)
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
	ev := rawnet.NewEvent(rawnet.EPOLLIN|rawnet.EPOLLEXCLUSIVE, id<<2|tokListener)
	if err := rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_ADD, ln.fd, &ev); err == syscall.EINVAL {
		ev.Events = rawnet.EPOLLIN
		rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_ADD, ln.fd, &ev)
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
	rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_DEL, ln.fd, nil)
}

// accept takes up to acceptBatch connections from ln, once it made sure
// that ln's socket is still non-blocking.
func (l *eventLoop) accept(ln *loopListener) {
	if !l.nonblocking(ln) {
		return
	}
	for range acceptBatch {
		fd, peer, err := rawnet.Accept4(ln.fd)
		switch err {
		case nil:
			delete(l.backoffs, ln)
			l.admit(ln, fd, peer.TCPAddr())
			continue
		case rawnet.EAGAIN:
			return
		case rawnet.EINTR, rawnet.ECONNABORTED:
			continue
		}
		if l.h.stopping() {
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
		l.h.logger().Warn("accept failed; retrying", "listener", ln.label, "err", serr, "backoff", b)
		rawnet.EpollCtl(l.epfd, rawnet.EPOLL_CTL_DEL, ln.fd, nil)
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
	restored, err := rawnet.EnsureNonblock(ln.fd)
	if err != nil {
		ln.fail(fmt.Errorf("accept on %s: make the listening socket non-blocking: %w", ln.label, os.NewSyscallError("fcntl", err)))
		l.dropListener(ln)
		return false
	}
	if restored {
		l.h.warnf("listener_blocking", "listening socket found in blocking mode (a process sharing it cleared O_NONBLOCK); made non-blocking again", "listener", ln.label)
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
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EPERM, syscall.EPROTO:
		return true
	}
	return false
}

// admit applies listen.allow and the connection limits to a new
// connection, as Server.accept does, and starts reading its ClientHello.
// One from a trusted balancer goes to the goroutine path, which reads its
// PROXY header first.
func (l *eventLoop) admit(ln *loopListener, fd int, client *net.TCPAddr) {
	if l.h.viaBalancer(client) {
		nc, err := fdNetConn(fd)
		if err != nil {
			l.h.logger().Warn("accept failed", "listener", ln.label, "err", err)
			return
		}
		l.h.serve(nc, ln.label)
		return
	}
	c := l.newLconn(fd, ln)
	l.conns[c.id] = c // before open: an abort right after finds it
	ss, res, err := l.h.open(c, ln.label, client, l.now)
	c.ss = ss
	if res != "" {
		delete(l.conns, c.id)
		c.own.Store(ownReleased) // finish closes it, or the tarpit holds it
		ss.refuse(res, err)
		return
	}
	lim := ss.limits()
	c.until, c.idle = lim.helloBy, lim.idle
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
		rc.Control(func(fd uintptr) { rawnet.SetNoDelay(int(fd)) })
	}
}
