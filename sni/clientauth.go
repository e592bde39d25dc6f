package sni

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/snigate/snigate/names"
)

// ClientAuth is a bridge route's node identity (docs/configuration.md,
// routes[].serve.client_ca): the client leg asks for a client certificate
// and VerifyConnection refuses the handshake, with alert bad_certificate,
// unless the certificate chains to CAs with the clientAuth extended key
// usage, is within its validity, is not revoked by CRL and, when Names is
// set, has a name that matches one of them. VerifyConnection also runs for
// a resumed session, so a session resumed after a revocation, a change of
// CAs or Names, or its certificate's expiry is refused too.
type ClientAuth struct {
	// CAs is the bundle client certificates must chain to, read for every
	// handshake (certs.CABundle reloads it); required.
	CAs clientCAs
	// CRL revokes certificates (certs.CRL reloads it); nil: none.
	CRL revocationList
	// Names are identity patterns (names.CheckIdentityPattern) matched
	// against the subject CN, the DNS SANs and the URI SANs; nil: any
	// certificate that passes the other checks.
	Names []string

	now func() time.Time // tests; nil: time.Now
}

// clientCAs is the bundle in force (certs.CABundle, or a test's).
type clientCAs interface{ Pool() *x509.CertPool }

// revocationList tells whether cert, issued by issuer, is revoked
// (certs.CRL, or a test's).
type revocationList interface {
	Revoked(cert, issuer *x509.Certificate) bool
}

// Reasons a client certificate is refused: the "reason" label of
// snigate_client_auth_failures_total and of the Warn line.
const (
	reasonNoCertificate  = "no_certificate"   // the node sent none
	reasonUnknownCA      = "unknown_ca"       // it does not chain to client_ca
	reasonExpired        = "expired"          // expired or not yet valid
	reasonWrongUsage     = "wrong_usage"      // no clientAuth extended key usage
	reasonRevoked        = "revoked"          // listed by client_crl
	reasonNameNotAllowed = "name_not_allowed" // no name matches client_names
	reasonBadCertificate = "bad_certificate"  // anything else x509 refuses
)

// clientAuthReasons are every reason, for creating the series at 0.
var clientAuthReasons = []string{reasonNoCertificate, reasonUnknownCA, reasonExpired, reasonWrongUsage,
	reasonRevoked, reasonNameNotAllowed, reasonBadCertificate}

// resultClientCert ends a bridge connection whose client certificate was
// refused in the handshake.
const resultClientCert = "client_cert_refused"

// clientAuthError is a refused client certificate: why, and what to change.
type clientAuthError struct {
	reason string
	err    error
}

func (e *clientAuthError) Error() string {
	return "client certificate refused (" + e.reason + "): " + e.err.Error()
}
func (e *clientAuthError) Unwrap() error { return e.err }

// NodeIdentity is the identity of a node certificate: its subject CN, else
// its first URI SAN, else "".
func NodeIdentity(c *x509.Certificate) string {
	if c.Subject.CommonName != "" {
		return c.Subject.CommonName
	}
	if len(c.URIs) > 0 {
		return c.URIs[0].String()
	}
	return ""
}

// verify checks the certificates a client presented (peer[0] its own) and
// returns its identity, or a *clientAuthError.
func (a *ClientAuth) verify(peer []*x509.Certificate) (string, error) {
	if len(peer) == 0 {
		return "", &clientAuthError{reasonNoCertificate, errors.New("the client sent no certificate; " +
			"give the node its client certificate (containerd: client = [...] in certs.d/<host>/hosts.toml)")}
	}
	leaf := peer[0]
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         a.CAs.Pool(),
		Intermediates: intermediates(peer[1:]),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		CurrentTime:   a.time(),
	})
	if err != nil {
		return "", verifyError(leaf, err)
	}
	if a.CRL != nil {
		if c := revokedIn(a.CRL, chains); c != nil {
			return "", &clientAuthError{reasonRevoked, fmt.Errorf("%s (serial %s, issuer %q) is revoked by serve.client_crl",
				describeCert(c), c.SerialNumber, c.Issuer.String())}
		}
	}
	if len(a.Names) > 0 && !a.allowed(leaf) {
		return "", &clientAuthError{reasonNameNotAllowed, fmt.Errorf("%s matches none of serve.client_names %q",
			describeCert(leaf), a.Names)}
	}
	return NodeIdentity(leaf), nil
}

// names is a.Names; nil for a nil a.
func (a *ClientAuth) names() []string {
	if a == nil {
		return nil
	}
	return a.Names
}

func (a *ClientAuth) time() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func intermediates(certs []*x509.Certificate) *x509.CertPool {
	if len(certs) == 0 {
		return nil
	}
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// verifyError classifies what x509 refused.
func verifyError(leaf *x509.Certificate, err error) error {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	switch {
	case errors.As(err, &ua):
		return &clientAuthError{reasonUnknownCA, fmt.Errorf("%s (issuer %q) does not chain to serve.client_ca: %w",
			describeCert(leaf), leaf.Issuer.String(), err)}
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return &clientAuthError{reasonExpired, fmt.Errorf("%s is valid from %s to %s only; renew it", describeCert(leaf),
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))}
	case errors.As(err, &ci) && ci.Reason == x509.IncompatibleUsage:
		return wrongUsage(leaf)
	}
	return &clientAuthError{reasonBadCertificate, fmt.Errorf("%s: %w", describeCert(leaf), err)}
}

// wrongUsage names what lacks the clientAuth usage: the node's
// certificate when its own extended key usage leaves clientAuth out, else
// (the leaf allows client authentication) a certificate of the chain up
// to serve.client_ca, which restricts its extended key usage without
// clientAuth: then every node is refused, and the bundle is at fault.
func wrongUsage(leaf *x509.Certificate) error {
	if len(leaf.ExtKeyUsage) > 0 && !leafAllowsClientAuth(leaf) {
		return &clientAuthError{reasonWrongUsage, fmt.Errorf("%s lacks the clientAuth extended key usage: issue it as a client certificate", describeCert(leaf))}
	}
	return &clientAuthError{reasonWrongUsage, fmt.Errorf("%s allows client authentication, but a CA certificate above it (issuer %q, serve.client_ca) "+
		"restricts its extended key usage without clientAuth: use a client_ca that may issue client certificates", describeCert(leaf), leaf.Issuer.String())}
}

func leafAllowsClientAuth(leaf *x509.Certificate) bool {
	for _, u := range leaf.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// revokedIn returns the first certificate of any chain that crl revokes.
func revokedIn(crl revocationList, chains [][]*x509.Certificate) *x509.Certificate {
	for _, chain := range chains {
		for i := 0; i+1 < len(chain); i++ {
			if crl.Revoked(chain[i], chain[i+1]) {
				return chain[i]
			}
		}
	}
	return nil
}

// allowed reports whether a name of c matches one of a.Names.
func (a *ClientAuth) allowed(c *x509.Certificate) bool {
	for _, p := range a.Names {
		if c.Subject.CommonName != "" && names.MatchIdentity(p, names.IdentityCN, c.Subject.CommonName) {
			return true
		}
		for _, d := range c.DNSNames {
			if names.MatchIdentity(p, names.IdentityDNS, d) {
				return true
			}
		}
		for _, u := range c.URIs {
			if names.MatchIdentity(p, names.IdentityURI, u.String()) {
				return true
			}
		}
	}
	return false
}

// describeCert names a certificate in an error: its identity and SANs.
func describeCert(c *x509.Certificate) string {
	var b strings.Builder
	fmt.Fprintf(&b, "certificate %q", NodeIdentity(c))
	if len(c.DNSNames) > 0 {
		fmt.Fprintf(&b, " (DNS %s)", strings.Join(c.DNSNames, ", "))
	}
	return b.String()
}

// serveConfig is the client leg's configuration of this connection: the
// route's, and on a route with ClientAuth a request for a client
// certificate (no CA list: a node holding one certificate sends it, and
// a wrong one is refused with its reason) checked by verifyClient.
// RequestClientCert rather than RequireAnyClientCert: with no certificate
// the handshake then reaches VerifyConnection too, so every refusal is
// classified in one place, with alert bad_certificate.
func (t *bridgeTarget) serveConfig(proto string) *tls.Config {
	cfg := t.ss.route.serveConfig(proto)
	cfg.CurvePreferences = t.ss.route.serveKeyExchanges(t.ss.hello.shares.list(), t.hello.SupportedCurves)
	if t.ss.route.ClientAuth != nil {
		cfg.ClientAuth = tls.RequestClientCert
		cfg.VerifyConnection = t.verifyClient
	}
	return cfg
}

// verifyClient is the VerifyConnection of a route with ClientAuth, for a
// full handshake and a resumed one alike.
func (t *bridgeTarget) verifyClient(cs tls.ConnectionState) error {
	node, err := t.ss.route.ClientAuth.verify(cs.PeerCertificates)
	if err != nil {
		t.authErr, t.authResumed = err, cs.DidResume
		return err
	}
	t.node = node
	return nil
}

// clientAuthFailed ends a connection whose certificate was refused: it is
// counted by reason and logged at Warn, rate-limited per reason and route.
func (t *bridgeTarget) clientAuthFailed() {
	reason := reasonBadCertificate
	var ae *clientAuthError
	if errors.As(t.authErr, &ae) {
		reason = ae.reason
	}
	t.ss.end(resultClientCert, t.authErr)
	t.s.m.clientAuthFailure(t.ss.route.Name, reason)
	key := resultClientCert + "/" + reason + "/" + t.ss.route.Name
	if t.authResumed {
		key += "/resumed" // its own rate: a resumed session refused is news even amid refused new ones
	}
	t.s.warnf(key, "client certificate refused on a route with serve.client_ca",
		"route", t.ss.route.Name, "client", t.ss.clientString(), "sni", t.ss.hello.ServerName, "reason", reason, "resumed", t.authResumed, "err", t.authErr)
}
