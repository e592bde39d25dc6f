package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/internal/filewatch"
)

// CABundleConfig configures a CABundle.
type CABundleConfig struct {
	File  string // PEM file of one or more CERTIFICATE blocks; required
	Route string // label for metrics and logs
	Role  string // RoleUpstreamCA, RoleServeCA or RoleClientCA; required

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics

	// PollInterval is how often Run stats the file as a backstop to
	// file-system events (internal/filewatch). Zero: DefaultPollInterval.
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
	cfg   CABundleConfig
	log   *slog.Logger
	cur   atomic.Pointer[bundleState]
	pem   []byte             // contents of the bundle in use; Run's goroutine only
	watch *filewatch.Watcher // calls reread
}

// NewCABundle reads the bundle once; it fails if the file cannot be read or
// holds no valid certificate. Call Run to follow changes.
func NewCABundle(cfg CABundleConfig) (*CABundle, error) {
	switch {
	case cfg.File == "":
		return nil, fmt.Errorf("certs: CA bundle for route %q (%s): want a file name", cfg.Route, cfg.Role)
	case cfg.Role != RoleUpstreamCA && cfg.Role != RoleServeCA && cfg.Role != RoleClientCA:
		return nil, fmt.Errorf("certs: CA bundle role %q: want %q, %q or %q", cfg.Role, RoleUpstreamCA, RoleServeCA, RoleClientCA)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	b := &CABundle{cfg: cfg, log: cfg.Logger}
	if b.log == nil {
		b.log = slog.Default()
	}
	var err error
	b.watch, err = filewatch.New(filewatch.Config{File: cfg.File, ChangedFunc: b.reread,
		PollInterval: cfg.PollInterval, Logger: b.log.With("route", cfg.Route, "role", cfg.Role)})
	if err != nil {
		return nil, b.error(err)
	}
	data, certs, err := readBundle(cfg.File)
	if err != nil {
		return nil, b.error(err)
	}
	b.use(data, certs)
	return b, nil
}

// bundleState is one bundle put in use: its pool and its place in the
// sequence of bundles this CABundle has used (1 for the first).
type bundleState struct {
	pool    *x509.CertPool
	certs   []*x509.Certificate
	version uint64
}

// Pool is the bundle in use, a snapshot: a reload builds a new pool, it
// never changes one handed out.
func (b *CABundle) Pool() *x509.CertPool { return b.cur.Load().pool }

// Snapshot is the bundle in use and its version, read together: the
// version grows by one each time a different bundle is put in use, so it
// tells what a TLS session was verified against (see ClientTLS).
func (b *CABundle) Snapshot() (*x509.CertPool, uint64) {
	s := b.cur.Load()
	return s.pool, s.version
}

// Certificates are the certificates of the bundle in use, in file order
// (what a CRL may be signed by). The slice must not be modified.
func (b *CABundle) Certificates() []*x509.Certificate { return b.cur.Load().certs }

func (b *CABundle) use(data []byte, certs []*x509.Certificate) {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	b.pem = data
	var version uint64 = 1
	if prev := b.cur.Load(); prev != nil {
		version = prev.version + 1
	}
	b.cur.Store(&bundleState{pool: pool, certs: certs, version: version})
	b.cfg.Metrics.setExpiry(b.cfg.Route, b.cfg.Role, earliestExpiry(certs))
}

// Run follows the file until ctx is done, then returns nil once its
// goroutines have finished: internal/filewatch watches the file's
// directory (and, for a symlink, the directory of its target), so a
// rename-over or a ..data swap is seen, with a poll every PollInterval as
// the backstop. Call it once.
func (b *CABundle) Run(ctx context.Context) error { return b.watch.Run(ctx) }

// reread reads the file after the watcher saw it change; a bundle equal to
// the one in use changes nothing.
func (b *CABundle) reread() {
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
