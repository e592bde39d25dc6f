package httpbridge

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

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

// spoofedAddressHeaders are client address claims a node may send; the
// registry must never get any of them from the node.
var spoofedAddressHeaders = []string{
	"Forwarded", "X-Forwarded-For", "X-Real-Ip", "True-Client-Ip", "X-Client-Ip", "Client-Ip",
	"X-Cluster-Client-Ip", "Cf-Connecting-Ip", "Cf-Connecting-Ipv6", "Fastly-Client-Ip", "X-Original-Forwarded-For",
	"X-Originating-Ip", "X-Remote-Ip", "X-Remote-Addr", "X-Forwarded-Host", "X-Forwarded-Port",
	"X-Forwarded-Server", "X-Forwarded-Proto", "X-Envoy-External-Address", "X-Proxyuser-Ip",
	"X_forwarded_for", "Client_ip", "X_real_ip",
}

// TestNodeAddressHeadersNeverReachTheRegistry: whatever client address
// header a node sends (the CDN and balancer families, underscore
// spellings), over HTTP/1.1 and HTTP/2, with forwarded on and off, the
// registry sees none of the node's values: only the gateway's own
// forwarding headers when forwarded is on.
func TestNodeAddressHeadersNeverReachTheRegistry(t *testing.T) {
	spoof := http.Header{"Authorization": {"Bearer node-token"}}
	for _, k := range spoofedAddressHeaders {
		spoof[k] = []string{"6.6.6.6"}
	}
	for _, forwarded := range []bool{true, false} {
		p := newTestPKI(t)
		up, seen := echoUpstream(t, p)
		w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{Forwarded: forwarded}})
		for _, proto := range []string{"http/1.1", "h2"} {
			t.Run(fmt.Sprintf("%s/forwarded=%v", proto, forwarded), func(t *testing.T) {
				before := len(seen.all())
				if resp, body := do(t, w.node(t, proto), "GET", "/v2/team/app/manifests/v1", spoof); resp.StatusCode != 200 {
					t.Fatalf("status %d %s", resp.StatusCode, body)
				}
				r := seen.all()[before]
				for k, v := range r.Header {
					if strings.Contains(strings.Join(v, ","), "6.6.6.6") {
						t.Errorf("registry saw the node's %s: %q", k, v)
					}
				}
				if got := r.Header.Get("X-Forwarded-For"); forwarded != (got == "127.0.0.1") {
					t.Errorf("registry saw X-Forwarded-For %q with forwarded=%v", got, forwarded)
				}
				if r.Header.Get("Authorization") != "Bearer node-token" {
					t.Errorf("registry saw Authorization %q, want the node's", r.Header.Get("Authorization"))
				}
			})
		}
	}
}
