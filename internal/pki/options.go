package pki

import (
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"net"
	"net/url"
	"time"
)

// Option sets one property of a certificate being made. Options apply in
// order after the defaults, so a later option wins.
type Option func(*x509.Certificate)

// CommonName sets the subject's common name.
func CommonName(cn string) Option {
	return func(c *x509.Certificate) { c.Subject.CommonName = cn }
}

// SANs adds subject alternative names: IP literals as IP addresses, any
// other string as a DNS name.
func SANs(names ...string) Option {
	return func(c *x509.Certificate) {
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				c.IPAddresses = append(c.IPAddresses, ip)
			} else {
				c.DNSNames = append(c.DNSNames, n)
			}
		}
	}
}

// Organization sets the subject's organizations (a kubelet's is
// "system:nodes").
func Organization(orgs ...string) Option {
	return func(c *x509.Certificate) { c.Subject.Organization = orgs }
}

// URIs adds URI subject alternative names; a string that does not parse
// as a URL panics (test input).
func URIs(uris ...string) Option {
	return func(c *x509.Certificate) {
		for _, s := range uris {
			u, err := url.Parse(s)
			if err != nil {
				panic(err)
			}
			c.URIs = append(c.URIs, u)
		}
	}
}

// ExtKeyUsage sets the extended key usages. Without it a leaf gets
// serverAuth when it has SANs and clientAuth when it has none; an
// authority gets none.
func ExtKeyUsage(usages ...x509.ExtKeyUsage) Option {
	return func(c *x509.Certificate) { c.ExtKeyUsage = usages }
}

// KeyUsage sets the key usage bits (default: digitalSignature for a leaf,
// certSign, cRLSign and digitalSignature for an authority).
func KeyUsage(u x509.KeyUsage) Option {
	return func(c *x509.Certificate) { c.KeyUsage = u }
}

// Serial sets the serial number (default: 120 random bits).
func Serial(n int64) Option {
	return func(c *x509.Certificate) { c.SerialNumber = big.NewInt(n) }
}

// Validity sets the validity period (default: from an hour ago for a day).
// Certificates keep whole seconds.
func Validity(notBefore, notAfter time.Time) Option {
	return func(c *x509.Certificate) { c.NotBefore, c.NotAfter = notBefore, notAfter }
}

// baseTemplate holds the defaults every certificate starts from.
func baseTemplate() *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber:          randomSerial(),
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
}

func randomSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand.Reader does not fail
	}
	return n
}
