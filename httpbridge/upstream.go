package httpbridge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/oci"
	"github.com/snigate/snigate/upstream"
)

// upstreamStreamBuffer bounds what an HTTP/2 upstream may send ahead on
// one request before the node reads it: the memory a slow node can make
// one request hold.
const upstreamStreamBuffer = 256 << 10

// ErrNoUpstream: every upstream of the route is down, draining or in
// maintenance; the node gets 503. It is upstream.ErrNoHealthy.
var ErrNoUpstream = upstream.ErrNoHealthy

// errConnectTimeout is the cause of an attempt that ran out of
// ConnectTimeout.
var errConnectTimeout = errors.New("timeouts.connect exceeded")

// upstreamClient is the route's client to its registry: a pool of mTLS
// connections reused across nodes, on the healthy upstreams in the pool's
// order: keep-alive HTTP/1.1 ones, or HTTP/2 ones where the registry
// offers it, as Config.UpstreamProtocol says (upstream_h1.go). It is an
// http.RoundTripper; the URL's host of each request is replaced with the
// upstream's address, its Host header is kept.
type upstreamClient struct {
	cfg      *Config
	report   dialReporter // nil: the pool takes no reports
	pool     atomic.Pointer[pooled]
	poolMu   sync.Mutex             // one replacement at a time
	sessions tls.ClientSessionCache // when UpstreamTLS gives none
	follow   *redirector            // nil: redirects pass
	dials    *dialSlots             // MaxUpstreamDials
}

func newUpstreamClient(cfg *Config) *upstreamClient {
	u := &upstreamClient{cfg: cfg, sessions: tls.NewLRUClientSessionCache(64), dials: newDialSlots(MaxUpstreamDials)}
	u.report, _ = cfg.Upstreams.(dialReporter)
	u.pool.Store(u.newPooled(u.identity()))
	if cfg.Redirects == RedirectsFollow {
		u.follow = newRedirector(cfg)
	}
	return u
}

// identity is the upstream identity in force ("" without UpstreamIdentity).
func (u *upstreamClient) identity() string {
	if u.cfg.UpstreamIdentity == nil {
		return ""
	}
	return u.cfg.UpstreamIdentity()
}

// current is the pool of the identity in force: after a rotation of the
// edge certificate or the CA bundle, a new one, and the old one is
// retired: its idle connections are closed at once, its busy ones when
// their requests end (no request is given to them any more).
func (u *upstreamClient) current() *pooled {
	p := u.pool.Load()
	id := u.identity()
	if p.identity == id {
		return p
	}
	u.poolMu.Lock()
	defer u.poolMu.Unlock()
	if p = u.pool.Load(); p.identity == id {
		return p
	}
	next := u.newPooled(id)
	u.pool.Store(next)
	p.retire()
	u.cfg.Log.Info("upstream identity changed: new upstream connections for the next requests",
		"route", u.cfg.Route)
	return next
}

// newH2Transport is the pool of the HTTP/2 leg: h2 where the registry
// offers it, keep-alive HTTP/1.1 otherwise.
func (u *upstreamClient) newH2Transport() *http.Transport {
	cfg := u.cfg
	return &http.Transport{
		DialTLSContext:        u.dialFunc(alpnH2),
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   DefaultMaxIdleConnsPerHost,
		IdleConnTimeout:       DefaultUpstreamIdleTimeout,
		DisableCompression:    true, // Accept-Encoding and bodies pass untouched
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		HTTP2: &http.HTTP2Config{
			MaxReceiveBufferPerStream: upstreamStreamBuffer,
			SendPingTimeout:           30 * time.Second,
			PingTimeout:               15 * time.Second,
		},
	}
}

// hostKey carries the *upstream.Host of an attempt to dialTLS: put in a
// dial's context only (a new connection is rare, a request is not).
type hostKey struct{}

// RoundTrip sends req to the first candidate and, for a request that can
// be sent again (GET or HEAD without a body), to the next ones while the
// attempt fails before a response: nothing has reached the node yet.
// Passive health is told by dialTLS, of each new connection, not here: a
// request may fail on a connection that was fine when it was dialled.
func (u *upstreamClient) RoundTrip(req *http.Request) (*http.Response, error) {
	a := upstream.NewAttempts(u.cfg.Upstreams.Candidates(), time.Now(), 0, nil)
	retry := canRetry(req)
	for {
		h, _, ok := a.Next(time.Now())
		if !ok {
			break
		}
		resp, err := u.try(req, &a, h)
		if err == nil {
			return u.redirected(req, resp)
		}
		a.Excused(err)
		if !retry || req.Context().Err() != nil || a.Tried() == a.Len() {
			break
		}
		u.cfg.Metrics.retry(u.cfg.Route)
	}
	return nil, fmt.Errorf("route %q: %w", u.cfg.Route, a.Err())
}

// canRetry: an idempotent request without a body.
func canRetry(req *http.Request) bool {
	return (req.Method == http.MethodGet || req.Method == http.MethodHead) &&
		(req.Body == nil || req.Body == http.NoBody)
}

// try sends req to h, a's current candidate, whose active count a holds:
// on a response, the count passes to its body and lasts until the body is
// closed.
func (u *upstreamClient) try(req *http.Request, a *upstream.Attempts, h *upstream.Host) (*http.Response, error) {
	url := *req.URL
	url.Scheme, url.Host = "https", h.Addr()
	p := u.current()
	resp, err := p.roundTrip(req, &url, h, u.cfg.ResponseHeaderTimeout)
	if err != nil {
		return nil, err
	}
	oci.AnnotationFrom(req.Context()).SetUpstream(h.Addr())
	resp.Body = &releaseBody{ReadCloser: resp.Body, release: a.Keep(), pool: p, host: h}
	return resp, nil
}

// releaseBody ends a request at its boundary, when the node's answer is
// done: it releases the upstream's active count and, when the request's
// pool is retired or its upstream left StateReady (drain, maint), closes
// the pool's idle connections, this request's among them: a body read to
// its end has put its HTTP/1.1 connection back in the pool, and an
// HTTP/2 stream is forgotten once Close returns. (Those idle to other
// upstreams close too, and are dialled again when needed: only the
// requests in flight when the state changed get here.)
type releaseBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
	pool    *pooled
	host    *upstream.Host
}

func (b *releaseBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.boundary)
	return err
}

func (b *releaseBody) boundary() {
	b.release()
	if b.pool.retired.Load() || b.host.State() != upstream.StateReady {
		b.pool.closeIdle()
	}
}

// redirected follows resp when it is a redirect to a foreign host and
// the route follows redirects; else it returns resp.
func (u *upstreamClient) redirected(req *http.Request, resp *http.Response) (*http.Response, error) {
	if !isRedirect(resp) {
		return resp, nil
	}
	if u.follow == nil || !u.follow.foreign(req, resp) {
		u.cfg.Metrics.redirect(u.cfg.Route, RedirectPassed)
		return resp, nil
	}
	return u.follow.follow(req, resp)
}

// ALPN protocols offered by the two legs.
var (
	alpnH2 = []string{"h2", "http/1.1"}
	alpnH1 = []string{"http/1.1"}
)

// dialFunc is a transport's DialTLSContext, offering alpn.
func (u *upstreamClient) dialFunc(alpn []string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return u.dialTLS(ctx, network, addr, alpn)
	}
}

// dialTLS opens one upstream connection: TCP and the TLS handshake with
// the route's client configuration offering alpn, within ConnectTimeout,
// reported to the pool's passive health; at most MaxUpstreamDials at
// once (a wait for a slot is not part of ConnectTimeout).
func (u *upstreamClient) dialTLS(ctx context.Context, network, addr string, alpn []string) (net.Conn, error) {
	release, err := u.dials.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return u.dialHeld(ctx, network, addr, alpn)
}

// dialHeld is dialTLS for a caller holding a dial slot.
func (u *upstreamClient) dialHeld(ctx context.Context, network, addr string, alpn []string) (net.Conn, error) {
	attempt, cancel := context.WithTimeoutCause(ctx, u.cfg.ConnectTimeout, errConnectTimeout)
	defer cancel()
	c, err := u.handshake(attempt, network, addr, alpn)
	if h, ok := ctx.Value(hostKey{}).(*upstream.Host); ok && u.report != nil && ctx.Err() == nil {
		u.report.ReportDial(h, err)
	}
	if err != nil && context.Cause(attempt) == errConnectTimeout {
		err = fmt.Errorf("%w (%v): %w", errConnectTimeout, u.cfg.ConnectTimeout, err)
	}
	return c, err
}

func (u *upstreamClient) handshake(ctx context.Context, network, addr string, alpn []string) (net.Conn, error) {
	dial := u.cfg.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	raw, err := dial(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	cfg := u.tlsConfig(addr)
	cfg.NextProtos = alpn
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("tls handshake with %s (server name %q): %w", addr, cfg.ServerName, err)
	}
	return tc, nil
}

// tlsConfig is the client configuration of one dial to addr.
func (u *upstreamClient) tlsConfig(addr string) *tls.Config {
	var cfg *tls.Config
	if u.cfg.UpstreamTLS != nil {
		cfg = u.cfg.UpstreamTLS()
	}
	if cfg == nil {
		cfg = &tls.Config{}
	}
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	store := cfg.ClientSessionCache
	if store == nil {
		store = u.sessions
	}
	cfg.ClientSessionCache = addrSessions{cache: store, addr: addr}
	return cfg
}

// serverName is the name the route's upstream connections present: the
// Host of the gateway's own requests (Probe).
func (u *upstreamClient) serverName(addr string) string { return u.tlsConfig(addr).ServerName }

// closeIdle retires the pool when the bridge is closed: its idle
// connections close now, the busy ones at their request boundary.
func (u *upstreamClient) closeIdle() {
	u.pool.Load().retire()
	if u.follow != nil {
		u.follow.transport.CloseIdleConnections()
	}
}

// addrSessions keys a session cache by upstream address and server
// name, as sni's bridge and the health checks do, so that round-robin
// does not make upstreams reject each other's tickets.
type addrSessions struct {
	cache tls.ClientSessionCache
	addr  string
}

func (s addrSessions) Get(key string) (*tls.ClientSessionState, bool) {
	return s.cache.Get(s.addr + " " + key)
}

func (s addrSessions) Put(key string, cs *tls.ClientSessionState) { s.cache.Put(s.addr+" "+key, cs) }
