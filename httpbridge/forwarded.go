package httpbridge

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// forwardingHeaders are dropped from every upstream request, whatever
// routes[].http.forwarded says: a node cannot claim another address to a
// registry (or a front before it) that trusts any of the usual client
// address headers. Every X-Forwarded-* and X-Original-Forwarded-* header
// goes as well (X-Forwarded-Host, -Port, -Server, ...). Names are
// compared with "_" read as "-": servers that map headers to CGI
// variables (HTTP_X_FORWARDED_FOR) read both alike.
var forwardingHeaders = map[string]bool{
	"Forwarded": true, "X-Real-Ip": true, "True-Client-Ip": true, "X-Client-Ip": true,
	"Client-Ip": true, "X-Cluster-Client-Ip": true, "Cf-Connecting-Ip": true, "Cf-Connecting-Ipv6": true,
	"Fastly-Client-Ip": true, "X-Originating-Ip": true, "X-Remote-Ip": true, "X-Remote-Addr": true,
	"X-Envoy-External-Address": true, "X-Proxyuser-Ip": true,
}

// forwardingPrefixes are the families of forwarding headers dropped whole.
var forwardingPrefixes = []string{"X-Forwarded-", "X-Original-Forwarded-"}

// dropForwarding removes the node's forwarding headers from h.
func dropForwarding(h http.Header) {
	for k := range h {
		if isForwarding(k) {
			delete(h, k)
		}
	}
}

// isForwarding reports whether the header named k carries a client
// address or the original request's host, port or protocol.
func isForwarding(k string) bool {
	k = http.CanonicalHeaderKey(strings.ReplaceAll(k, "_", "-"))
	if forwardingHeaders[k] {
		return true
	}
	for _, p := range forwardingPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// setForwarded sets the headers that carry the node's address ip to the
// registry: X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and Forwarded
// (RFC 7239, an IPv6 address quoted and bracketed).
func setForwarded(h http.Header, ip netip.Addr) {
	if !ip.IsValid() {
		return
	}
	s := ip.String()
	h.Set("X-Forwarded-For", s)
	h.Set("X-Real-Ip", s)
	h.Set("X-Forwarded-Proto", "https")
	node := s
	if ip.Is6() {
		node = `"[` + s + `]"`
	}
	h.Set("Forwarded", "for="+node+";proto=https")
}

// addrIP is the IP of a node address (IPv4-mapped IPv6 unmapped); the
// zero Addr when a has none.
func addrIP(a net.Addr) netip.Addr {
	if a == nil {
		return netip.Addr{}
	}
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, _ := net.SplitHostPort(a.String())
	ip, _ := netip.ParseAddr(host)
	return ip.Unmap()
}
