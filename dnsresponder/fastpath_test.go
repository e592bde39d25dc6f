package dnsresponder

import (
	"context"
	"encoding/binary"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fastHandlers are handlers whose fast and slow paths must agree: with and
// without forwarders (RA), answers of both families, one, none, and more
// than a 512-byte reply holds.
func fastHandlers(t testing.TB) map[string]*Handler {
	many := make([]netip.Addr, 0, 40)
	for i := range 40 {
		many = append(many, netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}))
	}
	cfgs := map[string]Config{
		"both families":   {Answer: testAnswer()},
		"forwarders":      {Answer: testAnswer(), Forward: []string{"192.0.2.53:53"}},
		"IPv4 only":       {Answer: testAnswer()[:1], TTL: 2 * time.Hour},
		"IPv6 only":       {Answer: testAnswer()[1:]},
		"no answer":       {},
		"many addresses":  {Answer: many},
		"IPv4-mapped too": {Answer: append(testAnswer(), netip.MustParseAddr("::ffff:192.0.2.77"))},
	}
	// A check with one of its two addresses down, and one that left its
	// own address out: the answers follow them on both paths.
	checked, f := newTestCheck(t, nil, netip.MustParseAddr(answer4), netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr(answer6))
	f.set(netip.MustParseAddr("192.0.2.11"), true, false)
	checked.CheckOnce(context.Background())
	checked.CheckOnce(context.Background())
	draining, _ := newTestCheck(t, nil, netip.MustParseAddr(answer4), netip.MustParseAddr(answer6))
	draining.LeaveOut([]netip.Addr{netip.MustParseAddr(answer6)})
	cfgs["checked, one down"] = Config{AnswerCheck: checked}
	cfgs["checked, own left out"] = Config{AnswerCheck: draining}
	hs := make(map[string]*Handler, len(cfgs))
	for name, cfg := range cfgs {
		cfg.Names, cfg.Logger = testNames(t), discardLogger()
		h, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if h.fwd != nil {
			h.fwd = echoForwarder{}
		}
		hs[name] = h
	}
	return hs
}

// slowReply is the reply ServeDNS writes over UDP for the query in b, nil
// when there is none (or b does not unpack).
func slowReply(t testing.TB, h *Handler, b []byte) *dns.Msg {
	req := new(dns.Msg)
	if err := req.Unpack(b); err != nil {
		return nil
	}
	w := &recorder{}
	h.ServeDNS(w, req)
	if len(w.msgs) != 1 {
		return nil
	}
	return w.msgs[0]
}

// sameAsSlowPath fails unless the fast path's reply to b, unpacked, equals
// the slow path's. It reports whether the fast path answered.
func sameAsSlowPath(t testing.TB, h *Handler, b []byte) bool {
	t.Helper()
	r, ok := h.answerWire(nil, b)
	if !ok {
		return false
	}
	fast := new(dns.Msg)
	if err := fast.Unpack(r.b); err != nil {
		t.Fatalf("fast reply does not unpack: %v\n% x", err, r.b)
	}
	slow := slowReply(t, h, b)
	if slow == nil {
		t.Fatalf("fast path answered a query the slow path does not:\n%v", fast)
	}
	fast.Compress, slow.Compress = false, false
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("fast reply differs from the slow one:\nfast:\n%v\nslow:\n%v", fast, slow)
	}
	if len(r.b) > udpSize(slowReqOf(t, b)) {
		t.Fatalf("fast reply of %d bytes, client takes %d", len(r.b), udpSize(slowReqOf(t, b)))
	}
	wantResult := ResultAnswered
	if len(slow.Answer) == 0 {
		wantResult = ResultNoData
	}
	if r.result != wantResult || r.qtype != slow.Question[0].Qtype {
		t.Fatalf("fast path counts %s/%s, want %s/%s", qtypeName(r.qtype), r.result,
			qtypeName(slow.Question[0].Qtype), wantResult)
	}
	return true
}

func slowReqOf(t testing.TB, b []byte) *dns.Msg {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		t.Fatal(err)
	}
	return m
}

// wireCase is a query and whether the fast path must answer it (with the
// "both families" handler).
type wireCase struct {
	name string
	b    []byte
	fast bool
}

func wireCases(t testing.TB) []wireCase {
	q := func(id uint16, name string, qtype uint16, edit func(m *dns.Msg)) []byte {
		return packed(t, id, func(m *dns.Msg) {
			m.Question[0] = dns.Question{Name: name, Qtype: qtype, Qclass: dns.ClassINET}
			if edit != nil {
				edit(m)
			}
		})
	}
	edns := func(size uint16, do bool) func(*dns.Msg) { return func(m *dns.Msg) { m.SetEdns0(size, do) } }
	var cases []wireCase
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeANY, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeMX,
		dns.TypeTXT, dns.TypeOPT, 65000} {
		for _, n := range []string{exactName, wildcardName, "REGISTRY.Example.Test.", "node-1b.apps.EXAMPLE.test."} {
			cases = append(cases, wireCase{name: n + " " + qtypeName(qt), b: q(1, n, qt, nil), fast: true})
		}
	}
	rdcd := func(m *dns.Msg) {
		m.RecursionDesired, m.CheckingDisabled, m.AuthenticatedData, m.Zero = false, true, true, true
	}
	cases = append(cases,
		wireCase{"no RD, CD and AD set", q(2, exactName, dns.TypeA, rdcd), true},
		wireCase{"EDNS 1232", q(3, exactName, dns.TypeA, edns(1232, false)), true},
		wireCase{"EDNS 4096 DO", q(4, exactName, dns.TypeAAAA, edns(4096, true)), true},
		wireCase{"EDNS below 512", q(5, exactName, dns.TypeHTTPS, edns(100, false)), true},
		wireCase{"EDNS ANY", q(6, wildcardName, dns.TypeANY, edns(1232, true)), true},
		wireCase{"forwarded name", q(7, "example.org.", dns.TypeA, nil), false},
		wireCase{"one label too deep", q(8, "x.a.apps.example.test.", dns.TypeA, nil), false},
		wireCase{"AXFR", q(9, exactName, dns.TypeAXFR, nil), false},
		wireCase{"IXFR", q(10, exactName, dns.TypeIXFR, nil), false},
		wireCase{"class CH", q(11, exactName, dns.TypeA, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), false},
		wireCase{"EDNS version 1", q(12, exactName, dns.TypeA, func(m *dns.Msg) {
			m.SetEdns0(1232, false)
			m.IsEdns0().SetVersion(1)
		}), false},
		wireCase{"EDNS with a cookie", q(13, exactName, dns.TypeA, func(m *dns.Msg) {
			m.SetEdns0(1232, false)
			m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
		}), false},
		wireCase{"escaped dot in a label", q(14, `a\.b.apps.example.test.`, dns.TypeA, nil), false},
		wireCase{"label with a space", q(15, `a\032b.apps.example.test.`, dns.TypeA, nil), false},
		wireCase{"two questions", packed(t, 16, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) }), false},
		wireCase{"a response", packed(t, 17, func(m *dns.Msg) { m.Response = true }), false},
		wireCase{"opcode NOTIFY", packed(t, 18, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), false},
		wireCase{"an answer record in the query", packed(t, 19, func(m *dns.Msg) {
			m.Answer = rrs(t, exactName+" 30 IN A 192.0.2.1")
		}), false},
		wireCase{"root name", q(20, ".", dns.TypeA, nil), false},
		wireCase{"trailing byte", append(q(21, exactName, dns.TypeA, nil), 0), false},
		wireCase{"cut short", q(22, exactName, dns.TypeA, nil)[:headerLen+10], false},
		wireCase{"compressed name", compressedQuery(), false},
		wireCase{"underscore label under the wildcard", q(23, "node_1.apps.example.test.", dns.TypeA, nil), false},
		wireCase{"star label under the wildcard", q(24, "*.apps.example.test.", dns.TypeA, nil), false},
		wireCase{"hyphen-first label under the wildcard", q(25, "-x.apps.example.test.", dns.TypeA, nil), false},
	)
	return cases
}

// compressedQuery asks about a name whose second label is a pointer back
// to the first: legal for miekg/dns, never sent by stub resolvers.
func compressedQuery() []byte {
	b := header(0x77, 0x0100, 1, 0, 0, 0)
	b = append(b, 3, 'a', 'b', 'c', 0xc0, headerLen)
	return binary.BigEndian.AppendUint32(b, uint32(dns.TypeA)<<16|dns.ClassINET)
}

// TestFastPathMatchesSlowPath: for every query the fast path answers, the
// reply unpacks to exactly what ServeDNS writes; the queries it must leave
// to the slow path, it does.
func TestFastPathMatchesSlowPath(t *testing.T) {
	cases := wireCases(t)
	for hname, h := range fastHandlers(t) {
		for _, tc := range cases {
			t.Run(hname+"/"+tc.name, func(t *testing.T) {
				fast := sameAsSlowPath(t, h, tc.b)
				if hname == "both families" && fast != tc.fast {
					t.Errorf("fast path answered = %v, want %v", fast, tc.fast)
				}
			})
		}
	}
	// 40 A records do not fit 512 bytes: the slow path truncates.
	if _, ok := fastHandlers(t)["many addresses"].answerWire(nil, goodQuery(t)); ok {
		t.Error("fast path answered with more than the client takes")
	}
}

// TestFastPathCounts: a fast-path answer is counted like the slow path's.
func TestFastPathCounts(t *testing.T) {
	m := NewMetrics(nil)
	h, err := New(Config{Names: testNames(t), Answer: testAnswer(), Metrics: m, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, qt := range []uint16{dns.TypeA, dns.TypeHTTPS} {
		r, ok := h.answerWire(nil, packed(t, 1, func(m *dns.Msg) { m.Question[0].Qtype = qt }))
		if !ok {
			t.Fatalf("%s: not answered on the fast path", qtypeName(qt))
		}
		h.wroteWire(r, time.Now())
	}
	for _, c := range []struct{ qtype, result string }{{"A", ResultAnswered}, {"HTTPS", ResultNoData}} {
		if got := counterValue(t, m, c.qtype, c.result); got != 1 {
			t.Errorf("%s/%s counted %v times, want 1", c.qtype, c.result, got)
		}
		if got := histogramCount(t, m, c.result); got != 1 {
			t.Errorf("%s duration observed %d times, want 1", c.result, got)
		}
	}
}

// FuzzFastPath: whatever the bytes, a fast-path reply unpacks to the slow
// path's reply.
func FuzzFastPath(f *testing.F) {
	for _, tc := range wireCases(f) {
		f.Add(tc.b)
	}
	hs := fastHandlers(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, h := range hs {
			sameAsSlowPath(t, h, b)
		}
	})
}
