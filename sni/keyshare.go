package sni

import (
	"crypto/tls"
	"slices"
)

// extKeyShare is the TLS 1.3 key_share extension (RFC 8446 section 4.2.8).
const extKeyShare = 51

// maxKeyShares is how many key shares of a ClientHello are remembered:
// real clients send one to three (Chrome: GREASE, X25519MLKEM768,
// X25519), and a share past the first few is never the one that decides.
const maxKeyShares = 8

// keyShares holds the groups of the key shares a ClientHello carries, in
// the client's order, GREASE included, without allocating.
type keyShares struct {
	ids [maxKeyShares]tls.CurveID
	n   uint8
}

// parse reads the client's KeyShareEntry list: (group, key_exchange)
// pairs. It keeps what it could read; a malformed extension is
// crypto/tls's to refuse, with its own alert.
func (k *keyShares) parse(d byteString) {
	var list []byte
	if !d.vec16(&list) {
		return
	}
	for l := byteString(list); len(l) > 0 && int(k.n) < maxKeyShares; {
		var group uint16
		var key []byte
		if !l.u16(&group) || !l.vec16(&key) {
			return
		}
		k.ids[k.n] = tls.CurveID(group)
		k.n++
	}
}

// list is the groups, in the client's order.
func (k *keyShares) list() []tls.CurveID { return k.ids[:k.n] }

// classicalKeyExchanges is the node leg's CurvePreferences, when the
// route sets no ServeKeyExchanges, for a client that sent a key share for
// one of them: crypto/tls then takes that share (X25519 first), with no
// HelloRetryRequest and no ML-KEM.
var classicalKeyExchanges = []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}

// defaultServeKeyExchanges is the node leg's key exchange policy when the
// route sets no ServeKeyExchanges: a classical group (X25519 first)
// whenever the client sent a key share for one it also lists as
// supported; otherwise (a client that sent only a post-quantum hybrid
// share, or no share at all) nil, crypto/tls's default, which takes the
// hybrid. So no client needs a HelloRetryRequest it did not need before,
// and a client that offers only the hybrid still gets it.
//
// crypto/tls itself cannot express this: it ignores the order of
// CurvePreferences and always puts a hybrid the client supports first,
// even over a classical share the client sent
// (handshake_server_tls13.go, draft-ietf-tls-key-share-prediction).
func defaultServeKeyExchanges(shares []tls.CurveID, supported []tls.CurveID) []tls.CurveID {
	for _, g := range shares {
		if slices.Contains(classicalKeyExchanges, g) && slices.Contains(supported, g) {
			return classicalKeyExchanges
		}
	}
	return nil
}
