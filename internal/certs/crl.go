package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snigate/snigate/internal/filewatch"
)

// CRLConfig configures a CRL.
type CRLConfig struct {
	File  string    // PEM file of one or more X509 CRL blocks; required
	CA    *CABundle // the bundle whose certificates sign them; required
	Route string    // label for metrics and logs

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics

	// PollInterval is how often Run stats the file as a backstop to
	// file-system events. Zero: DefaultPollInterval.
	PollInterval time.Duration

	// OnReloadFunc, if set, is called after a different CRL was put in use
	// (err nil) and after each failed re-read (err set), on the goroutine
	// that read it.
	OnReloadFunc func(err error)
}

// CRL is serve.client_crl: certificate revocation lists, each verified
// against a certificate of a CA bundle, re-read when the file changes (in
// place, rename-over, Kubernetes ..data swap) and when the bundle does. A
// file that cannot be used is reported and the last good lists stay in
// use. Revoked is safe for concurrent use and costs a map lookup.
type CRL struct {
	cfg   CRLConfig
	log   *slog.Logger
	cur   atomic.Pointer[[]revocations]
	mu    sync.Mutex // serialises rereads (file watcher, bundle reloads)
	pem   []byte     // contents of the file in use, under mu
	watch *filewatch.Watcher
}

// revocations is one CRL: who signed it and what it revokes.
type revocations struct {
	signer  *x509.Certificate
	serials map[string]struct{} // big.Int.String() of each revoked serial
	next    time.Time           // NextUpdate, zero when absent
}

// NewCRL reads the file once; it fails if the file cannot be read, holds
// no CRL, or holds one that no certificate of cfg.CA signed. Call Run to
// follow changes.
func NewCRL(cfg CRLConfig) (*CRL, error) {
	if cfg.File == "" || cfg.CA == nil {
		return nil, fmt.Errorf("certs: CRL for route %q: want a file name and its CA bundle", cfg.Route)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	c := &CRL{cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	var err error
	c.watch, err = filewatch.New(filewatch.Config{File: cfg.File, ChangedFunc: c.reread,
		PollInterval: cfg.PollInterval, Logger: c.log.With("route", cfg.Route, "role", RoleClientCRL)})
	if err != nil {
		return nil, c.error(err)
	}
	data, lists, err := readCRL(cfg.File, cfg.CA.Certificates())
	if err != nil {
		return nil, c.error(err)
	}
	c.use(data, lists)
	return c, nil
}

// Revoked reports whether cert, issued by issuer, is listed by a CRL that
// issuer signed (same subject and key).
func (c *CRL) Revoked(cert, issuer *x509.Certificate) bool {
	serial := cert.SerialNumber.String()
	for _, l := range *c.cur.Load() {
		if !sameCA(l.signer, issuer) {
			continue
		}
		if _, ok := l.serials[serial]; ok {
			return true
		}
	}
	return false
}

func sameCA(a, b *x509.Certificate) bool {
	return bytes.Equal(a.RawSubject, b.RawSubject) && bytes.Equal(a.RawSubjectPublicKeyInfo, b.RawSubjectPublicKeyInfo)
}

// Run follows the file until ctx is done, then returns nil once its
// goroutines have finished. Call it once.
func (c *CRL) Run(ctx context.Context) error { return c.watch.Run(ctx) }

// Recheck re-reads the file against the bundle in use even when it has
// not changed: call it after the bundle was reloaded, so that a CRL
// refused for want of its signer is taken once the signer arrives.
func (c *CRL) Recheck() { c.load(true) }

func (c *CRL) reread() { c.load(false) }

func (c *CRL) load(force bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data, lists, err := readCRL(c.cfg.File, c.cfg.CA.Certificates())
	if err != nil {
		c.failed(c.error(err))
		return
	}
	if !force && bytes.Equal(data, c.pem) {
		return
	}
	c.use(data, lists)
	c.cfg.Metrics.reloaded(c.cfg.Route, RoleClientCRL)
	c.log.Info("CRL reloaded", "route", c.cfg.Route, "role", RoleClientCRL, "file", c.cfg.File,
		"crls", len(lists), "revoked", revokedCount(lists))
	if c.cfg.OnReloadFunc != nil {
		c.cfg.OnReloadFunc(nil)
	}
}

func (c *CRL) use(data []byte, lists []revocations) {
	c.pem = data
	c.cur.Store(&lists)
	c.cfg.Metrics.setExpiry(c.cfg.Route, RoleClientCRL, earliestNextUpdate(lists))
	for _, l := range lists {
		if !l.next.IsZero() && time.Now().After(l.next) {
			c.log.Warn("CRL past its NextUpdate: still revoking what it lists; write a fresh one (openssl ca -gencrl)",
				"route", c.cfg.Route, "file", c.cfg.File, "issuer", l.signer.Subject.String(), "next_update", l.next.UTC())
		}
	}
}

func (c *CRL) failed(err error) {
	c.cfg.Metrics.reloadFailed(c.cfg.Route, RoleClientCRL)
	c.log.Warn("CRL reload failed; keeping the last good CRL", "route", c.cfg.Route, "role", RoleClientCRL, "err", err)
	if c.cfg.OnReloadFunc != nil {
		c.cfg.OnReloadFunc(err)
	}
}

func (c *CRL) error(err error) error {
	return &FileError{Route: c.cfg.Route, Role: RoleClientCRL, Field: FieldCert, Err: err}
}

func revokedCount(lists []revocations) int {
	n := 0
	for _, l := range lists {
		n += len(l.serials)
	}
	return n
}

// earliestNextUpdate is the first NextUpdate among lists (zero for none).
func earliestNextUpdate(lists []revocations) time.Time {
	var t time.Time
	for _, l := range lists {
		if !l.next.IsZero() && (t.IsZero() || l.next.Before(t)) {
			t = l.next
		}
	}
	return t
}

// readCRL reads and parses a PEM file of CRLs, each of which must be
// signed by one of cas.
func readCRL(file string, cas []*x509.Certificate) ([]byte, []revocations, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("read CRL: %w", err)
	}
	lists, err := parseCRLs(data, cas)
	if err != nil {
		return nil, nil, fmt.Errorf("CRL %s: %w", file, err)
	}
	return data, lists, nil
}

func parseCRLs(data []byte, cas []*x509.Certificate) ([]revocations, error) {
	var lists []revocations
	for n := 1; ; n++ {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			break
		}
		if block.Type != "X509 CRL" {
			return nil, fmt.Errorf("PEM block %d is %q; want only X509 CRL blocks", n, block.Type)
		}
		l, err := parseCRL(block.Bytes, cas)
		if err != nil {
			return nil, fmt.Errorf("PEM block %d: %w", n, err)
		}
		lists = append(lists, l)
	}
	if len(lists) == 0 {
		return nil, errors.New("no X509 CRL PEM block found; want -----BEGIN X509 CRL----- blocks (openssl ca -gencrl)")
	}
	return lists, nil
}

func parseCRL(der []byte, cas []*x509.Certificate) (revocations, error) {
	rl, err := x509.ParseRevocationList(der)
	if err != nil {
		return revocations{}, err
	}
	for _, ca := range cas {
		if err := rl.CheckSignatureFrom(ca); err != nil {
			if errors.As(err, new(x509.ConstraintViolationError)) && bytes.Equal(ca.RawSubject, rl.RawIssuer) {
				return revocations{}, fmt.Errorf("issuer %q is in the client_ca bundle but its key usage lacks cRLSign: it may not sign CRLs", rl.Issuer.String())
			}
			continue
		}
		l := revocations{signer: ca, next: rl.NextUpdate, serials: make(map[string]struct{}, len(rl.RevokedCertificateEntries))}
		for _, e := range rl.RevokedCertificateEntries {
			l.serials[e.SerialNumber.String()] = struct{}{}
		}
		return l, nil
	}
	return revocations{}, fmt.Errorf("issuer %q: signed by no certificate of the client_ca bundle (a CA that signs CRLs needs cRLSign in its key usage)", rl.Issuer.String())
}
