package gateway

import (
	"cmp"
	"crypto/tls"
	"log/slog"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/names"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// builder builds generations. Its side effects are its dependencies: the
// logger and the metrics everything it builds reports to, and the opener
// of the files a generation writes (audit logs, cache stores, which
// generation.Adopt opens). `run` gives it the real ones (New: the
// process logger and registry, liveOpener), `check` dry ones
// (checkBuild: a discarding logger, a throwaway registry, dryOpener), so
// that both build the same objects with the same code and check only
// stops before opening what run opens. It reads no other generation:
// what crosses a reload crosses in generation.Adopt.
type builder struct {
	log     *slog.Logger
	metrics *metrics
	open    opener
}

// build turns a validated configuration into a generation. Nothing runs
// until start. What the builders refuse (a certificate that does not
// cover the route's names, a client certificate without clientAuth, a
// route name outside the serving CA's constraints, a file that cannot be
// loaded) is a config.ErrorList with the key of each, one per route.
func (b *builder) build(cfg *config.Config) (*generation, error) {
	gen := newGeneration(cfg, b.open)
	var routes []*sni.Route
	var errs config.ErrorList
	for i := range cfg.Routes {
		r, err := b.buildRoute(gen, cfg, &cfg.Routes[i])
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
		if gen.dns, err = b.buildDNS(gen, cfg); err != nil {
			gen.retire()
			return nil, err
		}
	}
	return gen, nil
}

func (b *builder) buildRoute(gen *generation, cfg *config.Config, rc *config.Route) (*sni.Route, error) {
	r := &sni.Route{
		Name:          rc.Name,
		SNI:           rc.SNI,
		Mode:          sni.Mode(rc.Mode),
		ProxyProtocol: rc.ProxyProtocol,
	}
	checkTLS := spliceCheckTLS(rc)
	var clientSide *certs.ClientTLS
	if r.Mode == sni.ModeBridge {
		ct, err := b.bridgeSide(gen, rc, r)
		if err != nil {
			return nil, err
		}
		checkTLS = checkClientTLS(ct, rc)
		clientSide = ct
		gen.clients[rc.Name] = ct
	}
	pool, err := upstream.New(upstream.Config{
		Route:         rc.Name,
		Addrs:         rc.Upstreams,
		Balance:       upstream.Balance(rc.Balance),
		Check:         upstreamCheck(rc.Health),
		TLSConfigFunc: checkTLS,
		Logger:        b.log,
		Metrics:       b.metrics.upstream,
	})
	if err != nil {
		return nil, err
	}
	r.Pool = pool
	if rc.HTTP != nil {
		if r.Handler, err = b.httpHandler(gen, cfg, rc, clientSide, pool); err != nil {
			return nil, err
		}
	}
	gen.pools[rc.Name] = pool
	gen.workers = append(gen.workers, pool)
	return r, nil
}

// bridgeSide fills in what a bridge route adds to r: the serving
// certificate, the node identity and the limits of the node side, and
// the upstream client side, which it returns.
func (b *builder) bridgeSide(gen *generation, rc *config.Route, r *sni.Route) (*certs.ClientTLS, error) {
	var err error
	if r.Serve, err = b.serveSource(gen, rc); err != nil {
		return nil, err
	}
	r.ServeKeyExchanges = rc.Serve.KeyExchanges
	r.ServeMinVersion, r.ServeCipherSuites = rc.Serve.MinVersion, rc.Serve.CipherSuites
	r.MaxDials, r.MaxDialsPerClient = rc.MaxDials, rc.MaxDialsPerClient
	r.DialRatePerClient = cmp.Or(rc.DialRatePerClient, -1) // 0 in the file is no limit; in sni.Route, negative
	auth, workers, err := clientAuth(rc, b.log, b.metrics.certs)
	if err != nil {
		return nil, err
	}
	r.ClientAuth = auth
	gen.workers = append(gen.workers, workers...)
	ct, workers, err := clientTLS(rc, b.log, b.metrics.certs)
	if err != nil {
		return nil, err
	}
	gen.workers = append(gen.workers, workers...)
	r.UpstreamTLSFunc = ct.Config
	return ct, nil
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
func (b *builder) serveSource(gen *generation, rc *config.Route) (certSource, error) {
	s := rc.Serve
	if s.CACert != "" {
		m, err := certs.NewMinter(certs.MinterConfig{
			CACertFile: s.CACert, CAKeyFile: s.CAKey, Names: rc.SNI,
			Route: rc.Name, Logger: b.log, Metrics: b.metrics.certs,
		})
		if err != nil {
			return nil, err
		}
		gen.workers = append(gen.workers, m)
		return m, nil
	}
	kp, err := certs.NewKeyPair(certs.KeyPairConfig{
		CertFile: s.Cert, KeyFile: s.Key, Route: rc.Name, Role: certs.RoleServe, Names: rc.SNI,
		Logger: b.log, Metrics: b.metrics.certs,
	})
	if err != nil {
		return nil, err
	}
	gen.workers = append(gen.workers, kp)
	return kp, nil
}

func (b *builder) buildDNS(gen *generation, cfg *config.Config) (*dnsresponder.Handler, error) {
	routed, err := routedTable(cfg)
	if err != nil {
		return nil, err
	}
	if gen.answers, err = b.buildAnswerCheck(cfg); err != nil {
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
		Logger:      b.log,
		Metrics:     b.metrics.dns,
	})
}

// buildAnswerCheck is the check of dns.answer_check, nil without one. Its
// ClientHello names the configuration's first routed name.
func (b *builder) buildAnswerCheck(cfg *config.Config) (*dnsresponder.AnswerCheck, error) {
	ac := cfg.DNS.AnswerCheck
	if ac == nil {
		return nil, nil
	}
	var serverName string
	if routed := cfg.RoutedNames(); len(routed) > 0 {
		serverName = dnsresponder.CheckServerName(routed[0])
	}
	return dnsresponder.NewAnswerCheck(dnsresponder.AnswerCheckConfig{
		Answer:     cfg.DNS.Answer,
		Port:       ac.Port,
		ServerName: serverName,
		Interval:   ac.Interval,
		Timeout:    ac.Timeout,
		Fall:       ac.Fall,
		Rise:       ac.Rise,
		Logger:     b.log,
		Metrics:    b.metrics.dns.Answers(),
	})
}
