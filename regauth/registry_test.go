package regauth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit/distribution"
)

// startLimit bounds a process start or a first answer on a busy machine;
// it is a failure bound, never a synchronisation.
const startLimit = 30 * time.Second

// testPKI is the CA every test server's certificate comes from.
type testPKI struct {
	ca *pki.Authority
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := pki.NewAuthority("regauth test CA")
	if err != nil {
		t.Fatal(err)
	}
	return &testPKI{ca: ca}
}

// serverTLS is a server configuration for names.
func (p *testPKI) serverTLS(t *testing.T, names ...string) *tls.Config {
	t.Helper()
	c, _, _, err := p.ca.Leaf("server", names...)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}
}

// transport is a client transport trusting the test CA.
func (p *testPKI) transport(t *testing.T) *http.Transport {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.ca.Pool(), MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// startRegistry runs Debian's docker-registry over TLS (a leaf of the
// test CA for 127.0.0.1 and localhost) on 127.0.0.1:0 with delete
// enabled, auth o.Htpasswd or o.Token, and waits for its "listening on"
// line.
func startRegistry(t *testing.T, p *testPKI, o distribution.Options) *distribution.Registry {
	t.Helper()
	_, certPEM, keyPEM, err := p.ca.Leaf("registry", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	o.TLS, o.Secret, o.Delete = distribution.TLSFiles{Cert: certPEM, Key: keyPEM}, "regauth-test", true
	return distribution.Start(t, o)
}

// startTokenService is the distribution token service (issuer
// regauth-test-issuer, service regauth-test-registry) on a leaf of the
// test CA, with o's other options.
func startTokenService(t *testing.T, p *testPKI, o distribution.TokenOptions) *distribution.TokenService {
	t.Helper()
	o.TLS, o.Issuer, o.Service = p.serverTLS(t, "localhost", "127.0.0.1"), "regauth-test-issuer", "regauth-test-registry"
	return distribution.NewTokenService(t, o)
}

func writeTestFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// certPool is a pool of one certificate.
func certPool(c *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c)
	return p
}
