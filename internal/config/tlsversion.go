package config

import (
	"crypto/tls"
	"slices"
	"strings"
)

// tlsVersionNames is what an error lists as valid min_version values.
const tlsVersionNames = `"1.2" or "1.3"`

// minVersion parses serve.min_version: "1.2" (the default, as HAProxy's
// and Mozilla's intermediate profile) or "1.3". 0 means the default.
func (p *parser) minVersion(f fields) uint16 {
	n := f.get("min_version")
	if n == nil {
		return 0
	}
	s, ok := p.scalar(n, f.key("min_version"), `a TLS version, "1.2" or "1.3"`)
	if !ok {
		return 0
	}
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "tls") {
	case "1.2", "v1.2":
		return tls.VersionTLS12
	case "1.3", "v1.3":
		return tls.VersionTLS13
	}
	p.errorf(n.Line, f.key("min_version"), "want %s (older versions are not offered), got %q", tlsVersionNames, s)
	return 0
}

// cipherSuites parses serve.cipher_suites: TLS 1.2 suite names as Go and
// IANA spell them (TLS 1.3 suites are not configurable). Only suites
// crypto/tls considers secure are accepted. nil: the AEAD-only default.
func (p *parser) cipherSuites(f fields) []uint16 {
	var out []uint16
	seen := dupChecker{}
	for _, it := range p.listAt(f, "cipher_suites", `["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]`) {
		s, ok := p.scalar(it.node, it.key, `a cipher suite name such as "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"`)
		if !ok {
			continue
		}
		name := strings.ToUpper(strings.TrimSpace(s))
		id, known := secureSuiteID(name)
		if !known {
			p.errorf(it.node.Line, it.key, "want a secure TLS 1.2 cipher suite (%s), got %q", strings.Join(secureSuiteNames(), ", "), s)
			continue
		}
		if seen.check(p, it, name) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// secureSuiteID returns the ID of a TLS 1.2 suite crypto/tls considers
// secure.
func secureSuiteID(name string) (uint16, bool) {
	for _, cs := range tls.CipherSuites() {
		if cs.Name == name && slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
			return cs.ID, true
		}
	}
	return 0, false
}

func secureSuiteNames() []string {
	var out []string
	for _, cs := range tls.CipherSuites() {
		if slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
			out = append(out, cs.Name)
		}
	}
	return out
}
