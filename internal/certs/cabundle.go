package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultSettleDelay is how long a CABundle waits after a file-system event
// before re-reading, so that a burst of writes is read once, whole.
const DefaultSettleDelay = 50 * time.Millisecond

// CABundleConfig configures a CABundle.
type CABundleConfig struct {
	File  string // PEM file of one or more CERTIFICATE blocks; required
	Route string // label for metrics and logs
	Role  string // RoleUpstreamCA or RoleServeCA; required

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics

	// PollInterval is how often Run stats the file as a backstop to
	// file-system events. Zero: DefaultPollInterval.
	PollInterval time.Duration

	// OnReloadFunc, if set, is called on Run's goroutine after a different
	// bundle was put in use (certs set, err nil) and after each failed
	// re-read (certs nil, err set).
	OnReloadFunc func(certs []*x509.Certificate, err error)
}

// CABundle is a PEM bundle of CA certificates re-read when its file changes
// (in-place write, rename-over, Kubernetes ..data symlink swap). A bad write
// is reported and the last good bundle stays in use.
type CABundle struct {
	cfg  CABundleConfig
	log  *slog.Logger
	pool atomic.Pointer[x509.CertPool]
	pem  []byte // contents of the bundle in use; Run's goroutine only
	id   fileID // the file's identity at the last read; Run's goroutine only
}

// NewCABundle reads the bundle once; it fails if the file cannot be read or
// holds no valid certificate. Call Run to follow changes.
func NewCABundle(cfg CABundleConfig) (*CABundle, error) {
	switch {
	case cfg.File == "":
		return nil, fmt.Errorf("certs: CA bundle for route %q (%s): want a file name", cfg.Route, cfg.Role)
	case cfg.Role != RoleUpstreamCA && cfg.Role != RoleServeCA:
		return nil, fmt.Errorf("certs: CA bundle role %q: want %q or %q", cfg.Role, RoleUpstreamCA, RoleServeCA)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	b := &CABundle{cfg: cfg, log: cfg.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	b.id = statID(cfg.File)
	data, certs, err := readBundle(cfg.File)
	if err != nil {
		return nil, b.error(err)
	}
	b.use(data, certs)
	return b, nil
}

// Pool is the bundle in use, a snapshot: a reload builds a new pool, it
// never changes one handed out.
func (b *CABundle) Pool() *x509.CertPool { return b.pool.Load() }

func (b *CABundle) use(data []byte, certs []*x509.Certificate) {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	b.pem = data
	b.pool.Store(pool)
	b.cfg.Metrics.setExpiry(b.cfg.Route, b.cfg.Role, earliestExpiry(certs))
}

// Run follows the file until ctx is done, then returns nil once its
// goroutines have finished. It watches the file's directory (and, for a
// symlink, the directory of its target) with fsnotify, so a rename-over or
// a ..data swap is seen; a poll every PollInterval is the backstop for a
// watch that could not be set up or lost events. Call it once.
func (b *CABundle) Run(ctx context.Context) error {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w := b.watch(); w != nil {
		defer w.Close()
		events, errs = w.Events, w.Errors
	}
	tick := time.NewTicker(b.cfg.PollInterval)
	defer tick.Stop()
	settle := time.NewTimer(DefaultSettleDelay)
	settle.Stop()
	defer settle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			settle.Reset(DefaultSettleDelay)
		case _, ok := <-errs:
			// An overflow means lost events: the poll covers them.
			if !ok {
				errs = nil
			}
		case <-settle.C:
			b.check()
		case <-tick.C:
			b.check()
		}
	}
}

// watch starts an fsnotify watch on the directories that hold the file, or
// returns nil if none can be set up (the poll still runs). The caller
// closes it.
func (b *CABundle) watch() *fsnotify.Watcher {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.log.Warn("CA bundle: cannot watch for changes; polling only", "route", b.cfg.Route,
			"role", b.cfg.Role, "file", b.cfg.File, "err", err)
		return nil
	}
	for _, dir := range watchDirs(b.cfg.File) {
		if err := w.Add(dir); err != nil {
			b.log.Warn("CA bundle: cannot watch directory; polling it", "route", b.cfg.Route,
				"role", b.cfg.Role, "dir", dir, "err", err)
		}
	}
	return w
}

// watchDirs is the file's directory and, if the file is a symlink, the
// directory its target is in.
func watchDirs(file string) []string {
	dirs := []string{filepath.Dir(file)}
	if real, err := filepath.EvalSymlinks(file); err == nil && filepath.Dir(real) != dirs[0] {
		dirs = append(dirs, filepath.Dir(real))
	}
	return dirs
}

// check re-reads the file if its identity changed since the last read.
func (b *CABundle) check() {
	id := statID(b.cfg.File)
	if id == b.id {
		return
	}
	b.id = id
	data, certs, err := readBundle(b.cfg.File)
	if err != nil {
		b.failed(b.error(err))
		return
	}
	if bytes.Equal(data, b.pem) {
		return
	}
	b.use(data, certs)
	b.cfg.Metrics.reloaded(b.cfg.Route, b.cfg.Role)
	b.log.Info("CA bundle reloaded", "route", b.cfg.Route, "role", b.cfg.Role, "file", b.cfg.File,
		"certificates", len(certs), "not_after", earliestExpiry(certs).UTC())
	if b.cfg.OnReloadFunc != nil {
		b.cfg.OnReloadFunc(certs, nil)
	}
}

func (b *CABundle) failed(err error) {
	b.cfg.Metrics.reloadFailed(b.cfg.Route, b.cfg.Role)
	b.log.Warn("CA bundle reload failed; keeping the last good bundle", "route", b.cfg.Route,
		"role", b.cfg.Role, "err", err)
	if b.cfg.OnReloadFunc != nil {
		b.cfg.OnReloadFunc(nil, err)
	}
}

func (b *CABundle) error(err error) error {
	return &FileError{Route: b.cfg.Route, Role: b.cfg.Role, Field: FieldCert, Err: err}
}

// readBundle reads and parses a PEM bundle of certificates.
func readBundle(file string) ([]byte, []*x509.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read CA bundle: %w", err)
	}
	certs, err := parseBundle(data)
	if err != nil {
		return nil, nil, fmt.Errorf("CA bundle %s: %w", file, err)
	}
	return data, certs, nil
}

// parseBundle parses every PEM block of data; text between blocks is
// ignored, a block that is not a certificate is an error.
func parseBundle(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q; want only CERTIFICATE blocks", n, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("no CERTIFICATE PEM block found; want one or more -----BEGIN CERTIFICATE----- blocks")
	}
	return certs, nil
}
