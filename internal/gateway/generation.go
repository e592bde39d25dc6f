package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/images"
	"github.com/snigate/snigate/internal/certs"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/sni"
	"github.com/snigate/snigate/upstream"
)

// A generation is everything built from one configuration file (by a
// builder, build.go): the route table, the upstream pools, the
// certificate watchers and the DNS handler. A reload builds a new
// generation, which Adopts the one in force, swaps it in, then retires
// the old one; connections the old one accepted keep running to
// completion.
type generation struct {
	cfg     *config.Config
	routes  *sni.Table
	pools   map[string]*upstream.Pool     // by route name
	clients map[string]*certs.ClientTLS   // bridge routes' upstream client side, by route name
	dns     *dnsresponder.Handler         // nil when listen.dns is not set
	answers *dnsresponder.AnswerCheck     // dns.answer_check; nil without it (or without listen.dns)
	workers []runner                      // pools, certificate watchers, the answer check
	bridges map[string]*httpbridge.Bridge // the HTTP-aware bridges of http routes, by route name
	pinners map[string]*images.Pinner     // routes' cache.pin images, by route name (images.go)
	audits  []*httpbridge.AuditLog        // their audit logs, released by retire
	open    opener                        // what opened its audit logs and cache stores

	cancel context.CancelFunc // stops the workers
	wg     sync.WaitGroup
}

func newGeneration(cfg *config.Config, open opener) *generation {
	return &generation{cfg: cfg, open: open, pools: make(map[string]*upstream.Pool),
		clients: make(map[string]*certs.ClientTLS), bridges: make(map[string]*httpbridge.Bridge),
		pinners: make(map[string]*images.Pinner)}
}

// runner is a background worker of a generation.
type runner interface {
	Run(ctx context.Context) error
}

// Adopt takes over from prev, the generation in force until now,
// everything that lives on across a reload; it is the only place where
// state crosses one. prev's workers must be stopped first, so that no
// health check of prev runs on, and gen's not started yet.
//
//   - upstream pools: the upstreams both have keep their health, admin
//     state and connection counts (upstream.Pool.Adopt);
//   - the answer check: the addresses both check keep their state; a
//     dns.answer_check the file dropped drops its series;
//   - the DNS handler: the forwarders both have keep their failure state
//     (dnsresponder.Handler.Adopt);
//   - cache stores: a route that keeps its cache.dir was given prev's
//     open store while gen was built (the directory's lock is one
//     store's, opener.openStore), and keeps it; the stores prev had
//     and gen has not are closed here;
//   - audit files: gen's handles joined, by path, the writers prev's
//     opened (httpbridge.AuditFiles: one writer per file, so lines never
//     interleave); prev's handles are released when prev retires, and a
//     file no route names any more closes with the last.
func (gen *generation) Adopt(prev *generation) {
	for name, p := range gen.pools {
		if op := prev.pools[name]; op != nil {
			p.Adopt(op)
		}
	}
	switch {
	case gen.answers != nil:
		gen.answers.Adopt(prev.answers) // nil prev: nothing to carry
	case prev.answers != nil:
		prev.answers.DeleteSeries() // dns.answer_check removed
	}
	if gen.dns != nil {
		gen.dns.Adopt(prev.dns) // nil prev: nothing to carry
	}
	gen.open.retainStores(gen.cfg)
}

// dnsHandler is what the DNS server answers with: nil (the server
// refuses) without listen.dns.
func (gen *generation) dnsHandler() dns.Handler {
	if gen.dns == nil {
		return nil
	}
	return gen.dns
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

// retire ends the generation's HTTP bridges (their node connections close
// at the next request boundary, idle upstream connections now) and
// releases its audit logs, once a newer generation is in force or the
// gateway has drained.
func (gen *generation) retire() {
	for _, b := range gen.bridges {
		b.Close()
	}
	for _, a := range gen.audits {
		a.Close()
	}
	clear(gen.bridges)
	gen.audits = nil
}

// reopenAudits reopens the generation's audit log files (SIGHUP, reload):
// logrotate moves a file away, then signals.
func (gen *generation) reopenAudits() {
	for _, a := range gen.audits {
		a.Reopen()
	}
}

// certSource is what serves a bridge route's certificate (certs.KeyPair or
// certs.Minter).
type certSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

type errorLogger interface {
	Error(msg string, args ...any)
}
