package snigate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/miekg/dns"

	"github.com/snigate/snigate/dnsresponder"
)

// Snigate is the plugin handler: it answers the routed names with the
// gateway's addresses and passes every other query to Next.
type Snigate struct {
	// Next is the next plugin in the chain; nil answers SERVFAIL for the
	// names snigate does not route.
	Next plugin.Handler

	zones   plugin.Zones
	policy  atomic.Pointer[dnsresponder.Policy] // never nil once built by newHandler
	watch   *watcher                            // nil: no config file, or reload 0
	check   *dnsresponder.AnswerCheck           // nil: no answer_check
	metrics *Metrics

	mu   sync.Mutex
	stop context.CancelFunc // non-nil while the watcher or the check runs
	wg   sync.WaitGroup     // the watcher and the check
}

var _ plugin.Handler = (*Snigate)(nil)

// logger is what snigate logs through: CoreDNS's per-plugin logger in
// production, a recorder in tests.
type logger interface {
	Infof(format string, v ...any)
	Warningf(format string, v ...any)
	Errorf(format string, v ...any)
}

// newHandler builds the handler for one stanza, reading the config file
// once if there is one. It starts nothing: see OnStartup.
func newHandler(s settings, m *Metrics, log logger) (*Snigate, error) {
	h := &Snigate{zones: plugin.Zones(s.origins), metrics: m}
	b := &builder{s: s, metrics: m, log: log}
	defer func() { h.check = b.check }()
	if s.configPath == "" {
		p, _, err := b.build(nil)
		if err != nil {
			return nil, err
		}
		h.policy.Store(p)
		return h, nil
	}
	w, err := newWatcher(&watcher{
		path:    s.configPath,
		build:   b.build,
		store:   h.policy.Store,
		log:     log,
		metrics: m,
	}, s.reload)
	if err != nil {
		return nil, err
	}
	if err := w.loadFirst(); err != nil {
		return nil, err
	}
	if w.file != nil {
		h.watch = w
	}
	return h, nil
}

// ServeDNS implements plugin.Handler.
func (h *Snigate) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || !h.zones.Contains(r.Question[0].Name) {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	reply, ok := h.policy.Load().Answer(r)
	if !ok {
		return plugin.NextOrFailure(h.Name(), h.Next, ctx, w, r)
	}
	h.metrics.answered(metrics.WithServer(ctx), r.Question[0].Qtype)
	if err := w.WriteMsg(reply); err != nil {
		return reply.Rcode, plugin.Error(pluginName, fmt.Errorf("write reply: %w", err))
	}
	return reply.Rcode, nil
}

// Name implements plugin.Handler.
func (h *Snigate) Name() string { return pluginName }

// OnStartup starts watching the config file, if the stanza has one and
// reload is not 0, and the answer check, if there is one. Calling it
// again while they run does nothing.
func (h *Snigate) OnStartup() error {
	if h.watch == nil && h.check == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	if h.watch != nil {
		h.wg.Go(func() { h.watch.Run(ctx) })
	}
	if h.check != nil {
		h.wg.Go(func() { h.check.Run(ctx) }) //nolint:errcheck // nil once ctx is done
	}
	return nil
}

// OnShutdown stops what OnStartup started and waits for it.
func (h *Snigate) OnShutdown() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop == nil {
		return nil
	}
	h.stop()
	h.wg.Wait()
	h.stop = nil
	return nil
}
