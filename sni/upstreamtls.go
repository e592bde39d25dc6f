package sni

import (
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"
)

// legConfig builds the TLS client configuration of one upstream dial in
// bridge mode and watches what the upstream does with it.
type legConfig struct {
	route         *Route
	addr          string
	raw           net.Conn
	certRequested bool        // the upstream sent a CertificateRequest
	probing       atomic.Bool // confirmClientAuth is waiting: a ticket ends it

	// serverName is the dial's ServerName, crypto/tls's session cache key;
	// sessionKey is the route cache's key for it, built once per dial.
	serverName, sessionKey string

	// full forbids the resumption key exchanges (the redial after a
	// handshake that used them failed); classical says they were offered.
	full, classical bool
}

// config takes the route's upstream configuration for this dial (a call
// of UpstreamTLSFunc, else a clone of UpstreamTLS) and sets the client's
// ALPN list (offer), ServerName (the template's, else the client's SNI, else the
// upstream's host), TLS 1.2 at least, and a session cache keyed per
// upstream address so that round-robin does not make upstreams reject
// each other's tickets: the template's cache (scoped to the certificate
// and trust it was built with) or else the route's.
//
// Key exchange: the template's CurvePreferences, else resumeKeyExchanges
// when the session cache holds a session for this upstream and name (and
// the upstream did not decline one lately), else crypto/tls's default, which offers the post-quantum hybrid
// X25519MLKEM768 (one X25519 private key serves both the hybrid share and
// the plain X25519 fallback share, so the fallback costs bytes, not CPU).
// The hybrid costs an ML-KEM-768 key generation and decapsulation per
// handshake; every full handshake keeps it (README, "Bridge key exchange
// and resumption").
func (lc *legConfig) config(hello *tls.ClientHelloInfo, offer []string) *tls.Config {
	cfg := lc.template()
	cfg.GetClientCertificate = lc.clientCertificate(cfg.GetClientCertificate, cfg.Certificates)
	cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
	cfg.NextProtos = offer
	if cfg.ServerName == "" {
		cfg.ServerName = hello.ServerName
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(lc.addr)
	}
	lc.serverName, lc.sessionKey = cfg.ServerName, lc.addr+" "+cfg.ServerName
	store := cfg.ClientSessionCache
	if store == nil {
		store = lc.route.sessions
	}
	cfg.ClientSessionCache = legSessions{lc: lc, store: store}
	if cfg.CurvePreferences == nil && !lc.full && lc.resumeClassically(cfg) {
		lc.classical = true
		cfg.CurvePreferences = resumeKeyExchanges
		cfg.VerifyConnection = refuseClassicalFull(cfg.VerifyConnection)
	}
	return cfg
}

// template is the dial's own copy of the route's upstream configuration.
func (lc *legConfig) template() *tls.Config {
	switch r := lc.route; {
	case r.UpstreamTLSFunc != nil:
		if cfg := r.UpstreamTLSFunc(); cfg != nil {
			return cfg
		}
	case r.UpstreamTLS != nil:
		return r.UpstreamTLS.Clone()
	}
	return &tls.Config{}
}

// clientCertificate wraps the template's way of choosing a client
// certificate, noting that the upstream asked for one.
func (lc *legConfig) clientCertificate(get func(*tls.CertificateRequestInfo) (*tls.Certificate, error), certs []tls.Certificate) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		lc.certRequested = true
		if get != nil {
			return get(cri)
		}
		if len(certs) > 0 {
			return &certs[0], nil
		}
		return &tls.Certificate{}, nil // none: the upstream decides
	}
}

// legSessions is the dial's session store (the route's cache, or the one
// UpstreamTLSFunc gave) seen through one dial: keys name the upstream
// address too.
type legSessions struct {
	lc    *legConfig
	store tls.ClientSessionCache
}

func (s legSessions) key(k string) string {
	if k == s.lc.serverName && s.lc.sessionKey != "" {
		return s.lc.sessionKey
	}
	return s.lc.addr + " " + k
}

func (s legSessions) Get(k string) (*tls.ClientSessionState, bool) {
	return s.store.Get(s.key(k))
}

// Put stores a session; a ticket received while confirmClientAuth waits
// proves the upstream accepted the client certificate, so it ends the
// wait at once.
func (s legSessions) Put(k string, cs *tls.ClientSessionState) {
	s.store.Put(s.key(k), cs)
	if cs != nil && s.lc.probing.Load() {
		s.lc.raw.SetReadDeadline(time.Now())
	}
}
