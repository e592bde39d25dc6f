package config

import (
	"slices"
	"testing"
)

// TestDNSAllow: dns.allow, when set, replaces listen.allow for the DNS
// responder; absent or empty, listen.allow applies; neither: every client.
func TestDNSAllow(t *testing.T) {
	tests := []struct {
		name   string
		listen string // listen.allow line, "" for none
		dns    string // dns.allow line, "" for none
		want   []string
	}{
		{name: "neither", want: nil},
		{name: "listen.allow applies to DNS", listen: `  allow: ["10.0.0.0/8"]`, want: []string{"10.0.0.0/8"}},
		{name: "dns.allow alone", dns: `  allow: ["192.168.0.0/16", "2001:db8::/32"]`, want: []string{"192.168.0.0/16", "2001:db8::/32"}},
		{name: "dns.allow replaces listen.allow", listen: `  allow: ["10.0.0.0/8"]`, dns: `  allow: ["0.0.0.0/0", "::/0"]`, want: []string{"0.0.0.0/0", "::/0"}},
		{name: "empty dns.allow falls back", listen: `  allow: ["10.0.0.0/8"]`, dns: `  allow: []`, want: []string{"10.0.0.0/8"}},
		{name: "a bare address is a /32", dns: `  allow: ["10.1.2.3", "10.9.9.9/8"]`, want: []string{"10.1.2.3/32", "10.0.0.0/8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "listen:\n  tls: [\":443\"]\n  dns: \":53\"\n" + optionalLine(tc.listen) +
				"dns:\n  answer: [\"192.0.2.10\"]\n" + optionalLine(tc.dns) +
				"routes:\n  - name: r\n    sni: [r.example.com]\n    mode: splice\n    upstreams: [\"10.1.0.1:443\"]\n"
			c, err := Parse("snigate.yaml", []byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range c.DNSAllow() {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("DNSAllow() = %q, want %q", got, tc.want)
			}
		})
	}
}

// optionalLine is s as a line of YAML, nothing when empty.
func optionalLine(s string) string {
	if s == "" {
		return ""
	}
	return s + "\n"
}
