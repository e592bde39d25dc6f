package dnsresponder

import (
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// packWriter packs every reply, as miekg/dns's writer does, and drops it.
type packWriter struct{ recorder }

func (w *packWriter) WriteMsg(m *dns.Msg) error {
	_, err := m.Pack()
	return err
}

func (w *packWriter) Write(b []byte) (int, error) { return len(b), nil }

func (w *packWriter) RemoteAddr() net.Addr { return benchClient }

var benchClient = &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000}

func benchHandler(b *testing.B, forward []string) *Handler {
	b.Helper()
	h, err := New(Config{Names: testNames(b), Answer: testAnswer(), TTL: 30 * time.Second, Forward: forward,
		Logger: discardLogger(), Metrics: NewMetrics(prometheus.NewRegistry())})
	if err != nil {
		b.Fatal(err)
	}
	return h
}

func benchQuery(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	return m
}

func benchServe(b *testing.B, h *Handler, req *dns.Msg) {
	w := &packWriter{}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeDNS(w, req)
	}
}

func BenchmarkHandlerRouted(b *testing.B) {
	benchServe(b, benchHandler(b, nil), benchQuery(exactName, dns.TypeA))
}

func BenchmarkHandlerRoutedWildcard(b *testing.B) {
	benchServe(b, benchHandler(b, nil), benchQuery("Node-7.APPS.example.test.", dns.TypeAAAA))
}

func BenchmarkHandlerRoutedNoData(b *testing.B) {
	benchServe(b, benchHandler(b, nil), benchQuery(exactName, dns.TypeHTTPS))
}

func BenchmarkHandlerRoutedEDNS(b *testing.B) {
	req := benchQuery(exactName, dns.TypeA)
	req.SetEdns0(1232, false)
	benchServe(b, benchHandler(b, nil), req)
}

func BenchmarkHandlerRefused(b *testing.B) {
	benchServe(b, benchHandler(b, nil), benchQuery("example.org.", dns.TypeA))
}

// BenchmarkHandlerForwarded goes to an in-process resolver over loopback
// UDP: mostly the cost of the exchange.
func BenchmarkHandlerForwarded(b *testing.B) {
	up := newUpstream(b, answerA(forwardedA))
	benchServe(b, benchHandler(b, []string{up.addr}), benchQuery("example.org.", dns.TypeA))
}

// BenchmarkHandlerForwardedOverhead is the handler's own cost around a
// forwarder that answers without a network.
func BenchmarkHandlerForwardedOverhead(b *testing.B) {
	h := benchHandler(b, nil)
	h.fwd = echoForwarder{}
	benchServe(b, h, benchQuery("abc.example.org.", dns.TypeA))
}

// BenchmarkServerUDP is one query over loopback UDP through the whole
// server, client included.
func BenchmarkServerUDP(b *testing.B) {
	w := serveWorld(b, benchHandler(b, nil), discardLogger(), "")
	c, err := net.Dial("udp", w.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	q := goodQuery(b)
	buf := make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(q); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// benchWire is the UDP fast path: the reply to query built from its bytes
// and counted, as the server's reading goroutines do.
func benchWire(b *testing.B, query []byte) {
	h := benchHandler(b, nil)
	buf := make([]byte, 0, MaxUDPSize)
	if _, ok := h.answerWire(buf, query); !ok {
		b.Fatal("not answered on the fast path")
	}
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		r, _ := h.answerWire(buf, query)
		h.wroteWire(r, start)
	}
}

func BenchmarkWireRouted(b *testing.B) { benchWire(b, goodQuery(b)) }

func BenchmarkWireRoutedWildcard(b *testing.B) {
	benchWire(b, packed(b, 1, func(m *dns.Msg) {
		m.Question[0] = dns.Question{Name: "Node-7.APPS.example.test.", Qtype: dns.TypeAAAA, Qclass: dns.ClassINET}
	}))
}

func BenchmarkWireRoutedNoData(b *testing.B) {
	benchWire(b, packed(b, 1, func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeHTTPS }))
}

func BenchmarkWireRoutedEDNS(b *testing.B) {
	benchWire(b, packed(b, 1, func(m *dns.Msg) { m.SetEdns0(1232, false) }))
}
