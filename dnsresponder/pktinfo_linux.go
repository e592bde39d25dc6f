package dnsresponder

import (
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oobSize holds the control messages a wildcard-bound socket receives per
// datagram (IP_PKTINFO and IPV6_PKTINFO, both on a dual-stack socket).
const oobSize = 128

// enablePktinfo asks the kernel for the destination address of every
// datagram on c (IP_PKTINFO, IPV6_RECVPKTINFO), so a reply can leave from
// the address its query came to. Either family may fail (a v4 socket has
// no IPv6 options); both failing is an error.
func enablePktinfo(c *net.UDPConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var err4, err6 error
	cerr := raw.Control(func(fd uintptr) {
		err6 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO, 1)
		err4 = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
	})
	switch {
	case cerr != nil:
		return cerr
	case err4 != nil && err6 != nil:
		return err4
	}
	return nil
}

// pktinfoDst returns the destination address of a datagram from its
// control messages (IPv6 first, as miekg/dns does), and false without one.
func pktinfoDst(oob []byte) (netip.Addr, bool) {
	var v4 netip.Addr
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			break
		}
		oob = rest
		switch {
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
			return netip.AddrFrom16([16]byte(data[:16])), true
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo:
			v4 = netip.AddrFrom4([4]byte(data[8:12])) // ipi_addr: the header's destination
		}
	}
	return v4, v4.IsValid()
}

// appendSourceOOB appends to b the control message that makes a reply
// leave from src: IP_PKTINFO (spec_dst) for an IPv4 or IPv4-mapped
// address, IPV6_PKTINFO otherwise.
func appendSourceOOB(b []byte, src netip.Addr) []byte {
	level, typ, datalen := unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, unix.SizeofInet6Pktinfo
	if src.Is4() || src.Is4In6() {
		level, typ, datalen = unix.IPPROTO_IP, unix.IP_PKTINFO, unix.SizeofInet4Pktinfo
	}
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(datalen))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[start]))
	h.Level, h.Type = int32(level), int32(typ)
	h.SetLen(unix.CmsgLen(datalen))
	data := b[start+unix.CmsgLen(0):]
	if typ == unix.IP_PKTINFO {
		a := src.Unmap().As4()
		copy(data[4:8], a[:]) // ipi_spec_dst: the source to use
	} else {
		a := src.As16()
		copy(data[:16], a[:])
	}
	return b
}
