package upstream

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// testServerName is the name upstream certificates are issued for.
const testServerName = "registry.example.test"

// testCA is a throwaway certificate authority for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// testPKI holds the certificates the tests use: ca signs the server and
// client certificates; other is a CA nobody trusts.
type testPKI struct {
	ca, other   *testCA
	server      tls.Certificate // ca, testServerName and 127.0.0.1
	otherServer tls.Certificate // other, same names
	client      tls.Certificate // ca, client auth
	otherClient tls.Certificate // other, client auth
}

var pkiOnce = sync.OnceValues(buildPKI)

func newPKI(t testing.TB) *testPKI {
	t.Helper()
	p, err := pkiOnce()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func buildPKI() (*testPKI, error) {
	var p testPKI
	var err error
	if p.ca, err = newCA("snigate test CA"); err != nil {
		return nil, err
	}
	if p.other, err = newCA("untrusted test CA"); err != nil {
		return nil, err
	}
	if p.server, err = p.ca.issue(testServerName, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if p.otherServer, err = p.other.issue(testServerName, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if p.client, err = p.ca.issue("edge", x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	p.otherClient, err = p.other.issue("edge", x509.ExtKeyUsageClientAuth)
	return &p, err
}

func newCA(name string) (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}, nil
}

func (ca *testCA) issue(name string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(12 * time.Hour).Truncate(time.Second),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// clientConfig is the configuration a bridge route uses towards the
// upstream: our roots, the server name, and cert as client certificate
// (none when cert is nil).
func (p *testPKI) clientConfig(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: p.ca.pool, ServerName: testServerName}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return cfg
}

// serverConfig serves cert and, when clientCAs is not nil, demands a client
// certificate signed by one of them.
func serverConfig(cert tls.Certificate, clientCAs *x509.CertPool, maxVersion uint16) *tls.Config {
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: maxVersion}
	if clientCAs != nil {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = clientCAs
	}
	return cfg
}
