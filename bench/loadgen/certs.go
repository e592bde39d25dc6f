package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Names the bench's certificates and routes use.
const (
	spliceName   = "bench.example.test"  // SNI of the splice route
	bridgeName   = "bridge.bench.test"   // SNI of the bridge route (the serve certificate)
	upstreamName = "upstream.bench.test" // the bridge upstream's certificate name
)

// writePKI creates, in dir, one ECDSA P-256 CA and three leaves signed by
// it: serve (what clients see on the bridge route), upstream (the mTLS
// upstream's server certificate) and client (the edge identity the proxies
// present upstream). Each leaf is written as NAME.crt, NAME.key and
// NAME.pem (certificate then key, HAProxy's format); the CA as ca.crt.
func writePKI(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	caTmpl := template("snigate bench CA", nil)
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	leaves := []struct {
		name  string
		sans  []string
		usage x509.ExtKeyUsage
	}{
		{"serve", []string{bridgeName, spliceName}, x509.ExtKeyUsageServerAuth},
		{"upstream", []string{upstreamName}, x509.ExtKeyUsageServerAuth},
		{"client", nil, x509.ExtKeyUsageClientAuth},
	}
	for _, l := range leaves {
		if err := writeLeaf(dir, l.name, l.sans, l.usage, ca, caKey); err != nil {
			return err
		}
	}
	return nil
}

func template(cn string, sans []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     sans,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
}

func writeLeaf(dir, name string, sans []string, usage x509.ExtKeyUsage, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := template("bench "+name, sans)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	base := filepath.Join(dir, name)
	for file, data := range map[string][]byte{
		base + ".crt": certPEM, base + ".key": keyPEM, base + ".pem": append(certPEM, keyPEM...),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
	}
	return nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o644)
}

// pki is the material the load generator and the upstream use.
type pki struct {
	roots    *x509.CertPool
	client   tls.Certificate // the direct baseline of the bridge scenarios presents it
	upstream tls.Certificate // the bridge upstream's server certificate
}

func loadPKI(dir string) (*pki, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, err
	}
	p := &pki{roots: x509.NewCertPool()}
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
