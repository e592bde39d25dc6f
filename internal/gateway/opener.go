package gateway

import (
	"log/slog"

	"github.com/snigate/snigate/httpbridge"
	"github.com/snigate/snigate/internal/config"
	"github.com/snigate/snigate/regcache"
)

// opener opens the files a generation writes: the builder's and
// generation.Adopt's side effects on the file system, into what the
// generation owns. `run` builds with liveOpener, `check` with dryOpener,
// which says why run could not open a file without opening it (a
// running snigate holds its cache directories' locks and writes its
// audit logs).
type opener interface {
	// openAudit returns a handle in files (the generation's) on the
	// audit log file path (http.audit_log, "-" standard output); nil,
	// nil when nothing is opened (check). The error says what to change.
	openAudit(files *httpbridge.AuditFiles, path string) (*httpbridge.AuditLog, error)
	// checkStore says, at build, why a store could not be opened in
	// c.Dir (check); nil when Adopt will open it. The error is a
	// *cacheDirError.
	checkStore(c *config.Cache) error
	// openStore opens route's cache store in c.Dir (generation.Adopt,
	// for a directory the previous generation does not hold); nil, nil
	// when nothing is opened (check). The error is a *cacheDirError.
	openStore(route string, c *config.Cache) (*regcache.Cache, error)
}

// liveOpener is run's opener: audit logs are opened in the generation's
// AuditFiles (one writer per file; Adopt joins the previous
// generation's), cache stores opened by Adopt for the directories the
// previous generation does not hold.
type liveOpener struct {
	log   *slog.Logger
	http  *httpbridge.Metrics
	cache *regcache.Metrics
	// wait: started by an upgrade, whose previous process holds the
	// directories until it has drained; the stores bypass until then
	// (regcache.Config.WaitForLock).
	wait bool
}

var _ opener = (*liveOpener)(nil)

func (o *liveOpener) openAudit(files *httpbridge.AuditFiles, path string) (*httpbridge.AuditLog, error) {
	a, err := files.Open(path, o.log, o.http)
	if err != nil {
		return nil, auditOpenError(path, err)
	}
	return a, nil
}

func (o *liveOpener) checkStore(*config.Cache) error { return nil }

func (o *liveOpener) openStore(route string, c *config.Cache) (*regcache.Cache, error) {
	rc, err := regcache.Open(regcache.Config{Route: route, Dir: c.Dir, MaxSize: c.MaxSize, WaitForLock: o.wait, Logger: o.log, Metrics: o.cache})
	if err != nil {
		return nil, &cacheDirError{err: err}
	}
	return rc, nil
}

// dryOpener is check's opener: it opens nothing and says, by the checks
// of checkAuditLog and checkCacheDir, what would stop run opening the
// file.
type dryOpener struct{}

var _ opener = dryOpener{}

func (dryOpener) openAudit(_ *httpbridge.AuditFiles, path string) (*httpbridge.AuditLog, error) {
	return nil, checkAuditLog(path)
}

func (dryOpener) checkStore(c *config.Cache) error {
	if err := checkCacheDir(c.Dir); err != nil {
		return &cacheDirError{err: err}
	}
	return nil
}

func (dryOpener) openStore(string, *config.Cache) (*regcache.Cache, error) { return nil, nil }
