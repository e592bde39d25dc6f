package pki

import (
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
)

// Authority is a throwaway CA, by default valid from an hour ago for a day.
type Authority struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the certificate, PEM-encoded

	chain [][]byte // DER of the intermediates from this one up, root excluded
}

// NewAuthority creates a self-signed root CA with common name name; opts
// change the defaults (key usage certSign, cRLSign and digitalSignature).
func NewAuthority(name string, opts ...Option) (*Authority, error) {
	tmpl := caTemplate(name)
	key, der, cert, err := create(tmpl, nil, nil, opts)
	if err != nil {
		return nil, err
	}
	return &Authority{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// Intermediate creates a CA with common name name signed by a. Leaves it
// issues carry it (and a's own intermediates) after themselves, so a peer
// that trusts only the root can verify them.
func (a *Authority) Intermediate(name string, opts ...Option) (*Authority, error) {
	key, der, cert, err := create(caTemplate(name), a.Cert, a.Key, opts)
	if err != nil {
		return nil, err
	}
	chain := append([][]byte{der}, a.chain...)
	return &Authority{Cert: cert, Key: key, PEM: pemBlock("CERTIFICATE", der), chain: chain}, nil
}

func caTemplate(name string) *x509.Certificate {
	tmpl := baseTemplate()
	tmpl.Subject = pkix.Name{CommonName: name}
	tmpl.IsCA = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	return tmpl
}

// Pool is a cert pool holding only this authority.
func (a *Authority) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.Cert)
	return p
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

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
