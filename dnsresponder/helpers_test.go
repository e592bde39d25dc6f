package dnsresponder

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/names"
)

// Routed names of the test world, and the addresses given for them.
const (
	exactName    = "registry.example.test."
	wildcardName = "a.apps.example.test."
	answer4      = "192.0.2.10"
	answer6      = "2001:db8::10"
	// forwardedA is what the in-process upstream answers for any name.
	forwardedA = "198.51.100.7"
)

func testNames(t testing.TB, patterns ...string) *names.Table[struct{}] {
	t.Helper()
	if len(patterns) == 0 {
		patterns = []string{"registry.example.test", "*.apps.example.test", "Dotted.Example.TEST."}
	}
	var routed names.Table[struct{}]
	for _, p := range patterns {
		if err := routed.Add(p, struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	return &routed
}

func testAnswer() []netip.Addr {
	return []netip.Addr{netip.MustParseAddr(answer4), netip.MustParseAddr(answer6)}
}

// rrs parses zone text, one record per string.
func rrs(t testing.TB, zone ...string) []dns.RR {
	t.Helper()
	var out []dns.RR
	for _, z := range zone {
		rr, err := dns.NewRR(z)
		if err != nil {
			t.Fatalf("bad zone text %q: %v", z, err)
		}
		out = append(out, rr)
	}
	return out
}

// sameRRs compares records by their zone text.
func sameRRs(t testing.TB, section string, got []dns.RR, want []string) {
	t.Helper()
	var g, w []string
	for _, rr := range got {
		g = append(g, rr.String())
	}
	for _, rr := range rrs(t, want...) {
		w = append(w, rr.String())
	}
	if !slices.Equal(g, w) {
		t.Errorf("%s section:\n got %q\nwant %q", section, g, w)
	}
}

// soaFor is the zone text of the SOA a NODATA answer for name carries.
func soaFor(name string, ttl int) string {
	ttls := strconv.Itoa(ttl)
	return strings.Join([]string{name, ttls, "IN SOA", SOAMname, SOARname, "1 3600 600 86400", ttls}, " ")
}

// upstream is an in-process resolver (UDP and TCP on one port) whose
// handler the test chooses; it counts the queries it receives.
type upstream struct {
	addr string
	hits atomic.Int64
}

func newUpstream(t testing.TB, h dns.HandlerFunc) *upstream {
	t.Helper()
	u := &upstream{}
	pc, ln := listenPair(t, "127.0.0.1")
	u.addr = pc.LocalAddr().String()
	counted := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		u.hits.Add(1)
		h(w, r)
	})
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: counted}, {Listener: ln, Handler: counted}} {
		var wg sync.WaitGroup
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Go(func() { srv.ActivateAndServe() })
		<-started
		t.Cleanup(func() {
			srv.Shutdown()
			wg.Wait()
		})
	}
	return u
}

// listenPair opens UDP and TCP sockets on the same free port of host. The
// TCP port is chosen first: on a machine full of TIME_WAIT connections
// (load runs next door) a free UDP port is often taken for TCP.
func listenPair(t testing.TB, host string) (net.PacketConn, net.Listener) {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatalf("listen tcp: %v", err)
		}
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err == nil {
			return pc, ln
		}
		ln.Close()
	}
	t.Fatalf("no port free for both udp and tcp on %s", host)
	return nil, nil
}

// answerA answers every query with one A record, or NOERROR-empty for
// other types.
func answerA(ip string) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.RecursionAvailable = true
		if r.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A " + ip)
			m.Answer = []dns.RR{rr}
		}
		w.WriteMsg(m)
	}
}

func rcodeHandler(rcode int) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetRcode(r, rcode)
		w.WriteMsg(m)
	}
}

// silent never answers.
func silent(dns.ResponseWriter, *dns.Msg) {}

// world is a running responder.
type world struct {
	addr    string // host:port, UDP and TCP
	server  *Server
	handler *Handler
}

// newWorld starts a responder for cfg on host (127.0.0.1 when "").
func newWorld(t testing.TB, cfg Config, host string, opts ...func(*Server)) *world {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return serveWorld(t, h, cfg.Logger, host, opts...)
}

// serveWorld serves h on UDP and TCP on one port of host, and returns
// once both are being read.
func serveWorld(t testing.TB, h *Handler, logger *slog.Logger, host string, opts ...func(*Server)) *world {
	t.Helper()
	if host == "" {
		host = "127.0.0.1"
	}
	pc, ln := listenPair(t, host)
	s := NewServer(h, logger)
	for _, o := range opts {
		o(s)
	}
	started := make(chan net.Addr, 2)
	s.NotifyStartedFunc = func(a net.Addr) { started <- a }
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Go(func() { errs <- s.ServeUDP(pc) })
	wg.Go(func() { errs <- s.ServeTCP(ln) })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("Serve returned %v after Shutdown, want nil", err)
			}
		}
	})
	<-started
	<-started
	return &world{addr: pc.LocalAddr().String(), server: s, handler: h}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// query asks name/qtype over network ("udp" or "tcp") with the client's
// default settings (no EDNS unless edns > 0).
func query(t testing.TB, network, addr, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	if edns > 0 {
		m.SetEdns0(edns, false)
	}
	return exchange(t, network, addr, m)
}

func exchange(t testing.TB, network, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second, UDPSize: dns.MaxMsgSize}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query %v to %s: %v", network, m.Question, addr, err)
	}
	if r.Id != m.Id {
		t.Fatalf("reply ID %d, query ID %d", r.Id, m.Id)
	}
	return r
}

func netipZero() netip.Addr { return netip.Addr{} }

// counterValue reads snigate_dns_queries_total{qtype,result}.
func counterValue(t testing.TB, m *Metrics, qtype, result string) float64 {
	t.Helper()
	return testkit.Value(t, m.queries.WithLabelValues(qtype, result))
}

// histogramCount reads snigate_dns_query_duration_seconds_count{result}.
func histogramCount(t testing.TB, m *Metrics, result string) uint64 {
	t.Helper()
	return uint64(testkit.Value(t, m.duration.WithLabelValues(result).(prometheus.Metric)))
}

// gaugeValue reads snigate_dns_upstream_up{upstream}.
func gaugeValue(t testing.TB, m *Metrics, addr string) float64 {
	t.Helper()
	return testkit.Value(t, m.upstreamUp.WithLabelValues(addr))
}
