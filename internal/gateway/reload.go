package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/filewatch"
	"github.com/snigate/snigate/internal/handover"
)

const (
	// ConfigPollInterval is how often the configuration file's identity
	// is polled, the backstop to file-system events (see watchConfig).
	ConfigPollInterval = time.Second
	// ConfigSettleDelay is how long the configuration file's directory
	// must stay quiet after a change before the file is read: an editor's
	// or a tool's burst of writes is one reload.
	ConfigSettleDelay    = time.Second
	adminShutdownTimeout = 2 * time.Second
)

// Reload re-reads the configuration file and, if it is valid, swaps a new
// generation in: new connections use the new routes and certificates,
// established ones are untouched, and upstream health and admin state are
// carried over. An invalid file is rejected and the running configuration
// stays in force. reason goes to the log.
func (g *Gateway) Reload(ctx context.Context, reason string) error {
	err := g.reload(ctx, reason)
	if g.opts.ReloadedFunc != nil {
		g.opts.ReloadedFunc(err)
	}
	return err
}

func (g *Gateway) reload(ctx context.Context, reason string) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	if g.stopping {
		g.log.Info("reload ignored while draining or upgrading", "reason", reason)
		return errStopping
	}
	if msg, err := handover.Reloading(); err == nil {
		g.sdNotify(msg)
	}
	err := g.loadAndSwap(ctx)
	now := time.Now()
	g.metrics.reloaded(err, now)
	g.recordReload(reason, err, now)
	g.gen.Load().reopenAudits() // logrotate signals SIGHUP; a rejected file must not keep the old log open
	if err != nil {
		g.sdNotify(handover.NotifyReady, handover.Status(g.status()+"; the last reload was rejected"))
		g.log.Error("configuration reload rejected; the running configuration stays in force",
			"reason", reason, "err", err)
		if rerr := g.access.reopen(); rerr != nil {
			g.log.Error("cannot reopen the access log; writing to the file in use", "err", rerr)
		}
		return err
	}
	g.configInForce(now)
	g.sdNotify(handover.NotifyReady, handover.Status(g.status()))
	g.log.Info("configuration reloaded", "reason", reason, "routes", len(g.gen.Load().cfg.Routes))
	return nil
}

// errStopping is the reload asked for while the gateway drains or hands
// its sockets to a new process.
var errStopping = errors.New("the gateway is draining or upgrading: no reload; reload the new process")

func (g *Gateway) loadAndSwap(ctx context.Context) error {
	old := g.gen.Load()
	cfg, err := g.load()
	if err != nil {
		return err
	}
	return g.swap(ctx, old, cfg)
}

func (g *Gateway) swap(ctx context.Context, old *generation, cfg *config.Config) (err error) {
	gen, err := g.builder.build(cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			gen.retire() // not swapped in: its audit logs and the stores it opened are released
		}
	}()
	carry, err := gen.Adopt(old) // nothing of old changes until carry
	if err != nil {
		return err
	}
	if err := g.openAccessLog(cfg); err != nil {
		return err
	}
	ch, err := g.openListeners(cfg)
	if err != nil {
		return err
	}
	if ch != nil {
		g.tlsPorts = ch.next.tlsPorts()
	}
	if err := g.sni.SetConfig(g.sniConfig(cfg)); err != nil {
		if ch != nil {
			ch.opened.close()
			g.tlsPorts = g.ls.tlsPorts()
		}
		return err
	}
	old.stop()
	defer old.retire()
	carry()
	gen.start(ctx, g.log)
	g.sni.SetRoutes(gen.routes)
	g.dns.SetHandler(gen.dnsHandler())
	g.gen.Store(gen)
	if ch != nil {
		g.apply(ch)
	}
	g.metrics.prune(old.cfg, cfg)
	g.metrics.initRoutes(cfg, g.labels)
	g.logRoutes(gen)
	return nil
}

// openListeners opens the listeners of cfg's new addresses while the
// gateway runs (nil, nil when it does not: Run opens cfg's). Timeouts,
// max_connections, listen.allow and listen.proxy_protocol_from apply to
// new connections (listen.allow and dns.allow to the next DNS query).
func (g *Gateway) openListeners(cfg *config.Config) (*listenerChange, error) {
	if g.ls == nil {
		return nil, nil
	}
	return g.relisten(g.ls, cfg)
}

// load reads and parses the configuration file, and records the hash of
// what it read so that the file watcher does not reload it again.
func (g *Gateway) load() (*config.Config, error) {
	id := filewatch.Stat(g.opts.ConfigFile)
	g.loadedID.Store(&id)
	data, err := os.ReadFile(g.opts.ConfigFile)
	if err != nil {
		return nil, config.ErrorList{{File: g.opts.ConfigFile, Msg: fmt.Sprintf("cannot read the configuration file: %v", err)}}
	}
	sum := sha256.Sum256(data)
	g.loadedSum.Store(&sum)
	return config.Parse(g.opts.ConfigFile, data)
}

// watchConfig asks for a reload when the configuration file's content
// differs from the one last read: internal/filewatch notices the change
// (fsnotify on the file's directory and on a symlink target's, so a
// Kubernetes ConfigMap's ..data swap is seen; ConfigSettleDelay so that a
// burst of writes is one reload; a poll every ConfigPollInterval as the
// backstop; a change since the last load, before the watch, too), and the
// content hash keeps a file SIGHUP already loaded from being loaded again.
// It returns when ctx is done.
func (g *Gateway) watchConfig(ctx context.Context, reloadc chan<- string) {
	changed := func() {
		sum := fileSum(g.opts.ConfigFile)
		if sum == nil || bytes.Equal(sum, g.loadedSum.Load()[:]) {
			return // being replaced (read again at the next change), or in force
		}
		select {
		case reloadc <- "configuration file changed":
		default: // a reload is pending; it reads the newest file
		}
	}
	w, err := filewatch.New(filewatch.Config{File: g.opts.ConfigFile, ChangedFunc: changed,
		Since: *g.loadedID.Load(), PollInterval: ConfigPollInterval, SettleDelay: ConfigSettleDelay,
		Logger: g.log})
	if err != nil {
		g.log.Error("configuration file not watched; reload with SIGHUP", "err", err)
		return
	}
	w.Run(ctx)
}

// fileSum is the SHA-256 of the file's content, nil if it cannot be read
// (a file being replaced is read again at the next poll).
func fileSum(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := sha256.Sum256(b)
	return s[:]
}
