package oci

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestForwardedSet(t *testing.T) {
	tests := []struct {
		name, ip, forwarded string
	}{
		{name: "IPv4", ip: "10.0.0.21", forwarded: "for=10.0.0.21;proto=https"},
		{name: "IPv6 quoted and bracketed", ip: "2001:db8::7", forwarded: `for="[2001:db8::7]";proto=https`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			NewForwarded(netip.MustParseAddr(tt.ip)).Set(h)
			if h.Get("Forwarded") != tt.forwarded || h.Get("X-Forwarded-For") != tt.ip || h.Get("X-Real-Ip") != tt.ip || h.Get("X-Forwarded-Proto") != "https" {
				t.Errorf("headers %v", h)
			}
		})
	}
}

func TestDropForwarding(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer t"}, "X-Forwarded-Ish": {"1"}, "Client-Ip-Not": {"1"}}
	for _, k := range spoofedAddressHeaders {
		h[k] = []string{"6.6.6.6"}
	}
	DropForwarding(h)
	if len(h) != 2 || h.Get("Authorization") != "Bearer t" || h.Get("Client-Ip-Not") != "1" {
		t.Errorf("left %v, want only Authorization and Client-Ip-Not", h)
	}
}

// spoofedAddressHeaders are client address claims a node may send.
var spoofedAddressHeaders = []string{
	"Forwarded", "X-Forwarded-For", "X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Client-Ip",
	"X-Cluster-Client-Ip", "Cf-Connecting-Ip", "Cf-Connecting-Ipv6", "Fastly-Client-Ip", "X-Original-Forwarded-For",
	"X-Originating-Ip", "X-Remote-Ip", "X-Remote-Addr", "X-Forwarded-Host", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Forwarded-Proto", "X-Envoy-External-Address", "X-Proxyuser-Ip",
	"X_forwarded_for", "Client_ip", "X_real_ip",
}
