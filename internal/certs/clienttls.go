package certs

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// DefaultSessionCacheSize is the number of upstream TLS sessions a
// ClientTLS keeps (per upstream address and server name).
const DefaultSessionCacheSize = 256

// ClientTLSConfig configures a ClientTLS.
type ClientTLSConfig struct {
	// Cert is the client certificate presented to the upstream (the edge
	// identity); nil: none.
	Cert *KeyPair
	// CA verifies the upstream's certificate; nil: the system roots.
	CA *CABundle
	// ServerName is copied into every configuration; "": the caller sets
	// it (the SNI the client sent, or the name a check uses).
	ServerName string
	// CurvePreferences are the key exchanges offered; nil: crypto/tls's
	// default (for bridged traffic, sni offers classical groups only when
	// it resumes a session).
	CurvePreferences []tls.CurveID
	// SessionCacheSize bounds the session cache; 0: DefaultSessionCacheSize.
	SessionCacheSize int
}

// ClientTLS is the client side of a bridge route's upstream leg: the edge
// certificate and the trust bundle in force, and one session cache shared
// by traffic, health checks and probes. It is the one builder of those
// client configurations, used by `run` and by `check --probe` alike.
//
// A TLS session carries the identity and the verification of the
// handshake that created it: a resumed session presents the client
// certificate of its first handshake and skips verification of the
// server. So a session may be resumed only under the certificate and the
// bundle it was created with. Each configuration Config returns is a
// snapshot of both, and its session cache keys sessions by that snapshot:
// after a rotation the very next connection makes a full handshake with
// the new certificate, verified against the new bundle.
type ClientTLS struct {
	cfg      ClientTLSConfig
	sessions tls.ClientSessionCache
	last     atomic.Pointer[clientScope]
}

// clientScope is what one configuration is built on: the certificate and
// bundle in force when it was made, and the session key prefix for them.
type clientScope struct {
	cert    *tls.Certificate // nil: none
	roots   *x509.CertPool   // nil: system roots
	version uint64           // of roots (0 for the system roots)
	key     string
}

// NewClientTLS returns the builder of cfg's client configurations. The
// key pair and bundle keep their own lifecycle (Run them); NewClientTLS
// starts nothing.
func NewClientTLS(cfg ClientTLSConfig) *ClientTLS {
	size := cfg.SessionCacheSize
	if size <= 0 {
		size = DefaultSessionCacheSize
	}
	return &ClientTLS{cfg: cfg, sessions: tls.NewLRUClientSessionCache(size)}
}

// Config returns a new client configuration for one connection, which the
// caller may change: ServerName (the configured one, else ""), TLS 1.2 at
// least, the key exchanges, RootCAs and the client certificate in force
// now, and a ClientSessionCache that only resumes sessions made with that
// same certificate and bundle.
func (c *ClientTLS) Config() *tls.Config {
	s := c.scope()
	cfg := &tls.Config{
		ServerName:         c.cfg.ServerName,
		MinVersion:         tls.VersionTLS12,
		CurvePreferences:   c.cfg.CurvePreferences,
		RootCAs:            s.roots,
		ClientSessionCache: scopedSessions{cache: c.sessions, scope: s.key},
	}
	if cert := s.cert; cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

// Identity names the client certificate and CA bundle in force: it
// changes when either is rotated, so that a holder of long-lived
// connections (the HTTP bridge's pool) knows to make new ones.
func (c *ClientTLS) Identity() string { return c.scope().key }

// scope reads the certificate and bundle in force; the prefix is computed
// again only when one of them changed.
func (c *ClientTLS) scope() *clientScope {
	var cert *tls.Certificate
	if c.cfg.Cert != nil {
		cert, _ = c.cfg.Cert.GetClientCertificate(nil)
	}
	var roots *x509.CertPool
	var version uint64
	if c.cfg.CA != nil {
		roots, version = c.cfg.CA.Snapshot()
	}
	if s := c.last.Load(); s != nil && s.cert == cert && s.version == version {
		return s
	}
	s := &clientScope{cert: cert, roots: roots, version: version, key: scopeKey(cert, version)}
	c.last.Store(s)
	return s
}

// scopeKey names a (certificate, bundle) pair: the leaf's SHA-256 (the
// same certificate read again keeps its sessions) and the bundle version.
func scopeKey(cert *tls.Certificate, version uint64) string {
	leaf := "none"
	if cert != nil && len(cert.Certificate) > 0 {
		sum := sha256.Sum256(cert.Certificate[0])
		leaf = hex.EncodeToString(sum[:12])
	}
	return leaf + "/" + strconv.FormatUint(version, 10)
}

// scopedSessions is the shared session cache seen under one scope.
type scopedSessions struct {
	cache tls.ClientSessionCache
	scope string
}

func (s scopedSessions) Get(key string) (*tls.ClientSessionState, bool) {
	return s.cache.Get(s.scope + " " + key)
}

func (s scopedSessions) Put(key string, cs *tls.ClientSessionState) {
	s.cache.Put(s.scope+" "+key, cs)
}
