package dnsresponder

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/snigate/snigate/internal/testkit"
)

// Clients of the allow tests: only inside is in the allow list.
const (
	insideIP  = "127.0.0.1"
	outsideIP = "127.0.0.2"
)

// exchangeFrom sends m over network ("udp" or "tcp") to addr from the
// local address from.
func exchangeFrom(t testing.TB, network, from, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	if network == "tcp" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	c := &dns.Client{Net: network, Timeout: 5 * time.Second, Dialer: d}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query %v from %s to %s: %v", network, m.Question, from, addr, err)
	}
	if r.Id != m.Id {
		t.Fatalf("reply ID %d, query ID %d", r.Id, m.Id)
	}
	return r
}

// allowCases are queries from inside and outside dns.allow and their answers.
var allowCases = []struct {
	name    string
	from    string
	network string
	qname   string
	edns    bool
	rcode   int
	want    string // the A record's address, "" for none
}{
	{name: "outside/udp/forwarded", from: outsideIP, network: "udp", qname: "elsewhere.test.", rcode: dns.RcodeRefused},
	{name: "outside/tcp/forwarded", from: outsideIP, network: "tcp", qname: "elsewhere.test.", rcode: dns.RcodeRefused},
	{name: "outside/udp/routed", from: outsideIP, network: "udp", qname: exactName, rcode: dns.RcodeRefused},
	{name: "outside/udp/routed/edns", from: outsideIP, network: "udp", qname: exactName, edns: true, rcode: dns.RcodeRefused},
	{name: "outside/tcp/routed", from: outsideIP, network: "tcp", qname: wildcardName, rcode: dns.RcodeRefused},
	{name: "inside/udp/forwarded", from: insideIP, network: "udp", qname: "elsewhere.test.", want: forwardedA},
	{name: "inside/tcp/forwarded", from: insideIP, network: "tcp", qname: "elsewhere.test.", want: forwardedA},
	{name: "inside/udp/routed", from: insideIP, network: "udp", qname: exactName, want: answer4},
	{name: "inside/tcp/routed", from: insideIP, network: "tcp", qname: exactName, want: answer4},
}

// TestAllowRefusesOutsideClients is the open-resolver attack: with
// dns.forward set, the responder recursed for any client, listen.allow
// or not. A client outside Allow now gets REFUSED (no recursion
// available) for every query, routed names included, over UDP (batched
// and one datagram at a time) and TCP, and the forwarder never sees it;
// a client inside is answered and forwarded as before.
func TestAllowRefusesOutsideClients(t *testing.T) {
	up := newUpstream(t, answerA(forwardedA))
	for _, noBatch := range []bool{false, true} {
		m := NewMetrics(nil)
		logs := testkit.NewLogSink()
		w := newWorld(t, Config{
			Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr},
			Allow:   []netip.Prefix{netip.MustParsePrefix(insideIP + "/32")},
			Metrics: m, Logger: logs.Logger(),
		}, "", func(s *Server) { s.noBatch = noBatch })
		for _, tc := range allowCases {
			t.Run(fmt.Sprintf("noBatch=%v/%s", noBatch, tc.name), func(t *testing.T) {
				before := up.hits.Load()
				q := new(dns.Msg)
				q.SetQuestion(tc.qname, dns.TypeA)
				if tc.edns {
					q.SetEdns0(4096, false)
				}
				r := exchangeFrom(t, tc.network, tc.from, w.addr, q)
				if r.Rcode != tc.rcode {
					t.Fatalf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
				}
				checkAllowReply(t, r, tc.want, tc.edns)
				wantFwd := int64(0)
				if tc.want == forwardedA {
					wantFwd = 1
				}
				if got := up.hits.Load() - before; got != wantFwd {
					t.Errorf("forwarder saw %d queries, want %d", got, wantFwd)
				}
			})
		}
		if err := w.server.Shutdown(t.Context()); err != nil { // every handler has counted
			t.Fatal(err)
		}
		if got := counterValue(t, m, "A", ResultDenied); got != 5 {
			t.Errorf("noBatch=%v: snigate_dns_queries_total{qtype=A,result=denied} = %v, want 5", noBatch, got)
		}
		if n := len(logs.Lines("dns: query refused: client address not in dns.allow")); n != 1 {
			t.Errorf("noBatch=%v: %d denied warnings for 5 queries, want 1 (rate-limited): %q", noBatch, n, logs.Lines())
		}
	}
}

// checkAllowReply checks the answer section (one A record of want, or
// none), and that a refusal offers no recursion and carries an OPT record
// exactly when the query had one.
func checkAllowReply(t *testing.T, r *dns.Msg, want string, edns bool) {
	t.Helper()
	if want == "" {
		if len(r.Answer) != 0 || r.RecursionAvailable || r.Authoritative {
			t.Errorf("refusal: answer %v, ra=%v aa=%v; want no answer, no RA, no AA", r.Answer, r.RecursionAvailable, r.Authoritative)
		}
		if (r.IsEdns0() != nil) != edns {
			t.Errorf("refusal has OPT %v, want %v (as the query)", r.IsEdns0() != nil, edns)
		}
		return
	}
	if len(r.Answer) != 1 {
		t.Fatalf("answer %v, want one A %s", r.Answer, want)
	}
	if a, ok := r.Answer[0].(*dns.A); !ok || a.A.String() != want {
		t.Errorf("answer %v, want A %s", r.Answer[0], want)
	}
}

// TestAllowAppliesOnSetHandler: a reload (a new Handler given to
// SetHandler) applies a changed allow list to the next query.
func TestAllowAppliesOnSetHandler(t *testing.T) {
	only := func(ip string) Config {
		return Config{Names: testNames(t), Answer: testAnswer(), Allow: []netip.Prefix{netip.MustParsePrefix(ip + "/32")}}
	}
	w := newWorld(t, only(insideIP), "")
	ask := func() int {
		q := new(dns.Msg)
		q.SetQuestion(exactName, dns.TypeA)
		return exchangeFrom(t, "udp", outsideIP, w.addr, q).Rcode
	}
	if rc := ask(); rc != dns.RcodeRefused {
		t.Fatalf("before the reload: rcode %s, want REFUSED", dns.RcodeToString[rc])
	}
	h, err := New(only(outsideIP))
	if err != nil {
		t.Fatal(err)
	}
	w.server.SetHandler(h)
	if rc := ask(); rc != dns.RcodeSuccess {
		t.Fatalf("after the reload: rcode %s, want NOERROR", dns.RcodeToString[rc])
	}
}

func TestAllowList(t *testing.T) {
	pfx := func(ss ...string) allowList {
		var out allowList
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	tests := []struct {
		name string
		list allowList
		ip   netip.Addr
		want bool
	}{
		{name: "empty list allows all", list: nil, ip: netip.MustParseAddr("203.0.113.1"), want: true},
		{name: "empty list allows the invalid address", list: nil, ip: netip.Addr{}, want: true},
		{name: "inside", list: pfx("10.0.0.0/8"), ip: netip.MustParseAddr("10.1.2.3"), want: true},
		{name: "outside", list: pfx("10.0.0.0/8"), ip: netip.MustParseAddr("11.1.2.3"), want: false},
		{name: "mapped IPv4 from a dual-stack socket", list: pfx("127.0.0.1/32"), ip: netip.MustParseAddr("::ffff:127.0.0.1"), want: true},
		{name: "mapped IPv4 outside", list: pfx("127.0.0.1/32"), ip: netip.MustParseAddr("::ffff:127.0.0.2"), want: false},
		{name: "zoned link-local", list: pfx("fe80::/10"), ip: netip.MustParseAddr("fe80::1%eth0"), want: true},
		{name: "invalid address", list: pfx("0.0.0.0/0", "::/0"), ip: netip.Addr{}, want: false},
		{name: "IPv6 in a mixed list", list: pfx("10.0.0.0/8", "2001:db8::/32"), ip: netip.MustParseAddr("2001:db8::5"), want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.list.allows(tc.ip); got != tc.want {
				t.Errorf("allows(%v) = %v, want %v", tc.ip, got, tc.want)
			}
		})
	}
}

func TestAllowAddr(t *testing.T) {
	list := allowList{netip.MustParsePrefix("127.0.0.1/32")}
	tests := []struct {
		name string
		addr net.Addr
		want bool
	}{
		{name: "udp", addr: &net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5300}, want: true},
		{name: "tcp", addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 5300}, want: true},
		{name: "tcp outside", addr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 5300}, want: false},
		{name: "other type with host:port", addr: fakeAddr("127.0.0.1:53"), want: true},
		{name: "unreadable", addr: fakeAddr("pipe"), want: false},
		{name: "nil", addr: nil, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := list.allowsAddr(tc.addr); got != tc.want {
				t.Errorf("allowsAddr(%v) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "fake" }
func (a fakeAddr) String() string  { return string(a) }
