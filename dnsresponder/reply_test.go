package dnsresponder

import (
	"testing"

	"github.com/miekg/dns"
)

// ednsUpstream answers with an OPT record advertising 4096 bytes and an
// extended error option, whether or not the query had one (some servers
// do).
func ednsUpstream(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	opt := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	opt.SetUDPSize(4096)
	opt.Option = append(opt.Option, &dns.EDNS0_EDE{InfoCode: dns.ExtendedErrorCodeOther, ExtraText: "upstream"})
	m.Extra = append(m.Extra, opt)
	rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A " + forwardedA)
	m.Answer = []dns.RR{rr}
	w.WriteMsg(m)
}

func TestEDNS(t *testing.T) {
	up := newUpstream(t, ednsUpstream)
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}}, "")
	tests := []struct {
		name    string
		qname   string
		edns    uint16 // 0: no OPT in the query
		do      bool
		wantOPT bool
		wantEDE bool
	}{
		{name: "routed, no EDNS: no OPT", qname: exactName},
		{name: "routed, EDNS: OPT echoed", qname: exactName, edns: 4096, wantOPT: true},
		{name: "routed, EDNS with DO: DO echoed", qname: exactName, edns: 1232, do: true, wantOPT: true},
		{name: "forwarded, no EDNS: upstream's OPT stripped", qname: "example.org."},
		{name: "forwarded, EDNS: upstream's OPT rewritten, options kept", qname: "example.org.", edns: 4096,
			wantOPT: true, wantEDE: true},
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tt := range tests {
			t.Run(network+"/"+tt.name, func(t *testing.T) {
				m := new(dns.Msg)
				m.SetQuestion(tt.qname, dns.TypeA)
				if tt.edns > 0 {
					m.SetEdns0(tt.edns, tt.do)
				}
				r := exchange(t, network, w.addr, m)
				opt := r.IsEdns0()
				if (opt != nil) != tt.wantOPT {
					t.Fatalf("OPT in reply: %v, want %v", opt, tt.wantOPT)
				}
				if countOPT(r) > 1 {
					t.Errorf("%d OPT records in the reply", countOPT(r))
				}
				if opt == nil {
					return
				}
				if opt.UDPSize() != MaxUDPSize || opt.Version() != 0 {
					t.Errorf("OPT advertises %d bytes, version %d; want %d, 0", opt.UDPSize(), opt.Version(), MaxUDPSize)
				}
				if opt.Do() != tt.do {
					t.Errorf("DO = %v, want %v", opt.Do(), tt.do)
				}
				if hasEDE := len(opt.Option) > 0; hasEDE != tt.wantEDE {
					t.Errorf("options %v, want the upstream's EDE: %v", opt.Option, tt.wantEDE)
				}
			})
		}
	}
}

func TestUDPSize(t *testing.T) {
	tests := []struct {
		name string
		edns uint16 // 0: no OPT
		want int
	}{
		{"no EDNS", 0, 512},
		{"EDNS below 512", 100, 512},
		{"EDNS 1000", 1000, 1000},
		{"EDNS 4096 capped", 4096, MaxUDPSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion(exactName, dns.TypeA)
			if tt.edns > 0 {
				m.SetEdns0(tt.edns, false)
			}
			if got := udpSize(m); got != tt.want {
				t.Errorf("udpSize = %d, want %d", got, tt.want)
			}
		})
	}
}
