package httpbridge

import (
	"net"
	"net/netip"
)

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
