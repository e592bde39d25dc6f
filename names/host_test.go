package names

import (
	"strings"
	"testing"
)

var (
	label63  = strings.Repeat("a", 63)
	label64  = strings.Repeat("a", 64)
	label300 = strings.Repeat("a", 300)
	// name253 is 253 bytes: four 63-byte labels would be 255, so the
	// last is 61.
	name253 = label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 61)
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "already canonical", in: "registry.example.com", want: "registry.example.com"},
		{name: "upper case", in: "Registry.EXAMPLE.com", want: "registry.example.com"},
		{name: "one trailing dot", in: "registry.example.com.", want: "registry.example.com"},
		{name: "only one trailing dot", in: "registry.example.com..", want: "registry.example.com."},
		{name: "non-ASCII left alone", in: "Ünï.test", want: "Ünï.test"},
		{name: "wildcard", in: "*.Example.COM.", want: "*.example.com"},
		{name: "empty", in: "", want: ""},
		{name: "root", in: ".", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Canonical(tt.in); got != tt.want {
				t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonicalDoesNotAllocateForCanonicalNames(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { _ = Canonical("registry.example.com") })
	if n != 0 {
		t.Errorf("Canonical of a canonical name allocates %v times", n)
	}
}

func TestCheckHost(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // "" : valid
	}{
		{name: "plain", in: "registry.example.com"},
		{name: "one label", in: "localhost"},
		{name: "digits and hyphens inside", in: "r-1.0x.example.com"},
		{name: "upper case", in: "REGISTRY.Example.com"},
		{name: "trailing dot", in: "registry.example.com."},
		{name: "63-byte label", in: label63 + ".test"},
		{name: "253 bytes", in: name253},
		{name: "253 bytes and a trailing dot", in: name253 + "."},
		{name: "numeric labels before the last", in: "1.2.3.example"},
		{name: "empty", in: "", want: "empty name"},
		{name: "only a dot", in: ".", want: "empty name"},
		{name: "two trailing dots", in: "a.test..", want: "empty label (a leading dot, or two dots in a row)"},
		{name: "leading dot", in: ".reg.test", want: "empty label (a leading dot, or two dots in a row)"},
		{name: "double dot", in: "a..b", want: "empty label (a leading dot, or two dots in a row)"},
		{name: "254 bytes", in: name253 + "b", want: "name of 254 bytes; want at most 253"},
		{name: "64-byte label", in: label64 + ".test", want: `label "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... of 64 bytes; want at most 63`},
		{name: "leading hyphen", in: "-reg.example.com", want: `label "-reg" starts or ends with a hyphen`},
		{name: "trailing hyphen", in: "reg-.example.com", want: `label "reg-" starts or ends with a hyphen`},
		{name: "underscore", in: "a_b.example.com", want: `label "a_b" has '_'; want letters, digits and '-' (host names and certificate names have no underscore)`},
		{name: "space", in: "ex ample.com", want: `label "ex ample" has ' '; want letters, digits and '-'`},
		{name: "wildcard is not a host", in: "*.reg.test", want: `label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "non-ASCII", in: "bücher.test", want: `label "bücher" is not ASCII; write an international name in its xn-- (punycode) form`},
		{name: "IPv4", in: "1.2.3.4", want: "an IP address; want a DNS name (a TLS server name or certificate name is never an address)"},
		{name: "IPv6", in: "::1", want: "an IP address; want a DNS name (a TLS server name or certificate name is never an address)"},
		{name: "bracketed IPv6", in: "[2001:db8::1]", want: "an IP address; want a DNS name (a TLS server name or certificate name is never an address)"},
		{name: "numeric last label", in: "10.1", want: `last label "1" is all digits, which reads as an IP address; want a DNS name`},
		{name: "all-digit single label", in: "8443", want: `last label "8443" is all digits, which reads as an IP address; want a DNS name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckHost(tt.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckHost(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if IsHost(tt.in) != (tt.want == "") {
				t.Errorf("IsHost(%q) = %v, disagrees with CheckHost", tt.in, IsHost(tt.in))
			}
		})
	}
}

func TestIsHostDoesNotAllocate(t *testing.T) {
	for _, in := range []string{"registry.example.com", "-bad.example.com", label300} {
		if n := testing.AllocsPerRun(100, func() { _ = IsHost(in) }); n != 0 {
			t.Errorf("IsHost(%.20q) allocates %v times", in, n)
		}
	}
}
