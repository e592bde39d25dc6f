package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
)

// Issued is a certificate with its key, parsed, as a tls.Certificate and
// in PEM.
type Issued struct {
	Cert    *x509.Certificate
	Pair    tls.Certificate // Leaf set; Certificate holds the chain after the leaf
	CertPEM []byte          // the certificate, then the issuer's intermediates
	KeyPEM  []byte          // PKCS#8
}

// Issue makes a leaf signed by a, described by opts (see Option for the
// defaults).
func (a *Authority) Issue(opts ...Option) (*Issued, error) {
	key, der, cert, err := create(baseTemplate(), a.Cert, a.Key, withLeafDefaults(opts))
	if err != nil {
		return nil, err
	}
	return newIssued(key, cert, append([][]byte{der}, a.chain...))
}

// SelfSigned makes a leaf signed by its own key, described by opts.
func SelfSigned(opts ...Option) (*Issued, error) {
	key, der, cert, err := create(baseTemplate(), nil, nil, withLeafDefaults(opts))
	if err != nil {
		return nil, err
	}
	return newIssued(key, cert, [][]byte{der})
}

// Leaf issues a certificate for the names (a server) or, with no names, a
// client certificate with the common name cn. It returns the pair and its
// certificate and key in PEM.
func (a *Authority) Leaf(cn string, names ...string) (tls.Certificate, []byte, []byte, error) {
	l, err := a.Issue(CommonName(cn), SANs(names...))
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	return l.Pair, l.CertPEM, l.KeyPEM, nil
}

// WriteLeaf issues a leaf as Leaf does and writes it to dir as base.crt
// and base.key (0600).
func (a *Authority) WriteLeaf(dir, base, cn string, names ...string) (tls.Certificate, error) {
	l, err := a.Issue(CommonName(cn), SANs(names...))
	if err != nil {
		return tls.Certificate{}, err
	}
	_, _, err = l.Write(dir, base)
	return l.Pair, err
}

// Write writes the certificate to dir/base.crt and the key to
// dir/base.key (0600), and returns the two paths.
func (l *Issued) Write(dir, base string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, base+".crt"), filepath.Join(dir, base+".key")
	return certFile, keyFile, WriteFiles(dir, map[string][]byte{base + ".crt": l.CertPEM, base + ".key": l.KeyPEM})
}

// withLeafDefaults appends the default extended key usage, chosen once the
// caller's options are known: serverAuth with SANs, clientAuth without.
func withLeafDefaults(opts []Option) []Option {
	return append(opts[:len(opts):len(opts)], func(c *x509.Certificate) {
		if c.ExtKeyUsage != nil {
			return
		}
		if len(c.DNSNames)+len(c.IPAddresses) > 0 {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		} else {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
	})
}

// create applies opts to tmpl and signs it with parentKey as parent, or
// with its own new key when parent is nil.
func create(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, opts []Option) (*ecdsa.PrivateKey, []byte, *x509.Certificate, error) {
	for _, o := range opts {
		o(tmpl)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, der, cert, err
}

func newIssued(key *ecdsa.PrivateKey, cert *x509.Certificate, chain [][]byte) (*Issued, error) {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	l := &Issued{
		Cert:   cert,
		Pair:   tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: cert},
		KeyPEM: pemBlock("PRIVATE KEY", kder),
	}
	for _, der := range chain {
		l.CertPEM = append(l.CertPEM, pemBlock("CERTIFICATE", der)...)
	}
	return l, nil
}
