package dnsresponder

import (
	"errors"
	"net"
	"net/netip"

	"github.com/miekg/dns"
)

// errDenied is the reason logged for a query from a client outside
// Config.Allow.
var errDenied = errors.New("client address not in dns.allow (listen.allow when dns.allow is not set): answered REFUSED")

// msgDenied is the warning logged (rate-limited) for such queries.
const msgDenied = "dns: query refused: client address not in dns.allow (listen.allow when dns.allow is not set); add its network there if it should be answered"

// allowList is the client networks a Handler answers; empty admits every
// client.
type allowList []netip.Prefix

// allows reports whether ip is in the list (always, for an empty list).
// An IPv4-mapped IPv6 address (a dual-stack socket) counts as its IPv4
// address, and a zone is ignored; the invalid address is never allowed by
// a non-empty list.
func (a allowList) allows(ip netip.Addr) bool {
	if len(a) == 0 {
		return true
	}
	ip = ip.Unmap().WithZone("")
	for _, p := range a {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// allowsAddr is allows for a socket address; one the responder cannot read
// an IP address from is not allowed by a non-empty list.
func (a allowList) allowsAddr(addr net.Addr) bool {
	if len(a) == 0 {
		return true
	}
	return a.allows(addrIP(addr))
}

// addrIP is the IP address of a UDP or TCP socket address, the invalid
// address for anything else.
func addrIP(addr net.Addr) netip.Addr {
	switch a := addr.(type) {
	case *net.UDPAddr:
		return a.AddrPort().Addr()
	case *net.TCPAddr:
		return a.AddrPort().Addr()
	case nil:
		return netip.Addr{}
	}
	ap, _ := netip.ParseAddrPort(addr.String())
	return ap.Addr()
}

// allowed reports whether the handler answers client (the UDP loop asks
// before its fast path).
func (h *Handler) allowed(client netip.Addr) bool { return h.allow.allows(client) }

// denied reports whether req must be refused for its client: a query (a
// response is dropped, whoever sent it) from outside Allow.
func (h *Handler) denied(w dns.ResponseWriter, req *dns.Msg) bool {
	return len(h.allow) > 0 && !req.Response && !h.allow.allowsAddr(w.RemoteAddr())
}

// deny answers REFUSED, without recursion available, to a query from a
// client outside Allow, whatever it asks (routed names included), and
// logs it at most once a minute. The reply holds at most the query's
// first question and an OPT record when the query had one: never larger
// than the query.
func (h *Handler) deny(w dns.ResponseWriter, req *dns.Msg) string {
	h.warn.logMsg(msgDenied, ResultDenied, clientAddr(w), errDenied)
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeRefused)
	h.write(w, req, m)
	return ResultDenied
}
