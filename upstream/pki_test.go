package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"sync"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// testServerName is the name upstream certificates are issued for.
const testServerName = "registry.example.test"

// testCA is a throwaway certificate authority for the tests.
type testCA struct {
	*pki.Authority
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
	a, err := pki.NewAuthority(name)
	if err != nil {
		return nil, err
	}
	return &testCA{Authority: a, pool: a.Pool()}, nil
}

// issue makes a certificate for name and 127.0.0.1 with one extended key
// usage, valid for 12 hours.
func (ca *testCA) issue(name string, usage x509.ExtKeyUsage) (tls.Certificate, error) {
	l, err := ca.Issue(pki.CommonName(name), pki.SANs(name, "127.0.0.1"), pki.ExtKeyUsage(usage),
		pki.Validity(time.Now().Add(-time.Hour), time.Now().Add(12*time.Hour)))
	if err != nil {
		return tls.Certificate{}, err
	}
	return l.Pair, nil
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
