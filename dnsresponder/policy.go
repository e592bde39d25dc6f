package dnsresponder

import (
	"math"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/snigate/snigate/names"
)

// DefaultTTL is the TTL of routed answers when none is given.
const DefaultTTL = 30 * time.Second

// The synthesized SOA that NODATA answers carry in their authority section
// (RFC 2308). Its owner is the queried name; its minimum is the answer TTL,
// so resolvers cache the empty answer exactly as long as the addresses.
const (
	SOAMname = "snigate.invalid."
	SOARname = "hostmaster.snigate.invalid."
)

// Policy answers the queries for routed names: A and AAAA from the
// configured addresses, an authoritative NOERROR with an SOA and no
// answer for every other type. It knows nothing about transports, EDNS or
// forwarding, so the embedded Handler and the CoreDNS plugin share it.
// Its names and TTL are fixed; its addresses are too (NewPolicy) or follow
// an AnswerCheck (NewCheckedPolicy). Safe for concurrent use.
type Policy struct {
	routed *names.Table[struct{}]
	ttl    uint32       // seconds
	static *answerSet   // NewPolicy's addresses; nil with a check
	check  *AnswerCheck // nil: static
	cache  atomic.Pointer[answerSet]
}

// answerSet is the addresses a Policy answers with, split by family, and
// their records in wire form, built once per list.
type answerSet struct {
	from *answerList // the check's list it was built from; nil: static
	a    []net.IP    // 4-byte form
	aaaa []net.IP    // 16-byte form
	wire wireAnswers
}

// NewPolicy returns the policy for the routed names in routed (nil: none)
// answering with the addresses in answer, split by family, and ttl
// (zero: DefaultTTL; rounded down to whole seconds). The table must not be
// changed afterwards; build a new Policy on reload.
func NewPolicy(routed *names.Table[struct{}], answer []netip.Addr, ttl time.Duration) *Policy {
	p := newPolicy(routed, ttl)
	p.static = newAnswerSet(answer, p.ttl)
	return p
}

// NewCheckedPolicy is NewPolicy answering with check.Current() at each
// query: the answer addresses that are up (see AnswerCheck).
func NewCheckedPolicy(routed *names.Table[struct{}], check *AnswerCheck, ttl time.Duration) *Policy {
	p := newPolicy(routed, ttl)
	p.check = check
	return p
}

func newPolicy(routed *names.Table[struct{}], ttl time.Duration) *Policy {
	if routed == nil {
		routed = new(names.Table[struct{}])
	}
	if ttl == 0 {
		ttl = DefaultTTL
	}
	return &Policy{routed: routed, ttl: ttlSeconds(ttl)}
}

func newAnswerSet(answer []netip.Addr, ttl uint32) *answerSet {
	s := new(answerSet)
	for _, a := range answer {
		a = a.Unmap()
		switch {
		case a.Is4():
			b := a.As4()
			s.a = append(s.a, net.IP(b[:]))
		case a.Is6():
			b := a.As16()
			s.aaaa = append(s.aaaa, net.IP(b[:]))
		}
	}
	s.wire = newWireAnswers(s.a, s.aaaa, ttl)
	return s
}

// answers returns the set to answer with now. With a check, the set is
// rebuilt once per list the check publishes, by the first query to see
// it; every other query loads two pointers.
func (p *Policy) answers() *answerSet {
	if p.check == nil {
		return p.static
	}
	cur := p.check.current.Load()
	if s := p.cache.Load(); s != nil && s.from == cur {
		return s
	}
	s := newAnswerSet(cur.addrs, p.ttl)
	s.from = cur
	p.cache.Store(s)
	return s
}

func ttlSeconds(d time.Duration) uint32 {
	s := d / time.Second
	switch {
	case s < 0:
		return 0
	case s > math.MaxInt32: // RFC 2181 section 8: TTLs are 31-bit
		return math.MaxInt32
	}
	return uint32(s)
}

// Routed reports whether name (any case, trailing dot or not) is one the
// policy answers for. A name that is not a valid host name (names.IsHost:
// a label of other bytes, an escaped dot, a 64-byte label) is never
// routed, so it is forwarded like any other name.
func (p *Policy) Routed(name string) bool {
	_, ok := p.routed.Lookup(name)
	return ok
}

// Answer returns the reply to req when its single question is about a
// routed name, and false (with a nil reply) otherwise: the caller then
// forwards it, or hands it to the next plugin. The reply has AA set and
// req's ID and question; it carries no OPT record and is not truncated,
// both being the server's job. Classes other than IN get REFUSED, as do
// zone transfers; nothing about a routed name is ever left for forwarding.
func (p *Policy) Answer(req *dns.Msg) (*dns.Msg, bool) {
	if len(req.Question) != 1 {
		return nil, false
	}
	q := req.Question[0]
	if !p.Routed(q.Name) {
		return nil, false
	}
	m := new(dns.Msg)
	m.SetReply(req)
	switch {
	case q.Qclass != dns.ClassINET, q.Qtype == dns.TypeAXFR, q.Qtype == dns.TypeIXFR:
		m.Rcode = dns.RcodeRefused
		return m, true
	}
	m.Authoritative = true
	owner := dns.Fqdn(q.Name)
	m.Answer = p.records(p.answers(), owner, q.Qtype)
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{p.soa(owner)}
	}
	return m, true
}

// records returns the answer records for qtype: A, AAAA, both for ANY,
// none for the rest.
func (p *Policy) records(s *answerSet, owner string, qtype uint16) []dns.RR {
	switch qtype {
	case dns.TypeA:
		return p.appendA(s, nil, owner)
	case dns.TypeAAAA:
		return p.appendAAAA(s, nil, owner)
	case dns.TypeANY:
		rrs := make([]dns.RR, 0, len(s.a)+len(s.aaaa))
		return p.appendAAAA(s, p.appendA(s, rrs, owner), owner)
	}
	return nil
}

func (p *Policy) appendA(s *answerSet, rrs []dns.RR, owner string) []dns.RR {
	if rrs == nil && len(s.a) > 0 {
		rrs = make([]dns.RR, 0, len(s.a))
	}
	for _, ip := range s.a {
		rrs = append(rrs, &dns.A{Hdr: p.header(owner, dns.TypeA), A: ip})
	}
	return rrs
}

func (p *Policy) appendAAAA(s *answerSet, rrs []dns.RR, owner string) []dns.RR {
	if rrs == nil && len(s.aaaa) > 0 {
		rrs = make([]dns.RR, 0, len(s.aaaa))
	}
	for _, ip := range s.aaaa {
		rrs = append(rrs, &dns.AAAA{Hdr: p.header(owner, dns.TypeAAAA), AAAA: ip})
	}
	return rrs
}

func (p *Policy) header(owner string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: p.ttl}
}

// soa is the negative-caching record for a NODATA answer about owner.
func (p *Policy) soa(owner string) *dns.SOA {
	return &dns.SOA{
		Hdr:     p.header(owner, dns.TypeSOA),
		Ns:      SOAMname,
		Mbox:    SOARname,
		Serial:  1,
		Refresh: 3600,
		Retry:   600,
		Expire:  86400,
		Minttl:  p.ttl,
	}
}
