package names

import (
	"crypto/x509"
	"regexp"
	"strings"
	"testing"
)

// hostOracle is the host name rule written a second way, as a regular
// expression plus the two length rules and the IP rule.
var hostOracle = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

func oracleHost(s string) bool {
	t := strings.TrimSuffix(s, ".")
	labels := strings.Split(t, ".")
	last := labels[len(labels)-1]
	return hostOracle.MatchString(s) && len(t) <= MaxLen && strings.Trim(last, "0123456789") != ""
}

// FuzzHost checks the host name rules: no panic, IsHost and CheckHost
// agree with each other and with the oracle, a valid name's canonical
// form is within the length bounds, and Canonical is idempotent.
// Seeds: testdata/fuzz/FuzzHost.
func FuzzHost(f *testing.F) {
	for _, s := range []string{"registry.example.com", "Reg.Test.", ".reg.test", "-reg.example.com", "1.2.3.4", label300 + ".reg.test"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ok := IsHost(s)
		if err := CheckHost(s); (err == nil) != ok {
			t.Fatalf("IsHost(%q) = %v but CheckHost = %v", s, ok, err)
		}
		if want := oracleHost(s); ok != want {
			t.Fatalf("IsHost(%q) = %v, the oracle says %v", s, ok, want)
		}
		c := Canonical(s)
		if Canonical(c) != c && !strings.HasSuffix(c, ".") {
			t.Fatalf("Canonical is not idempotent on %q: %q, then %q", s, c, Canonical(c))
		}
		if ok && (len(c) == 0 || len(c) > MaxLen || strings.HasSuffix(c, ".") || c != strings.ToLower(c)) {
			t.Fatalf("valid %q has canonical form %q", s, c)
		}
	})
}

// FuzzMatch checks matching: no panic; a name that matches is a valid
// host name; a wildcard match is exactly one label below the base; Table
// agrees with Match; and for a valid pattern and name, Match agrees with
// crypto/x509's VerifyHostname for a certificate with that one DNS SAN
// (RFC 6125). Seeds: testdata/fuzz/FuzzMatch.
func FuzzMatch(f *testing.F) {
	f.Add("*.reg.test", "eu.reg.test")
	f.Add("*.reg.test", "*.reg.test")
	f.Add("*.reg.test", ".reg.test")
	f.Add("reg.test", "REG.TEST.")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		m := Match(pattern, name)
		if m && !IsHost(name) {
			t.Fatalf("Match(%q, %q) for an invalid name", pattern, name)
		}
		if base, wild := WildcardBase(Canonical(pattern)); m && wild {
			head, ok := strings.CutSuffix(Canonical(name), "."+base)
			if !ok || head == "" || strings.Contains(head, ".") {
				t.Fatalf("Match(%q, %q): not exactly one label below %q", pattern, name, base)
			}
		}
		checkTableAgrees(t, pattern, name, m)
		if CheckPattern(pattern) != nil || !IsHost(name) {
			return
		}
		cert := &x509.Certificate{DNSNames: []string{Canonical(pattern)}}
		if x := cert.VerifyHostname(name) == nil; x != m {
			t.Fatalf("Match(%q, %q) = %v, crypto/x509 VerifyHostname says %v", pattern, name, m, x)
		}
	})
}

func checkTableAgrees(t *testing.T, pattern, name string, m bool) {
	t.Helper()
	var tab Table[struct{}]
	if tab.Add(pattern, struct{}{}) != nil {
		if m {
			t.Fatalf("Match(%q, %q) for a pattern Table refuses", pattern, name)
		}
		return
	}
	if _, ok := tab.Lookup(name); ok != m {
		t.Fatalf("Table{%q}.Lookup(%q) = %v, Match = %v", pattern, name, ok, m)
	}
}
