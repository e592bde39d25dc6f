package config

import (
	"crypto/tls"
	"slices"
	"strings"
)

// keyExchangeNames is what an error lists as valid key_exchanges names.
const keyExchangeNames = "x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, secp256r1, secp384r1, secp521r1"

// keyExchangeID returns the ID of a TLS key exchange (supported group)
// from its IANA, Go or OpenSSL name in lower case.
func keyExchangeID(name string) (tls.CurveID, bool) {
	switch name {
	case "x25519mlkem768":
		return tls.X25519MLKEM768, true
	case "secp256r1mlkem768":
		return tls.SecP256r1MLKEM768, true
	case "secp384r1mlkem1024":
		return tls.SecP384r1MLKEM1024, true
	case "x25519":
		return tls.X25519, true
	case "secp256r1", "curvep256", "p-256", "prime256v1":
		return tls.CurveP256, true
	case "secp384r1", "curvep384", "p-384":
		return tls.CurveP384, true
	case "secp521r1", "curvep521", "p-521":
		return tls.CurveP521, true
	}
	return 0, false
}

// keyExchanges returns the key_exchanges of upstream_tls (the upstream
// leg) or serve (the client leg) as a tls.Config.CurvePreferences list:
// names in IANA, Go or OpenSSL spelling, any case; a name listed twice is
// an error, a second spelling of the same key exchange is dropped. Empty
// (nil) leaves the choice to package sni: X25519 on the node leg when the
// node sent an X25519 share; on the upstream leg crypto/tls's default
// (post-quantum X25519MLKEM768 hybrid first) on full handshakes and
// classical groups on resumptions. crypto/tls ignores the order, a listed
// hybrid is always offered (and taken) first.
func (p *parser) keyExchanges(f fields) []tls.CurveID {
	var out []tls.CurveID
	seen := dupChecker{}
	for _, it := range p.listAt(f, "key_exchanges", `["x25519mlkem768", "x25519"]`) {
		s, ok := p.scalar(it.node, it.key, `a key exchange name such as "x25519"`)
		if !ok {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(s))
		id, known := keyExchangeID(name)
		if !known {
			p.errorf(it.node.Line, it.key, "want one of %s, got %q", keyExchangeNames, s)
			continue
		}
		if seen.check(p, it, name) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
