package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func mustAuthority(t *testing.T, name string, opts ...Option) *Authority {
	t.Helper()
	a, err := NewAuthority(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestIssueOptions(t *testing.T) {
	ca := mustAuthority(t, "test CA")
	notAfter := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		opts    []Option
		check   func(*x509.Certificate) bool
		explain string
	}{
		{"server by default with SANs", []Option{SANs("a.test")},
			func(c *x509.Certificate) bool {
				return slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth})
			}, "want serverAuth only"},
		{"client by default without SANs", nil,
			func(c *x509.Certificate) bool {
				return slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
			}, "want clientAuth only"},
		{"explicit usages win", []Option{SANs("a.test"), ExtKeyUsage(x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth)},
			func(c *x509.Certificate) bool { return len(c.ExtKeyUsage) == 2 }, "want both usages"},
		{"IP literals become IP SANs", []Option{SANs("a.test", "127.0.0.1", "::1")},
			func(c *x509.Certificate) bool {
				return slices.Equal(c.DNSNames, []string{"a.test"}) && len(c.IPAddresses) == 2 && c.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1))
			}, "want DNS a.test and two IPs"},
		{"serial", []Option{Serial(42)},
			func(c *x509.Certificate) bool { return c.SerialNumber.Int64() == 42 }, "want serial 42"},
		{"validity", []Option{Validity(notAfter.Add(-48*time.Hour), notAfter)},
			func(c *x509.Certificate) bool { return c.NotAfter.Equal(notAfter) }, "want NotAfter " + notAfter.String()},
		{"common name", []Option{CommonName("edge")},
			func(c *x509.Certificate) bool { return c.Subject.CommonName == "edge" }, "want CN edge"},
		{"key usage", []Option{KeyUsage(x509.KeyUsageKeyEncipherment)},
			func(c *x509.Certificate) bool { return c.KeyUsage == x509.KeyUsageKeyEncipherment }, "want keyEncipherment"},
		{"a later option wins", []Option{Serial(1), Serial(2)},
			func(c *x509.Certificate) bool { return c.SerialNumber.Int64() == 2 }, "want serial 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ca.Issue(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(l.Cert) {
				t.Errorf("%+v: %s", l.Cert, tt.explain)
			}
			if l.Pair.Leaf != l.Cert {
				t.Error("Pair.Leaf is not Cert")
			}
			if _, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM); err != nil {
				t.Errorf("PEM does not load: %v", err)
			}
		})
	}
}

// TestVerifies: what each constructor makes verifies the way a TLS peer
// checks it.
func TestVerifies(t *testing.T) {
	root := mustAuthority(t, "root")
	mid, err := root.Intermediate("intermediate")
	if err != nil {
		t.Fatal(err)
	}
	self, err := SelfSigned(SANs("self.test"))
	if err != nil {
		t.Fatal(err)
	}
	selfPool := x509.NewCertPool()
	selfPool.AddCert(self.Cert)
	tests := []struct {
		name  string
		ca    *Authority // nil: self-signed, trusted as itself
		roots *x509.CertPool
	}{
		{"root", root, root.Pool()},
		{"intermediate, root trusted", mid, root.Pool()},
		{"self-signed", nil, selfPool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := self
			if tt.ca != nil {
				if l, err = tt.ca.Issue(SANs("self.test")); err != nil {
					t.Fatal(err)
				}
			}
			pair, err := tls.X509KeyPair(l.CertPEM, l.KeyPEM)
			if err != nil {
				t.Fatal(err)
			}
			inter := x509.NewCertPool()
			for _, der := range pair.Certificate[1:] {
				c, _ := x509.ParseCertificate(der)
				inter.AddCert(c)
			}
			opts := x509.VerifyOptions{DNSName: "self.test", Roots: tt.roots, Intermediates: inter}
			if _, err := l.Cert.Verify(opts); err != nil {
				t.Errorf("Verify: %v", err)
			}
		})
	}
}

func TestWriteModes(t *testing.T) {
	dir := t.TempDir()
	ca := mustAuthority(t, "test CA")
	l, err := ca.Issue(CommonName("edge"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := l.Write(dir, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteCA(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{keyFile, filepath.Join(dir, "ca.key")} {
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no access for group or others", key, fi.Mode().Perm())
		}
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Errorf("written pair does not load: %v", err)
	}
}
