// Package pki makes throwaway certificate authorities and leaves, in memory
// and on disk: for snigate demo and for tests. Nothing here is meant for a
// production CA (see internal/certs.InitCA for that).
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// Authority is a throwaway CA, valid for a day.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the certificate, PEM-encoded
}

// NewAuthority creates a CA with common name name.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// Pool is a cert pool holding only this authority.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.Cert)
	return p
}

// Leaf issues a certificate for the names (a server) or, with no names, a
// client certificate with the common name cn. It returns the pair and its
// certificate and key in PEM.
func (a *Authority) Leaf(cn string, names ...string) (tls.Certificate, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if len(names) == 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, &key.PublicKey, a.Key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kder)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	return pair, certPEM, keyPEM, err
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// WriteFiles writes name -> content under dir, ".key" files with mode 0600.
func WriteFiles(dir string, files map[string][]byte) error {
	for name, b := range files {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, mode); err != nil {
			return err
		}
	}
	return nil
}

// WriteLeaf issues a leaf as Leaf does and writes it to dir as base.crt
// and base.key (0600).
func (a *Authority) WriteLeaf(dir, base, cn string, names ...string) (tls.Certificate, error) {
	pair, certPEM, keyPEM, err := a.Leaf(cn, names...)
	if err != nil {
		return tls.Certificate{}, err
	}
	return pair, WriteFiles(dir, map[string][]byte{base + ".crt": certPEM, base + ".key": keyPEM})
}

// WriteCA writes the authority's certificate and key to dir as base.crt
// and base.key (0600).
func (a *Authority) WriteCA(dir, base string) error {
	der, err := x509.MarshalPKCS8PrivateKey(a.Key)
	if err != nil {
		return err
	}
	return WriteFiles(dir, map[string][]byte{base + ".crt": a.PEM, base + ".key": pemBlock("PRIVATE KEY", der)})
}
