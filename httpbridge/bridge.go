package httpbridge

import (
	"context"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/net/http2"

	"github.com/snigate/snigate/internal/ratelog"
	"github.com/snigate/snigate/sni"
)

// Bridge serves the HTTP of one http route's node connections (HTTP/2 and
// HTTP/1.1 by ALPN) and forwards admitted requests to the route's
// registry over its own pool of mTLS connections. It is the route's
// sni.BridgeHandler. Create it with New; Close it when a reload replaced
// it.
type Bridge struct {
	cfg    Config
	log    *slog.Logger
	policy policy
	client *upstreamClient
	// upstream is what the proxy and the links send through: the client,
	// under cfg.AuthFunc on an auth route.
	upstream http.RoundTripper
	tokens   *http.Transport // the token service's transport, nil without AuthFunc
	proxy    *forwarder
	errLog   *log.Logger // net/http's and the forwarder's, at Debug
	warn     ratelog.Limiter
	metrics  *routeMetrics // the route's series of the request path
	// next is what admitted requests go to: the chain over proxy.
	next http.Handler

	// Tests only: eventFunc is called at points of each connection's life;
	// idleTimerFunc starts the idle timers instead of time.AfterFunc.
	eventFunc     func(*nodeConn, connEvent)
	idleTimerFunc func(time.Duration, func()) *time.Timer

	mu     sync.Mutex
	conns  map[*nodeConn]struct{}
	closed bool
}

var _ sni.BridgeHandler = (*Bridge)(nil)

// New validates cfg and returns the route's bridge. It opens nothing.
func New(cfg Config) (*Bridge, error) {
	cfg, repos, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	b := &Bridge{
		cfg:    cfg,
		log:    cfg.Log,
		policy: policy{route: cfg.Route, methods: cfg.Methods, repos: repos},
		conns:  make(map[*nodeConn]struct{}),
		errLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	b.client = newUpstreamClient(&b.cfg)
	b.upstream = b.authUpstream()
	b.proxy = b.newProxy()
	b.next = b.chainHandler()
	cfg.Metrics.InitRoute(cfg.Route)
	b.metrics = cfg.Metrics.forRoute(cfg.Route)
	return b, nil
}

// NextProtos are the ALPN protocols offered to nodes.
func (b *Bridge) NextProtos() []string { return []string{"h2", "http/1.1"} }

// ServeBridge serves one node connection until it ends (see
// sni.BridgeHandler): nil for a normal end, ErrBridgeIdle when the idle
// timeout ended it, ErrBridgeUpstream when its last request was aborted
// by the upstream, ErrBridgeClient for a failed read from the node.
func (b *Bridge) ServeBridge(ctx context.Context, c *sni.BridgeConn) error {
	nc := newNodeConn(c, b.log)
	nc.eventFunc, nc.timerFunc = b.eventFunc, b.idleTimerFunc
	if !b.track(nc) {
		nc.retire() // a bridge already replaced: one exchange, then close
	}
	defer b.untrack(nc)
	ctx, cancel := context.WithCancel(context.WithValue(ctx, connKey{}, nc))
	defer cancel()
	nc.closeFunc = cancel // the requests' contexts end with the connection, before watch can close it
	watched := make(chan struct{})
	go func() { defer close(watched); nc.watch(ctx) }()
	if c.ConnectionState().NegotiatedProtocol == "h2" {
		b.serveH2(ctx, nc)
	} else {
		b.serveH1(ctx, nc)
	}
	_ = nc.Close()
	nc.finish()
	<-watched
	return nc.result()
}

// serveH2 serves HTTP/2 with x/net/http2 on a per-connection server pair,
// so that draining sends this connection's GOAWAY.
func (b *Bridge) serveH2(ctx context.Context, nc *nodeConn) {
	hs := b.newServer(ctx, nc)
	h2 := &http2.Server{MaxConcurrentStreams: DefaultMaxConcurrentStreams}
	nc.guardResets(func(counts string) { b.resetFlood(nc, counts) })
	if err := http2.ConfigureServer(hs, h2); err != nil {
		b.log.Error("http/2 server configuration", "route", b.cfg.Route, "err", err)
		return
	}
	// Shutdown runs the GOAWAY hook; it tracks no connection, so returns at once.
	nc.armAtRead(func() { _ = hs.Shutdown(ctx) })
	h2.ServeConn(nc, &http2.ServeConnOpts{Context: ctx, BaseConfig: hs, Handler: b})
}

// resetFlood reports a node connection ended for resetting most of the
// streams it opened.
func (b *Bridge) resetFlood(nc *nodeConn, counts string) {
	b.cfg.Metrics.flood(b.cfg.Route)
	b.warn.Log(b.log, slog.LevelWarn, "reset_flood", "node connection closed: HTTP/2 rapid reset",
		"route", b.cfg.Route, "client", clientString(nc), "node", nc.Node, "resets", counts)
}

// newServer is the http.Server of one HTTP/2 node connection (HTTP/1.x
// is served by h1Conn).
func (b *Bridge) newServer(ctx context.Context, nc *nodeConn) *http.Server {
	return &http.Server{
		Handler:           b,
		ReadHeaderTimeout: b.cfg.ReadHeaderTimeout,
		MaxHeaderBytes:    DefaultMaxHeaderBytes, // the header list size
		ErrorLog:          b.errLog,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// track adds nc to the bridge's connections; false when the bridge is
// closed.
func (b *Bridge) track(nc *nodeConn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.conns[nc] = struct{}{}
	return !b.closed
}

func (b *Bridge) untrack(nc *nodeConn) {
	b.mu.Lock()
	delete(b.conns, nc)
	closed := b.closed
	b.mu.Unlock()
	if closed {
		b.client.closeIdle()
	}
}

// Close retires the bridge after a reload replaced it: its node
// connections close at their next request boundary, its idle upstream
// connections now and the others once their requests are done. It does
// not wait, and the bridge still serves what is in flight.
func (b *Bridge) Close() {
	b.mu.Lock()
	var conns []*nodeConn
	if !b.closed { // later connections were retired as they came
		conns = make([]*nodeConn, 0, len(b.conns))
		for nc := range b.conns {
			conns = append(conns, nc)
		}
	}
	b.closed = true
	b.mu.Unlock()
	for _, nc := range conns {
		nc.drain("retired")
	}
	b.client.closeIdle()
	if b.tokens != nil {
		b.tokens.CloseIdleConnections()
	}
}
