package gateway

import (
	"net"
	"net/netip"
	"slices"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/config"
)

// Answers lists the dns.answer addresses as the answer check sees them
// (the admin API's /api/answers); nil without dns.answer_check.
func (g *Gateway) Answers() []dnsresponder.AnswerStatus {
	if c := g.gen.Load().answers; c != nil {
		return c.Status()
	}
	return nil
}

// leaveOutOwnAnswers, when the gateway starts to drain, takes its own
// addresses out of its DNS answers at once: nodes stop being sent to a
// gateway that no longer accepts, while it keeps answering DNS until it
// exits. Its own addresses are those of its TLS listeners (see ownAddrs).
func (g *Gateway) leaveOutOwnAnswers() {
	if c := g.gen.Load().answers; c != nil {
		c.LeaveOut(g.ownAddrs())
	}
}

// takeBackOwnAnswers answers the gateway's own addresses again (as the
// checks find them) once the readiness switch is on again.
func (g *Gateway) takeBackOwnAnswers() {
	if c := g.gen.Load().answers; c != nil {
		c.TakeBack(g.ownAddrs())
	}
}

// ownAddrs are the gateway's own addresses, from its TLS listeners as
// bound now (none before Run).
func (g *Gateway) ownAddrs() []netip.Addr {
	var bound []net.Addr
	if p := g.tlsBound.Load(); p != nil {
		bound = *p
	}
	return ownAddrs(bound, config.InterfaceAddrs)
}

// ownAddrs are the addresses the TLS listeners bound are reached on: the
// address of each listener bound to a specific one, and local (the
// host's interface addresses) only when a listener is bound to the
// wildcard address. Two gateways on one host, each bound to its own
// address, each own only theirs: a drain leaves out its own and answers
// the other's.
func ownAddrs(bound []net.Addr, local func() []netip.Addr) []netip.Addr {
	var own []netip.Addr
	wildcard := false
	for _, a := range bound {
		ta, ok := a.(*net.TCPAddr)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ta.IP)
		switch {
		case !ok || ip.IsUnspecified():
			wildcard = true
		case !slices.Contains(own, ip.Unmap()):
			own = append(own, ip.Unmap())
		}
	}
	if wildcard {
		for _, ip := range local() {
			if !slices.Contains(own, ip) {
				own = append(own, ip)
			}
		}
	}
	return own
}

// logAnswerCheck says at start what dns.answer_check checks and which
// answer addresses are this gateway's own (left out when it drains), and
// warns when none is: then only the other gateways' checks take it out.
func (g *Gateway) logAnswerCheck() {
	gen := g.gen.Load()
	if gen.answers == nil {
		return
	}
	own := ownAnswers(gen.cfg.DNS.Answer, g.ownAddrs())
	ac := gen.cfg.DNS.AnswerCheck
	g.log.Info("dns: answer check", "answer", gen.cfg.DNS.Answer, "port", ac.Port,
		"interval", ac.Interval.String(), "fall", ac.Fall, "rise", ac.Rise, "own", own)
	if len(own) == 0 {
		g.log.Warn("dns: none of dns.answer is this gateway's own address (the addresses its TLS listeners are bound to; the interface addresses for a wildcard listener): a drain cannot leave it out of its own answers; only the other gateways' checks will, after fall failed checks",
			"answer", gen.cfg.DNS.Answer)
	}
}

// ownAnswers are the answer addresses among own.
func ownAnswers(answer, own []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range answer {
		if slices.Contains(own, a.Unmap()) {
			out = append(out, a)
		}
	}
	return out
}
