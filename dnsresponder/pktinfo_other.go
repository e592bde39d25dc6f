//go:build !linux

package dnsresponder

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// oobSize holds the control messages a wildcard-bound socket receives per
// datagram.
const oobSize = 128

// enablePktinfo asks for the destination address of every datagram on c;
// either family may fail, both failing is an error.
func enablePktinfo(c *net.UDPConn) error {
	err6 := ipv6.NewPacketConn(c).SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface, true)
	err4 := ipv4.NewPacketConn(c).SetControlMessage(ipv4.FlagDst|ipv4.FlagInterface, true)
	if err6 != nil && err4 != nil {
		return err4
	}
	return nil
}

// pktinfoDst returns the destination address of a datagram from its
// control messages (IPv6 first), and false without one.
func pktinfoDst(oob []byte) (netip.Addr, bool) {
	var cm6 ipv6.ControlMessage
	if cm6.Parse(oob) == nil && cm6.Dst != nil {
		a, ok := netip.AddrFromSlice(cm6.Dst)
		return a, ok
	}
	var cm4 ipv4.ControlMessage
	if cm4.Parse(oob) == nil && cm4.Dst != nil {
		a, ok := netip.AddrFromSlice(cm4.Dst)
		return a, ok
	}
	return netip.Addr{}, false
}

// appendSourceOOB appends to b the control message that makes a reply
// leave from src.
func appendSourceOOB(b []byte, src netip.Addr) []byte {
	if src.Is4() || src.Is4In6() {
		cm := ipv4.ControlMessage{Src: src.Unmap().AsSlice()}
		return append(b, cm.Marshal()...)
	}
	cm := ipv6.ControlMessage{Src: src.AsSlice()}
	return append(b, cm.Marshal()...)
}
