package dnsresponder

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// policyCase is one question and the reply the policy must give, as zone
// text. routed=false means Answer must decline (the name is forwarded).
type policyCase struct {
	name   string
	qname  string
	qtype  uint16
	qclass uint16 // 0: IN
	routed bool
	rcode  int
	answer []string
	ns     []string
}

func TestPolicyAnswer(t *testing.T) {
	soa := func(n string) []string { return []string{soaFor(n, 30)} }
	tests := []policyCase{
		{name: "exact A", qname: exactName, qtype: dns.TypeA, routed: true,
			answer: []string{exactName + " 30 IN A " + answer4}},
		{name: "exact AAAA", qname: exactName, qtype: dns.TypeAAAA, routed: true,
			answer: []string{exactName + " 30 IN AAAA " + answer6}},
		{name: "exact HTTPS", qname: exactName, qtype: dns.TypeHTTPS, routed: true, ns: soa(exactName)},
		{name: "exact SVCB", qname: exactName, qtype: dns.TypeSVCB, routed: true, ns: soa(exactName)},
		{name: "exact MX", qname: exactName, qtype: dns.TypeMX, routed: true, ns: soa(exactName)},
		{name: "exact TXT", qname: exactName, qtype: dns.TypeTXT, routed: true, ns: soa(exactName)},
		{name: "exact ANY", qname: exactName, qtype: dns.TypeANY, routed: true,
			answer: []string{exactName + " 30 IN A " + answer4, exactName + " 30 IN AAAA " + answer6}},
		{name: "wildcard A", qname: wildcardName, qtype: dns.TypeA, routed: true,
			answer: []string{wildcardName + " 30 IN A " + answer4}},
		{name: "wildcard AAAA", qname: wildcardName, qtype: dns.TypeAAAA, routed: true,
			answer: []string{wildcardName + " 30 IN AAAA " + answer6}},
		{name: "wildcard HTTPS", qname: wildcardName, qtype: dns.TypeHTTPS, routed: true, ns: soa(wildcardName)},
		{name: "wildcard SVCB", qname: wildcardName, qtype: dns.TypeSVCB, routed: true, ns: soa(wildcardName)},
		{name: "wildcard MX", qname: wildcardName, qtype: dns.TypeMX, routed: true, ns: soa(wildcardName)},
		{name: "wildcard TXT", qname: wildcardName, qtype: dns.TypeTXT, routed: true, ns: soa(wildcardName)},
		{name: "upper case keeps the asked owner", qname: "REGISTRY.Example.Test.", qtype: dns.TypeA, routed: true,
			answer: []string{"REGISTRY.Example.Test. 30 IN A " + answer4}},
		{name: "upper case wildcard", qname: "A.APPS.EXAMPLE.TEST.", qtype: dns.TypeAAAA, routed: true,
			answer: []string{"A.APPS.EXAMPLE.TEST. 30 IN AAAA " + answer6}},
		{name: "pattern with trailing dot and capitals", qname: "dotted.example.test.", qtype: dns.TypeA, routed: true,
			answer: []string{"dotted.example.test. 30 IN A " + answer4}},
		{name: "question without trailing dot", qname: "registry.example.test", qtype: dns.TypeA, routed: true,
			answer: []string{exactName + " 30 IN A " + answer4}},
		{name: "one label too deep for the wildcard", qname: "x.a.apps.example.test.", qtype: dns.TypeA},
		// Issue 14 item 8: none of these is one valid label below the
		// wildcard, and each matched it.
		{name: "empty first label under the wildcard", qname: ".apps.example.test.", qtype: dns.TypeA},
		{name: "the wildcard itself", qname: "*.apps.example.test.", qtype: dns.TypeA},
		{name: "300-byte label under the wildcard", qname: strings.Repeat("a", 300) + ".apps.example.test.", qtype: dns.TypeA},
		{name: "name over 253 bytes under the wildcard", qname: strings.Repeat("a.", 120) + "x.apps.example.test.", qtype: dns.TypeA},
		{name: "escaped dot in the first label", qname: `a\.b.apps.example.test.`, qtype: dns.TypeA},
		{name: "wildcard apex is not covered", qname: "apps.example.test.", qtype: dns.TypeA},
		{name: "parent of exact name", qname: "example.test.", qtype: dns.TypeA},
		{name: "child of exact name", qname: "www.registry.example.test.", qtype: dns.TypeA},
		{name: "class CH refused", qname: exactName, qtype: dns.TypeTXT, qclass: dns.ClassCHAOS, routed: true,
			rcode: dns.RcodeRefused},
		{name: "zone transfer refused", qname: exactName, qtype: dns.TypeAXFR, routed: true, rcode: dns.RcodeRefused},
	}
	p := NewPolicy(testNames(t), testAnswer(), 30*time.Second)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkPolicy(t, p, tc) })
	}
}

func checkPolicy(t *testing.T, p *Policy, tc policyCase) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(tc.qname, tc.qtype)
	if tc.qclass != 0 {
		req.Question[0].Qclass = tc.qclass
	}
	reply, ok := p.Answer(req)
	if ok != tc.routed {
		t.Fatalf("Answer ok = %v, want %v", ok, tc.routed)
	}
	if !ok {
		if reply != nil {
			t.Errorf("declined with a reply: %v", reply)
		}
		return
	}
	if reply.Id != req.Id || !reply.Response || reply.Question[0] != req.Question[0] {
		t.Errorf("reply header/question do not match the query: %v", reply)
	}
	if reply.Rcode != tc.rcode {
		t.Errorf("rcode %s, want %s", dns.RcodeToString[reply.Rcode], dns.RcodeToString[tc.rcode])
	}
	if wantAA := tc.rcode == dns.RcodeSuccess; reply.Authoritative != wantAA {
		t.Errorf("AA = %v, want %v", reply.Authoritative, wantAA)
	}
	sameRRs(t, "answer", reply.Answer, tc.answer)
	sameRRs(t, "authority", reply.Ns, tc.ns)
	sameRRs(t, "additional", reply.Extra, nil)
	if _, err := reply.Pack(); err != nil && dns.IsFqdn(tc.qname) {
		t.Errorf("reply does not pack: %v", err)
	}
}

func TestPolicyAddressFamilies(t *testing.T) {
	v4 := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.2")}
	tests := []struct {
		name   string
		answer []netip.Addr
		ttl    time.Duration
		tc     policyCase
	}{
		{name: "v4 only: AAAA is NODATA", answer: v4, ttl: 30 * time.Second,
			tc: policyCase{qname: exactName, qtype: dns.TypeAAAA, routed: true, ns: []string{soaFor(exactName, 30)}}},
		{name: "v4-mapped counts as v4", answer: v4, ttl: 30 * time.Second,
			tc: policyCase{qname: exactName, qtype: dns.TypeA, routed: true,
				answer: []string{exactName + " 30 IN A 192.0.2.1", exactName + " 30 IN A 192.0.2.2"}}},
		{name: "v6 only: A is NODATA", answer: []netip.Addr{netip.MustParseAddr(answer6)}, ttl: 5 * time.Minute,
			tc: policyCase{qname: exactName, qtype: dns.TypeA, routed: true, ns: []string{soaFor(exactName, 300)}}},
		{name: "no address: ANY is NODATA", ttl: 30 * time.Second,
			tc: policyCase{qname: exactName, qtype: dns.TypeANY, routed: true, ns: []string{soaFor(exactName, 30)}}},
		{name: "zero TTL means the default", answer: v4[:1],
			tc: policyCase{qname: exactName, qtype: dns.TypeA, routed: true,
				answer: []string{exactName + " 30 IN A 192.0.2.1"}}},
		{name: "TTL rounded down to seconds", answer: v4[:1], ttl: 1500 * time.Millisecond,
			tc: policyCase{qname: exactName, qtype: dns.TypeA, routed: true,
				answer: []string{exactName + " 1 IN A 192.0.2.1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPolicy(t, NewPolicy(testNames(t), tt.answer, tt.ttl), tt.tc)
		})
	}
}

func TestPolicyDeclines(t *testing.T) {
	p := NewPolicy(nil, testAnswer(), 0)
	req := new(dns.Msg)
	req.SetQuestion(exactName, dns.TypeA)
	if _, ok := p.Answer(req); ok {
		t.Error("a policy without names answered")
	}
	p = NewPolicy(testNames(t), testAnswer(), 0)
	for _, qs := range [][]dns.Question{nil, {req.Question[0], req.Question[0]}} {
		req.Question = qs
		if _, ok := p.Answer(req); ok {
			t.Errorf("answered a query with %d questions", len(qs))
		}
	}
}
