package sni

import "crypto/tls"

// suiteSet records which of the cipher suites crypto/tls implements a
// ClientHello offered: one bit per suite, no allocation per hello. Suites
// crypto/tls does not implement (GREASE, export suites) cannot be
// negotiated and are not recorded.
type suiteSet uint64

// suiteBits maps each suite crypto/tls implements (TLS 1.3's, the secure
// and the insecure TLS 1.0-1.2 ones) to its bit in a suiteSet.
var suiteBits = buildSuiteBits()

func buildSuiteBits() map[uint16]uint8 {
	bits := map[uint16]uint8{}
	add := func(id uint16) {
		if _, ok := bits[id]; !ok && len(bits) < 64 {
			bits[id] = uint8(len(bits))
		}
	}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, cs := range list {
			add(cs.ID)
		}
	}
	return bits
}

// add records the suite id if crypto/tls implements it.
func (s *suiteSet) add(id uint16) {
	if b, ok := suiteBits[id]; ok {
		*s |= 1 << b
	}
}

// has reports whether id was offered (false for suites crypto/tls does
// not implement).
func (s suiteSet) has(id uint16) bool {
	b, ok := suiteBits[id]
	return ok && s&(1<<b) != 0
}

// tls13Suites are the TLS 1.3 suites crypto/tls negotiates.
var tls13Suites = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}

// hasAny reports whether any of ids was offered.
func (s suiteSet) hasAny(ids []uint16) bool {
	for _, id := range ids {
		if s.has(id) {
			return true
		}
	}
	return false
}

// OffersSuite reports whether the client offered the cipher suite id; it
// knows only the suites crypto/tls implements.
func (hello *ClientHello) OffersSuite(id uint16) bool { return hello.suites.has(id) }
