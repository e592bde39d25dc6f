package sni

import (
	"crypto/tls"
	"errors"
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
// handshake; refuseClassicalFull stops that one and the dial starts over
// with the post-quantum default.
var resumeKeyExchanges = classicalKeyExchanges

// errResumptionDeclined is the end of an upstream handshake offered with
// resumeKeyExchanges whose session the upstream declined (an expired
// ticket, a restarted upstream): it became a full handshake without the
// hybrid, so it is abandoned and dialed again without the session.
var errResumptionDeclined = errors.New("the upstream declined the TLS session offered with classical key exchanges; dialing again with the post-quantum default")

// hasSession reports whether cfg's session cache holds a session for the
// key crypto/tls looks up (the dial's ServerName, never "" here).
func (lc *legConfig) hasSession(cfg *tls.Config) bool {
	cs, ok := cfg.ClientSessionCache.Get(cfg.ServerName)
	return ok && cs != nil
}

// refuseClassicalFull wraps the template's VerifyConnection for a dial
// offered with resumeKeyExchanges: a TLS 1.3 handshake that did not
// resume fails with errResumptionDeclined, and the session it was offered
// is forgotten from sessions, so that the next dial is a post-quantum full handshake.
// (A TLS 1.2 full handshake has no hybrid to lose.)
func (lc *legConfig) refuseClassicalFull(sessions tls.ClientSessionCache, next func(tls.ConnectionState) error) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if !cs.DidResume && cs.Version == tls.VersionTLS13 {
			sessions.Put(lc.serverName, nil)
			return errResumptionDeclined
		}
		if next != nil {
			return next(cs)
		}
		return nil
	}
}
