package config

import (
	"reflect"
	"slices"
	"testing"
	"time"
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

// TestAnswerCheckDefaults: dns.answer_check fills in what it leaves out,
// its port from listen.tls[0]; absent, it is nil (every address answered).
func TestAnswerCheckDefaults(t *testing.T) {
	tests := []struct {
		name  string
		tls   string // listen.tls value
		check string // dns.answer_check lines, "" for none
		want  *AnswerCheck
	}{
		{name: "absent", tls: `[":443"]`, want: nil},
		{name: "empty mapping takes the defaults", tls: `[":443"]`, check: "  answer_check: {}",
			want: &AnswerCheck{Port: 443, Interval: DefaultAnswerCheckInterval, Timeout: DefaultAnswerCheckTimeout,
				Fall: DefaultAnswerCheckFall, Rise: DefaultAnswerCheckRise}},
		{name: "port from the first TLS listener", tls: `["10.0.0.5:8443", ":9443"]`, check: "  answer_check: {}",
			want: &AnswerCheck{Port: 8443, Interval: 2 * time.Second, Timeout: time.Second, Fall: 2, Rise: 2}},
		{name: "port 0 listener: 443", tls: `["127.0.0.1:0"]`, check: "  answer_check: {}",
			want: &AnswerCheck{Port: 443, Interval: 2 * time.Second, Timeout: time.Second, Fall: 2, Rise: 2}},
		{name: "every key set", tls: `[":443"]`,
			check: "  answer_check:\n    port: 8443\n    interval: 5s\n    timeout: 5s\n    fall: 1\n    rise: 3",
			want:  &AnswerCheck{Port: 8443, Interval: 5 * time.Second, Timeout: 5 * time.Second, Fall: 1, Rise: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "listen:\n  tls: " + tc.tls + "\n  dns: \":53\"\n" +
				"dns:\n  answer: [\"10.0.0.5\", \"10.0.0.6\"]\n" + optionalLine(tc.check) +
				"routes:\n  - name: r\n    sni: [r.example.com]\n    mode: splice\n    upstreams: [\"10.1.0.1:443\"]\n"
			c, err := Parse("snigate.yaml", []byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.DNS.AnswerCheck, tc.want) {
				t.Errorf("AnswerCheck = %+v, want %+v", c.DNS.AnswerCheck, tc.want)
			}
		})
	}
}
