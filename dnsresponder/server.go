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

// Server serves DNS over UDP and TCP on sockets the caller opened: UDP
// with its own loop (a few reading goroutines, routed names answered
// straight from the wire by a Handler), TCP with miekg/dns. Its handler can be replaced at
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
	running map[stopper]chan struct{} // closed when that Serve call returns

	// MaxTCPConns bounds the connections served at once per ServeTCP
	// socket; one more is closed at once. 0: DefaultMaxTCPConns; negative:
	// no limit. Set it before serving.
	MaxTCPConns int
	// MaxTCPConnsPerClient bounds the connections one client address
	// holds at once per ServeTCP socket; one more is closed at once. 0:
	// DefaultMaxTCPConnsPerClient; negative: no limit. Set it before
	// serving.
	MaxTCPConnsPerClient int

	warn        *warnLimiter // refused and evicted TCP connections
	udpReaders  int          // reading goroutines per UDP socket; 0: one
	maxInFlight int          // UDP queries on goroutines of their own; 0: DefaultMaxInFlight
	noBatch     bool         // read and write one datagram per system call (tests)

	tcpClosedFunc func() // a TCP connection left the limit's set (tests)
}

// stopper is one Serve call in progress, as Shutdown sees it.
type stopper interface {
	shutdown(ctx context.Context) error
}

// miekgServer is a socket served by miekg/dns (TCP, and UDP sockets other
// than *net.UDPConn).
type miekgServer struct{ *dns.Server }

func (m miekgServer) shutdown(ctx context.Context) error { return m.ShutdownContext(ctx) }

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
	s := &Server{logger: logger, running: make(map[stopper]chan struct{}), warn: newWarnLimiter(logger)}
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
//
// A *net.UDPConn is read by one goroutine, answering a batch of queries
// (recvmmsg and sendmmsg on Linux) before reading the next; only queries that may wait on the network
// (forwarded, or any query for a handler other than Handler) get a
// goroutine of their own, at most DefaultMaxInFlight at once (the rest are
// dropped and counted). Any other net.PacketConn is served by miekg/dns.
func (s *Server) ServeUDP(pc net.PacketConn) error {
	conn, ok := pc.(*net.UDPConn)
	if !ok {
		return s.serve(&dns.Server{PacketConn: pc, Net: "udp", UDPSize: readBufferSize}, pc.LocalAddr())
	}
	u := newUDPServer(s, conn)
	if !s.track(u) {
		conn.Close()
		return ErrServerClosed
	}
	defer s.untrack(u)
	return u.serve()
}

// ServeTCP accepts connections on ln and answers the queries on them until
// Shutdown or Close, which close ln; it returns nil then. Each connection
// gets 2s for its first query and 8s between queries (miekg/dns defaults),
// CrowdedTCPIdleTimeout while more than three quarters of MaxTCPConns are
// open. At most MaxTCPConns are open at once (when full, the one idle
// longest is closed to admit a new one) and MaxTCPConnsPerClient from one
// client address.
func (s *Server) ServeTCP(ln net.Listener) error {
	addr := ln.Addr()
	max := orDefault(s.MaxTCPConns, DefaultMaxTCPConns)
	perClient := orDefault(s.MaxTCPConnsPerClient, DefaultMaxTCPConnsPerClient)
	if max > 0 || perClient > 0 {
		ln = newLimitListener(ln, s, max, perClient)
	}
	return s.serve(&dns.Server{Listener: ln, Net: "tcp"}, addr)
}

// orDefault is n, or def when n is zero.
func orDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func (s *Server) serve(srv *dns.Server, addr net.Addr) error {
	var kick sync.WaitGroup // a Shutdown that raced with the start
	srv.Handler = dns.HandlerFunc(s.dispatch)
	srv.MsgAcceptFunc = acceptAll
	srv.MsgInvalidFunc = s.invalid
	srv.NotifyStartedFunc = func() { s.started(srv, addr, &kick) }
	if !s.track(miekgServer{srv}) {
		closeSocket(srv)
		return ErrServerClosed
	}
	err := srv.ActivateAndServe()
	kick.Wait()
	s.untrack(miekgServer{srv})
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
	s.announce(addr)
}

// announce logs that addr is served and tells NotifyStartedFunc.
func (s *Server) announce(addr net.Addr) {
	s.logger.Info("dns: serving", "listener", addr.String(), "network", addr.Network())
	if s.NotifyStartedFunc != nil {
		s.NotifyStartedFunc(addr)
	}
}

func (s *Server) track(srv stopper) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.running[srv] = make(chan struct{})
	return true
}

func (s *Server) untrack(srv stopper) {
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
		wg.Go(func() { srv.shutdown(ctx) }) //nolint:errcheck // miekg's "not started": started() stops it
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
