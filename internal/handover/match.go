package handover

import (
	"net"
	"path/filepath"
	"strconv"
)

// sameAddr reports whether a socket bound to bound is the one the
// configuration asks for with network and addr. A port 0 never matches:
// the kernel picks a new one.
func sameAddr(bound net.Addr, network, addr string) bool {
	switch b := bound.(type) {
	case *net.UnixAddr:
		return network == "unix" && b.Name != "" && filepath.Clean(b.Name) == filepath.Clean(addr)
	case *net.TCPAddr:
		return network == "tcp" && sameIPPort(b.IP, b.Port, addr)
	case *net.UDPAddr:
		return network == "udp" && sameIPPort(b.IP, b.Port, addr)
	}
	return false
}

// sameIPPort compares a bound IP and port with a configured "host:port".
// An empty or unspecified host (":443", "0.0.0.0:443", "[::]:443") asks
// for every address, which a socket bound to 0.0.0.0 or [::] gives; a
// host name is resolved.
func sameIPPort(ip net.IP, port int, addr string) bool {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if n, err := strconv.Atoi(p); err != nil || n == 0 || n != port {
		return false
	}
	want := net.ParseIP(host)
	if host != "" && want == nil {
		ta, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return false
		}
		want = ta.IP
	}
	if want == nil || want.IsUnspecified() {
		return ip.IsUnspecified()
	}
	return want.Equal(ip)
}
