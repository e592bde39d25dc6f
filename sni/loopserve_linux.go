package sni

import (
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/snigate/snigate/internal/rawnet"
)

// The server's side of the event loop: which listeners the loops serve,
// starting and stopping them, and loopServer, the server as loopHost.

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
	if cerr := rc.Control(func(sfd uintptr) { fd, derr = rawnet.DupCloexec(int(sfd)) }); cerr != nil || derr != nil {
		return nil, false
	}
	// The loops' accept4 must never block (rawnet.Accept4).
	if _, err := rawnet.EnsureNonblock(fd); err != nil {
		rawnet.Close(fd)
		return nil, false
	}
	// See setListenerNoDelay.
	rawnet.SetNoDelay(fd)
	lln := &loopListener{Listener: ln, fd: fd, label: ln.Addr().String(), loops: loops,
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

// startLoops starts the server's loops on first use; an error means the
// goroutine path serves instead.
func (s *Server) startLoops() ([]*eventLoop, error) {
	s.loopsOnce.Do(func() {
		n := runtime.GOMAXPROCS(0)
		for range n {
			l, err := newEventLoop(loopServer{s}, s.loopCopyOnly)
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

// loopServer is the server as its loops' host.
type loopServer struct{ s *Server }

var _ loopHost = loopServer{}

func (h loopServer) open(ctl sessionConn, listener string, client *net.TCPAddr, now time.Time) (loopLink, string, error) {
	return h.s.openLoopSession(ctl, listener, client, now)
}

func (h loopServer) viaBalancer(client *net.TCPAddr) bool  { return h.s.viaBalancer(client) }
func (h loopServer) serve(nc net.Conn, listener string)    { h.s.accept(nc, listener, kindTLS) }
func (h loopServer) stopping() bool                        { return h.s.closing.Load() || h.s.stopped.Load() }
func (h loopServer) newPipe() (*pipe, error)               { return h.s.pipes.get() }
func (h loopServer) logger() *slog.Logger                  { return h.s.log }
func (h loopServer) warnf(reason, msg string, args ...any) { h.s.warnf(reason, msg, args...) }
