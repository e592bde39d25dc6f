package sni

import (
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// resumeKeyExchanges is what the upstream leg offers, when the route's
// template sets no CurvePreferences, on a dial that holds a session for
// its upstream and name: classical groups only (crypto/tls then sends an
// X25519 share alone), so a resumed handshake costs one X25519 exchange
// and no ML-KEM.
//
// The trade (README, "Bridge key exchange and resumption"): the session's
// PSK was made by a full handshake with the post-quantum hybrid, and the
// resumed handshake's keys derive from that PSK and the fresh X25519
// secret together (psk_dhe_ke). Recorded traffic therefore stays
// protected against a future quantum computer; what becomes classical is
// forward secrecy against an attacker who, besides breaking X25519, also
// obtains the PSK (the upstream's ticket key or the gateway's memory).
// crypto/tls has no psk_ke (PSK-only) mode, which would drop even the
// X25519 exchange and with it all forward secrecy of the resumed session.
//
// A session the upstream declines would turn this into a classical full
// handshake; refuseClassicalFull stops that one, and an upstream that
// accepts only post-quantum groups refuses the offer: either way the dial
// starts over with the post-quantum default, and the route's
// declineMemory keeps that upstream on the default for DeclineMemory.
var resumeKeyExchanges = classicalKeyExchanges

// errResumptionDeclined is the end of an upstream handshake offered with
// resumeKeyExchanges whose session the upstream declined (an expired
// ticket, a restarted upstream): it became a full handshake without the
// hybrid, so it is abandoned and dialed again without the session.
var errResumptionDeclined = errors.New("the upstream declined the TLS session offered with classical key exchanges; dialing again with the post-quantum default")

// resumeClassically reports whether the dial may offer
// resumeKeyExchanges: cfg's session cache holds a session for the key
// crypto/tls looks up (the dial's ServerName, never "" here), and the
// upstream has not declined one lately.
func (lc *legConfig) resumeClassically(cfg *tls.Config) bool {
	cs, ok := cfg.ClientSessionCache.Get(cfg.ServerName)
	return ok && cs != nil && !lc.route.declines.recent(lc.sessionKey, time.Now())
}

// refuseClassicalFull wraps the template's VerifyConnection for a dial
// offered with resumeKeyExchanges: a TLS 1.3 handshake that did not
// resume fails with errResumptionDeclined (crypto/tls sends the upstream
// a bad_certificate alert, before the client certificate, and drops the
// session, as after any failed resumption), so that the redial (dialTLS)
// is a post-quantum full handshake. A TLS 1.2 full handshake has no
// hybrid to lose and goes on.
func refuseClassicalFull(next func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if !cs.DidResume && cs.Version == tls.VersionTLS13 {
			return errResumptionDeclined
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
}

// DeclineMemory is how long an upstream address and server name that
// declined a session offered with resumeKeyExchanges (or the offer
// itself) get crypto/tls's default offer on every dial, resumptions
// included (which then pay ML-KEM, as before). Replicas behind one
// address that do not share ticket keys (a Service in front of several
// registry pods) decline most sessions: without the memory most dials to
// them would be two handshakes.
const DeclineMemory = 10 * time.Minute

// maxDeclines bounds the keys a declineMemory holds; when full, expired
// keys are dropped, and if none has expired the oldest is.
const maxDeclines = sessionCacheSize

// declineMemory is a route's set of session keys (upstream address and
// server name) whose upstream lately declined a classical resumption,
// each with the time it is forgotten. Empty, it costs one atomic load per
// dial.
type declineMemory struct {
	n     atomic.Int32 // len(until), for the lock-free empty case
	mu    sync.Mutex
	until map[string]time.Time
}

// note remembers key until now + DeclineMemory.
func (d *declineMemory) note(key string, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.until == nil {
		d.until = make(map[string]time.Time)
	}
	if _, ok := d.until[key]; !ok && len(d.until) >= maxDeclines {
		d.evict(now)
	}
	d.until[key] = now.Add(DeclineMemory)
	d.n.Store(int32(len(d.until)))
}

// evict drops the expired keys, or the one forgotten soonest when none
// has expired.
func (d *declineMemory) evict(now time.Time) {
	var first string
	for k, t := range d.until {
		if !now.Before(t) {
			delete(d.until, k)
		} else if first == "" || t.Before(d.until[first]) {
			first = k
		}
	}
	if len(d.until) >= maxDeclines {
		delete(d.until, first)
	}
}

// recent reports whether key's upstream declined a session less than
// DeclineMemory ago.
func (d *declineMemory) recent(key string, now time.Time) bool {
	if d.n.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.until[key]
	if ok && !now.Before(t) {
		delete(d.until, key)
		d.n.Store(int32(len(d.until)))
		return false
	}
	return ok
}
