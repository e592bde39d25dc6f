package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/snigate/snigate/names"
)

// InterfaceAddrs are the addresses of this host's (network namespace's)
// interfaces, none when they cannot be read: the addresses a
// listener on an unspecified address ("", 0.0.0.0, ::) accepts on.
func InterfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr().Unmap())
		}
	}
	return out
}

// reachesListener reports whether a connection to target (host:port) would
// arrive at the listener listen (host:port, its host empty for every
// address): the same port, and the listener's address or, for one on
// every address, a loopback or local address. A target by host name
// other than localhost is not resolved (false).
func (p *parser) reachesListener(target, listen string) bool {
	th, tp, err := net.SplitHostPort(target)
	if err != nil {
		return false
	}
	lh, lp, err := net.SplitHostPort(listen)
	if err != nil || tp != lp || lp == "0" {
		return false
	}
	ta, ok := hostAddr(th)
	if !ok {
		return false
	}
	la, ok := hostAddr(lh)
	switch {
	case lh == "" || ok && la.IsUnspecified():
		return ta.IsLoopback() || ta.IsUnspecified() || p.isLocal(ta)
	case !ok:
		return strings.EqualFold(th, lh)
	}
	return ta == la
}

// hostAddr is h as an address; localhost is 127.0.0.1.
func hostAddr(h string) (netip.Addr, bool) {
	if strings.EqualFold(strings.TrimSuffix(h, "."), "localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	}
	a, err := netip.ParseAddr(h)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// isLocal reports whether a is one of the host's addresses
// (parser.localAddrsFunc).
func (p *parser) isLocal(a netip.Addr) bool {
	local := InterfaceAddrs
	if p.localAddrsFunc != nil {
		local = p.localAddrsFunc
	}
	for _, l := range local() {
		if l == a {
			return true
		}
	}
	return false
}

// forwardLoop reports a dns.forward entry that is the gateway's own
// listen.dns: every query it forwards would come back to it, and each
// pass forwards it again (one query became hundreds of SERVFAILs).
func (p *parser) forwardLoop(it item, addr string, l Listen) {
	if l.DNS == "" || !p.reachesListener(addr, l.DNS) {
		return
	}
	p.errorf(it.node.Line, it.key, "%q is this gateway's own listen.dns %q: forwarded queries would come back to it in a loop; "+
		"name the resolver the gateway itself should ask (the site's or cluster's resolver, as in /etc/resolv.conf)", addr, l.DNS)
}

// upstreamLoops reports an upstream that is one of the gateway's own
// listen.tls addresses when the connection would be routed back to the
// same route: always in splice mode (the node's SNI is sent as it came),
// and in bridge mode unless upstream_tls.server_name names another route.
func (p *parser) upstreamLoops(c *Config) {
	for i := range c.Routes {
		r := &c.Routes[i]
		if r.Mode == ModeBridge && r.UpstreamTLS.ServerName != "" && !r.routes(r.UpstreamTLS.ServerName) {
			continue
		}
		for j, u := range r.Upstreams {
			for _, l := range c.Listen.TLS {
				if p.reachesListener(u, l) {
					key := fmt.Sprintf("routes[%d].upstreams[%d]", i, j)
					p.errorf(p.lines[key], key, "%q is this gateway's own listen.tls %q: the connection would come back to route %q in a loop; "+
						"name the registry's address (the host and port the gateway itself should dial)", u, l, r.Name)
					break
				}
			}
		}
	}
}

// routes reports whether the route's SNI covers name.
func (r *Route) routes(name string) bool {
	c := names.Canonical(name)
	for _, s := range r.SNI {
		if names.Match(s, c) {
			return true
		}
	}
	return false
}
