package sni

import (
	"crypto/rand"
	"crypto/tls"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultServeCipherSuites are the TLS 1.2 suites the client leg of a
// bridge route accepts when Route.ServeCipherSuites is nil: AEAD only
// (AES-GCM and ChaCha20-Poly1305 with ECDHE), as Mozilla's intermediate
// profile and HAProxy's Debian default. crypto/tls's own default would
// also accept AES-CBC suites. TLS 1.3 suites are all AEAD and not
// configurable.
var DefaultServeCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Session ticket keys of the client leg. crypto/tls's own keys rotate
// daily and stay valid for 7 days; snigate makes a new key every
// TicketKeyRotation and keeps TicketKeysKept of them, so a ticket can be
// resumed for at most TicketKeyRotation × TicketKeysKept (3 hours): a key
// stolen from memory exposes hours of recorded sessions, not a week.
const (
	TicketKeyRotation = time.Hour
	TicketKeysKept    = 3
)

// ticketKeys rotates the session ticket keys of one tls.Config lazily,
// from the handshakes themselves: no goroutine, one atomic load per
// handshake when no rotation is due.
type ticketKeys struct {
	every time.Duration
	next  atomic.Int64 // unix nanoseconds of the next rotation; 0: none made yet
	mu    sync.Mutex
	keys  [][32]byte // newest first
}

// rotate gives cfg a new ticket key when the current one is due, keeping
// the previous ones for resumption.
func (k *ticketKeys) rotate(cfg *tls.Config, now time.Time) {
	if n := k.next.Load(); n != 0 && now.UnixNano() < n {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := k.next.Load(); n != 0 && now.UnixNano() < n {
		return
	}
	var key [32]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read never fails
	k.keys = append([][32]byte{key}, k.keys[:min(len(k.keys), TicketKeysKept-1)]...)
	cfg.SetSessionTicketKeys(k.keys)
	k.next.Store(now.Add(k.every).UnixNano())
}

// serveConfig is the client leg's configuration of one handshake: the
// route's certificate, versions, suites and key exchanges, offering only
// the protocol the upstream chose (proto, "" for none).
func (r *Route) serveConfig(proto string) *tls.Config {
	cfg := &tls.Config{
		MinVersion:       max(r.ServeMinVersion, tls.VersionTLS12),
		CipherSuites:     r.ServeCipherSuites,
		GetCertificate:   r.Serve.GetCertificate,
		CurvePreferences: r.ServeKeyExchanges,
	}
	if cfg.CipherSuites == nil {
		cfg.CipherSuites = DefaultServeCipherSuites
	}
	if proto != "" {
		cfg.NextProtos = []string{proto}
	}
	return cfg
}

// serveKeyExchanges is the client leg's CurvePreferences for a client
// that sent key shares for the groups shares and lists supported: the
// route's ServeKeyExchanges, else defaultServeKeyExchanges (X25519 when
// the client sent a share for it, the hybrid when that is all it sent).
func (r *Route) serveKeyExchanges(shares, supported []tls.CurveID) []tls.CurveID {
	if r.ServeKeyExchanges != nil {
		return r.ServeKeyExchanges
	}
	return defaultServeKeyExchanges(shares, supported)
}
