package config

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/snigate/snigate/names"
	"gopkg.in/yaml.v3"
)

// clientAuthKeys are the keys of serve: that ask nodes for a client
// certificate (docs/configuration.md, "Node identity").
var clientAuthKeys = []string{"client_ca", "client_names", "client_crl"}

// spliceClientAuth reports, on a splice route, each node identity key
// under serve: at its own line, saying why: a spliced connection is never
// terminated, so no certificate can be asked of the node. It returns
// whether one was found.
func (p *parser) spliceClientAuth(route fields) bool {
	n := resolve(route.get("serve"))
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	found := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind == yaml.ScalarNode && contains(clientAuthKeys, k.Value) {
			p.errorf(k.Line, route.key("serve")+"."+k.Value,
				"only allowed in bridge mode: a spliced connection is never terminated, so the gateway cannot ask the node for a certificate; use mode: bridge, or remove it")
			found = true
		}
	}
	return found
}

// clientAuth parses serve.client_ca, client_names and client_crl into s:
// the bundle must hold a certificate, the names must be identity patterns
// (names.CheckIdentityPattern) and the CRL must exist, parse and be signed
// by a certificate of the bundle. client_names and client_crl need
// client_ca.
func (p *parser) clientAuth(f fields, s *Serve) {
	s.ClientCA, s.ClientCRL = p.pathAt(f, "client_ca"), p.pathAt(f, "client_crl")
	s.ClientNames = p.clientNames(f)
	if s.ClientCA == "" {
		for _, k := range clientAuthKeys[1:] {
			if _, present := f.keys[k]; present {
				p.errorf(f.keyLine(k), f.key(k), "requires client_ca: the bundle node certificates must chain to")
			}
		}
		return
	}
	p.checkCABundle(f, "client_ca", s.ClientCA)
	if !p.hasErrorAt(f.key("client_ca")) {
		p.checkClientIssuers(f, s.ClientCA)
	}
	if s.ClientCRL != "" {
		p.checkCRL(f, s.ClientCA, s.ClientCRL)
	}
}

// clientNames returns serve.client_names, each an identity pattern, once.
func (p *parser) clientNames(f fields) []string {
	const want = `an identity such as "system:node:*"`
	var out []string
	seen := dupChecker{}
	for _, it := range p.listAt(f, "client_names", `["system:node:*"]`) {
		s, ok := p.scalar(it.node, it.key, want)
		if !ok {
			continue
		}
		if err := names.CheckIdentityPattern(s); err != nil {
			p.errorf(it.node.Line, it.key, "want %s, got %q: %v", want, s, err)
			continue
		}
		if seen.check(p, it, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkCRL checks serve.client_crl: a PEM X509 CRL (one or more blocks),
// each signed by a certificate of the client_ca bundle. A CRL past its
// NextUpdate is accepted (it still revokes what it lists).
func (p *parser) checkCRL(f fields, caPath, crlPath string) {
	data, ok := p.readFile(f, "client_crl", crlPath)
	if !ok {
		return
	}
	caPEM, ok := p.readFile(f, "client_ca", caPath)
	if !ok {
		return
	}
	cas := parseCerts(caPEM)
	n := 0
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "X509 CRL" {
			continue
		}
		n++
		if !p.crlBlock(f, b.Bytes, n, crlPath, caPath, cas) {
			return
		}
	}
	if n == 0 {
		p.errorf(f.keyLine("client_crl"), f.key("client_crl"), "no PEM X509 CRL in %s (want -----BEGIN X509 CRL----- blocks, as openssl ca -gencrl writes)", crlPath)
	}
}

// crlBlock checks the n-th CRL of crlPath against the CA certificates.
func (p *parser) crlBlock(f fields, der []byte, n int, crlPath, caPath string, cas []*x509.Certificate) bool {
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		p.errorf(f.keyLine("client_crl"), f.key("client_crl"), "cannot parse CRL %d of %s: %v", n, crlPath, err)
		return false
	}
	for _, ca := range cas {
		err := crl.CheckSignatureFrom(ca)
		if err == nil {
			return true
		}
		if errors.As(err, new(x509.ConstraintViolationError)) && bytes.Equal(ca.RawSubject, crl.RawIssuer) {
			p.errorf(f.keyLine("client_crl"), f.key("client_crl"), "CRL %d of %s is issued by %q of client_ca, whose key usage lacks cRLSign: "+
				"a CA that may not sign CRLs cannot revoke (kubeadm's cluster CA is one); narrow client_names instead, or use a node CA from snigate ca init",
				n, crlPath, crl.Issuer.String())
			return false
		}
	}
	p.errorf(f.keyLine("client_crl"), f.key("client_crl"), "CRL %d of %s (issuer %q, updated %s) is not signed by a certificate of client_ca %s",
		n, crlPath, crl.Issuer.String(), crl.ThisUpdate.UTC().Format(time.RFC3339), caPath)
	return false
}

// checkClientIssuers refuses a client_ca bundle none of whose
// certificates may issue client certificates (ClientIssuersFault): every
// node would be refused, and the refusal would read as the node
// certificate's fault.
func (p *parser) checkClientIssuers(f fields, path string) {
	data, ok := p.readFile(f, "client_ca", path)
	if !ok {
		return
	}
	if why := ClientIssuersFault(parseCerts(data)); why != "" {
		p.errorf(f.keyLine("client_ca"), f.key("client_ca"), "%s cannot issue node (client) certificates: %s; every node would be refused. "+
			"Use the CA that signs the nodes' clientAuth certificates, or one from snigate ca init (snigate ca issue-node)", path, why)
	}
}

// ClientIssuersFault says why none of cas (a serve.client_ca bundle) may
// issue client certificates, "" when one may (or cas is empty): each has
// an extended key usage without clientAuth (nor anyExtendedKeyUsage), or
// a key usage without certSign. Go's verification (like OpenSSL's) nests
// extended key usages down the chain, so such a bundle refuses every
// node. The gateway says it again when the bundle file changes.
func ClientIssuersFault(cas []*x509.Certificate) string {
	var why []string
	for _, c := range cas {
		w := clientIssuerFault(c)
		if w == "" {
			return ""
		}
		why = append(why, fmt.Sprintf("%q %s", c.Subject.String(), w))
	}
	return strings.Join(why, "; ")
}

// clientIssuerFault says why c cannot issue client certificates, "" if it can.
func clientIssuerFault(c *x509.Certificate) string {
	if c.KeyUsage != 0 && c.KeyUsage&x509.KeyUsageCertSign == 0 {
		return "has a key usage without certSign"
	}
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return ""
	}
	for _, u := range c.ExtKeyUsage {
		if u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny {
			return ""
		}
	}
	return "has an extended key usage without clientAuth"
}

// parseCerts returns the certificates of a PEM bundle that parse.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" {
			out = append(out, c)
		}
	}
}
