package httpbridge

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// forwardingHeaders are dropped from every upstream request, whatever
// routes[].http.forwarded says: a node cannot claim another address.
// Every X-Forwarded-* header goes as well (X-Forwarded-Host, -Port,
// -Server, ...).
var forwardingHeaders = []string{"Forwarded", "X-Real-Ip", "X-Forwarded-For", "True-Client-Ip", "X-Client-Ip"}

// dropForwarding removes the node's forwarding headers from h.
func dropForwarding(h http.Header) {
	for _, k := range forwardingHeaders {
		delete(h, k)
	}
	for k := range h {
		if strings.HasPrefix(k, "X-Forwarded-") {
			delete(h, k)
		}
	}
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
