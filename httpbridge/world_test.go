package httpbridge

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// registryName is the name nodes pull from: the SNI of the route.
const registryName = "registry.test"

// waitLimit bounds every wait for an event in these tests; it is a
// failure deadline, never a synchronisation delay.
const waitLimit = testkit.WaitLimit

// testPKI is one CA for everything: the registry's server certificate,
// the edge's client certificate, the gateway's serving certificate.
type testPKI struct {
	ca                         *pki.Authority
	upCert, edgeCert, serveCrt tls.Certificate
}

func newTestPKI(tb testing.TB) *testPKI {
	tb.Helper()
	ca, err := pki.NewAuthority("test CA")
	if err != nil {
		tb.Fatal(err)
	}
	p := &testPKI{ca: ca}
	p.upCert = p.leaf(tb, "registry", registryName, "127.0.0.1")
	p.edgeCert = p.leaf(tb, "edge")
	p.serveCrt = p.leaf(tb, "gateway", registryName)
	return p
}

func (p *testPKI) leaf(tb testing.TB, cn string, names ...string) tls.Certificate {
	tb.Helper()
	c, _, _, err := p.ca.Leaf(cn, names...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// upstreamTLS is a registry's server configuration: client certificates
// required, the given ALPN protocols.
func (p *testPKI) upstreamTLS(protos ...string) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.upCert}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: p.ca.Pool(), NextProtos: protos,
	}
}

// edgeTLS is the bridge's client configuration.
func (p *testPKI) edgeTLS() *tls.Config {
	return &tls.Config{RootCAs: p.ca.Pool(), Certificates: []tls.Certificate{p.edgeCert}, ServerName: registryName}
}

// testUpstream is a TLS HTTP server standing in for a registry.
type testUpstream struct {
	addr string
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// startUpstream serves h over TLS with cfg on 127.0.0.1:0 (h2 when cfg
// offers it).
func startUpstream(tb testing.TB, cfg *tls.Config, h http.Handler) *testUpstream {
	tb.Helper()
	return startUpstreamWith(tb, cfg, h, nil)
}

// startUpstreamWith is startUpstream with configure (nil: none) called
// on the server before it serves.
func startUpstreamWith(tb testing.TB, cfg *tls.Config, h http.Handler, configure func(*http.Server)) *testUpstream {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &testUpstream{addr: ln.Addr().String(), ln: ln, done: make(chan struct{})}
	u.srv = &http.Server{Handler: h, TLSConfig: cfg, ErrorLog: discardLog(), ReadHeaderTimeout: waitLimit}
	if !contains(cfg.NextProtos, "h2") {
		u.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	if configure != nil {
		configure(u.srv)
	}
	go func() {
		defer close(u.done)
		_ = u.srv.ServeTLS(ln, "", "")
	}()
	tb.Cleanup(u.stop)
	return u
}

// stop closes the server and every connection it has.
func (u *testUpstream) stop() {
	_ = u.srv.Close()
	<-u.done
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// world is a gateway (an sni.Server whose route's Handler is a Bridge)
// in front of upstreams, with captured logs, metrics and audit records.
type world struct {
	pki    *testPKI
	pool   *upstream.Pool
	bridge *Bridge
	srv    *sni.Server
	addr   string
	logs   *testkit.LogSink
	reg    *prometheus.Registry
	m      *Metrics
	audit  *memAudit
}

// worldOpts adjust a world.
type worldOpts struct {
	cfg   Config // Route, Upstreams, UpstreamTLS, Log, Metrics, Audit are set by newWorld when zero
	idle  time.Duration
	addrs []string
	// noFirstRequest lifts the gateway's timeouts.first_request, so that
	// only what a test looks at can close a silent connection.
	noFirstRequest bool
	events         func(*nodeConn, connEvent)              // the bridge's eventFunc
	idleTimers     func(time.Duration, func()) *time.Timer // the bridge's idleTimerFunc
}

func newWorld(tb testing.TB, p *testPKI, o worldOpts) *world {
	tb.Helper()
	w := &world{pki: p, logs: testkit.NewLogSink(), reg: prometheus.NewRegistry()}
	w.m = NewMetrics(w.reg)
	logger := slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	pool, err := upstream.New(upstream.Config{Route: "registry", Addrs: o.addrs, Logger: logger, Check: upstream.Check{Fall: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	w.pool = pool
	cfg := o.cfg
	cfg.Route, cfg.Upstreams, cfg.Log, cfg.Metrics = "registry", pool, logger, w.m
	if cfg.UpstreamTLS == nil {
		cfg.UpstreamTLS = p.edgeTLS
	}
	if cfg.Audit == nil {
		w.audit = newMemAudit(tb, logger, w.m)
		cfg.Audit = w.audit.log
	}
	if w.bridge, err = New(cfg); err != nil {
		tb.Fatal(err)
	}
	w.bridge.eventFunc, w.bridge.idleTimerFunc = o.events, o.idleTimers
	tb.Cleanup(w.bridge.Close)
	first := time.Duration(0)
	if o.noFirstRequest {
		first = -1
	}
	w.startGateway(tb, sni.Config{IdleTimeout: o.idle, FirstRequestTimeout: first, Logger: logger})
	return w
}

func (w *world) startGateway(tb testing.TB, cfg sni.Config) {
	tb.Helper()
	tab, err := sni.NewTable([]*sni.Route{{
		Name: "registry", SNI: []string{registryName}, Mode: sni.ModeBridge, Pool: w.pool,
		Serve: testkit.StaticCert{Cert: &w.pki.serveCrt}, Handler: w.bridge,
	}}, "")
	if err != nil {
		tb.Fatal(err)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = time.Hour
	}
	if w.srv, err = sni.New(cfg, tab); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	w.addr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- w.srv.Serve(ln) }()
	tb.Cleanup(func() {
		w.srv.Close()
		if err := <-served; !errors.Is(err, sni.ErrServerClosed) {
			tb.Errorf("Serve: %v", err)
		}
	})
}

// node is an HTTP client on a node: DNS sends registryName to the
// gateway; proto "h2" or "http/1.1".
func (w *world) node(tb testing.TB, proto string) *http.Client {
	return w.nodeFrom(tb, proto, "")
}

// nodeFrom is node with its connections from the loopback address ip
// ("": the system's choice): another client address, as the gateway's
// per-client rules (audit aggregation, limits) tell clients apart.
func (w *world) nodeFrom(tb testing.TB, proto, ip string) *http.Client {
	tb.Helper()
	d := new(net.Dialer)
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	t := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: w.pki.ca.Pool(), ServerName: registryName, NextProtos: []string{proto}},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, w.addr)
		},
		ForceAttemptHTTP2:  proto == "h2",
		DisableCompression: true,
	}
	if proto != "h2" {
		t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	tb.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
