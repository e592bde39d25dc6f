package config

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/pki"
)

// certSpec describes a test certificate, self-signed with ECDSA P-256.
type certSpec struct {
	name     string             // file names: name.crt and name.key
	isCA     bool               // basic constraints CA:TRUE with certSign usage
	notAfter time.Time          // zero: a day from now
	eku      []x509.ExtKeyUsage // nil: serverAuth and clientAuth
}

// testPKI writes the certificates every file test needs into dir:
//
//	serve.crt/key    leaf for bridge serving
//	client.crt/key   the edge's client certificate
//	ca.crt/key       a CA for serve.ca_cert/ca_key and upstream_tls.ca
//	other.key        a key that matches none of the certificates
//	expired.crt/key  a leaf whose NotAfter is 2020-01-02T03:04:05Z
//	server-ca.crt/key a CA whose extended key usage is serverAuth only
//	garbage.txt      not PEM
//	a-directory/     not a file
func testPKI(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []certSpec{
		{name: "serve"},
		{name: "client"},
		{name: "ca", isCA: true},
		{name: "other"},
		{name: "expired", notAfter: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)},
		{name: "server-ca", isCA: true, eku: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
	} {
		writeCert(t, dir, s)
	}
	writeFile(t, filepath.Join(dir, "garbage.txt"), []byte("not a certificate\n"))
	if err := os.Mkdir(filepath.Join(dir, "a-directory"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// writeCert creates spec.name.crt and spec.name.key in dir: a self-signed
// certificate for spec.name.example.test, usable as server and client.
func writeCert(t *testing.T, dir string, spec certSpec) {
	t.Helper()
	notAfter := spec.notAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	eku := spec.eku
	if eku == nil {
		eku = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	}
	opts := []pki.Option{
		pki.SANs(spec.name + ".example.test"),
		pki.ExtKeyUsage(eku...),
		pki.Validity(notAfter.Add(-48*time.Hour), notAfter),
	}
	if spec.isCA {
		ca, err := pki.NewAuthority(spec.name, opts...)
		if err == nil {
			err = ca.WriteCA(dir, spec.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	l, err := pki.SelfSigned(append(opts, pki.CommonName(spec.name))...)
	if err == nil {
		_, _, err = l.Write(dir, spec.name)
	}
	if err != nil {
		t.Fatal(err)
	}
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
