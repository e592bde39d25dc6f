package config

import (
	"testing"
	"time"
)

func TestSuggest(t *testing.T) {
	allowed := []string{"client_hello", "connect", "idle", "drain", "proxy_protocol", "ca"}
	tests := []struct{ name, want string }{
		{"idel", ` (did you mean "idle"?)`},
		{"clientHello", ` (did you mean "client_hello"?)`},
		{"proxy-protocol", ` (did you mean "proxy_protocol"?)`},
		{"conect", ` (did you mean "connect"?)`},
		{"DRAIN", ` (did you mean "drain"?)`},
		{"cb", ` (did you mean "ca"?)`},
		{"xyz", ""},
		{"timeout", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := suggest(tc.name, allowed); got != tc.want {
				t.Errorf("suggest(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Second, "5s"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{5 * time.Minute, "5m"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, tc := range tests {
		if got := shortDuration(tc.d); got != tc.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestSplitOptionalPort(t *testing.T) {
	tests := []struct{ in, host, port string }{
		{"10.96.0.10", "10.96.0.10", "53"},
		{"10.96.0.10:5353", "10.96.0.10", "5353"},
		{"dns.internal", "dns.internal", "53"},
		{"2001:db8::1", "2001:db8::1", "53"},
		{"[2001:db8::1]", "2001:db8::1", "53"},
		{"[2001:db8::1]:5353", "2001:db8::1", "5353"},
		{"a:b:c]", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			host, port := splitOptionalPort(tc.in)
			if host != tc.host || port != tc.port {
				t.Errorf("splitOptionalPort(%q) = %q, %q; want %q, %q", tc.in, host, port, tc.host, tc.port)
			}
		})
	}
}
