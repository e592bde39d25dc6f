package testkit

import "crypto/tls"

// StaticCert is a certificate source (certinel's shape, as sni.Route.Serve
// takes one) that always gives Cert; nil Cert gives nil and no error.
type StaticCert struct{ Cert *tls.Certificate }

// GetCertificate returns s.Cert.
func (s StaticCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.Cert, nil
}
