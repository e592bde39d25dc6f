package upstream

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Run checks every host at once, then every Check.Interval, until ctx is
// done; one goroutine per host. A host never has two checks in flight: a
// check that runs past the next one's start delays it, and the next starts
// as soon as it ends. Hosts in StateMaint are not checked; a
// host leaving maint is checked at once. Run returns nil after ctx is done
// and every goroutine it started has returned, or an error at once if the
// pool is already running.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return fmt.Errorf("route %q: upstream pool is already running", p.Route())
	}
	defer p.running.Store(false)
	for i := range p.hosts {
		p.publish(p.hosts[i].Load())
	}
	var wg sync.WaitGroup
	for i := range p.hosts {
		wg.Go(func() { p.watch(ctx, i) })
	}
	wg.Wait()
	return nil
}

// CheckOnce runs one round of checks, every eligible host concurrently,
// and returns when all are recorded. Run does the same on a timer; tests
// and `snigate check` call it directly.
func (p *Pool) CheckOnce(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range p.hosts {
		wg.Go(func() { p.checkHost(ctx, i) })
	}
	wg.Wait()
}

// watch is the health loop of the host at position i. It looks the host up
// on every round, so a host swapped in by Adopt is the one checked. The
// next check is due Check.Interval after the previous one started; one
// that ran past that point is followed at once by the next, never by a
// burst of catch-up checks (a ticker would keep its own grid and fire as
// soon as the late check ended, then again on the grid).
func (p *Pool) watch(ctx context.Context, i int) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		start := p.checkHost(ctx, i)
		t.Reset(p.cfg.Check.Interval - time.Since(start))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.hosts[i].Load().wake:
		}
	}
}

// checkHost runs one check of the host at position i and records it,
// unless the host is in maint or belongs to another pool now. It waits for
// a check of the same host still in flight (another pool's before Adopt,
// or CheckOnce beside Run) to end, so a host never has two at once. It
// returns when the check started, or now when there was none.
func (p *Pool) checkHost(ctx context.Context, i int) time.Time {
	h := p.hosts[i].Load()
	if !h.lockCheck(ctx) {
		return time.Now()
	}
	defer h.unlockCheck()
	start := time.Now()
	if h.owner.Load() != p || h.State() == StateMaint {
		return start
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Check.Timeout)
	err := p.checker.run(cctx, p.checkKind(h), h.addr, p.sessions[i])
	cancel()
	if ctx.Err() != nil {
		return start // stopping: the result says nothing about the host
	}
	p.observe(h, err, start)
	return start
}

// observe logs, counts and records one check result.
func (p *Pool) observe(h *Host, err error, start time.Time) {
	if localError(err) {
		p.localFailed(h, err, time.Now())
		return
	}
	result := "ok"
	if err != nil {
		result = "fail"
	}
	p.log.Debug("health check", "route", p.Route(), "upstream", h.addr,
		"check", string(p.cfg.Check.Kind), "result", result, "err", errString(err),
		"duration", time.Since(start))
	p.cfg.Metrics.countCheck(p.Route(), h.addr, result)
	if h.owner.Load() != p {
		return // adopted by a newer pool while the check ran
	}
	changed, healthy := h.record(err, start.Round(0), p.cfg.Check.Rise, p.cfg.Check.Fall)
	if !changed {
		return
	}
	p.log.Info("upstream health changed", "route", p.Route(), "upstream", h.addr,
		"from", healthWord(!healthy), "to", healthWord(healthy), "err", errString(err))
	p.cfg.Metrics.setUp(p.Route(), h.addr, healthy)
}

func healthWord(healthy bool) string {
	if healthy {
		return "up"
	}
	return "down"
}
