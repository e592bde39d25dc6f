package certs

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/names"
)

func TestWithinSuffix(t *testing.T) {
	tests := []struct {
		name, base string
		under      bool
	}{
		{"a.example.com", "example.com", true},
		{"example.com", "example.com", true},
		{"a.b.example.com", "example.com", true},
		{"aexample.com", "example.com", false},
		{"a.example.com", ".example.com", true},
		{"example.com", ".example.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" vs "+tt.base, func(t *testing.T) {
			if got := withinSuffix(tt.name, tt.base); got != tt.under {
				t.Errorf("withinSuffix = %v; want %v", got, tt.under)
			}
		})
	}
}

// fuzzIssuer is a CA constrained to registry.example.com, built in memory.
func fuzzIssuer(tb testing.TB) *issuer {
	tb.Helper()
	certPEM, keyPEM, err := newCA([]string{"registry.example.com", "mirror.internal"}, time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		tb.Fatal(err)
	}
	iss, err := newIssuer(&pair, "ca.crt", time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return iss
}

// FuzzServerName feeds client-chosen SNI values to the checks a Minter
// applies before minting. Properties: no panic; an accepted name is
// canonical and at most 253 bytes; it is a permitted name or exactly one
// label below one; and crypto/x509 verifies a leaf minted for it against
// the constrained CA (our rule is never looser than X.509's).
func FuzzServerName(f *testing.F) {
	for _, s := range []string{
		"registry.example.com", "EU.Registry.Example.com.", "a.b.registry.example.com", "example.com",
		"xregistry.example.com", "mirror.internal", "*.registry.example.com", "192.0.2.1", "::1",
		"", ".", "..", "a..registry.example.com", "-a.registry.example.com", "a_b.registry.example.com",
		strings.Repeat("a.", 130) + "registry.example.com", "\x00.registry.example.com", "é.registry.example.com",
	} {
		f.Add(s)
	}
	iss := fuzzIssuer(f)
	roots := x509.NewCertPool()
	roots.AddCert(iss.cert)
	f.Fuzz(func(t *testing.T, sni string) {
		name := names.Canonical(sni)
		if names.CheckHost(name) != nil || iss.permits(name) != nil {
			return
		}
		if name != strings.ToLower(name) || len(name) > names.MaxLen {
			t.Fatalf("accepted non-canonical or long name %q", name)
		}
		if !permittedStrictly(name, iss.permitted) {
			t.Fatalf("accepted %q outside %q", name, iss.permitted)
		}
		c, err := iss.issue(name, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Fatalf("crypto/x509 rejects the leaf minted for accepted name %q: %v", name, err)
		}
	})
}

func permittedStrictly(name string, permitted []string) bool {
	for _, p := range permitted {
		if head, ok := strings.CutSuffix(name, "."+p); name == p || ok && head != "" && !strings.Contains(head, ".") {
			return true
		}
	}
	return false
}
