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
	stores  map[string]*routeStore        // http routes' caches, by route name (stores.go)
	audits  *httpbridge.AuditFiles        // their audit logs, one writer per file, released by retire
	open    opener                        // what opens its audit logs and cache stores

	cancel  context.CancelFunc // stops the workers
	wg      sync.WaitGroup
	retired sync.Once
}

func newGeneration(cfg *config.Config, open opener) *generation {
	return &generation{cfg: cfg, open: open, pools: make(map[string]*upstream.Pool),
		clients: make(map[string]*certs.ClientTLS), bridges: make(map[string]*httpbridge.Bridge),
		pinners: make(map[string]*images.Pinner), stores: make(map[string]*routeStore),
		audits: new(httpbridge.AuditFiles)}
}

// runner is a background worker of a generation.
type runner interface {
	Run(ctx context.Context) error
}

// Adopt takes over from prev, the generation in force until now (nil:
// gen is the first), everything that lives on across a reload; it is
// the only place where state crosses one, and the generation's builder
// reads no other generation. It works in two steps around the moment
// prev's workers stop, so that no health check of prev runs on after
// its state is carried, and gen's have not started.
//
// Adopt itself claims what can fail, and changes nothing of prev: it
// opens the cache stores of the directories prev does not hold and
// builds the shared tiers prev does not have (storeadopt.go). Its error
// (a config.ErrorList at routes[i].http.cache.dir or .shared, as
// buildError reports what the builders refuse) rejects the reload: prev
// stays in force untouched, and gen.retire closes what gen opened.
//
// The carry step it returns, called once prev's workers have stopped and
// before gen starts, takes over:
//
//   - upstream pools: the upstreams both have keep their health, admin
//     state and connection counts (upstream.Pool.Adopt);
//   - the answer check: the addresses both check keep their state; a
//     dns.answer_check the file dropped drops its series;
//   - the DNS handler: the forwarders both have keep their failure state
//     (dnsresponder.Handler.Adopt);
//   - cache stores: a route that keeps its cache.dir keeps prev's open
//     store (its max_size updated; the directory's lock is one store's,
//     so the build only recorded the need), and its shared tier while
//     cache.shared stays the same; a route renamed onto a directory
//     gets it once prev's store of it is closed;
//   - audit files: gen's handles on a file prev has open write through
//     prev's writer (httpbridge.AuditFiles.Adopt: one writer per file,
//     so lines never interleave).
//
// What prev keeps of its own (its other stores and tiers, its audit
// handles: a file no route names any more closes with its last) is
// closed or released when prev retires.
func (gen *generation) Adopt(prev *generation) (carry func(), err error) {
	if err := gen.claimStores(prev); err != nil {
		return nil, err
	}
	return func() { gen.carry(prev) }, nil
}

// carry is Adopt's second step.
func (gen *generation) carry(prev *generation) {
	gen.carryStores(prev)
	if prev == nil {
		return
	}
	gen.audits.Adopt(prev.audits)
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
// at the next request boundary, idle upstream connections now), releases
// its audit logs and closes the cache stores and shared tiers no newer
// generation took over, once a newer generation is in force, the
// gateway has drained, or the generation was rejected. Later calls do
// nothing.
func (gen *generation) retire() {
	gen.retired.Do(func() {
		for _, b := range gen.bridges {
			b.Close()
		}
		gen.audits.Close()
		for _, s := range gen.storeList() {
			s.close()
		}
		clear(gen.bridges)
	})
}

// reopenAudits reopens the generation's audit log files (SIGHUP, reload):
// logrotate moves a file away, then signals.
func (gen *generation) reopenAudits() { gen.audits.Reopen() }

// certSource is what serves a bridge route's certificate (certs.KeyPair or
// certs.Minter).
type certSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

type errorLogger interface {
	Error(msg string, args ...any)
}
