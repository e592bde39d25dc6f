package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/internal/filewatch"
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
	old := g.gen.Load()
	cfg, err := g.load()
	if err == nil {
		err = g.swap(ctx, old, cfg)
	}
	g.caches.retain(g.gen.Load().cfg) // the stores of the generation in force; a rejected one's are closed
	g.metrics.reloaded(err, time.Now())
	g.gen.Load().reopenAudits() // logrotate signals SIGHUP; a rejected file must not keep the old log open
	if err != nil {
		g.log.Error("configuration reload rejected; the running configuration stays in force",
			"reason", reason, "err", err)
		return err
	}
	g.log.Info("configuration reloaded", "reason", reason, "routes", len(cfg.Routes))
	return nil
}

func (g *Gateway) swap(ctx context.Context, old *generation, cfg *config.Config) error {
	gen, err := g.build(cfg)
	if err != nil {
		return err
	}
	if err := g.sni.SetConfig(g.sniConfig(cfg)); err != nil {
		return err
	}
	g.warnRestartNeeded(old.cfg, cfg)
	old.stop()
	defer old.retire()
	gen.adopt(old)
	gen.start(ctx, g.log)
	g.sni.SetRoutes(gen.routes)
	if g.dns != nil && gen.dns != nil {
		if nh, ok := gen.dns.(*dnsresponder.Handler); ok {
			if oh, ok := old.dns.(*dnsresponder.Handler); ok {
				nh.Adopt(oh)
			}
		}
		g.dns.SetHandler(gen.dns)
	}
	g.gen.Store(gen)
	g.metrics.prune(old.cfg, cfg)
	g.metrics.initRoutes(cfg, g.labels)
	g.logRoutes(gen)
	return nil
}

// warnRestartNeeded names the settings a reload does not apply: the
// listener addresses are fixed at start. Timeouts, max_connections,
// listen.allow and listen.proxy_protocol_from apply to new connections
// (listen.allow and dns.allow to the next DNS query).
func (g *Gateway) warnRestartNeeded(old, cur *config.Config) {
	changed := func(key string) {
		g.log.Warn("setting changed in the configuration file; it applies only after a restart", "key", key)
	}
	if !slices.Equal(old.Listen.TLS, cur.Listen.TLS) {
		changed("listen.tls")
	}
	if old.Listen.DNS != cur.Listen.DNS {
		changed("listen.dns")
	}
	if old.Listen.Admin != cur.Listen.Admin {
		changed("listen.admin")
	}
	if old.Listen.Connect != cur.Listen.Connect {
		changed("listen.connect")
	}
	if (old.Listen.DNS == "") != (cur.Listen.DNS == "") {
		changed("dns")
	}
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
