package httpbridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// errRedirectTarget marks a redirect whose target address the gateway
// refuses to connect to: a registry (or whoever answers as one) could
// otherwise make the gateway fetch its own loopback services, a cloud
// metadata address or the bastion's other ports, and hand the node the
// bytes or, in its error texts, a port scan.
var errRedirectTarget = errors.New("redirect target refused")

// thisNetwork is 0.0.0.0/8: on Linux a connect to 0.0.0.0 reaches the
// host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// redirectGuard decides which addresses a followed redirect may connect
// to: not loopback, link-local, unspecified, multicast or the gateway's
// own interface addresses, unless allow contains them. Private ranges
// (10/8, 172.16/12, 192.168/16, fc00::/7) are allowed: blob storage
// behind a registry often lives there.
type redirectGuard struct {
	allow []netip.Prefix
	// ownAddrs lists the gateway's interface addresses (net.InterfaceAddrs).
	ownAddrs func() ([]net.Addr, error)
}

// check returns why a connection to addr is refused, or nil.
func (g *redirectGuard) check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	for _, p := range g.allow {
		if p.Contains(addr) {
			return nil
		}
	}
	what := ""
	switch {
	case addr.IsLoopback():
		what = "a loopback address"
	case addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast():
		what = "a link-local address"
	case addr.IsUnspecified() || thisNetwork.Contains(addr):
		what = "an unspecified address"
	case addr.IsMulticast():
		what = "a multicast address"
	default:
		own, err := g.own(addr)
		if err != nil {
			return fmt.Errorf("%w: %s: listing the gateway's own addresses failed: %w", errRedirectTarget, addr, err)
		}
		if !own {
			return nil
		}
		what = "an address of the gateway itself"
	}
	return fmt.Errorf("%w: %s is %s: add it to routes[].http.redirect_allow if the registry's storage really is there",
		errRedirectTarget, addr, what)
}

// own reports whether addr is one of the gateway's interface addresses
// (listed at each dial: they change with DHCP and hot-plugged
// interfaces, and a redirect dial is rare next to its TLS handshake).
func (g *redirectGuard) own(addr netip.Addr) (bool, error) {
	addrs, err := g.ownAddrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr {
				return true, nil
			}
		}
	}
	return false, nil
}

// control is the dialer's Control hook: it runs after name resolution,
// on the address about to be connected to, so a name that resolves (or
// re-resolves, DNS rebinding) to a refused address is refused before any
// packet is sent.
func (g *redirectGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errRedirectTarget, address, err)
	}
	return g.check(ap.Addr())
}

// dialFunc is how the redirector connects: with a net.Dialer whose
// Control is the guard's when dial is nil; else with dial, the
// connection's peer checked once connected (a dial function of the
// caller's own cannot be given a Control hook).
func (g *redirectGuard) dialFunc(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		return (&net.Dialer{Control: g.control}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := g.checkPeer(c); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
}

// checkPeer checks the address c is connected to.
func (g *redirectGuard) checkPeer(c net.Conn) error {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return fmt.Errorf("%w: peer %s: %w", errRedirectTarget, c.RemoteAddr(), err)
	}
	return g.check(ap.Addr())
}
