package config

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path/filepath"
)

// Verify is routes[].http.verify: the signature policy; nil when absent.
type Verify struct {
	Mode         string   // VerifyEnforce (default) or VerifyAudit
	Repositories []string // patterns of the repositories that must be signed; empty: all
	CosignKeys   []string // absolute paths of PEM public keys
	// Notation verifies Notary Project signatures; nil: not configured.
	// CosignKeys or Notation, or both.
	Notation *VerifyNotation
}

// http.verify.mode values.
const (
	VerifyEnforce = "enforce"
	VerifyAudit   = "audit"
)

// verify parses http.verify.
func (p *parser) verify(h fields, hosts []string) *Verify {
	n := h.get("verify")
	if n == nil {
		return nil
	}
	f := p.mapping(n, h.key("verify"), h.keyLine("verify"), "mode", "repositories", "cosign", "notation")
	v := &Verify{
		Mode:         p.enumAt(f, "mode", VerifyEnforce, verifyModeValues...),
		Repositories: p.repositories(f, hosts),
		CosignKeys:   p.cosignKeys(f),
	}
	v.Notation = p.notation(f)
	p.require(f, "cosign", len(v.CosignKeys) > 0 || v.Notation != nil, "cosign: {keys: [/etc/snigate/cosign.pub]}: the public keys whose signatures count (or notation: {trust_store, trust_policy})")
	return v
}

// cosignKeys parses verify.cosign.keys: readable PEM public keys.
func (p *parser) cosignKeys(v fields) []string {
	n := v.get("cosign")
	if n == nil {
		return nil
	}
	f := p.mapping(n, v.key("cosign"), v.keyLine("cosign"), "keys")
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "keys", "[/etc/snigate/cosign.pub]") {
		s, ok := p.scalar(it.node, it.key, "a public key file such as /etc/snigate/cosign.pub")
		if !ok || s == "" {
			p.errorf(it.node.Line, it.key, "want a public key file such as /etc/snigate/cosign.pub")
			continue
		}
		if !filepath.IsAbs(s) {
			s = filepath.Join(p.dir, s)
		}
		if !seen.check(p, it, s) {
			continue
		}
		out = append(out, s)
		p.checkPublicKey(it, s)
	}
	p.require(f, "keys", len(out) > 0, "one or more public key files such as [/etc/snigate/cosign.pub]")
	return out
}

// checkPublicKey reports a key file that cannot be read or is not a PEM
// public key of a kind cosign signs with (ECDSA, RSA, Ed25519): the
// checks of sigstore's cryptoutils.UnmarshalPEMToPublicKey, which the
// gateway loads it with, in the standard library so that the packages
// importing this one need no sigstore module.
func (p *parser) checkPublicKey(it item, path string) {
	if p.skipFiles {
		return
	}
	data, err := readBounded(path)
	if err != nil {
		p.errorf(it.node.Line, it.key, "cannot read %s: %s", path, err)
		return
	}
	if err := parsePublicKey(data); err != nil {
		p.errorf(it.node.Line, it.key, "%s is not a PEM public key (want the cosign.pub of cosign generate-key-pair, \"-----BEGIN PUBLIC KEY-----\"): %s", path, err)
	}
}

// parsePublicKey checks that data is one PEM "PUBLIC KEY" block of an
// ECDSA, RSA or Ed25519 key.
func parsePublicKey(data []byte) error {
	b, _ := pem.Decode(data)
	switch {
	case b == nil:
		return errors.New("no PEM block")
	case b.Type != "PUBLIC KEY":
		return fmt.Errorf("a %q PEM block", b.Type)
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return err
	}
	switch pub.(type) {
	case *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("a %T key, want ECDSA, RSA or Ed25519", pub)
}
