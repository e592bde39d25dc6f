package httpbridge

import (
	"net"
	"net/http"
	"net/netip"
	"testing"
)

func TestSetForwarded(t *testing.T) {
	tests := []struct {
		name, ip, forwarded string
	}{
		{name: "IPv4", ip: "10.0.0.21", forwarded: "for=10.0.0.21;proto=https"},
		{name: "IPv6 quoted and bracketed", ip: "2001:db8::7", forwarded: `for="[2001:db8::7]";proto=https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			setForwarded(h, netip.MustParseAddr(tt.ip))
			if h.Get("Forwarded") != tt.forwarded || h.Get("X-Forwarded-For") != tt.ip || h.Get("X-Real-Ip") != tt.ip || h.Get("X-Forwarded-Proto") != "https" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

func TestAddrIP(t *testing.T) {
	tests := []struct {
		name string
		addr net.Addr
		want string
	}{
		{name: "TCP IPv4", addr: &net.TCPAddr{IP: net.ParseIP("10.0.0.21"), Port: 53312}, want: "10.0.0.21"},
		{name: "TCP IPv4-mapped", addr: &net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.21"), Port: 1}, want: "10.0.0.21"},
		{name: "TCP IPv6", addr: &net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1}, want: "2001:db8::7"},
		{name: "other type", addr: &net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 9}, want: "192.0.2.1"},
		{name: "nil", addr: nil, want: "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := addrIP(tt.addr).String(); got != tt.want {
				t.Errorf("addrIP(%v) = %s, want %s", tt.addr, got, tt.want)
			}
		})
	}
}

func TestDropForwarding(t *testing.T) {
	h := http.Header{
		"Forwarded": {"for=6.6.6.6"}, "X-Forwarded-For": {"6.6.6.6"}, "X-Forwarded-Port": {"80"},
		"X-Real-Ip": {"6.6.6.6"}, "True-Client-Ip": {"6.6.6.6"}, "Authorization": {"Bearer t"},
	}
	dropForwarding(h)
	if len(h) != 1 || h.Get("Authorization") != "Bearer t" {
		t.Errorf("left %v, want only Authorization", h)
	}
}
