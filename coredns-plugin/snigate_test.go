package snigate

import (
	"context"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

const issueStanza = `snigate {
	answer 192.0.2.10 2001:db8::10
	ttl 30
	names registry.example.test *.mirror.example.test
	fallthrough
}`

// nextMarker is what the fake next plugin answers, so a test sees both
// that Next was called and that its reply reached the client unchanged.
var nextMarker = test.TXT(`next.example. 0 IN TXT "from the next plugin"`)

// newTestHandler parses stanza under the server block keys and returns
// the handler with a Next that records its calls.
func newTestHandler(t testing.TB, stanza string, keys []string, calls *int) *Snigate {
	t.Helper()
	c := caddy.NewTestController("dns", stanza)
	c.ServerBlockKeys = keys
	s, err := parse(c)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	h, err := newHandler(s, nil, &recordingLog{})
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	h.Next = test.HandlerFunc(func(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		*calls++
		m := new(dns.Msg)
		m.SetReply(r)
		m.Answer = []dns.RR{nextMarker}
		return dns.RcodeSuccess, w.WriteMsg(m)
	})
	return h
}

func soa(owner string) dns.RR {
	return test.SOA(owner + " 30 IN SOA snigate.invalid. hostmaster.snigate.invalid. 1 3600 600 86400 30")
}

func TestServeDNS(t *testing.T) {
	keys := []string{"registry.example.test.", "example.test."}
	tests := []struct {
		name     string
		tc       test.Case
		wantNext bool
	}{
		{name: "A", tc: test.Case{Qname: "registry.example.test.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("registry.example.test. 30 IN A 192.0.2.10")}}},
		{name: "AAAA", tc: test.Case{Qname: "registry.example.test.", Qtype: dns.TypeAAAA,
			Answer: []dns.RR{test.AAAA("registry.example.test. 30 IN AAAA 2001:db8::10")}}},
		{name: "HTTPS is NODATA with an SOA", tc: test.Case{Qname: "registry.example.test.", Qtype: dns.TypeHTTPS,
			Ns: []dns.RR{soa("registry.example.test.")}}},
		{name: "SVCB is NODATA with an SOA", tc: test.Case{Qname: "registry.example.test.", Qtype: dns.TypeSVCB,
			Ns: []dns.RR{soa("registry.example.test.")}}},
		{name: "MX is NODATA with an SOA", tc: test.Case{Qname: "registry.example.test.", Qtype: dns.TypeMX,
			Ns: []dns.RR{soa("registry.example.test.")}}},
		{name: "case and the missing trailing dot do not matter", tc: test.Case{Qname: "Registry.EXAMPLE.test", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("Registry.EXAMPLE.test. 30 IN A 192.0.2.10")}}},
		{name: "wildcard matches one label", tc: test.Case{Qname: "eu.mirror.example.test.", Qtype: dns.TypeA,
			Answer: []dns.RR{test.A("eu.mirror.example.test. 30 IN A 192.0.2.10")}}},
		{name: "wildcard does not match the apex", wantNext: true,
			tc: test.Case{Qname: "mirror.example.test.", Qtype: dns.TypeA, Answer: []dns.RR{nextMarker}}},
		{name: "wildcard does not match two labels", wantNext: true,
			tc: test.Case{Qname: "a.eu.mirror.example.test.", Qtype: dns.TypeA, Answer: []dns.RR{nextMarker}}},
		{name: "a name that is not routed goes to the next plugin", wantNext: true,
			tc: test.Case{Qname: "other.example.test.", Qtype: dns.TypeA, Answer: []dns.RR{nextMarker}}},
		{name: "the HTTPS query of a name that is not routed goes to the next plugin", wantNext: true,
			tc: test.Case{Qname: "other.example.test.", Qtype: dns.TypeHTTPS, Answer: []dns.RR{nextMarker}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls int
			h := newTestHandler(t, issueStanza, keys, &calls)
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			rcode, err := h.ServeDNS(context.Background(), rec, tt.tc.Msg())
			if err != nil {
				t.Fatalf("ServeDNS: %v", err)
			}
			if got := calls == 1; got != tt.wantNext {
				t.Fatalf("next plugin called %d times, want called: %v", calls, tt.wantNext)
			}
			if rec.Msg == nil {
				t.Fatal("no reply written")
			}
			if rcode != tt.tc.Rcode || rec.Msg.Rcode != tt.tc.Rcode {
				t.Errorf("rcode returned %d, written %d, want %d", rcode, rec.Msg.Rcode, tt.tc.Rcode)
			}
			if !tt.wantNext && !rec.Msg.Authoritative {
				t.Error("AA not set on snigate's own reply")
			}
			if err := test.SortAndCheck(rec.Msg, tt.tc); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestServeDNSZones: a routed name outside the zones on the directive line
// is not snigate's to answer, even though the name table has it.
func TestServeDNSZones(t *testing.T) {
	stanza := "snigate registry.example.test {\nanswer 192.0.2.10\nnames registry.example.test other.example.test\n}"
	tests := []struct {
		qname    string
		wantNext bool
	}{
		{"registry.example.test.", false},
		{"other.example.test.", true},
	}
	for _, tt := range tests {
		t.Run(tt.qname, func(t *testing.T) {
			var calls int
			h := newTestHandler(t, stanza, []string{"."}, &calls)
			m := new(dns.Msg)
			m.SetQuestion(tt.qname, dns.TypeA)
			if _, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
				t.Fatal(err)
			}
			if got := calls == 1; got != tt.wantNext {
				t.Errorf("next called %d times, want called: %v", calls, tt.wantNext)
			}
		})
	}
}

// TestFallthrough: with or without `fallthrough`, and whatever its zones,
// a name snigate does not route reaches the next plugin, and a routed name
// never does (its real address must not leak past the gateway).
func TestFallthrough(t *testing.T) {
	stanzas := map[string]string{
		"no fallthrough":    "snigate {\nanswer 192.0.2.10\nnames registry.example.test\n}",
		"fallthrough":       "snigate {\nanswer 192.0.2.10\nnames registry.example.test\nfallthrough\n}",
		"fallthrough zones": "snigate {\nanswer 192.0.2.10\nnames registry.example.test\nfallthrough in-addr.arpa\n}",
	}
	queries := []struct {
		qname    string
		qtype    uint16
		wantNext bool
	}{
		{"registry.example.test.", dns.TypeA, false},
		{"registry.example.test.", dns.TypeHTTPS, false},
		{"registry.example.test.", dns.TypeTXT, false},
		{"other.example.test.", dns.TypeA, true},
		{"10.2.0.192.in-addr.arpa.", dns.TypePTR, true},
	}
	for name, stanza := range stanzas {
		for _, q := range queries {
			t.Run(name+"/"+q.qname+"/"+dns.TypeToString[q.qtype], func(t *testing.T) {
				var calls int
				h := newTestHandler(t, stanza, []string{"."}, &calls)
				m := new(dns.Msg)
				m.SetQuestion(q.qname, q.qtype)
				if _, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m); err != nil {
					t.Fatal(err)
				}
				if got := calls == 1; got != q.wantNext {
					t.Errorf("next called %d times, want called: %v", calls, q.wantNext)
				}
			})
		}
	}
}

// TestServeDNSNoNext: snigate as the last plugin answers SERVFAIL for the
// names it does not route, the CoreDNS convention for a missing Next.
func TestServeDNSNoNext(t *testing.T) {
	c := caddy.NewTestController("dns", "snigate {\nanswer 192.0.2.10\nnames registry.example.test\n}")
	s, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	h, err := newHandler(s, nil, &recordingLog{})
	if err != nil {
		t.Fatal(err)
	}
	m := new(dns.Msg)
	m.SetQuestion("other.example.test.", dns.TypeA)
	rcode, err := h.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), m)
	if rcode != dns.RcodeServerFailure || err == nil {
		t.Errorf("ServeDNS = %d, %v; want SERVFAIL and an error", rcode, err)
	}
}
