package dnsresponder

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
)

// responderCase is one query through the running responder and the reply
// it must get, as zone text. forwarded says whether the upstream must have
// seen it.
type responderCase struct {
	name      string
	qname     string
	qtype     uint16
	rcode     int
	aa        bool
	answer    []string
	ns        []string
	forwarded bool
}

func routedCases() []responderCase {
	var cases []responderCase
	for _, n := range []struct{ kind, qname string }{{"exact", exactName}, {"wildcard", wildcardName}} {
		cases = append(cases,
			responderCase{name: n.kind + " A", qname: n.qname, qtype: dns.TypeA, aa: true,
				answer: []string{n.qname + " 30 IN A " + answer4}},
			responderCase{name: n.kind + " AAAA", qname: n.qname, qtype: dns.TypeAAAA, aa: true,
				answer: []string{n.qname + " 30 IN AAAA " + answer6}})
		for _, qt := range []uint16{dns.TypeHTTPS, dns.TypeSVCB, dns.TypeMX, dns.TypeTXT} {
			cases = append(cases, responderCase{name: n.kind + " " + dns.TypeToString[qt], qname: n.qname,
				qtype: qt, aa: true, ns: []string{soaFor(n.qname, 30)}})
		}
	}
	return append(cases,
		responderCase{name: "mixed case", qname: "Registry.EXAMPLE.test.", qtype: dns.TypeA, aa: true,
			answer: []string{"Registry.EXAMPLE.test. 30 IN A " + answer4}},
		responderCase{name: "mixed case wildcard HTTPS", qname: "B.Apps.Example.Test.", qtype: dns.TypeHTTPS, aa: true,
			ns: []string{soaFor("B.Apps.Example.Test.", 30)}},
		responderCase{name: "pattern configured with trailing dot", qname: "dotted.example.test.", qtype: dns.TypeAAAA,
			aa: true, answer: []string{"dotted.example.test. 30 IN AAAA " + answer6}},
		responderCase{name: "one label too deep is forwarded", qname: "x.a.apps.example.test.", qtype: dns.TypeA,
			answer: []string{"x.a.apps.example.test. 60 IN A " + forwardedA}, forwarded: true},
		responderCase{name: "wildcard apex is forwarded", qname: "apps.example.test.", qtype: dns.TypeA,
			answer: []string{"apps.example.test. 60 IN A " + forwardedA}, forwarded: true},
		responderCase{name: "other name forwarded", qname: "example.org.", qtype: dns.TypeA,
			answer: []string{"example.org. 60 IN A " + forwardedA}, forwarded: true},
	)
}

// TestResponderWildcardMatchesOneValidLabel is issue 14 item 8 for DNS:
// the wildcard "*.apps.example.test" answers for one valid label below
// it; a first label that is not a valid host label ("*", "-x", "a_b") is
// not routed and goes to the forwarders, over UDP (fast path) and TCP.
func TestResponderWildcardMatchesOneValidLabel(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	up := newUpstream(t, answerA(forwardedA))
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), TTL: 30 * time.Second,
		Forward: []string{up.addr}}, "")
	forwarded := func(name string) responderCase {
		return responderCase{name: name, qname: name, qtype: dns.TypeA, answer: []string{name + " 60 IN A " + forwardedA}, forwarded: true}
	}
	cases := []responderCase{
		{name: "63-byte label", qname: label63 + ".apps.example.test.", qtype: dns.TypeA, aa: true,
			answer: []string{label63 + ".apps.example.test. 30 IN A " + answer4}},
		forwarded("*.apps.example.test."),
		forwarded("-x.apps.example.test."),
		forwarded("x-.apps.example.test."),
		forwarded("a_b.apps.example.test."),
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range cases {
			t.Run(network+"/"+tc.name, func(t *testing.T) { checkResponder(t, w.addr, network, up, tc) })
		}
	}
}

func TestResponderRouted(t *testing.T) {
	up := newUpstream(t, answerA(forwardedA))
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), TTL: 30 * time.Second,
		Forward: []string{up.addr}}, "")
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range routedCases() {
			t.Run(network+"/"+tc.name, func(t *testing.T) { checkResponder(t, w.addr, network, up, tc) })
		}
	}
}

func TestResponderIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here (%v): skipping the [::1] test", err)
	}
	ln.Close()
	up := newUpstream(t, answerA(forwardedA))
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}}, "::1")
	if !strings.HasPrefix(w.addr, "[::1]:") {
		t.Fatalf("listening on %s, want [::1]", w.addr)
	}
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range routedCases()[:2] {
			t.Run(network+"/"+tc.name, func(t *testing.T) { checkResponder(t, w.addr, network, up, tc) })
		}
		tc := routedCases()[len(routedCases())-1]
		t.Run(network+"/"+tc.name, func(t *testing.T) { checkResponder(t, w.addr, network, up, tc) })
	}
}

// TestResponderWildcardAddress serves on 0.0.0.0 (replies leave from the
// address asked, through IP_PKTINFO) rather than on one address.
func TestResponderWildcardAddress(t *testing.T) {
	up := newUpstream(t, answerA(forwardedA))
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}}, "0.0.0.0")
	_, port, _ := net.SplitHostPort(w.addr)
	addr := net.JoinHostPort("127.0.0.1", port)
	for _, network := range []string{"udp", "tcp"} {
		for _, tc := range routedCases()[:2] {
			t.Run(network+"/"+tc.name, func(t *testing.T) { checkResponder(t, addr, network, up, tc) })
		}
	}
}

func checkResponder(t *testing.T, addr, network string, up *upstream, tc responderCase) {
	t.Helper()
	before := up.hits.Load()
	r := query(t, network, addr, tc.qname, tc.qtype, 0)
	if r.Rcode != tc.rcode {
		t.Errorf("rcode %s, want %s", dns.RcodeToString[r.Rcode], dns.RcodeToString[tc.rcode])
	}
	if r.Authoritative != tc.aa {
		t.Errorf("AA = %v, want %v", r.Authoritative, tc.aa)
	}
	if !r.RecursionAvailable {
		t.Error("RA not set although forwarders are configured")
	}
	sameRRs(t, "answer", r.Answer, tc.answer)
	sameRRs(t, "authority", r.Ns, tc.ns)
	if r.IsEdns0() != nil {
		t.Error("OPT in a reply to a query without one")
	}
	if got := up.hits.Load() - before; got != map[bool]int64{false: 0, true: 1}[tc.forwarded] {
		t.Errorf("upstream saw %d queries, forwarded = %v", got, tc.forwarded)
	}
}

func TestResponderMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	up := newUpstream(t, answerA(forwardedA))
	w := newWorld(t, Config{Names: testNames(t), Answer: testAnswer(), Forward: []string{up.addr}, Metrics: m}, "")
	query(t, "udp", w.addr, exactName, dns.TypeA, 0)
	query(t, "tcp", w.addr, exactName, dns.TypeA, 0)
	query(t, "udp", w.addr, exactName, dns.TypeHTTPS, 0)
	query(t, "udp", w.addr, "example.org.", dns.TypeA, 0)
	query(t, "udp", w.addr, exactName, 65000, 0)
	if err := w.server.Shutdown(t.Context()); err != nil { // every handler has counted
		t.Fatal(err)
	}
	want := []struct {
		qtype, result string
		n             float64
	}{
		{"A", ResultAnswered, 2}, {"HTTPS", ResultNoData, 1}, {"A", ResultForwarded, 1}, {qtypeOther, ResultNoData, 1},
	}
	for _, w := range want {
		if got := counterValue(t, m, w.qtype, w.result); got != w.n {
			t.Errorf("snigate_dns_queries_total{qtype=%q,result=%q} = %v, want %v", w.qtype, w.result, got, w.n)
		}
	}
	for result, n := range map[string]uint64{ResultAnswered: 2, ResultNoData: 2, ResultForwarded: 1, ResultServFail: 0} {
		if got := histogramCount(t, m, result); got != n {
			t.Errorf("snigate_dns_query_duration_seconds_count{result=%q} = %d, want %d", result, got, n)
		}
	}
}

// TestMetricNames is the contract test: the names in the contract exist.
func TestMetricNames(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := NewMetrics(reg)
	m.query("A", ResultAnswered, time.Millisecond)
	m.upstream("10.0.0.1:53", upstreamOK)
	m.setUpstreamUp("10.0.0.1:53", true)
	for _, name := range []string{"snigate_dns_queries_total", "snigate_dns_query_duration_seconds",
		"snigate_dns_upstream_up", "snigate_dns_upstream_requests_total"} {
		if _, found := testkit.Gathered(t, reg, name, nil); !found {
			t.Errorf("metric %s not registered", name)
		}
	}
	var nilMetrics *Metrics
	nilMetrics.query("A", ResultAnswered, 0) // must not panic
	nilMetrics.upstream("x", upstreamOK)
	nilMetrics.setUpstreamUp("x", false)
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "forward without port", cfg: Config{Forward: []string{"10.96.0.10"}},
			want: `dns forward[0] "10.96.0.10": want host:port such as 10.96.0.10:53`},
		{name: "valid single address", cfg: Config{Answer: testAnswer()[:1:1]},
			want: ""},
		{name: "negative ttl", cfg: Config{TTL: -time.Second}, want: "dns ttl -1s: want a duration of zero or more"},
		{name: "negative timeout", cfg: Config{ForwardTimeout: -1}, want: "dns forward timeout"},
		{name: "negative budget", cfg: Config{ForwardBudget: -1}, want: "dns forward budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	cfg := Config{Answer: append(testAnswer(), netipZero())}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "dns answer[2]") {
		t.Errorf("New with a zero address: %v, want an error naming answer[2]", err)
	}
}
