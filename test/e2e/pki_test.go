package e2e

import (
	"crypto/x509"
	"os"
	"path/filepath"

	"github.com/snigate/snigate/internal/pki"
)

// ca is a throwaway certificate authority of the world (snigate's own CA
// for the node-facing side is made by `snigate ca init` instead).
type ca struct {
	*pki.Authority
	cert *x509.Certificate
	file string // PEM of cert
}

// keyPair is a leaf written as PEM files.
type keyPair struct {
	certFile, keyFile string
}

// newCA makes a CA and writes its certificate to dir/name-ca.crt.
func newCA(dir, name string) (*ca, error) {
	a, err := pki.NewAuthority("snigate e2e " + name)
	if err != nil {
		return nil, err
	}
	c := &ca{Authority: a, cert: a.Cert, file: filepath.Join(dir, name+"-ca.crt")}
	return c, pki.WriteFiles(dir, map[string][]byte{name + "-ca.crt": a.PEM})
}

// issue writes name.crt and name.key signed by c: a server certificate for
// the DNS names and IPs in sans, or a client certificate when sans is empty.
func (c *ca) issue(dir, name string, sans ...string) (keyPair, error) {
	l, err := c.Issue(pki.CommonName(name), pki.SANs(sans...))
	if err != nil {
		return keyPair{}, err
	}
	certFile, keyFile, err := l.Write(dir, name)
	return keyPair{certFile: certFile, keyFile: keyFile}, err
}

// certPool reads a PEM file into a pool.
func certPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(b)
	return p, nil
}
