package gateway

import (
	"log/slog"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regcache"
	"github.com/snigate/snigate/s3tier"
)

// opener opens the files a generation writes: the builder's side effects
// on the file system. `run` builds with liveOpener, `check` with
// dryOpener, which says why run could not open a file without opening it
// (a running snigate holds its cache directories' locks and writes its
// audit logs).
type opener interface {
	// openAudit returns a handle on the audit log file path (http.audit_log,
	// "-" standard output); nil, nil when nothing is opened (check). The
	// error says what to change.
	openAudit(path string) (*httpbridge.AuditLog, error)
	// openStore returns route's cache store in c.Dir; nil, nil when
	// nothing is opened (check). The error is a *cacheDirError.
	openStore(route string, c *config.Cache) (*regcache.Cache, error)
	// openShared returns route's shared cache tier for c (sharedtiers.go);
	// nil, nil when nothing is opened (check). The error is a
	// *sharedTierError.
	openShared(route string, c *config.SharedCache) (*s3tier.Tier, error)
	// retainStores closes the stores opened for routes or directories
	// that cfg, the configuration in force, does not have (nil: every
	// store).
	retainStores(cfg *config.Config)
}

// liveOpener is run's opener: audit logs are opened in, or joined from,
// the process's AuditFiles (one writer per file across routes and
// generations), cache stores taken from the process's caches (one store
// per directory across generations).
type liveOpener struct {
	audits *httpbridge.AuditFiles
	caches *caches
	log    *slog.Logger
	m      *httpbridge.Metrics
}

var _ opener = (*liveOpener)(nil)

func (o *liveOpener) openAudit(path string) (*httpbridge.AuditLog, error) {
	a, err := o.audits.Open(path, o.log, o.m)
	if err != nil {
		return nil, auditOpenError(path, err)
	}
	return a, nil
}

func (o *liveOpener) openStore(route string, c *config.Cache) (*regcache.Cache, error) {
	return o.caches.take(route, c)
}

func (o *liveOpener) retainStores(cfg *config.Config) {
	o.caches.retain(cfg)
	o.caches.shared.retain(cfg)
}

// dryOpener is check's opener: it opens nothing and says, by the checks
// of checkAuditLog and checkCacheDir, what would stop run opening the
// file.
type dryOpener struct{}

var _ opener = dryOpener{}

func (dryOpener) openAudit(path string) (*httpbridge.AuditLog, error) {
	return nil, checkAuditLog(path)
}

func (dryOpener) openStore(_ string, c *config.Cache) (*regcache.Cache, error) {
	if err := checkCacheDir(c.Dir); err != nil {
		return nil, &cacheDirError{err: err}
	}
	return nil, nil
}

func (dryOpener) retainStores(*config.Config) {}
