package dnsresponder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"

	"github.com/miekg/dns"
)

// ErrServerClosed is returned by ServeUDP and ServeTCP when called after
// Shutdown or Close.
var ErrServerClosed = errors.New("dnsresponder: server closed")

// readBufferSize bounds a query read over UDP; a longer datagram is cut and
// answered FORMERR.
const readBufferSize = 4096

// Server serves DNS over UDP and TCP on sockets the caller opened, with
// miekg/dns doing the reading and writing. Its handler can be replaced at
// any time (a reload); queries in flight finish with the old one. Every
// packet, even one that cannot be parsed, reaches the handler or its
// InvalidMsg method, so all of them are counted.
type Server struct {
	// NotifyStartedFunc, when set, is called once per ServeUDP or ServeTCP
	// call, with the socket's address, once it is being read. Set it
	// before serving.
	NotifyStartedFunc func(addr net.Addr)

	logger  *slog.Logger
	handler atomic.Pointer[handlerBox]

	mu      sync.Mutex
	closed  bool
	running map[*dns.Server]chan struct{} // closed when that Serve call returns
}

type handlerBox struct{ h dns.Handler }

// invalidMsgHandler is the optional capability of a handler that wants to
// know about packets the server could not parse (Handler has it).
type invalidMsgHandler interface {
	InvalidMsg(m []byte, err error)
}

// NewServer returns a Server answering with h (nil: REFUSED to everything)
// and logging to logger (nil: slog.Default()). It opens nothing.
func NewServer(h dns.Handler, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{logger: logger, running: make(map[*dns.Server]chan struct{})}
	s.SetHandler(h)
	return s
}

// SetHandler makes h (nil: REFUSED to everything) answer every query
// received from now on.
func (s *Server) SetHandler(h dns.Handler) {
	if h == nil {
		h = dns.HandlerFunc(refuse)
	}
	s.handler.Store(&handlerBox{h})
}

func refuse(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeRefused)
	w.WriteMsg(m) //nolint:errcheck // nothing to do about a client gone away
}

// ServeUDP answers queries arriving on pc until Shutdown or Close, which
// close pc; it returns nil then. Call it once per socket, from its own
// goroutine. On a socket bound to a wildcard address (":53") each reply
// leaves from the address its query came to (IP_PKTINFO).
func (s *Server) ServeUDP(pc net.PacketConn) error {
	return s.serve(&dns.Server{PacketConn: plainIfBound(pc), Net: "udp", UDPSize: readBufferSize}, pc.LocalAddr())
}

// boundPacketConn hides a *net.UDPConn from miekg/dns, which then reads
// and writes without per-packet control messages (IP_PKTINFO): ~8% less
// CPU per query. Only for a socket bound to one address, whose replies
// can leave from nowhere else.
type boundPacketConn struct{ net.PacketConn }

func plainIfBound(pc net.PacketConn) net.PacketConn {
	if u, ok := pc.(*net.UDPConn); ok {
		if a, ok := u.LocalAddr().(*net.UDPAddr); ok && !a.IP.IsUnspecified() {
			return boundPacketConn{pc}
		}
	}
	return pc
}

// ServeTCP accepts connections on ln and answers the queries on them until
// Shutdown or Close, which close ln; it returns nil then. Each connection
// gets 2s for its first query and 8s between queries (miekg/dns defaults).
func (s *Server) ServeTCP(ln net.Listener) error {
	return s.serve(&dns.Server{Listener: ln, Net: "tcp"}, ln.Addr())
}

func (s *Server) serve(srv *dns.Server, addr net.Addr) error {
	var kick sync.WaitGroup // a Shutdown that raced with the start
	srv.Handler = dns.HandlerFunc(s.dispatch)
	srv.MsgAcceptFunc = acceptAll
	srv.MsgInvalidFunc = s.invalid
	srv.NotifyStartedFunc = func() { s.started(srv, addr, &kick) }
	if !s.track(srv) {
		closeSocket(srv)
		return ErrServerClosed
	}
	err := srv.ActivateAndServe()
	kick.Wait()
	s.untrack(srv)
	if err != nil {
		return fmt.Errorf("serve dns on %s %s: %w", addr.Network(), addr, err)
	}
	return nil
}

// acceptAll lets every packet with a header through to the handler, which
// decides what is wrong with it and counts it (miekg/dns's default would
// reject some before the handler could see them).
func acceptAll(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept }

func (s *Server) dispatch(w dns.ResponseWriter, req *dns.Msg) {
	s.handler.Load().h.ServeDNS(w, req)
}

func (s *Server) invalid(m []byte, err error) {
	if h, ok := s.handler.Load().h.(invalidMsgHandler); ok {
		h.InvalidMsg(m, err)
	}
}

// started runs on the serving goroutine once srv reads its socket. If
// Shutdown ran before srv had started, srv missed it: stop it now, from a
// goroutine since ShutdownContext waits for this one.
func (s *Server) started(srv *dns.Server, addr net.Addr, kick *sync.WaitGroup) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		kick.Go(func() { srv.Shutdown() }) //nolint:errcheck // reported by the Shutdown caller
		return
	}
	s.logger.Info("dns: serving", "listener", addr.String(), "network", addr.Network())
	if s.NotifyStartedFunc != nil {
		s.NotifyStartedFunc(addr)
	}
}

func (s *Server) track(srv *dns.Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.running[srv] = make(chan struct{})
	return true
}

func (s *Server) untrack(srv *dns.Server) {
	s.mu.Lock()
	done := s.running[srv]
	delete(s.running, srv)
	s.mu.Unlock()
	close(done)
}

func closeSocket(srv *dns.Server) {
	if srv.PacketConn != nil {
		srv.PacketConn.Close()
	}
	if srv.Listener != nil {
		srv.Listener.Close()
	}
}

// Shutdown stops reading new queries on every socket, closes them, and
// waits until the queries in flight are answered and every Serve call has
// returned, or until ctx is done (it then returns ctx's error, and the
// stragglers finish within the forward budget).
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	running := maps.Clone(s.running)
	s.mu.Unlock()
	var wg sync.WaitGroup
	for srv := range running {
		wg.Go(func() { srv.ShutdownContext(ctx) }) //nolint:errcheck // "not started": started() stops it
	}
	wg.Wait()
	for _, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close stops serving at once: like Shutdown, without waiting for the
// queries in flight.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
