package certs

import (
	"crypto/x509"
	"fmt"
	"strings"
)

// What a certificate may be used for, checked where it is loaded so that
// `snigate check` (which builds the same objects) refuses a file `run`
// could only fail handshakes with: a serving certificate that does not
// cover the route's names, a client certificate the upstream will refuse
// for its extended key usage.

// uncovered returns the patterns (exact names or "*." wildcards) that leaf
// does not cover, as crypto/x509's VerifyHostname reads its DNS SANs (RFC
// 6125): an exact name needs a SAN equal to it or a wildcard SAN one label
// above it; a wildcard pattern needs the same wildcard SAN, since no other
// SAN covers every name it matches.
func uncovered(leaf *x509.Certificate, patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if leaf.VerifyHostname(p) != nil {
			out = append(out, p)
		}
	}
	return out
}

// coverError explains a serving certificate that misses some of the
// route's names.
func coverError(file string, leaf *x509.Certificate, missing []string) error {
	sans := "none"
	if len(leaf.DNSNames) > 0 {
		sans = strings.Join(leaf.DNSNames, " ")
	}
	return fmt.Errorf("certificate %s does not cover sni %s (its DNS names: %s); nodes would refuse it: "+
		"issue it with these names as SANs (a wildcard route name needs the same wildcard SAN), "+
		"or remove them from the route's sni", file, strings.Join(missing, " "), sans)
}

// clientAuthError reports a certificate of chain (the client certificate
// and the intermediates in its file) whose extended key usage excludes
// clientAuth: a TLS server verifying it as a client certificate refuses
// it, as crypto/x509 does. No extended key usage at all, or anyExtendedKeyUsage,
// allows every use.
func clientAuthError(file string, chain []*x509.Certificate) error {
	for i, c := range chain {
		if allowsClientAuth(c) {
			continue
		}
		what := "certificate"
		if i > 0 {
			what = fmt.Sprintf("intermediate %q in", c.Subject.CommonName)
		}
		return fmt.Errorf("%s %s has extended key usage [%s], without clientAuth: the upstream will refuse it as a client certificate; "+
			"issue the edge certificate with extendedKeyUsage clientAuth (or none at all)", what, file, ekuNames(c))
	}
	return nil
}

func allowsClientAuth(c *x509.Certificate) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny {
			return true
		}
	}
	return false
}

// ekuNames lists c's extended key usages as openssl names them.
func ekuNames(c *x509.Certificate) string {
	known := map[x509.ExtKeyUsage]string{
		x509.ExtKeyUsageServerAuth: "serverAuth", x509.ExtKeyUsageCodeSigning: "codeSigning",
		x509.ExtKeyUsageEmailProtection: "emailProtection", x509.ExtKeyUsageTimeStamping: "timeStamping",
		x509.ExtKeyUsageOCSPSigning: "OCSPSigning",
	}
	var out []string
	for _, u := range c.ExtKeyUsage {
		if n, ok := known[u]; ok {
			out = append(out, n)
		} else {
			out = append(out, fmt.Sprintf("usage %d", u))
		}
	}
	for _, oid := range c.UnknownExtKeyUsage {
		out = append(out, oid.String())
	}
	return strings.Join(out, " ")
}
