package gateway

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/snigate/snigate/internal/handover"
)

// DefaultUpgradeTimeout is how long an upgrade waits for the new process
// to be ready before it kills it and keeps serving.
const DefaultUpgradeTimeout = time.Minute

// upgrade (SIGUSR2) starts the program the path this process was started
// as names now (handover.Executable: the new binary, once it replaced the
// old one on disk or a symlink was switched to it) with the
// same arguments and every listening socket, and waits until it serves.
// It reports true when the new process serves: this one must then stop
// accepting and drain. On failure the new process is killed and this one
// goes on serving, as if nothing happened.
func (g *Gateway) upgrade(ctx context.Context) bool {
	reloading, err := handover.Reloading()
	if err == nil {
		g.sdNotify(reloading, handover.Status("upgrading: starting the new process"))
	}
	g.log.Info("upgrade: starting a new process with the listening sockets", "signal", "SIGUSR2")
	child, err := g.spawn(ctx)
	g.assertNonblocking()
	if err != nil {
		g.setStopping(false)
		g.log.Error("upgrade failed; this process keeps serving", "err", err)
		g.sdNotify(handover.NotifyReady, handover.Status("serving; the last upgrade failed: "+err.Error()))
		return false
	}
	g.log.Info("upgrade: the new process serves; this one stops accepting and drains",
		"pid", child.Pid, "path", child.Path, "connections", g.openConnections())
	return true
}

// spawn duplicates the listeners and starts the new process. Reloads are
// refused from here on (the new process would not have their listeners),
// again allowed if the upgrade fails.
func (g *Gateway) spawn(ctx context.Context) (*handover.Child, error) {
	g.reloadMu.Lock()
	g.stopping = true
	socks, err := g.ls.sockets()
	g.reloadMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	return handover.Spawn(ctx, handover.SpawnConfig{Sockets: socks, Timeout: g.upgradeTimeout()})
}

// assertNonblocking checks, after a hand-over that failed or succeeded,
// that every listening socket is still non-blocking, and makes it so
// again if not: the sockets are shared with the new process, and the
// event loops' accept must never block (handover.Spawn restores the
// flags itself; a line here means something else cleared them).
func (g *Gateway) assertNonblocking() {
	g.reloadMu.Lock()
	ls := g.ls
	g.reloadMu.Unlock()
	for _, n := range ls.all() {
		c, ok := n.conn.(syscall.Conn)
		if !ok {
			continue
		}
		restored, err := handover.EnsureNonblocking(c)
		switch {
		case err != nil:
			g.log.Error("upgrade: cannot check a listening socket's flags", "socket", n.name(), "err", err)
		case restored:
			g.log.Error("upgrade: listening socket found in blocking mode after the hand-over; made non-blocking again", "socket", n.name())
		}
	}
}

func (g *Gateway) upgradeTimeout() time.Duration {
	if g.upgradeWait > 0 {
		return g.upgradeWait
	}
	return DefaultUpgradeTimeout
}

// giveWay stops this process's share of the sockets it handed over: the
// TLS and CONNECT listeners close and the connections still in their
// handshakes are let through to their tunnels (drain would cut them), the
// DNS and admin servers stop at once (the new process answers on the same
// sockets; this one must not answer /readyz or DNS while it drains), and
// the admin unix socket file is left to the new process.
func (g *Gateway) giveWay() {
	g.reloadMu.Lock()
	ls, cfg := g.ls, g.gen.Load().cfg
	g.reloadMu.Unlock()
	ls.keepUnixSocketFiles()
	g.sni.StopAccepting()
	ctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
	defer cancel()
	if err := g.dns.Shutdown(ctx); err != nil {
		g.log.Warn("upgrade: DNS queries in flight cut short", "err", err)
	}
	if err := g.admin.Shutdown(ctx); err != nil {
		g.log.Warn("upgrade: admin requests in flight cut short", "err", err)
	}
	g.awaitHandshakes(cfg.Timeouts.ClientHello + cfg.Timeouts.Connect)
}

// handshakePoll is how often awaitHandshakes looks at the connections
// still in their handshakes.
const handshakePoll = 20 * time.Millisecond

// awaitHandshakes waits, at most limit (the longest a handshake and an
// upstream dial may take), until no connection is in its handshakes.
func (g *Gateway) awaitHandshakes(limit time.Duration) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(handshakePoll)
	defer tick.Stop()
	for g.sni.Handshaking() > 0 {
		select {
		case <-deadline.C:
			g.log.Warn("upgrade: connections still in their handshakes after the handshake and connect timeouts; the drain closes them",
				"connections", g.sni.Handshaking())
			return
		case <-tick.C:
		}
	}
}

// announceReady tells whoever waits that the gateway serves: the old
// process of a hand-over (which then drains), and systemd (READY=1; with
// MAINPID= first when this process takes over from another). Inherited
// sockets that the configuration no longer has are closed.
func (g *Gateway) announceReady() {
	took := g.inherit.HasParent()
	msgs := []string{handover.NotifyReady, handover.Status(g.status())}
	if took {
		// Before the old process learns it may exit: systemd must know the
		// new main process first.
		msgs = append([]string{handover.MainPID()}, msgs...)
	}
	g.sdNotify(msgs...)
	source := g.inherit.Source()
	closed, err := g.inherit.Ready()
	for _, c := range closed {
		if source == handover.SourceSystemd {
			g.log.Warn("socket from systemd matches no listen.* address: closed here, but systemd still listens on it and connections there wait unanswered; make snigate.socket and listen.* list the same addresses",
				"socket", c)
			continue
		}
		g.log.Info("inherited socket not in the configuration: closed", "socket", c)
	}
	if err != nil {
		g.log.Error("hand-over: tell the old process that this one serves", "err", err)
	}
	if took {
		g.log.Info("upgrade: serving; the old process drains its connections", "pid", os.Getpid())
	}
}

// status is the STATUS= line systemctl status shows.
func (g *Gateway) status() string {
	return "serving " + plural(len(g.gen.Load().cfg.Routes), "route")
}

// sdNotify sends sd_notify(3) messages when systemd asked for them.
func (g *Gateway) sdNotify(msgs ...string) {
	if _, err := handover.Notify(msgs...); err != nil {
		g.log.Warn("cannot notify systemd", "err", err)
	}
}
