package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// Names the bench's certificates and routes use.
const (
	spliceName   = "bench.example.test"  // SNI of the splice route
	bridgeName   = "bridge.bench.test"   // SNI of the bridge route (the serve certificate)
	upstreamName = "upstream.bench.test" // the bridge upstream's certificate name
)

// writePKI creates, in dir, one ECDSA P-256 CA and three leaves signed by
// it (internal/pki): serve (what clients see on the bridge and http
// routes), upstream (the server certificate of the mTLS upstream and of
// the registry) and client (the edge identity
// the proxies present upstream). Each leaf is written as NAME.crt,
// NAME.key and NAME.pem (certificate then key, HAProxy's format); the CA
// as ca.crt.
func writePKI(dir string) error {
	ca, err := pki.NewAuthority("snigate bench CA", benchValidity())
	if err != nil {
		return err
	}
	if err := pki.WriteFiles(dir, map[string][]byte{"ca.crt": ca.PEM}); err != nil {
		return err
	}
	leaves := []struct {
		name  string
		sans  []string
		usage x509.ExtKeyUsage
	}{
		{"serve", []string{bridgeName, spliceName, httpName}, x509.ExtKeyUsageServerAuth},
		{"upstream", []string{upstreamName, "127.0.0.1"}, x509.ExtKeyUsageServerAuth}, // 127.0.0.1: the auth registry's token realm
		{"client", nil, x509.ExtKeyUsageClientAuth},
	}
	for _, l := range leaves {
		if err := writeLeaf(dir, l.name, l.sans, l.usage, ca); err != nil {
			return err
		}
	}
	return nil
}

// benchValidity covers a month of bench runs.
func benchValidity() pki.Option {
	return pki.Validity(time.Now().Add(-time.Hour), time.Now().Add(30*24*time.Hour))
}

func writeLeaf(dir, name string, sans []string, usage x509.ExtKeyUsage, ca *pki.Authority) error {
	l, err := ca.Issue(pki.CommonName("bench "+name), pki.SANs(append(sans, "127.0.0.1")...),
		pki.ExtKeyUsage(usage), benchValidity())
	if err != nil {
		return err
	}
	pemFile := filepath.Join(dir, name+".pem") // holds the key: 0600
	if err := os.WriteFile(pemFile, append(append([]byte(nil), l.CertPEM...), l.KeyPEM...), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", pemFile, err)
	}
	if _, _, err := l.Write(dir, name); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name+".crt"), err)
	}
	return nil
}

// material is the certificates the load generator and the upstream use.
type material struct {
	roots    *x509.CertPool
	client   tls.Certificate // the direct baseline of the bridge scenarios presents it
	upstream tls.Certificate // the bridge upstream's server certificate
}

func loadPKI(dir string) (*material, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	p := &material{roots: x509.NewCertPool()}
	if !p.roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s: no certificate", filepath.Join(dir, "ca.crt"))
	}
	load := func(name string) (tls.Certificate, error) {
		return tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	}
	if p.client, err = load("client"); err != nil {
		return nil, err
	}
	if p.upstream, err = load("upstream"); err != nil {
		return nil, err
	}
	return p, nil
}
