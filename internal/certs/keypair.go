package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudflare/certinel/fswatcher"

	"github.com/snigate/snigate/internal/filewatch"
)

// Defaults of KeyPairConfig and CABundleConfig.
const (
	// DefaultPollInterval is how often files are stat'ed as a backstop to
	// file-system events (see supervise.go for why one is needed); the
	// same as every other watched file's.
	DefaultPollInterval = filewatch.DefaultPollInterval
	// DefaultRetryMin and DefaultRetryMax bound the exponential backoff
	// between attempts to reload after a failure.
	DefaultRetryMin = 100 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
)

// KeyPairConfig configures a KeyPair.
type KeyPairConfig struct {
	CertFile string // PEM certificate (chain); required
	KeyFile  string // PEM private key; required
	Route    string // label for metrics and logs
	Role     string // RoleServe, RoleClient or RoleServeCA; required

	Logger  *slog.Logger // nil: slog.Default()
	Metrics *Metrics     // nil: no metrics

	// PollInterval is how often Run stats both files as a backstop to
	// certinel's events. Zero: DefaultPollInterval.
	PollInterval time.Duration

	// OnReloadFunc, if set, is called after Run (or a handshake) has put a
	// different certificate in use (cert set, err nil), and after each
	// failed attempt to reload (cert nil, err set). It runs on the
	// goroutine that noticed, so it must not block for long.
	OnReloadFunc func(cert *tls.Certificate, err error)
}

// KeyPair serves a certificate and key from files, re-read when they change:
// certinel's fswatcher does the loading and watching, and Run supervises it
// (restart with backoff after a failed load, backstop for what it does not
// watch). The last good certificate is served throughout.
type KeyPair struct {
	cfg      KeyPairConfig
	log      *slog.Logger
	sentinel atomic.Pointer[fswatcher.Sentinel] // the one whose certificate is served
	seen     atomic.Pointer[tls.Certificate]    // last certificate reported
	mu       sync.Mutex                         // serialises observe
	initial  pairID                             // files' identity at the first load
}

// NewKeyPair loads the pair once; it fails if the files cannot be read, are
// not PEM, or do not match. Call Run to follow changes.
func NewKeyPair(cfg KeyPairConfig) (*KeyPair, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	k := &KeyPair{cfg: cfg, log: cfg.Logger}
	if k.log == nil {
		k.log = slog.Default()
	}
	k.initial = statPair(cfg.CertFile, cfg.KeyFile)
	s, err := fswatcher.New(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, k.loadError(err)
	}
	k.sentinel.Store(s)
	c := current(s)
	k.seen.Store(c)
	cfg.Metrics.setExpiry(cfg.Route, cfg.Role, c.Leaf.NotAfter)
	return k, nil
}

func (c KeyPairConfig) validate() error {
	switch {
	case c.CertFile == "" || c.KeyFile == "":
		return fmt.Errorf("certs: key pair for route %q (%s): want both a certificate and a key file, got cert %q key %q",
			c.Route, c.Role, c.CertFile, c.KeyFile)
	case c.Role != RoleServe && c.Role != RoleClient && c.Role != RoleServeCA:
		return fmt.Errorf("certs: key pair role %q: want %q, %q or %q", c.Role, RoleServe, RoleClient, RoleServeCA)
	}
	return nil
}

// GetCertificate returns the last good certificate (the shape of
// tls.Config.GetCertificate). It never returns an error.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	k.observe()
	return current(k.sentinel.Load()), nil
}

// GetClientCertificate returns the last good certificate (the shape of
// tls.Config.GetClientCertificate). It never returns an error.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	k.observe()
	return current(k.sentinel.Load()), nil
}

// Leaf is the parsed certificate in use.
func (k *KeyPair) Leaf() *x509.Certificate { return k.certificate().Leaf }

func (k *KeyPair) certificate() *tls.Certificate { return current(k.sentinel.Load()) }

func current(s *fswatcher.Sentinel) *tls.Certificate {
	c, _ := s.GetCertificate(nil)
	return c
}

// observe reports a certificate that certinel (or Run) has put in use since
// the last call. certinel tells no one when it reloads, so every handshake
// and every poll looks: one atomic load and compare when nothing changed.
func (k *KeyPair) observe() {
	if current(k.sentinel.Load()) == k.seen.Load() {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c, prev := current(k.sentinel.Load()), k.seen.Load()
	if c == prev {
		return
	}
	k.seen.Store(c)
	if bytes.Equal(c.Certificate[0], prev.Certificate[0]) {
		return // the same certificate read again
	}
	k.reloaded(c)
}

// reloaded records a different certificate in use: one Info line, metrics
// and the hook.
func (k *KeyPair) reloaded(c *tls.Certificate) {
	k.cfg.Metrics.reloaded(k.cfg.Route, k.cfg.Role)
	k.cfg.Metrics.setExpiry(k.cfg.Route, k.cfg.Role, c.Leaf.NotAfter)
	k.log.Info("certificate reloaded", "route", k.cfg.Route, "role", k.cfg.Role,
		"cert", k.cfg.CertFile, "subject", c.Leaf.Subject.String(),
		"serial", serialHex(c.Leaf), "not_after", c.Leaf.NotAfter.UTC())
	if k.cfg.OnReloadFunc != nil {
		k.cfg.OnReloadFunc(c, nil)
	}
}

// failed records a failed reload: one Warn line, the failure counter and the
// hook. The error names files and cause, never key material.
func (k *KeyPair) failed(err error) {
	k.cfg.Metrics.reloadFailed(k.cfg.Route, k.cfg.Role)
	k.log.Warn("certificate reload failed; serving the last good certificate",
		"route", k.cfg.Route, "role", k.cfg.Role, "serial", serialHex(k.Leaf()), "err", err)
	if k.cfg.OnReloadFunc != nil {
		k.cfg.OnReloadFunc(nil, err)
	}
}

// loadError names the files and what is wrong with them, dropping
// certinel's "unable to load ..." wrapping.
func (k *KeyPair) loadError(err error) error {
	for errors.Unwrap(err) != nil && strings.HasPrefix(err.Error(), "unable to load") {
		err = errors.Unwrap(err)
	}
	return fmt.Errorf("certs: route %q %s: load certificate %s with key %s: %w%s",
		k.cfg.Route, k.cfg.Role, k.cfg.CertFile, k.cfg.KeyFile, err, hint(err))
}

// watchError describes why certinel's Start returned: most often a failed
// load, else a broken watch.
func (k *KeyPair) watchError(err error) error {
	if err == nil {
		err = errors.New("watch ended")
	}
	if strings.HasPrefix(err.Error(), "unable to load") {
		return k.loadError(err)
	}
	return fmt.Errorf("certs: route %q %s: watch %s: %w", k.cfg.Route, k.cfg.Role, k.cfg.CertFile, err)
}

// hint says what to change for the common mistakes.
func hint(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "does not match"):
		return " (the key is not the certificate's: a rotation that writes the certificate before its key recovers once the key is written)"
	case strings.Contains(msg, "failed to find any PEM data"):
		return " (want PEM files: -----BEGIN CERTIFICATE----- and -----BEGIN PRIVATE KEY-----)"
	}
	return ""
}

// serialHex prints a serial number the way openssl does, in hex.
func serialHex(c *x509.Certificate) string {
	if c == nil || c.SerialNumber == nil {
		return ""
	}
	return strings.ToUpper(c.SerialNumber.Text(16))
}
