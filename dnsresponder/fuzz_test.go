package dnsresponder

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// recorder is a dns.ResponseWriter that keeps what is written.
type recorder struct {
	tcp  bool
	msgs []*dns.Msg
	wire [][]byte
	errs []error
}

var _ dns.ResponseWriter = (*recorder)(nil)

func (r *recorder) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (r *recorder) RemoteAddr() net.Addr {
	if r.tcp {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}
}
func (r *recorder) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		r.errs = append(r.errs, err)
		return err
	}
	r.msgs, r.wire = append(r.msgs, m), append(r.wire, b)
	return nil
}
func (r *recorder) Write(b []byte) (int, error) {
	m := new(dns.Msg)
	if err := m.Unpack(b); err != nil {
		r.errs = append(r.errs, err)
		return 0, err
	}
	r.msgs, r.wire = append(r.msgs, m), append(r.wire, bytes.Clone(b))
	return len(b), nil
}
func (r *recorder) Close() error        { return nil }
func (r *recorder) TsigStatus() error   { return nil }
func (r *recorder) TsigTimersOnly(bool) {}
func (r *recorder) Hijack()             {}

// echoForwarder stands in for the network: it answers with as many A
// records as the first label of the name is long, so large replies and
// truncation are exercised too.
type echoForwarder struct{}

func (echoForwarder) exchange(req *dns.Msg, _ bool) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	q := req.Question[0]
	n := len(q.Name) % 64
	for i := range n {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1},
			A:   net.IPv4(10, 0, 0, byte(i)),
		})
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(4096, opt.Do())
	}
	return m
}

func fuzzHandler(t testing.TB) *Handler {
	h, err := New(Config{Names: testNames(t), Answer: testAnswer(), TTL: 30 * time.Second, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h.fwd = echoForwarder{}
	return h
}

func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{goodQuery(t)}
	for _, qt := range []uint16{dns.TypeAAAA, dns.TypeHTTPS, dns.TypeANY, dns.TypeAXFR} {
		seeds = append(seeds, packed(t, 7, func(m *dns.Msg) { m.Question[0].Qtype = qt }))
	}
	seeds = append(seeds,
		packed(t, 8, func(m *dns.Msg) { m.Question[0].Name = "A.Apps.Example.TEST." }),
		packed(t, 9, func(m *dns.Msg) { m.Question[0].Name = "forwarded-with-a-long-first-label-for-truncation.example.org." }),
		packed(t, 10, func(m *dns.Msg) { m.SetEdns0(4096, true) }),
		packed(t, 11, func(m *dns.Msg) {
			m.Question[0].Name = "big-answer-over-edns-to-the-forwarder.example."
			m.SetEdns0(700, false)
		}),
	)
	for _, tc := range badCases(t) {
		seeds = append(seeds, tc.packet)
	}
	return seeds
}

// FuzzHandler feeds arbitrary bytes to the handler the way the server
// does: unparseable ones to InvalidMsg, the rest to ServeDNS over UDP and
// TCP. Properties: no panic; at most one reply, packable, with the query's
// ID, never to a response; over UDP within the client's size.
func FuzzHandler(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(b); err != nil {
			h.InvalidMsg(b, err)
			return
		}
		for _, tcp := range []bool{false, true} {
			w := &recorder{tcp: tcp}
			h.ServeDNS(w, req)
			checkFuzzReply(t, req, w)
		}
	})
}

func checkFuzzReply(t *testing.T, req *dns.Msg, w *recorder) {
	t.Helper()
	if len(w.errs) > 0 {
		t.Fatalf("reply does not pack: %v", w.errs[0])
	}
	switch {
	case len(w.msgs) > 1:
		t.Fatalf("%d replies to one query", len(w.msgs))
	case len(w.msgs) == 0:
		if !req.Response {
			t.Fatalf("no reply to a query (not a response)")
		}
		return
	case req.Response:
		t.Fatalf("answered a response")
	}
	r := w.msgs[0]
	if r.Id != req.Id || !r.Response {
		t.Fatalf("reply ID %d QR %v, query ID %d", r.Id, r.Response, req.Id)
	}
	if !w.tcp && len(w.wire[0]) > udpSize(req) {
		t.Fatalf("UDP reply of %d bytes, client takes %d", len(w.wire[0]), udpSize(req))
	}
}
