package httpverify

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Key is a public key whose signatures count (routes[].http.verify.cosign.keys).
type Key struct {
	Path string // the file it was read from ("" for ParseKey)
	// Fingerprint is "sha256:" and the hex SHA-256 of the key's DER
	// SubjectPublicKeyInfo: what a decision records of the keys that made it.
	Fingerprint string
	verifier    signature.Verifier
}

// LoadKey reads a PEM public key file (cosign.pub): ECDSA, RSA or Ed25519.
func LoadKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("read public key: %w", err)
	}
	k, err := ParseKey(b)
	if err != nil {
		return Key{}, fmt.Errorf("public key %s: %w", path, err)
	}
	k.Path = path
	return k, nil
}

// ParseKey parses a PEM public key. A private key, a certificate or
// anything else is an error.
func ParseKey(pemBytes []byte) (Key, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return Key{}, fmt.Errorf("want a PEM \"PUBLIC KEY\" (cosign.pub): %w", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return Key{}, fmt.Errorf("load verifier: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return Key{}, fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return Key{Fingerprint: "sha256:" + hex.EncodeToString(sum[:]), verifier: v}, nil
}

// verify reports whether sig is k's signature of msg.
func (k Key) verify(sig, msg []byte) bool {
	return k.verifier != nil && k.verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)) == nil
}
