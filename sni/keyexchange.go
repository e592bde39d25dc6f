package sni

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

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

// ParseKeyExchanges turns key exchange names ("x25519mlkem768",
// "x25519", "secp256r1"...; IANA, Go or OpenSSL spelling, any case) into
// a tls.Config.CurvePreferences list, for example the UpstreamTLS
// template of a bridge route. An empty list returns nil: crypto/tls's
// default, which offers the post-quantum hybrid X25519MLKEM768 first.
// crypto/tls ignores the order: a listed hybrid is always offered first.
func ParseKeyExchanges(names []string) ([]tls.CurveID, error) {
	var ids []tls.CurveID
	for _, n := range names {
		id, ok := keyExchangeID(strings.ToLower(strings.TrimSpace(n)))
		if !ok {
			return nil, fmt.Errorf("key exchange %q: want one of x25519mlkem768, secp256r1mlkem768, secp384r1mlkem1024, x25519, secp256r1, secp384r1, secp521r1", n)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
