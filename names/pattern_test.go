package names

import (
	"strings"
	"testing"
)

func TestCheckPattern(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // "" : valid
	}{
		{name: "exact", in: "registry.example.com"},
		{name: "wildcard", in: "*.registry.example.com"},
		{name: "wildcard, upper case and trailing dot", in: "*.Registry.Example.COM."},
		{name: "wildcard under a one-label name", in: "*.localhost"},
		{name: "wildcard with room for a one-byte label", in: "*." + label63 + "." + label63 + "." + label63 + "." + strings.Repeat("b", 59)},
		{name: "bare star", in: "*", want: `label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "star and dot only", in: "*.", want: `label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "star dot dot", in: "*..", want: `after "*.": empty name`},
		{name: "star inside a label", in: "*example.com", want: `label "*example" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "two wildcard labels", in: "*.*.example.com", want: `after "*.": label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "wildcard not first", in: "a.*.example.com", want: `label "*" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "double star", in: "**.example.com", want: `label "**" has '*'; a wildcard is allowed only as the whole first label of a route name, as in "*.example.com"`},
		{name: "wildcard over a bad name", in: "*.-reg.example.com", want: `after "*.": label "-reg" starts or ends with a hyphen`},
		{name: "wildcard over an IP", in: "*.1.2.3.4", want: `after "*.": an IP address; want a DNS name (a TLS server name or certificate name is never an address)`},
		{name: "wildcard base with no room below", in: "*." + strings.Repeat("b", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("b", 60),
			want: `252 bytes after "*.": no name one label below it fits in 253 bytes`},
		{name: "IP", in: "1.2.3.4", want: "an IP address; want a DNS name (a TLS server name or certificate name is never an address)"},
		{name: "leading hyphen", in: "-reg.example.com", want: `label "-reg" starts or ends with a hyphen`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPattern(tt.in)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("CheckPattern(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestWildcardMatchesExactlyOneValidLabel is issue 14 item 8: ".reg.test",
// "*.reg.test", a 300-byte label and a name over 253 bytes all matched
// "*.reg.test", because matching cut the first label off without checking
// the name.
func TestWildcardMatchesExactlyOneValidLabel(t *testing.T) {
	tests := []struct {
		name, in string
		want     bool
	}{
		{name: "one label below", in: "eu.reg.test", want: true},
		{name: "upper case and trailing dot", in: "EU.Reg.Test.", want: true},
		{name: "63-byte label", in: label63 + ".reg.test", want: true},
		{name: "empty first label", in: ".reg.test"},
		{name: "the pattern itself", in: "*.reg.test"},
		{name: "300-byte label", in: label300 + ".reg.test"},
		{name: "64-byte label", in: label64 + ".reg.test"},
		{name: "over 253 bytes", in: strings.Repeat("a.", 125) + "x.reg.test"},
		{name: "a label one too many is deeper", in: "a.b.reg.test"},
		{name: "the base", in: "reg.test"},
		{name: "leading hyphen", in: "-x.reg.test"},
		{name: "underscore", in: "a_b.reg.test"},
		{name: "two trailing dots", in: "eu.reg.test.."},
		{name: "suffix without a dot", in: "xreg.test"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match("*.reg.test", tt.in); got != tt.want {
				t.Errorf("Match(\"*.reg.test\", %.40q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestMatchExact(t *testing.T) {
	tests := []struct {
		name, pattern, in string
		want              bool
	}{
		{name: "same", pattern: "reg.test", in: "reg.test", want: true},
		{name: "case and dots on both", pattern: "Reg.Test.", in: "REG.test.", want: true},
		{name: "child", pattern: "reg.test", in: "a.reg.test"},
		{name: "invalid name equal to an invalid pattern", pattern: "-reg.test", in: "-reg.test"},
		{name: "IP", pattern: "1.2.3.4", in: "1.2.3.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.pattern, tt.in); got != tt.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.in, got, tt.want)
			}
		})
	}
}
