package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// TestNewKeyPairServeMustCoverNames is issue 13 item 2: a serve.cert whose
// SANs did not cover the route's SNI names was accepted, and every
// handshake for the other names then failed on the nodes.
func TestNewKeyPairServeMustCoverNames(t *testing.T) {
	ca, err := pki.NewAuthority("serve CA")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := ca.WriteLeaf(dir, "exact", "reg.test", "reg.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.WriteLeaf(dir, "wild", "reg.test", "reg.test", "*.reg.test"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, pair string
		names      []string
		missing    string // "" : accepted
	}{
		{name: "exact SAN", pair: "exact", names: []string{"reg.test"}},
		{name: "no names to check", pair: "exact"},
		{name: "wildcard SAN covers a name one label below", pair: "wild", names: []string{"eu.reg.test"}},
		{name: "wildcard SAN covers the wildcard route name", pair: "wild", names: []string{"reg.test", "*.reg.test"}},
		{name: "other name", pair: "exact", names: []string{"reg.test", "other.test"}, missing: "other.test"},
		{name: "wildcard route name without a wildcard SAN", pair: "exact", names: []string{"*.reg.test"}, missing: "*.reg.test"},
		{name: "two labels below a wildcard SAN", pair: "wild", names: []string{"a.b.reg.test"}, missing: "a.b.reg.test"},
		{name: "a deeper wildcard", pair: "wild", names: []string{"*.eu.reg.test"}, missing: "*.eu.reg.test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certFile := filepath.Join(dir, tt.pair+".crt")
			_, err := NewKeyPair(KeyPairConfig{CertFile: certFile, KeyFile: filepath.Join(dir, tt.pair+".key"),
				Route: "r", Role: RoleServe, Names: tt.names, Logger: quietLogger})
			if tt.missing == "" {
				if err != nil {
					t.Fatalf("NewKeyPair = %v, want it accepted", err)
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Role != RoleServe || fe.Field != FieldCert {
				t.Fatalf("NewKeyPair = %#v, want a *FileError for the serve cert", err)
			}
			for _, want := range []string{"certificate " + certFile + " does not cover sni " + tt.missing + " (its DNS names:",
				"issue it with these names as SANs"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

// TestNewKeyPairClientNeedsClientAuth is issue 13 item 2: an
// upstream_tls.cert without the clientAuth extended key usage was
// accepted, and the registry then refused every upstream handshake.
func TestNewKeyPairClientNeedsClientAuth(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		leaf    []x509.ExtKeyUsage
		issuer  []x509.ExtKeyUsage // an intermediate in the file; nil: none
		errText string             // "" : accepted
	}{
		{name: "clientAuth", leaf: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		{name: "clientAuth and serverAuth", leaf: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{name: "no extended key usage at all", leaf: nil},
		{name: "any extended key usage", leaf: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}},
		{name: "serverAuth only", leaf: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			errText: "has extended key usage [serverAuth], without clientAuth"},
		{name: "intermediate without clientAuth", leaf: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			issuer: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, errText: `intermediate "issuing CA" in`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			certFile, keyFile := writeEKUPair(t, dir, i, tt.leaf, tt.issuer)
			_, err := NewKeyPair(KeyPairConfig{CertFile: certFile, KeyFile: keyFile, Route: "r", Role: RoleClient, Logger: quietLogger})
			if tt.errText == "" {
				if err != nil {
					t.Fatalf("NewKeyPair = %v, want it accepted", err)
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Role != RoleClient || fe.Field != FieldCert {
				t.Fatalf("NewKeyPair = %#v, want a *FileError for the client cert", err)
			}
			for _, want := range []string{tt.errText, certFile, "issue the edge certificate with extendedKeyUsage clientAuth"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	// A serving certificate is not held to clientAuth.
	certFile, keyFile := writeEKUPair(t, dir, 99, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, nil)
	if _, err := NewKeyPair(KeyPairConfig{CertFile: certFile, KeyFile: keyFile, Route: "r", Role: RoleServe, Logger: quietLogger}); err != nil {
		t.Errorf("a serverAuth serving certificate: %v", err)
	}
}

// writeEKUPair writes a client certificate with the extended key usages
// leaf (nil: none), signed by an issuing CA with issuer's (written into the
// file after the leaf) or self-signed when issuer is nil. pki.Authority
// issues leaves with fixed usages, hence this small helper.
func writeEKUPair(t *testing.T, dir string, n int, leaf, issuer []x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(n) + 1), Subject: pkix.Name{CommonName: "edge"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: leaf,
		KeyUsage: x509.KeyUsageDigitalSignature}
	parent, parentKey := tmpl, key
	var chainPEM []byte
	if issuer != nil {
		parentKey = newKey(t)
		parent = &x509.Certificate{SerialNumber: big.NewInt(1000 + int64(n)), Subject: pkix.Name{CommonName: "issuing CA"},
			NotBefore: tmpl.NotBefore, NotAfter: tmpl.NotAfter, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign, ExtKeyUsage: issuer}
		der, err := x509.CreateCertificate(rand.Reader, parent, parent, &parentKey.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		chainPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, fmt.Sprintf("eku%d.crt", n)), filepath.Join(dir, fmt.Sprintf("eku%d.key", n))
	writeFile(t, certFile, append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), chainPEM...))
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}))
	return certFile, keyFile
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNewMinterRefusesNamesOutsideConstraints is issue 13 item 2: a route
// name outside the name constraints of a CA made by `snigate ca init
// --name` was accepted, and the minter then refused every handshake for
// it. The rule is the minter's own (each permitted name and one label
// below it), so check and run agree.
func TestNewMinterRefusesNamesOutsideConstraints(t *testing.T) {
	ca := newTestCA(t, "reg.example.com")
	caFile := filepath.Join(ca.dir, CACertFileName)
	tests := []struct {
		name    string
		names   []string
		index   int
		errText string // "" : accepted
	}{
		{name: "the permitted name and its wildcard", names: []string{"reg.example.com", "*.reg.example.com", "Eu.Reg.Example.com."}},
		{name: "another site", names: []string{"reg.example.com", "other.test"}, index: 1,
			errText: "CA " + caFile + " is constrained to [reg.example.com] (each name and exactly one label below it); name other.test is outside them; add it with snigate ca init --name other.test"},
		{name: "two labels below", names: []string{"a.b.reg.example.com"},
			errText: "name a.b.reg.example.com is outside them"},
		{name: "a wildcard two labels below", names: []string{"*.eu.reg.example.com"},
			errText: "name *.eu.reg.example.com is outside them; add it with snigate ca init --name eu.reg.example.com"},
		{name: "a wildcard above the permitted name", names: []string{"*.example.com"},
			errText: "name *.example.com is outside them; add it with snigate ca init --name example.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ca.config()
			cfg.Names = tt.names
			_, err := NewMinter(cfg)
			if tt.errText == "" {
				if err != nil {
					t.Fatalf("NewMinter = %v, want it accepted", err)
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.Role != RoleServeCA || fe.Field != FieldNames || fe.Index != tt.index || fe.Route != "registry" {
				t.Fatalf("NewMinter = %#v, want a *FileError for Names[%d]", err, tt.index)
			}
			if !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("error %q lacks %q", err, tt.errText)
			}
		})
	}
}

func TestIssuerPermitsPatternExclusions(t *testing.T) {
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "excluding CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, ExcludedDNSDomains: []string{"secret.example.com", ".internal.example.com"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{cert: c, file: "ca.crt", excluded: canonicalNames(c.ExcludedDNSDomains)}
	tests := []struct {
		pattern string
		ok      bool
	}{
		{"*.example.com", true}, // only some names below it are excluded
		{"secret.example.com", false},
		{"*.secret.example.com", false},
		{"*.internal.example.com", false},
		{"internal.example.com", true}, // ".internal.example.com" excludes names below it only
		{"*.a.internal.example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			if err := is.permitsPattern(tt.pattern); (err == nil) != tt.ok {
				t.Errorf("permitsPattern(%q) = %v, want ok=%v", tt.pattern, err, tt.ok)
			}
		})
	}
}
