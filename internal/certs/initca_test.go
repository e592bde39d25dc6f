package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestInitCA(t *testing.T) {
	tests := []struct {
		name      string
		names     []string
		permitted []string
	}{
		{"unconstrained", nil, nil},
		{"constrained", []string{"Registry.Example.com.", "mirror.internal", "registry.example.com"},
			[]string{"registry.example.com", "mirror.internal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			if err := InitCA(InitCAConfig{Dir: dir, Names: tt.names, Now: func() time.Time { return fixedNow }}); err != nil {
				t.Fatal(err)
			}
			assertMode(t, dir, 0o700|os.ModeDir)
			assertMode(t, filepath.Join(dir, CACertFileName), 0o644)
			assertMode(t, filepath.Join(dir, CAKeyFileName), 0o600)
			ca := readCACert(t, dir)
			switch {
			case !ca.IsCA || !ca.BasicConstraintsValid || ca.MaxPathLen != 0 || !ca.MaxPathLenZero:
				t.Errorf("IsCA %v, MaxPathLen %d (zero %v); want a CA with path length 0", ca.IsCA, ca.MaxPathLen, ca.MaxPathLenZero)
			case ca.KeyUsage&x509.KeyUsageCertSign == 0:
				t.Errorf("key usage %v lacks cert sign", ca.KeyUsage)
			case !ca.NotAfter.Equal(fixedNow.AddDate(10, 0, 0)):
				t.Errorf("NotAfter %s; want 10 years after %s", ca.NotAfter, fixedNow)
			case !slices.Equal(ca.PermittedDNSDomains, tt.permitted):
				t.Errorf("PermittedDNSDomains %q; want %q", ca.PermittedDNSDomains, tt.permitted)
			case ca.PermittedDNSDomainsCritical != (len(tt.permitted) > 0):
				t.Errorf("name constraints critical = %v; want %v", ca.PermittedDNSDomainsCritical, len(tt.permitted) > 0)
			}
			assertPKCS8EC(t, dir)
		})
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (os.ModePerm | os.ModeDir); got != want {
		t.Errorf("%s mode %v; want %v", path, got, want)
	}
}

func readCACert(t *testing.T, dir string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, CACertFileName))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("ca.crt is not a PEM certificate: %q", data)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func assertPKCS8EC(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, CAKeyFileName))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		t.Fatalf("ca.key is not a PKCS#8 PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if ek, ok := k.(*ecdsa.PrivateKey); !ok || ek.Curve != elliptic.P256() {
		t.Errorf("ca.key holds %T; want an ECDSA P-256 key", k)
	}
}

func TestInitCARefusesToOverwrite(t *testing.T) {
	for _, existing := range []string{CACertFileName, CAKeyFileName} {
		t.Run(existing, func(t *testing.T) {
			dir := t.TempDir()
			if err := InitCA(InitCAConfig{Dir: dir}); err != nil {
				t.Fatal(err)
			}
			before := readCACert(t, dir)
			other := CAKeyFileName
			if existing == CAKeyFileName {
				other = CACertFileName
			}
			os.Remove(filepath.Join(dir, other)) // only `existing` is left

			err := InitCA(InitCAConfig{Dir: dir})
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, existing)) || !strings.Contains(err.Error(), "--force") {
				t.Fatalf("InitCA over an existing %s = %v; want a refusal naming the file and --force", existing, err)
			}
			if err := InitCA(InitCAConfig{Dir: dir, Force: true}); err != nil {
				t.Fatalf("InitCA with Force = %v", err)
			}
			if after := readCACert(t, dir); after.SerialNumber.Cmp(before.SerialNumber) == 0 {
				t.Error("Force did not write a new CA")
			}
			assertMode(t, filepath.Join(dir, CAKeyFileName), 0o600)
			assertMode(t, filepath.Join(dir, CACertFileName), 0o644)
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp*")); len(tmps) > 0 {
				t.Errorf("temporary files left: %q", tmps)
			}
		})
	}
}

func TestInitCABadNames(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"wildcard", "*.registry.example.com", `without "*."`},
		{"IP address", "10.0.0.1", "IP address"},
		{"bad label", "reg istry.example.com", "label"},
		{"empty label", "a..b", "empty label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ca")
			err := InitCA(InitCAConfig{Dir: dir, Names: []string{tt.in}})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--name") {
				t.Fatalf("InitCA(--name %q) = %v; want an error with %q", tt.in, err, tt.want)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Error("a rejected --name still created the directory")
			}
		})
	}
}

// openssl is how operators look at the CA; the constraint must show there
// as critical with the permitted names.
func TestInitCAOpenSSLShowsNameConstraints(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	if err := InitCA(InitCAConfig{Dir: dir, Names: []string{"registry.example.com", "mirror.internal"}}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(openssl, "x509", "-noout", "-text", "-in", filepath.Join(dir, CACertFileName)).CombinedOutput()
	if err != nil {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	for _, want := range []string{
		"X509v3 Name Constraints: critical", "Permitted:", "DNS:registry.example.com", "DNS:mirror.internal",
		"CA:TRUE, pathlen:0", "Certificate Sign",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("openssl x509 -text lacks %q:\n%s", want, out)
		}
	}
}

func TestInitCASummary(t *testing.T) {
	trust := func(host, caPath string) string { return "trust " + caPath + " for " + host + "\n" }
	sum := InitCASummary("/etc/snigate/ca", []string{"registry.example.com", "mirror.example.com"}, trust)
	for _, want := range []string{"/etc/snigate/ca/ca.key", "constrained to registry.example.com, mirror.example.com",
		"trust /etc/snigate/ca/ca.crt for registry.example.com\n", "trust /etc/snigate/ca/ca.crt for mirror.example.com\n"} {
		if !strings.Contains(sum, want) {
			t.Errorf("InitCASummary lacks %q:\n%s", want, sum)
		}
	}
	if sum := InitCASummary("/etc/snigate/ca", nil, trust); !strings.Contains(sum, "for REGISTRY\n") {
		t.Errorf("no names: want the placeholder host:\n%s", sum)
	}
}
