package sni

import (
	"context"
	"errors"
	"fmt"
	"github.com/snigate/snigate/internal/ratelog"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for zero Config fields; they are the configuration's defaults of
// timeouts.client_hello, timeouts.connect, timeouts.idle and
// max_connections.
const (
	DefaultClientHelloTimeout = 5 * time.Second
	DefaultConnectTimeout     = 5 * time.Second
	DefaultIdleTimeout        = time.Hour
	DefaultMaxConnections     = 10000
	// DefaultMaxHandshakes caps the default of Config.MaxHandshakes, which
	// is otherwise a quarter of MaxConnections.
	DefaultMaxHandshakes = 1024
	// DefaultMaxConnectionsPerClient is the default of
	// Config.MaxConnectionsPerClient.
	DefaultMaxConnectionsPerClient = 256
	// DefaultProxyHeaderTimeout is the default of Config.ProxyHeaderTimeout:
	// a balancer sends its PROXY header with the connection.
	DefaultProxyHeaderTimeout = time.Second
	// DefaultWarnInterval is how often one kind of client fault is logged
	// at Warn; metrics count every occurrence.
	DefaultWarnInterval = 10 * time.Second
	// DefaultConnectPort is the port a CONNECT request may name when
	// Config.ConnectPorts is empty.
	DefaultConnectPort = 443
)

// Config configures a Server. Each zero value means the documented
// default.
type Config struct {
	// ClientHelloTimeout bounds the time from accept until the whole
	// ClientHello (and a PROXY header, if one is required) is read.
	// 0: DefaultClientHelloTimeout.
	ClientHelloTimeout time.Duration
	// ConnectTimeout bounds connecting to an upstream, all retries
	// included, plus the upstream TLS handshake in bridge mode.
	// 0: DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleTimeout closes a tunnel that moved no byte either way for this
	// long. 0: DefaultIdleTimeout; negative: never.
	IdleTimeout time.Duration
	// FirstRequestTimeout bounds, on a bridge route, the time from the
	// end of the client's TLS handshake (and the upstream dial) to the
	// first byte of its first request; a connection that sent none is
	// closed with result "timeout". Until that byte it also counts in
	// MaxHandshakes. 0: DefaultFirstRequestTimeout; negative: no bound
	// (it still counts in MaxHandshakes).
	FirstRequestTimeout time.Duration
	// MaxConnections bounds the connections open at once, counted once
	// listen.allow admitted them (so a denied client never takes a slot);
	// one more is closed at once and counted with result "limit".
	// 0: DefaultMaxConnections; negative: no limit.
	MaxConnections int
	// MaxHandshakes bounds, per kind of listener (the TLS listeners
	// together, the CONNECT listener on its own), the connections that
	// have not yet sent a whole ClientHello (on the CONNECT listener: the
	// request and then the ClientHello) or, on a bridge route, have not
	// yet completed their TLS handshake and sent the first byte of their
	// first request. When it is reached, the oldest
	// pending connection of the source with the most pending ones is
	// closed (result "handshake_limit") and the new one takes its place,
	// so slow handshakes cannot starve the others, and the CONNECT
	// listener cannot starve the TLS ones. 0: a quarter of MaxConnections,
	// at least 1 and at most DefaultMaxHandshakes; negative: no limit.
	MaxHandshakes int
	// MaxConnectionsPerClient bounds the connections open at once from one
	// client address (the PROXY header's source for a trusted balancer's
	// connections); one more is closed at once and counted with result
	// "client_limit". 0: DefaultMaxConnectionsPerClient; negative: no
	// limit.
	MaxConnectionsPerClient int
	// ProxyHeaderTimeout bounds the time from accept until the PROXY
	// header of a ProxyProtocolFrom connection is read; the ClientHello
	// must still be complete within ClientHelloTimeout of the accept.
	// 0: DefaultProxyHeaderTimeout (at most ClientHelloTimeout).
	ProxyHeaderTimeout time.Duration
	// Allow lists the client networks admitted; empty admits all.
	Allow []netip.Prefix
	// ProxyProtocolFrom lists the networks of front load balancers whose
	// connections must start with a PROXY v1/v2 header; the header's
	// source address is then the client address. Empty: none.
	ProxyProtocolFrom []netip.Prefix
	// ConnectPorts are the ports a CONNECT request (ServeConnect) may name:
	// the ports of the TLS listeners. Empty: DefaultConnectPort only.
	ConnectPorts []int
	// AccessLog receives the line of each finished connection (see
	// Server.finish) at Info; the logger in force when a connection ends
	// writes its line. nil: Logger.
	AccessLog *slog.Logger

	// The fields below are fixed by New; SetConfig ignores them.

	// DialContext opens upstream TCP connections. nil: splice routes
	// dial IP upstreams with socket(2) and connect(2) (no net.Dialer
	// machinery on the hot path), everything else with a net.Dialer
	// without keepalive.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// WarnInterval rate-limits Warn lines per kind of client fault.
	// 0: DefaultWarnInterval.
	WarnInterval time.Duration
	Logger       *slog.Logger // nil: slog.Default()
	Metrics      *Metrics     // nil: no metrics
}

// Server accepts TLS connections, routes each on its ClientHello's server
// name and splices or bridges it to an upstream. Create it with New, call
// Serve once per listener, and stop it with Shutdown or Close.
type Server struct {
	cfg    atomic.Pointer[Config] // per-connection settings; SetConfig swaps it
	log    *slog.Logger
	m      *Metrics
	routes atomic.Pointer[Table]
	warn   ratelog.Limiter
	// refused rate-limits the connection lines of refusals (see refusal).
	refused ratelog.Limiter
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	pipes   *pipePool // splice pipes, held only while bytes are in flight
	// parker watches the sockets of idle spliced directions, which give
	// up their goroutine after parkAfter without bytes.
	parker *parker
	// tarpit holds the sockets of evicted pending connections a while.
	tarpit    tarpit
	parkAfter atomic.Int64 // nanoseconds; <= 0: never park
	// rawDial: splice routes connect with rawDial (Config.DialContext was
	// not set); else through dial.
	rawDial bool
	// loops run the TLS listeners' connections (loop_linux.go), started
	// with the first such listener; loopOff (tests) keeps every
	// connection on the goroutine path.
	loops     []*eventLoop
	loopsOnce sync.Once
	loopsErr  error
	loopOff   bool
	// loopCopyOnly (tests) keeps the loop's tunnels on the copy path.
	loopCopyOnly bool
	// ids names the connections in the log lines (connid.go).
	ids *connIDs

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	sessions  map[*session]struct{} // every connection with a goroutine
	counted   int                   // sessions holding a max_connections slot
	clients   map[netip.Addr]int    // slots held per client address
	wg        sync.WaitGroup        // one per session goroutine
	// handshakes are the pending-handshake budgets, by kind of listener
	// (budgetOf).
	handshakes [2]handshakeBudget
	closing    atomic.Bool
	stopped    atomic.Bool   // StopAccepting closed the listeners
	quit       chan struct{} // closed when shutting down starts
	quitOnce   sync.Once
	ctx        context.Context // canceled when connections are closed by force
	cancel     context.CancelFunc
}

// New checks cfg, fills in defaults and returns a server that routes with
// routes. It opens and starts nothing.
func New(cfg Config, routes *Table) (*Server, error) {
	if routes == nil {
		return nil, errors.New("sni: New: nil route table")
	}
	rawDial := cfg.DialContext == nil
	if err := withDefaults(&cfg); err != nil {
		return nil, err
	}
	s := &Server{
		rawDial:   rawDial,
		log:       cfg.Logger,
		m:         cfg.Metrics,
		dial:      cfg.DialContext,
		listeners: make(map[net.Listener]struct{}),
		sessions:  make(map[*session]struct{}),
		clients:   make(map[netip.Addr]int),
		quit:      make(chan struct{}),
		pipes:     newPipePool(),
		parker:    newParker(),
		ids:       newConnIDs(),
	}
	s.warn.Every = cfg.WarnInterval
	s.refused.Every = cfg.WarnInterval
	s.parkAfter.Store(int64(defaultParkAfter))
	s.cfg.Store(&cfg)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.routes.Store(routes)
	return s, nil
}

func withDefaults(cfg *Config) error {
	if cfg.ClientHelloTimeout < 0 || cfg.ConnectTimeout < 0 || cfg.WarnInterval < 0 || cfg.ProxyHeaderTimeout < 0 {
		return fmt.Errorf("sni: client hello timeout %v, connect timeout %v, warn interval %v, PROXY header timeout %v: want positive durations (0 for the default)",
			cfg.ClientHelloTimeout, cfg.ConnectTimeout, cfg.WarnInterval, cfg.ProxyHeaderTimeout)
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&cfg.ClientHelloTimeout, DefaultClientHelloTimeout)
	set(&cfg.ConnectTimeout, DefaultConnectTimeout)
	set(&cfg.IdleTimeout, DefaultIdleTimeout)
	set(&cfg.FirstRequestTimeout, DefaultFirstRequestTimeout)
	set(&cfg.WarnInterval, DefaultWarnInterval)
	set(&cfg.ProxyHeaderTimeout, min(DefaultProxyHeaderTimeout, cfg.ClientHelloTimeout))
	limitDefaults(cfg)
	if err := checkPorts(cfg.ConnectPorts); err != nil {
		return err
	}
	if len(cfg.ConnectPorts) == 0 {
		cfg.ConnectPorts = []int{DefaultConnectPort}
	}
	cfg.Allow = slices.Clone(cfg.Allow)
	cfg.ProxyProtocolFrom = slices.Clone(cfg.ProxyProtocolFrom)
	cfg.ConnectPorts = slices.Clone(cfg.ConnectPorts)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DialContext == nil {
		cfg.DialContext = newDialer().DialContext
	}
	return nil
}

// limitDefaults fills in the zero connection limits.
func limitDefaults(cfg *Config) {
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxHandshakes == 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
		if cfg.MaxConnections > 0 {
			cfg.MaxHandshakes = min(DefaultMaxHandshakes, max(1, cfg.MaxConnections/4))
		}
	}
	if cfg.MaxConnectionsPerClient == 0 {
		cfg.MaxConnectionsPerClient = DefaultMaxConnectionsPerClient
	}
}

func checkPorts(ports []int) error {
	for _, p := range ports {
		if p < 1 || p > 65535 {
			return fmt.Errorf("sni: connect port %d: want a TCP port from 1 to 65535", p)
		}
	}
	return nil
}

// SetConfig replaces the per-connection settings (timeouts, limits,
// Allow, ProxyProtocolFrom, ConnectPorts) for connections accepted from
// now on; each connection keeps the settings it was accepted with.
// DialContext, WarnInterval, Logger and Metrics stay those given to New.
// An invalid cfg is rejected and the settings in force stay.
func (s *Server) SetConfig(cfg Config) error {
	if err := withDefaults(&cfg); err != nil {
		return err
	}
	old := s.cfg.Load()
	cfg.DialContext, cfg.WarnInterval, cfg.Logger, cfg.Metrics = old.DialContext, old.WarnInterval, old.Logger, old.Metrics
	s.cfg.Store(&cfg)
	return nil
}

// Config returns the settings new connections get, defaults filled in.
// The result must not be modified.
func (s *Server) Config() Config { return *s.cfg.Load() }

// SetRoutes swaps the routing table atomically. Connections already routed
// keep their route; new connections use t.
func (s *Server) SetRoutes(t *Table) {
	if t != nil {
		s.routes.Store(t)
	}
}

// Routes returns the table in use.
func (s *Server) Routes() *Table { return s.routes.Load() }

// Serve accepts connections on ln until Shutdown or Close, then returns
// ErrServerClosed; any other error is ln's. The listener label of logs and
// metrics is ln.Addr().String(). Serve closes ln when it returns.
func (s *Server) Serve(ln net.Listener) error { return s.serve(ln, kindTLS) }

// serve is the accept loop of a listener of kind kindTLS or kindConnect.
func (s *Server) serve(ln net.Listener, kind string) error {
	if err, ok := s.serveLoop(ln, kind); ok {
		return err
	}
	if !s.trackListener(ln) {
		ln.Close()
		return ErrServerClosed
	}
	defer s.untrackListener(ln)
	label := ln.Addr().String()
	s.log.Info("listening", "listener", label, "kind", kind)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || s.stopped.Load() {
				return ErrServerClosed
			}
			if !isTemporary(err) {
				return fmt.Errorf("accept on %s: %w", label, err)
			}
			backoff = nextBackoff(backoff)
			s.log.Warn("accept failed; retrying", "listener", label, "err", err, "backoff", backoff)
			if !s.pause(backoff) {
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		s.accept(c, label, kind)
	}
}

// isTemporary reports accept errors worth retrying (EMFILE, ENFILE,
// ECONNABORTED...), as net/http does.
func isTemporary(err error) bool {
	var ne interface{ Temporary() bool }
	return errors.As(err, &ne) && ne.Temporary()
}

func nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return 5 * time.Millisecond
	}
	return min(2*d, time.Second)
}

// pause waits d unless the server starts shutting down first.
func (s *Server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.quit:
		return false
	}
}

func (s *Server) trackListener(ln net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	s.listeners[ln] = struct{}{}
	return true
}

func (s *Server) untrackListener(ln net.Listener) {
	s.mu.Lock()
	delete(s.listeners, ln)
	s.mu.Unlock()
	ln.Close()
}

// Shutdown stops accepting, ends connections still reading their
// ClientHello, and waits for tunnels to finish until ctx is done; then it
// closes the remaining ones (result "shutdown") and returns ctx.Err().
// It returns when every connection goroutine has returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.beginClose()
	done := make(chan struct{})
	go s.waitSessions(done)
	defer s.tarpit.stop()
	defer s.parker.stop()
	defer s.pipes.close()
	defer s.stopLoops()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.closeSessions()
		<-done
		return ctx.Err()
	}
}

func (s *Server) waitSessions(done chan<- struct{}) {
	s.wg.Wait()
	close(done)
}

// Close closes the listeners and every connection at once, and returns
// when every connection goroutine has returned.
func (s *Server) Close() error {
	s.beginClose()
	s.closeSessions()
	s.wg.Wait()
	s.stopLoops()
	s.pipes.close()
	s.parker.stop()
	s.tarpit.stop()
	return nil
}

// beginClose stops accepting and unblocks connections that have not
// reached their tunnel yet.
func (s *Server) beginClose() {
	s.quitOnce.Do(func() { close(s.quit) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	past := time.Unix(1, 0)
	for ss := range s.sessions {
		if !ss.inTunnel.Load() {
			ss.ctl.SetDeadline(past)
		}
	}
}

// closeSessions closes every tracked connection with result "shutdown".
func (s *Server) closeSessions() {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		ss.abort(resultShutdown)
		if ss.inTunnel.Load() && ss.splice != nil {
			ss.splice.dirs.wake(s.parker)
		}
	}
}
