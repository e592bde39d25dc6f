package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// certSpec describes a test certificate, self-signed with ECDSA P-256.
type certSpec struct {
	name     string    // file names: name.crt and name.key
	isCA     bool      // basic constraints CA:TRUE with certSign usage
	notAfter time.Time // zero: a day from now
}

// testPKI writes the certificates every file test needs into dir:
//
//	serve.crt/key    leaf for bridge serving
//	client.crt/key   the edge's client certificate
//	ca.crt/key       a CA for serve.ca_cert/ca_key and upstream_tls.ca
//	other.key        a key that matches none of the certificates
//	expired.crt/key  a leaf whose NotAfter is 2020-01-02T03:04:05Z
//	garbage.txt      not PEM
//	a-directory/     not a file
func testPKI(t *testing.T, dir string) {
	t.Helper()
	for _, s := range []certSpec{
		{name: "serve"},
		{name: "client"},
		{name: "ca", isCA: true},
		{name: "other"},
		{name: "expired", notAfter: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)},
	} {
		writeCert(t, dir, s)
	}
	writeFile(t, filepath.Join(dir, "garbage.txt"), []byte("not a certificate\n"))
	if err := os.Mkdir(filepath.Join(dir, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeCert creates spec.name.crt and spec.name.key in dir.
func writeCert(t *testing.T, dir string, spec certSpec) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := spec.notAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: spec.name},
		DNSNames:              []string{spec.name + ".example.test"},
		NotBefore:             notAfter.Add(-48 * time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	if spec.isCA {
		tmpl.IsCA = true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, spec.name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(t, filepath.Join(dir, spec.name+".key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
