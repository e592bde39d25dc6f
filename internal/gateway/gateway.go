package gateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/admin"
	"github.com/snigate/snigate/internal/buildinfo"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/filewatch"
	"github.com/snigate/snigate/internal/handover"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// Options configures a Gateway.
type Options struct {
	// ConfigFile is the path of the YAML configuration; required.
	ConfigFile string
	// Logger receives every log line; nil means slog.Default().
	Logger *slog.Logger
	// LogFormat is Logger's format, "text" or "json" (NewLogger), for
	// the access log file (log.access); "": text.
	LogFormat string
	// ReadyFunc, when set, is called once every listener is up.
	ReadyFunc func(addrs Addrs)
	// ReloadedFunc, when set, is called after every reload attempt with
	// its outcome (nil: the new configuration is in force).
	ReloadedFunc func(err error)
}

// Addrs are the addresses the gateway's listeners are bound to, useful when
// the configuration asks for port 0.
type Addrs struct {
	TLS     []net.Addr
	Connect net.Addr
	DNS     net.Addr // the UDP address; TCP listens on the same port
	Admin   net.Addr
}

// Gateway runs snigate: SNI listeners, DNS responder, admin API, and the
// generation of routes built from the configuration file.
type Gateway struct {
	opts     Options
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics

	gen       atomic.Pointer[generation]
	reloadMu  sync.Mutex                        // one reload at a time
	loadedSum atomic.Pointer[[sha256.Size]byte] // of the file last read
	loadedID  atomic.Pointer[filewatch.ID]      // the file's identity just before that read
	ready     atomic.Bool                       // listeners up, not draining
	wasReady  atomic.Bool                       // ready has been true: not ready now means draining
	switchOff atomic.Bool                       // the readiness switch (POST /api/ready) is off
	builder   builder                           // builds generations; its side effects are run's or check's

	inForce    atomic.Pointer[inForce]            // the configuration in force
	lastReload atomic.Pointer[admin.ReloadResult] // nil: no reload since start
	runCtx     atomic.Pointer[context.Context]    // Run's; reloads start generations under it

	access   accessLog // log.access
	sni      *sni.Server
	tlsPorts []int          // bound ports of listen.tls, for CONNECT; under reloadMu
	labels   listenerLabels // listener label values of the open listeners; under reloadMu
	dns      *dnsresponder.Server
	admin    *admin.Server

	inherit  *handover.Inherited        // sockets from systemd or an old process; set by Run
	ls       *listeners                 // the listeners served; under reloadMu, nil until Run
	tlsBound atomic.Pointer[[]net.Addr] // bound addresses of ls.tls, for the own answer addresses
	srv      *servers                   // their serving goroutines; under reloadMu
	stopping bool                       // draining or upgrading: no reload; under reloadMu

	// Tests only: the signals Run reads instead of signal.Notify's, the
	// clock stop requests are timed with, and the period of the drain's
	// progress lines. Zero values: the real ones.
	signals        chan os.Signal
	now            func() time.Time
	drainLogPeriod time.Duration
	upgradeWait    time.Duration // 0: DefaultUpgradeTimeout
}

// New loads and validates the configuration file and builds the first
// generation. It opens no listener and starts nothing. A configuration
// error, including a file the configuration names that cannot serve (see
// build), is a config.ErrorList.
func New(opts Options) (*Gateway, error) {
	g := &Gateway{opts: opts, log: cmp.Or(opts.Logger, slog.Default()), registry: prometheus.NewRegistry()}
	g.metrics = newMetrics(g.registry)
	g.builder = builder{log: g.log, metrics: g.metrics, open: &liveOpener{
		log: g.log, http: g.metrics.http, cache: g.metrics.cache, wait: handover.Upgrading()}}
	g.access.format = opts.LogFormat
	info := buildinfo.Get()
	g.log.Info("snigate starting", "version", info.Version, "commit", info.Commit, "config", opts.ConfigFile)
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	if err := g.assemble(cfg); err != nil {
		return nil, err
	}
	g.configInForce(time.Now())
	return g, nil
}

// assemble builds everything the gateway runs from cfg with g.builder:
// the first generation (Adopt(nil) opens its stores), the SNI server,
// the DNS server and the admin server. It opens no socket and starts no
// goroutine; `snigate check` calls it too (checkBuild, with a builder of
// dry side effects), so that check and run fail on the same files.
func (g *Gateway) assemble(cfg *config.Config) error {
	gen, err := g.builder.build(cfg)
	if err != nil {
		return err
	}
	carry, err := gen.Adopt(nil)
	if err != nil {
		gen.retire()
		return err
	}
	carry()
	g.gen.Store(gen)
	g.metrics.configLoaded(time.Now())
	g.sni, err = sni.New(g.sniConfig(cfg), gen.routes)
	if err != nil {
		return err
	}
	// Built without listen.dns too: a reload may add it.
	g.dns = dnsresponder.NewServer(gen.dnsHandler(), g.log)
	g.admin = admin.New(admin.Config{
		Upstreams:    g,
		Answers:      g,
		Runtime:      g,
		Caches:       g,
		Images:       g,
		ReadyFunc:    g.Ready,
		NotReadyFunc: g.notReadyReason,
		PprofFunc:    func() bool { return g.gen.Load().cfg.Debug.Pprof },
		Version:      buildVersion(),
		Gatherer:     g.registry,
		Logger:       g.log,
		HostsFunc:    func() []string { return adminHosts(g.gen.Load().cfg.Listen.Admin) },
		Metrics:      g.metrics.admin,
	})
	return nil
}

func (g *Gateway) sniConfig(cfg *config.Config) sni.Config {
	return sni.Config{
		ClientHelloTimeout:  cfg.Timeouts.ClientHello,
		ConnectTimeout:      cfg.Timeouts.Connect,
		IdleTimeout:         cfg.Timeouts.Idle,
		FirstRequestTimeout: cfg.Timeouts.FirstRequest,
		MaxConnections:      cfg.MaxConnections,
		MaxHandshakes:       cfg.MaxHandshakes,
		// 0 in the file is no limit; in sni.Config, negative.
		MaxConnectionsPerClient: cmp.Or(cfg.MaxConnectionsPerClient, -1),
		Allow:                   cfg.Listen.Allow,
		ProxyProtocolFrom:       cfg.Listen.ProxyProtocolFrom,
		ConnectPorts:            g.tlsPorts,
		AccessLog:               g.access.current(),
		Logger:                  g.log,
		Metrics:                 g.metrics.sni,
	}
}

// Registry is the Prometheus registry /metrics serves.
func (g *Gateway) Registry() *prometheus.Registry { return g.registry }

// Upstreams lists every upstream of every route (the admin API).
func (g *Gateway) Upstreams() []upstream.Status {
	gen := g.gen.Load()
	var out []upstream.Status
	for _, r := range gen.cfg.Routes {
		out = append(out, gen.pools[r.Name].Status()...)
	}
	return out
}

// SetUpstreamState changes an upstream's admin state (the admin API). The
// state is carried over by reloads.
func (g *Gateway) SetUpstreamState(route, addr string, s upstream.State) (upstream.Status, error) {
	gen := g.gen.Load()
	p := gen.pools[route]
	if p == nil {
		return upstream.Status{}, fmt.Errorf("route %q: %w", route, admin.ErrNotFound)
	}
	if err := p.SetState(addr, s); err != nil {
		if errors.Is(err, upstream.ErrUnknownUpstream) {
			return upstream.Status{}, fmt.Errorf("route %q upstream %q: %w", route, addr, admin.ErrNotFound)
		}
		return upstream.Status{}, err
	}
	for _, st := range p.Status() {
		if st.Upstream == addr {
			return st, nil
		}
	}
	return upstream.Status{}, fmt.Errorf("route %q upstream %q: %w", route, addr, admin.ErrNotFound)
}

// Run opens the listeners (taking those inherited from systemd or from
// the process that handed over to this one) and serves until ctx is done
// or a signal stops it: SIGHUP (or a change of the configuration file)
// reloads, SIGUSR2 hands the listening sockets to a new process (an
// upgrade, see upgrade) and drains once that one serves, SIGTERM and
// SIGINT drain and return nil (a repeat within RepeatStopWindow is the
// same request), SIGQUIT or a later repeat closes every connection at
// once and returns ErrForcedStop. It returns an error when a listener
// cannot be opened or a server fails.
func (g *Gateway) Run(ctx context.Context) error {
	in, err := handover.Inherit()
	if err != nil {
		return err
	}
	g.inherit = in
	if err := g.openAccessLog(g.gen.Load().cfg); err != nil {
		return err
	}
	defer g.access.close()
	ls, err := g.listen(g.gen.Load().cfg)
	if err != nil {
		in.Close()
		return err
	}
	if err := g.setTLSPorts(ls.tlsPorts()); err != nil {
		ls.close()
		return err
	}
	return g.serve(ctx, ls)
}

// setTLSPorts tells the SNI server which ports CONNECT requests may name:
// those the TLS listeners are bound to (port 0 in the file included).
func (g *Gateway) setTLSPorts(ports []int) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.tlsPorts = ports
	return g.sni.SetConfig(g.sniConfig(g.gen.Load().cfg))
}

// adminHosts is the host name of listen.admin that the admin API accepts
// in Host, if the address has one.
func adminHosts(addr string) []string {
	if h := admin.ListenHost(addr); h != "" {
		return []string{h}
	}
	return nil
}

// initSeries creates at 0, once the listeners are open, the series of
// connections per listener and of the routes in force; reloads do the
// same for the routes they bring.
func (g *Gateway) initSeries(ls *listeners) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.labels = ls.labels()
	g.metrics.initListeners(g.labels)
	g.metrics.initRoutes(g.gen.Load().cfg, g.labels)
}
