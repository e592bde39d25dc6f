package rawnet

import (
	"errors"
	"net"
	"net/netip"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sockaddr is an IPv4 or IPv6 socket address in the kernel's layout, as
// connect(2) takes it and accept4(2) and getsockname(2) return it. The
// zero value is no address (family 0).
type Sockaddr struct {
	any unix.RawSockaddrAny
	len uint32
}

// errFamily: an address that is neither IPv4 nor IPv6.
var errFamily = errors.New("rawnet: not an IPv4 or IPv6 address")

// SockaddrOf returns ap in the kernel's layout: AF_INET for an IPv4 (or
// IPv4-mapped IPv6) address, AF_INET6 otherwise. A zone is not kept: a
// zoned address needs an interface index, which net resolves; the caller
// dials those through net.
func SockaddrOf(ap netip.AddrPort) (Sockaddr, error) {
	var sa Sockaddr
	a := ap.Addr()
	switch {
	case !a.IsValid():
		return sa, errFamily
	case a.Is4() || a.Is4In6():
		r := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.any))
		r.Family = unix.AF_INET
		putPort(&r.Port, ap.Port())
		r.Addr = a.Unmap().As4()
		sa.len = unix.SizeofSockaddrInet4
	default:
		r := (*unix.RawSockaddrInet6)(unsafe.Pointer(&sa.any))
		r.Family = unix.AF_INET6
		putPort(&r.Port, ap.Port())
		r.Addr = a.As16()
		sa.len = unix.SizeofSockaddrInet6
	}
	return sa, nil
}

// Family is AF_INET, AF_INET6, or 0 for the zero Sockaddr.
func (sa *Sockaddr) Family() int { return int(sa.any.Addr.Family) }

// AddrPort returns the address sa holds; an IPv6 address with a scope
// carries the interface's name as its zone (its index when the interface
// is gone), as net names it. False: sa is not IPv4 or IPv6.
func (sa *Sockaddr) AddrPort() (netip.AddrPort, bool) {
	switch sa.any.Addr.Family {
	case unix.AF_INET:
		r := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.any))
		return netip.AddrPortFrom(netip.AddrFrom4(r.Addr), port(&r.Port)), true
	case unix.AF_INET6:
		r := (*unix.RawSockaddrInet6)(unsafe.Pointer(&sa.any))
		a := netip.AddrFrom16(r.Addr)
		if r.Scope_id != 0 {
			a = a.WithZone(zoneName(r.Scope_id))
		}
		return netip.AddrPortFrom(a, port(&r.Port)), true
	}
	return netip.AddrPort{}, false
}

// TCPAddr is AddrPort as a *net.TCPAddr: an IPv4 address in 4 bytes, an
// IPv6 one (IPv4-mapped ones too) in 16; an empty one when sa is not IPv4
// or IPv6.
func (sa *Sockaddr) TCPAddr() *net.TCPAddr {
	ap, ok := sa.AddrPort()
	if !ok {
		return &net.TCPAddr{}
	}
	return net.TCPAddrFromAddrPort(ap)
}

func zoneName(index uint32) string {
	if ifi, err := net.InterfaceByIndex(int(index)); err == nil {
		return ifi.Name
	}
	return strconv.FormatUint(uint64(index), 10)
}

// putPort stores port in network byte order (big-endian) in a sockaddr's
// port field, byte by byte, whatever the host's byte order
// (x/sys/unix's SockaddrInet4.sockaddr does the same).
func putPort(field *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(field))
	b[0] = byte(port >> 8)
	b[1] = byte(port)
}

// port reads a sockaddr's port field, network byte order, byte by byte.
func port(field *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(field))
	return uint16(b[0])<<8 | uint16(b[1])
}
