package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/snigate/snigate/names"
)

// leafBackdate is how far before "now" a minted leaf's NotBefore is set, so
// that a node whose clock runs a little behind accepts it.
const leafBackdate = 5 * time.Minute

// issuer is a CA ready to sign: one snapshot, replaced whole when the CA
// files change.
type issuer struct {
	cert      *x509.Certificate
	key       crypto.Signer
	chain     [][]byte // what follows a minted leaf: servedChain(cert)
	file      string   // ca.crt, for error messages
	permitted []string // canonical PermittedDNSDomains; empty: any name
	excluded  []string // canonical ExcludedDNSDomains
}

// newIssuer checks that pair is a CA that can sign leaves at now.
func newIssuer(pair *tls.Certificate, file string, now time.Time) (*issuer, error) {
	c := pair.Leaf
	key, ok := pair.PrivateKey.(crypto.Signer)
	switch {
	case c == nil:
		return nil, fmt.Errorf("CA %s: no certificate", file)
	case !c.BasicConstraintsValid || !c.IsCA:
		return nil, fmt.Errorf("CA %s (%s) is not a CA certificate (basic constraints CA:TRUE missing); create one with snigate ca init", file, c.Subject)
	case c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0:
		return nil, fmt.Errorf("CA %s (%s) may not sign certificates (key usage lacks keyCertSign)", file, c.Subject)
	case !ok:
		return nil, fmt.Errorf("CA %s: private key of type %T cannot sign", file, pair.PrivateKey)
	case !now.Before(c.NotAfter):
		return nil, fmt.Errorf("CA %s expired at %s; create a new one with snigate ca init --force", file, c.NotAfter.UTC().Format(time.RFC3339))
	}
	return &issuer{cert: c, key: key, file: file, chain: servedChain(c),
		permitted: canonicalNames(c.PermittedDNSDomains), excluded: canonicalNames(c.ExcludedDNSDomains)}, nil
}

// servedChain is what a handshake sends after a leaf the CA c signed: c,
// unless c is a root (self-signed, as snigate ca init makes it). A client
// must already trust a root, so sending it only costs bytes on every full
// handshake and work in the client's chain building; RFC 8446 section
// 4.4.2 lets the server omit it.
func servedChain(c *x509.Certificate) [][]byte {
	if bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignatureFrom(c) == nil {
		return nil
	}
	return [][]byte{c.Raw}
}

func canonicalNames(in []string) []string {
	out := make([]string, len(in))
	for i, n := range in {
		out[i] = names.Canonical(n)
	}
	return out
}

// permits applies the CA's DNS name constraints to a canonical name, more
// strictly than X.509 does: a permitted "example.com" covers example.com
// and exactly one label below it (a.example.com, the names a one-label
// wildcard matches), not a.b.example.com; a permitted ".example.com" covers
// exactly one label below it. Excluded names are read as X.509 reads them.
func (is *issuer) permits(name string) error {
	for _, e := range is.excluded {
		if withinSuffix(name, e) {
			return is.refuse(name, fmt.Sprintf("the CA excludes %s", e))
		}
	}
	if len(is.permitted) == 0 {
		return nil
	}
	for _, p := range is.permitted {
		base, below := strings.CutPrefix(p, ".")
		if names.Match("*."+base, name) || !below && name == p {
			return nil
		}
	}
	return is.refuse(name, "")
}

// permitsAll checks that every name a route routes can be minted: each
// exact name, and for a wildcard "*.base" every name one label below
// base (permitsPattern). It reports the first that cannot, at its index.
func (is *issuer) permitsAll(patterns []string) *FileError {
	for i, p := range patterns {
		if err := is.permitsPattern(names.Canonical(p)); err != nil {
			return &FileError{Role: RoleServeCA, Field: FieldNames, Index: i, Err: err}
		}
	}
	return nil
}

// permitsPattern is permits for a route pattern: a wildcard "*.base" is
// permitted when every name one label below base is, which under the
// strict reading of permits means base (or ".base") is a permitted name,
// and no excluded name covers base.
func (is *issuer) permitsPattern(pattern string) error {
	base, wild := names.WildcardBase(pattern)
	if !wild {
		return is.permits(pattern)
	}
	for _, e := range is.excluded {
		if withinSuffix(base, strings.TrimPrefix(e, ".")) {
			return &nameError{name: pattern, base: base, ca: is.file, why: fmt.Sprintf("the CA excludes %s", e)}
		}
	}
	if len(is.permitted) == 0 {
		return nil
	}
	for _, p := range is.permitted {
		if strings.TrimPrefix(p, ".") == base {
			return nil
		}
	}
	return &nameError{name: pattern, base: base, ca: is.file, permitted: is.permitted}
}

func (is *issuer) refuse(name, why string) error {
	return &nameError{name: name, ca: is.file, permitted: is.permitted, why: why}
}

// nameError is a refusal to mint for a name, or a route pattern, outside
// the CA's constraints.
type nameError struct {
	name, ca, why string
	base          string // a wildcard pattern's base ("" for a name)
	permitted     []string
}

func (e *nameError) Error() string {
	if e.why != "" {
		return fmt.Sprintf("CA %s: %s; name %s is outside it", e.ca, e.why, e.name)
	}
	add := e.name
	if e.base != "" {
		add = e.base // "--name base" covers "*.base"
	}
	return fmt.Sprintf("CA %s is constrained to [%s] (each name and exactly one label below it); "+
		"name %s is outside them; add it with snigate ca init --name %s (and give nodes the new ca.crt)",
		e.ca, strings.Join(e.permitted, " "), e.name, add)
}

func (e *nameError) Is(target error) bool { return target == ErrNameNotPermitted }

// issue signs a fresh ECDSA P-256 leaf for name, valid from a little before
// now for validity, but never outside the CA's own validity.
func (is *issuer) issue(name string, now time.Time, validity time.Duration) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             latest(now.Add(-leafBackdate), is.cert.NotBefore),
		NotAfter:              earliest(now.Add(validity), is.cert.NotAfter),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, is.cert, &key.PublicKey, is.key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %s with CA %s: %w", name, is.file, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse minted certificate for %s: %w", name, err)
	}
	return &tls.Certificate{Certificate: append([][]byte{der}, is.chain...), PrivateKey: key, Leaf: leaf}, nil
}

// randomSerial is a positive random serial number of at most 127 bits.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Or(n, big.NewInt(1)), nil
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
