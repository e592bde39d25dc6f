package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/handover"
	"github.com/snigate/snigate/sni"
)

// servers tracks the goroutines serving the listeners.
type servers struct {
	wg   sync.WaitGroup
	errc chan error
}

func (s *servers) run(name string, serve func() error) {
	s.wg.Go(func() {
		if err := serve(); err != nil && !isClosedErr(err) {
			s.errc <- fmt.Errorf("%s: %w", name, err)
		}
	})
}

// isClosedErr reports the errors servers return once they were shut down.
func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed) ||
		errors.Is(err, sni.ErrServerClosed) || errors.Is(err, dnsresponder.ErrServerClosed)
}

func (g *Gateway) serve(ctx context.Context, ls *listeners) error {
	sigs, stopSignals := g.notify()
	defer stopSignals()

	g.initSeries(ls)
	srv := &servers{errc: make(chan error, len(ls.tls)+4)}
	g.running(ctx, ls, srv)
	g.startServers(srv, ls)
	gen := g.gen.Load()
	gen.start(ctx, g.log)

	watchCtx, stopWatch := context.WithCancel(ctx)
	reloadc := make(chan string, 1)
	var watchWG sync.WaitGroup
	watchWG.Go(func() { g.watchConfig(watchCtx, reloadc) })
	defer func() { stopWatch(); watchWG.Wait() }()

	g.setReady(true)
	g.logStart(ls)
	g.announceReady()
	if g.opts.ReadyFunc != nil {
		g.opts.ReadyFunc(ls.addrs())
	}
	for {
		select {
		case <-ctx.Done():
			g.sdNotify(handover.NotifyStopping)
			return g.drain(sigs, srv, g.clock())
		case sig := <-sigs:
			if done, err := g.signaled(ctx, sig, sigs, srv); done {
				return err
			}
		case reason := <-reloadc:
			g.Reload(ctx, reason)
		case err := <-srv.errc:
			g.log.Error("server failed, stopping", "err", err)
			g.sdNotify(handover.NotifyStopping)
			g.shutdownNow(srv)
			return err
		}
	}
}

// signaled acts on a signal received while serving; done says that Run
// returns err.
func (g *Gateway) signaled(ctx context.Context, sig os.Signal, sigs <-chan os.Signal, srv *servers) (done bool, err error) {
	switch sig {
	case syscall.SIGHUP:
		g.Reload(ctx, "SIGHUP")
		return false, nil
	case syscall.SIGUSR2:
		if !g.upgrade(ctx) {
			return false, nil
		}
		g.giveWay()
		return true, g.drain(sigs, srv, g.clock())
	case syscall.SIGQUIT:
		g.log.Warn("stop now: closing every connection", "signal", sig.String(),
			"connections", g.openConnections())
		g.sdNotify(handover.NotifyStopping)
		g.shutdownNow(srv)
		return true, ErrForcedStop
	}
	first := g.clock() // the stop request's time, before anything of it is seen
	g.log.Info("stop signal received", "signal", sig.String())
	g.sdNotify(handover.NotifyStopping)
	return true, g.drain(sigs, srv, first)
}

// running records what Run serves, for reloads and the admin API.
func (g *Gateway) running(ctx context.Context, ls *listeners, srv *servers) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.ls, g.srv = ls, srv
	g.tlsBound.Store(new(ls.addrs().TLS))
	g.runCtx.Store(&ctx)
}

// notify returns the channel Run's signals arrive on and the func that
// stops their delivery: the test's channel when one is set.
func (g *Gateway) notify() (<-chan os.Signal, func()) {
	if g.signals != nil {
		return g.signals, func() {}
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, runSignals...)
	return sigs, func() { signal.Stop(sigs) }
}

func (g *Gateway) startServers(srv *servers, ls *listeners) {
	for _, ln := range ls.tls {
		srv.run("listen.tls "+ln.Addr().String(), func() error { return g.sni.Serve(ln) })
	}
	if ls.connect != nil {
		srv.run("listen.connect", func() error { return g.sni.ServeConnect(ls.connect) })
	}
	if ls.dnsUDP != nil {
		srv.run("listen.dns udp", func() error { return g.dns.ServeUDP(ls.dnsUDP) })
		srv.run("listen.dns tcp", func() error { return g.dns.ServeTCP(ls.dnsTCP) })
	}
	if ls.admin != nil {
		srv.run("listen.admin", func() error { return g.admin.Serve(ls.admin) })
	}
}

func (g *Gateway) setReady(ready bool) {
	if ready {
		g.wasReady.Store(true)
	}
	g.ready.Store(ready)
	g.readyChanged()
}

func (g *Gateway) logStart(ls *listeners) {
	// sni and dnsresponder log their own listeners.
	if ls.admin != nil {
		g.log.Info("listening", "listener", ls.admin.Addr().String(), "kind", "admin")
	}
	gen := g.gen.Load()
	g.logRoutes(gen)
	g.logAnswerCheck()
	for _, w := range KeyFileWarnings(gen.cfg) {
		g.log.Warn("private key file readable by group or others", "detail", w)
	}
	if w := FDLimitWarning(gen.cfg); w != "" {
		g.log.Warn("file descriptor limit too low", "detail", w)
	}
	for _, w := range ExposureWarnings(gen.cfg) {
		if w.Key != "listen.admin" { // logged as the admin listener opens
			g.log.Warn("configuration warning", "key", w.Key, "detail", w.Error())
		}
	}
}

func (g *Gateway) logRoutes(gen *generation) {
	for _, r := range gen.cfg.Routes {
		g.log.Info("route", "route", r.Name, "mode", r.Mode, "sni", r.SNI,
			"upstreams", r.Upstreams, "balance", r.Balance, "check", r.Health.Check)
	}
	if gen.cfg.DefaultRoute != "" {
		g.log.Info("default route", "route", gen.cfg.DefaultRoute)
	}
}

// drain stops accepting, reports not-ready, lets connections finish for up
// to timeouts.drain, then closes what is left. SIGQUIT, or a stop signal
// more than RepeatStopWindow after first (the stop request's time, taken
// as it arrived), cuts the budget short;
// while it runs it logs the connections still open.
func (g *Gateway) drain(sigs <-chan os.Signal, srv *servers, first time.Time) error {
	g.markStopping()
	g.setReady(false)
	g.leaveOutOwnAnswers()
	budget := g.gen.Load().cfg.Timeouts.Drain
	g.log.Info("draining", "connections", g.openConnections(), "remaining", budget.String())
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var forced bool
	var wg sync.WaitGroup
	wg.Go(func() { forced = g.superviseDrain(ctx, sigs, first, cancel) })
	err := g.shutdown(ctx, srv)
	cancel()
	wg.Wait()
	if forced {
		return ErrForcedStop
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	g.log.Info("stopped")
	return nil
}

// shutdown stops the servers within ctx, then the background workers; the
// admin API stays up until the end so /readyz reports 503 while draining.
func (g *Gateway) shutdown(ctx context.Context, srv *servers) error {
	var errs []error
	errs = append(errs, g.sni.Shutdown(ctx))
	errs = append(errs, g.dns.Shutdown(ctx))
	g.gen.Load().stop()
	g.gen.Load().retire()
	adminCtx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
	defer cancel()
	errs = append(errs, g.admin.Shutdown(adminCtx))
	srv.wg.Wait()
	return errors.Join(errs...)
}

func (g *Gateway) shutdownNow(srv *servers) {
	g.markStopping()
	g.setReady(false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.shutdown(ctx, srv)
}

// markStopping refuses the reloads that would come after this point: the
// servers are being shut down and their goroutines waited for.
func (g *Gateway) markStopping() { g.setStopping(true) }

func (g *Gateway) setStopping(on bool) {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.stopping = on
}
