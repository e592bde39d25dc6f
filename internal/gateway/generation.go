package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"sync"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// A generation is everything built from one configuration file: the route
// table, the upstream pools, the certificate watchers and the DNS handler.
// A reload builds a new generation, swaps it in, then stops the old one's
// workers; connections the old one accepted keep running to completion.
type generation struct {
	cfg     *config.Config
	routes  *sni.Table
	pools   map[string]*upstream.Pool // by route name
	dns     dns.Handler               // nil when listen.dns is not set
	answers *dnsresponder.AnswerCheck // dns.answer_check; nil without it (or without listen.dns)
	workers []runner                  // pools, certificate watchers, the answer check
	bridges []*httpbridge.Bridge      // the HTTP-aware bridges of http routes
	audits  []*httpbridge.AuditLog    // their audit logs, released by retire

	cancel context.CancelFunc // stops the workers
	wg     sync.WaitGroup
}

// runner is a background worker of a generation.
type runner interface {
	Run(ctx context.Context) error
}

// build turns a validated configuration into a generation. Nothing runs
// until start. What the builders refuse (a certificate that does not
// cover the route's names, a client certificate without clientAuth, a
// route name outside the serving CA's constraints, a file that cannot be
// loaded) is a config.ErrorList with the key of each, one per route.
func (g *Gateway) build(cfg *config.Config) (*generation, error) {
	gen := &generation{cfg: cfg, pools: make(map[string]*upstream.Pool)}
	var routes []*sni.Route
	var errs config.ErrorList
	for i := range cfg.Routes {
		r, err := g.buildRoute(gen, cfg, &cfg.Routes[i])
		if err != nil {
			errs = append(errs, buildError(cfg, i, err))
			continue
		}
		routes = append(routes, r)
	}
	if len(errs) > 0 {
		gen.retire()
		return nil, errs
	}
	table, err := sni.NewTable(routes, cfg.DefaultRoute)
	if err != nil {
		gen.retire()
		return nil, err
	}
	gen.routes = table
	if cfg.Listen.DNS != "" {
		if gen.dns, err = g.buildDNS(gen, cfg); err != nil {
			gen.retire()
			return nil, err
		}
	}
	return gen, nil
}

func (g *Gateway) buildRoute(gen *generation, cfg *config.Config, rc *config.Route) (*sni.Route, error) {
	r := &sni.Route{
		Name:          rc.Name,
		SNI:           rc.SNI,
		Mode:          sni.Mode(rc.Mode),
		ProxyProtocol: rc.ProxyProtocol,
	}
	checkTLS := spliceCheckTLS(rc)
	var clientSide *certs.ClientTLS
	if r.Mode == sni.ModeBridge {
		var err error
		if r.Serve, err = g.serveSource(gen, rc); err != nil {
			return nil, err
		}
		r.ServeKeyExchanges = rc.Serve.KeyExchanges
		r.ServeMinVersion, r.ServeCipherSuites = rc.Serve.MinVersion, rc.Serve.CipherSuites
		r.MaxDials, r.MaxDialsPerClient = rc.MaxDials, rc.MaxDialsPerClient
		r.DialRatePerClient = cmp.Or(rc.DialRatePerClient, -1) // 0 in the file is no limit; in sni.Route, negative
		auth, workers, err := clientAuth(rc, g.log, g.metrics.certs)
		if err != nil {
			return nil, err
		}
		r.ClientAuth = auth
		gen.workers = append(gen.workers, workers...)
		ct, workers, err := clientTLS(rc, g.log, g.metrics.certs)
		if err != nil {
			return nil, err
		}
		gen.workers = append(gen.workers, workers...)
		r.UpstreamTLSFunc = ct.Config
		checkTLS = checkClientTLS(ct, rc)
		clientSide = ct
	}
	pool, err := upstream.New(upstream.Config{
		Route:         rc.Name,
		Addrs:         rc.Upstreams,
		Balance:       upstream.Balance(rc.Balance),
		Check:         upstreamCheck(rc.Health),
		TLSConfigFunc: checkTLS,
		Logger:        g.log,
		Metrics:       g.metrics.upstream,
	})
	if err != nil {
		return nil, err
	}
	r.Pool = pool
	if rc.HTTP != nil {
		if r.Handler, err = g.httpHandler(gen, cfg, rc, clientSide, pool); err != nil {
			return nil, err
		}
	}
	gen.pools[rc.Name] = pool
	gen.workers = append(gen.workers, pool)
	return r, nil
}

func upstreamCheck(h config.Health) upstream.Check {
	return upstream.Check{
		Kind:         upstream.CheckKind(h.Check),
		Path:         h.Path,
		ExpectStatus: h.ExpectStatus,
		Interval:     h.Interval,
		Timeout:      h.Timeout,
		Fall:         h.Fall,
		Rise:         h.Rise,
	}
}

// spliceCheckTLS is the client configuration of tls and http checks on a
// splice route. The gateway does not verify a splice upstream's certificate
// (the client does, end to end); the check proves the upstream completes a
// handshake for the route's name.
func spliceCheckTLS(rc *config.Route) func() *tls.Config {
	name := checkServerName(rc)
	return func() *tls.Config {
		return &tls.Config{ServerName: name, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	}
}

// checkServerName is the SNI health checks send: upstream_tls.server_name,
// else the route's first exact name, else the parent of its first wildcard.
func checkServerName(rc *config.Route) string {
	if rc.UpstreamTLS.ServerName != "" {
		return rc.UpstreamTLS.ServerName
	}
	for _, n := range rc.SNI {
		if _, wild := names.WildcardBase(n); !wild {
			return n
		}
	}
	if len(rc.SNI) > 0 {
		base, _ := names.WildcardBase(rc.SNI[0])
		return base
	}
	return ""
}

// serveSource is where a bridge route's serving certificate comes from: a
// watched key pair, or a CA that mints a leaf per name.
func (g *Gateway) serveSource(gen *generation, rc *config.Route) (certSource, error) {
	s := rc.Serve
	if s.CACert != "" {
		m, err := certs.NewMinter(certs.MinterConfig{
			CACertFile: s.CACert, CAKeyFile: s.CAKey, Names: rc.SNI,
			Route: rc.Name, Logger: g.log, Metrics: g.metrics.certs,
		})
		if err != nil {
			return nil, err
		}
		gen.workers = append(gen.workers, m)
		return m, nil
	}
	kp, err := certs.NewKeyPair(certs.KeyPairConfig{
		CertFile: s.Cert, KeyFile: s.Key, Route: rc.Name, Role: certs.RoleServe, Names: rc.SNI,
		Logger: g.log, Metrics: g.metrics.certs,
	})
	if err != nil {
		return nil, err
	}
	gen.workers = append(gen.workers, kp)
	return kp, nil
}

func (g *Gateway) buildDNS(gen *generation, cfg *config.Config) (dns.Handler, error) {
	routed, err := routedTable(cfg)
	if err != nil {
		return nil, err
	}
	if gen.answers, err = g.buildAnswerCheck(cfg); err != nil {
		return nil, err
	}
	if gen.answers != nil {
		gen.workers = append(gen.workers, gen.answers)
	}
	return dnsresponder.New(dnsresponder.Config{
		Names:       routed,
		Answer:      cfg.DNS.Answer,
		AnswerCheck: gen.answers,
		TTL:         cfg.DNS.TTL,
		Forward:     cfg.DNS.Forward,
		Allow:       cfg.DNSAllow(),
		Logger:      g.log,
		Metrics:     g.metrics.dns,
	})
}

// adopt carries over, from the generation that was in force, the health,
// admin state and connection counts of the upstreams both have. old's
// workers must be stopped first, so that no health check of old runs on.
func (gen *generation) adopt(old *generation) {
	for name, p := range gen.pools {
		if op := old.pools[name]; op != nil {
			p.Adopt(op)
		}
	}
	switch {
	case gen.answers != nil:
		gen.answers.Adopt(old.answers) // nil old: nothing to carry
	case old.answers != nil:
		old.answers.DeleteSeries() // dns.answer_check removed
	}
}

// start runs the generation's workers until stop.
func (gen *generation) start(ctx context.Context, log errorLogger) {
	ctx, gen.cancel = context.WithCancel(ctx)
	for _, w := range gen.workers {
		gen.wg.Go(func() {
			if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error("background worker stopped", "err", err)
			}
		})
	}
}

// stop stops the generation's workers and waits for them. Connections the
// generation routed are not affected.
func (gen *generation) stop() {
	if gen.cancel != nil {
		gen.cancel()
	}
	gen.wg.Wait()
}

// certSource is what serves a bridge route's certificate (certs.KeyPair or
// certs.Minter).
type certSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

type errorLogger interface {
	Error(msg string, args ...any)
}
