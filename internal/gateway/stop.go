package gateway

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Stop requests. SIGTERM and SIGINT ask for a drain; a repeat of either
// within RepeatStopWindow of the first is the same request (coreutils
// timeout, `kill -- -PGID` and inits that signal the whole process group
// send two at once). SIGQUIT, or a SIGTERM/SIGINT later than the window,
// means "stop now": close what is left at once.
const (
	RepeatStopWindow = 2 * time.Second
	DrainLogInterval = 5 * time.Second // how often a drain logs the connections still open
)

// runSignals are the signals Run handles while it runs. SIGQUIT is among
// them so that it stops the gateway at once instead of Go's default
// (a goroutine dump and exit status 2).
var runSignals = []os.Signal{syscall.SIGHUP, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT}

// ErrForcedStop is returned by Run when SIGQUIT, or a stop signal more
// than RepeatStopWindow after the first, closed connections before they
// finished.
var ErrForcedStop = errors.New("stopped at once (SIGQUIT, or a second stop signal more than 2s after the first) without waiting for connections to finish")

// stopAction is what a signal means to a gateway that is draining.
type stopAction int

const (
	stopRepeat  stopAction = iota // the stop request in progress, sent again
	stopNow                       // close the remaining connections now
	stopIgnored                   // SIGHUP, SIGUSR2: no reload or upgrade while draining
)

// classify tells what sig, received at now while a drain that began at
// first is running, asks for.
func classify(sig os.Signal, first, now time.Time) stopAction {
	switch {
	case sig == syscall.SIGQUIT:
		return stopNow
	case sig == syscall.SIGHUP || sig == syscall.SIGUSR2:
		return stopIgnored
	case now.Sub(first) <= RepeatStopWindow:
		return stopRepeat
	}
	return stopNow
}

// clock returns the time stop requests are measured with.
func (g *Gateway) clock() time.Time {
	if g.now != nil {
		return g.now()
	}
	return time.Now()
}

// superviseDrain runs while the drain of ctx (begun at first) goes on: it
// logs the connections still open every DrainLogInterval and answers the
// signals that arrive. On "stop now" it calls cut and reports true.
func (g *Gateway) superviseDrain(ctx context.Context, sigs <-chan os.Signal, first time.Time, cut func()) bool {
	t := time.NewTicker(g.drainLogEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			g.logDraining(ctx)
		case sig := <-sigs:
			if g.answerDuringDrain(sig, first) {
				cut()
				return true
			}
		}
	}
}

// answerDuringDrain logs what sig means during the drain and reports
// whether it is "stop now".
func (g *Gateway) answerDuringDrain(sig os.Signal, first time.Time) bool {
	since := g.clock().Sub(first)
	switch classify(sig, first, g.clock()) {
	case stopRepeat:
		g.log.Info("stop signal repeated: the same stop request, still draining",
			"signal", sig.String(), "since_first", since.Round(time.Millisecond).String(),
			"window", RepeatStopWindow.String())
		return false
	case stopIgnored:
		what := "reload"
		if sig == syscall.SIGUSR2 {
			what = "upgrade"
		}
		g.log.Info(what+" ignored while draining", "signal", sig.String())
		return false
	}
	g.log.Warn("stop now: closing the remaining connections", "signal", sig.String(),
		"since_first", since.Round(time.Millisecond).String(), "connections", g.openConnections())
	return true
}

// logDraining logs the connections still open and the budget left.
func (g *Gateway) logDraining(ctx context.Context) {
	remaining := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		remaining = max(time.Until(d), 0)
	}
	g.log.Info("draining", "connections", g.openConnections(), "remaining", remaining.Round(time.Second).String())
}

func (g *Gateway) drainLogEvery() time.Duration {
	if g.drainLogPeriod > 0 {
		return g.drainLogPeriod
	}
	return DrainLogInterval
}

// openConnections returns the routed connections not yet finished, as
// snigate_active_connections reports them.
func (g *Gateway) openConnections() int {
	mfs, _ := g.registry.Gather() // what was gathered, even when a collector failed
	n := 0.0
	for _, mf := range mfs {
		if mf.GetName() != "snigate_active_connections" {
			continue
		}
		for _, m := range mf.GetMetric() {
			n += m.GetGauge().GetValue()
		}
	}
	return int(n)
}
