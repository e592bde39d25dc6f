package gateway

// A docker-registry process with htpasswd or token auth, and a token
// service after the distribution token specification, for the tests of
// routes[].http.auth, on the world's CA.

import (
	"crypto/tls"
	"testing"

	"github.com/snigate/snigate/internal/pki"
	"github.com/snigate/snigate/internal/testkit/distribution"
)

// startDockerRegistry runs Debian's docker-registry over TLS (a leaf of
// ca for registry.test, localhost and 127.0.0.1) on 127.0.0.1:0 with o's
// auth, waits for its "listening on" line and returns its address.
func startDockerRegistry(t *testing.T, ca *pki.Authority, o distribution.Options) string {
	t.Helper()
	_, certPEM, keyPEM, err := ca.Leaf("registry.test", "registry.test", "localhost", "127.0.0.1")
	must(t, err)
	o.TLS, o.Secret = distribution.TLSFiles{Cert: certPEM, Key: keyPEM}, "gateway-test"
	if o.Htpasswd != nil {
		o.HtpasswdRealm = "gateway-basic"
	}
	return distribution.Start(t, o).Addr
}

// startTokenService is the distribution token service (issuer
// gateway-test-issuer, service gateway-test-registry) for users, on a
// leaf of ca for localhost and 127.0.0.1.
func startTokenService(t *testing.T, ca *pki.Authority, users map[string]string) *distribution.TokenService {
	t.Helper()
	c, _, _, err := ca.Leaf("localhost", "localhost", "127.0.0.1")
	must(t, err)
	return distribution.NewTokenService(t, distribution.TokenOptions{
		TLS:    &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12},
		Issuer: "gateway-test-issuer", Service: "gateway-test-registry", Users: users,
	})
}
