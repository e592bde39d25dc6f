package dnsresponder

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// closedPort is a UDP address nothing listens on: queries to it fail at
// once with "connection refused".
func closedPort(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return addr
}

// answeringTimeout is the forward timeout of tests in which a forwarder
// that answers must never be taken for one that does not: on a loaded
// machine (race detector, busy CPUs) an in-process answer can take a few
// hundred milliseconds. Silent forwarders cost a test this much each.
const answeringTimeout = time.Second

func TestForwarding(t *testing.T) {
	good := newUpstream(t, answerA(forwardedA))
	silentUp := newUpstream(t, silent)
	servfail := newUpstream(t, rcodeHandler(dns.RcodeServerFailure))
	refused := newUpstream(t, rcodeHandler(dns.RcodeRefused))
	nxdomain := newUpstream(t, rcodeHandler(dns.RcodeNameError))
	goodAnswer := []string{"example.org. 60 IN A " + forwardedA}
	tests := []struct {
		name    string
		forward []string
		rcode   int
		answer  []string
		hits    map[*upstream]int64 // queries each upstream must have seen
	}{
		{name: "relayed from the only forwarder", forward: []string{good.addr}, answer: goodAnswer,
			hits: map[*upstream]int64{good: 1}},
		{name: "failover after a timeout", forward: []string{silentUp.addr, good.addr}, answer: goodAnswer,
			hits: map[*upstream]int64{silentUp: 1, good: 1}},
		{name: "failover after SERVFAIL", forward: []string{servfail.addr, good.addr}, answer: goodAnswer,
			hits: map[*upstream]int64{servfail: 1, good: 1}},
		{name: "failover after connection refused", forward: []string{closedPort(t), good.addr}, answer: goodAnswer,
			hits: map[*upstream]int64{good: 1}},
		{name: "REFUSED is relayed, not failed over", forward: []string{refused.addr, good.addr},
			rcode: dns.RcodeRefused, hits: map[*upstream]int64{refused: 1, good: 0}},
		{name: "NXDOMAIN is relayed", forward: []string{nxdomain.addr}, rcode: dns.RcodeNameError,
			hits: map[*upstream]int64{nxdomain: 1}},
		{name: "never answering forwarder: SERVFAIL", forward: []string{silentUp.addr},
			rcode: dns.RcodeServerFailure, hits: map[*upstream]int64{silentUp: 1}},
		{name: "every forwarder SERVFAIL: SERVFAIL", forward: []string{servfail.addr, servfail.addr},
			rcode: dns.RcodeServerFailure, hits: map[*upstream]int64{servfail: 2}},
		{name: "no forwarder: REFUSED", rcode: dns.RcodeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[*upstream]int64{}
			for u := range tt.hits {
				before[u] = u.hits.Load()
			}
			w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: tt.forward,
				ForwardTimeout: answeringTimeout}, "")
			m := new(dns.Msg)
			m.SetQuestion("example.org.", dns.TypeA)
			m.Id = 4321
			r := exchange(t, "udp", w.addr, m) // checks the reply carries the client's ID
			if r.Rcode != tt.rcode {
				t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tt.rcode])
			}
			sameRRs(t, "answer", r.Answer, tt.answer)
			for u, want := range tt.hits {
				if got := u.hits.Load() - before[u]; got != want {
					t.Errorf("upstream %s saw %d queries, want %d", u.addr, got, want)
				}
			}
		})
	}
}

// TestForwardingBounded: three forwarders that never answer, each allowed
// 1s, must not hold the client longer than the 1.5s budget: the client
// gives up after 3s, so an unbounded walk (3s) would fail the exchange.
func TestForwardingBounded(t *testing.T) {
	silentUp := newUpstream(t, silent)
	w := newWorld(t, Config{Forward: []string{silentUp.addr, silentUp.addr, silentUp.addr},
		ForwardTimeout: time.Second, ForwardBudget: 1500 * time.Millisecond}, "")
	m := new(dns.Msg)
	m.SetQuestion("example.org.", dns.TypeA)
	c := &dns.Client{Timeout: 3 * time.Second}
	r, _, err := c.Exchange(m, w.addr)
	if err != nil {
		t.Fatalf("exchange: %v (the forward budget did not bound the query)", err)
	}
	if r.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if got := silentUp.hits.Load(); got != 2 {
		t.Errorf("silent upstream asked %d times, want 2 (the budget ends during the second)", got)
	}
}

// bigAnswer answers big.example.test. with n A records, truncating over
// UDP to the client's size like a real server, and counts TCP queries.
func bigAnswer(n int, tcpHits *atomic.Int64) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for i := range n {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
				A:   net.IPv4(10, 0, byte(i/256), byte(i%256)),
			})
		}
		if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
			tcpHits.Add(1)
		} else {
			size := dns.MinMsgSize
			if opt := r.IsEdns0(); opt != nil {
				size = int(opt.UDPSize())
			}
			m.Truncate(size)
		}
		w.WriteMsg(m)
	}
}

func TestLargeAnswer(t *testing.T) {
	const n = 200 // ~3.2 kB uncompressed: more than MaxUDPSize
	var tcpHits atomic.Int64
	up := newUpstream(t, bigAnswer(n, &tcpHits))
	w := newWorld(t, Config{Forward: []string{up.addr}}, "")
	tests := []struct {
		name      string
		network   string
		edns      uint16
		truncated bool
		maxSize   int // of the packed reply; 0: no limit
		upTCP     int64
	}{
		{name: "UDP without EDNS: TC within 512 bytes", network: "udp", truncated: true, maxSize: 512},
		{name: "UDP with EDNS 4096: TC within MaxUDPSize", network: "udp", edns: 4096, truncated: true, maxSize: MaxUDPSize},
		{name: "TCP without EDNS: whole, fetched over TCP", network: "tcp", upTCP: 1},
		{name: "TCP with EDNS 1232: whole, fetched over TCP", network: "tcp", edns: 1232, upTCP: 1},
		{name: "TCP with EDNS 65000: whole, over UDP", network: "tcp", edns: 65000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tcpHits.Load()
			r := query(t, tt.network, w.addr, "big.example.test.", dns.TypeA, tt.edns)
			if r.Truncated != tt.truncated {
				t.Errorf("TC = %v, want %v", r.Truncated, tt.truncated)
			}
			if !tt.truncated && len(r.Answer) != n {
				t.Errorf("%d records, want all %d", len(r.Answer), n)
			}
			if tt.truncated && len(r.Answer) >= n {
				t.Errorf("%d records in a truncated reply", len(r.Answer))
			}
			r.Compress = true // as it came on the wire
			if b, _ := r.Pack(); tt.maxSize > 0 && len(b) > tt.maxSize {
				t.Errorf("reply is %d bytes, want at most %d", len(b), tt.maxSize)
			}
			if got := tcpHits.Load() - before; got != tt.upTCP {
				t.Errorf("upstream asked over TCP %d times, want %d", got, tt.upTCP)
			}
		})
	}
}

// TestForwarderStateLogged: a forwarder going down and coming back is
// logged once each way, however many queries see it, and the gauge
// follows.
func TestForwarderStateLogged(t *testing.T) {
	var down atomic.Bool
	good := answerA(forwardedA)
	up := newUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		if !down.Load() {
			good(w, r)
		}
	})
	logs := testkit.NewLogSink()
	m := NewMetrics(prometheus.NewPedanticRegistry())
	w := newWorld(t, Config{Forward: []string{up.addr}, ForwardTimeout: answeringTimeout,
		Logger: logs.Logger(), Metrics: m}, "")
	steps := []struct {
		down          bool
		rcode         int
		failing, back int // log lines so far
		up            float64
	}{
		{false, dns.RcodeSuccess, 0, 0, 1},
		{true, dns.RcodeServerFailure, 1, 0, 0},
		{true, dns.RcodeServerFailure, 1, 0, 0},
		{true, dns.RcodeServerFailure, 1, 0, 0},
		{false, dns.RcodeSuccess, 1, 1, 1},
		{false, dns.RcodeSuccess, 1, 1, 1},
		{true, dns.RcodeServerFailure, 2, 1, 0},
	}
	for i, s := range steps {
		down.Store(s.down)
		r := query(t, "udp", w.addr, "example.org.", dns.TypeA, 0)
		if r.Rcode != s.rcode {
			t.Errorf("step %d: rcode %s, want %s", i, dns.RcodeToString[r.Rcode], dns.RcodeToString[s.rcode])
		}
		if got := len(logs.Lines("forwarder failing")); got != s.failing {
			t.Errorf("step %d: %d 'failing' lines, want %d", i, got, s.failing)
		}
		if got := len(logs.Lines("forwarder answering again")); got != s.back {
			t.Errorf("step %d: %d 'answering again' lines, want %d", i, got, s.back)
		}
		if got := gaugeValue(t, m, up.addr); got != s.up {
			t.Errorf("step %d: snigate_dns_upstream_up = %v, want %v", i, got, s.up)
		}
	}
}

// TestFailingForwarderTriedLast: once the first forwarder has failed, the
// next queries go to the second at once, until the retry interval lets one
// query try the first in its place again.
func TestFailingForwarderTriedLast(t *testing.T) {
	silentUp := newUpstream(t, silent)
	good := newUpstream(t, answerA(forwardedA))
	h, err := New(Config{Forward: []string{silentUp.addr, good.addr}, ForwardTimeout: answeringTimeout,
		Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64 // unix ns of the fake clock
	now.Store(time.Unix(1_700_000_000, 0).UnixNano())
	h.fwd.(*forwarders).now = func() time.Time { return time.Unix(0, now.Load()) }
	w := serveWorld(t, h, discardLogger(), "")
	steps := []struct {
		advance    time.Duration
		silentHits int64 // total so far
	}{
		{0, 1},                     // tried first, times out: now failing
		{time.Second, 1},           // skipped
		{time.Second, 1},           // skipped
		{RetryFailingEvery, 2},     // retry due: tried first again, fails
		{RetryFailingEvery / 2, 2}, // skipped again
	}
	for i, s := range steps {
		now.Add(int64(s.advance))
		r := query(t, "udp", w.addr, "example.org.", dns.TypeA, 0)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
			t.Fatalf("step %d: %v, want the second forwarder's answer", i, r)
		}
		if got := silentUp.hits.Load(); got != s.silentHits {
			t.Errorf("step %d: failing forwarder asked %d times in all, want %d", i, got, s.silentHits)
		}
	}
}

func TestMatchReply(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("example.org.", dns.TypeA)
	reply := func(edit func(*dns.Msg)) *dns.Msg {
		r := new(dns.Msg)
		r.SetReply(q)
		edit(r)
		return r
	}
	tests := []struct {
		name string
		r    *dns.Msg
		ok   bool
	}{
		{"same question", reply(func(*dns.Msg) {}), true},
		{"other case", reply(func(r *dns.Msg) { r.Question[0].Name = "EXAMPLE.org." }), true},
		{"other name", reply(func(r *dns.Msg) { r.Question[0].Name = "evil.example." }), false},
		{"other type", reply(func(r *dns.Msg) { r.Question[0].Qtype = dns.TypeAAAA }), false},
		{"no question, NOERROR", reply(func(r *dns.Msg) { r.Question = nil }), false},
		{"no question, REFUSED", reply(func(r *dns.Msg) { r.Question = nil; r.Rcode = dns.RcodeRefused }), true},
		{"not a response", reply(func(r *dns.Msg) { r.Response = false }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := matchReply(q, tt.r); (err == nil) != tt.ok {
				t.Errorf("matchReply: %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

// TestBudgetCutIsNotFailing: a forwarder that the query's budget cut short
// (before its own timeout) is not declared failing: it was not given its
// chance. The first forwarder gets its whole timeout and is.
//
// The first try is fair while at least ForwardTimeout of the budget is
// left when it starts: budget - timeout is how late it may start. At 50ms
// (150ms of 200ms) a query handled late on a loaded machine found the
// first forwarder cut short too, and no forwarder was declared failing.
func TestBudgetCutIsNotFailing(t *testing.T) {
	first, second := newUpstream(t, silent), newUpstream(t, silent)
	logs := testkit.NewLogSink()
	m := NewMetrics(prometheus.NewPedanticRegistry())
	w := newWorld(t, Config{Forward: []string{first.addr, second.addr}, ForwardTimeout: time.Second,
		ForwardBudget: 1500 * time.Millisecond, Logger: logs.Logger(), Metrics: m}, "")
	if r := query(t, "udp", w.addr, "example.org.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	if n := len(logs.Lines("forwarder failing")); n != 1 {
		t.Errorf("%d 'failing' lines, want 1 (the first forwarder)", n)
	}
	for addr, want := range map[string]float64{first.addr: 0, second.addr: 1} {
		if got := gaugeValue(t, m, addr); got != want {
			t.Errorf("snigate_dns_upstream_up{upstream=%q} = %v, want %v", addr, got, want)
		}
	}
}
