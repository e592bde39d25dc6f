package snigate

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/names"
)

// The end-to-end world: the CoreDNS binary built from cmd/coredns, serving
// one of the Corefiles in examples/, an upstream resolver and snigate's
// own responder in process, and a DNS client querying CoreDNS.

const (
	gatewayV4 = "192.0.2.10"
	gatewayV6 = "2001:db8::10"
	realV4    = "198.51.100.7" // the upstream resolver's answer for every name
	realV6    = "2001:db8:ffff::7"
)

// TestEndToEnd runs the snigate plugin in a real CoreDNS.
func TestEndToEnd(t *testing.T) {
	w := newWorld(t)
	coredns := w.start(t, "Corefile.plugin")
	tests := []struct {
		name   string
		net    string
		qname  string
		qtype  uint16
		answer string // see checkReply
	}{
		{"routed A", "udp", "registry.example.test.", dns.TypeA, gatewayV4},
		{"routed AAAA", "udp", "registry.example.test.", dns.TypeAAAA, gatewayV6},
		{"routed HTTPS is NODATA with snigate's SOA", "udp", "registry.example.test.", dns.TypeHTTPS, "soa"},
		{"routed over TCP", "tcp", "registry.example.test.", dns.TypeA, gatewayV4},
		{"routed by wildcard", "udp", "eu.mirror.example.test.", dns.TypeA, gatewayV4},
		{"routed by the config file", "udp", "pull.example.test.", dns.TypeA, gatewayV4},
		{"other names are forwarded", "udp", "other.example.test.", dns.TypeA, realV4},
		{"other HTTPS queries are forwarded", "udp", "other.example.test.", dns.TypeHTTPS, "https"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := query(coredns, tc.net, tc.qname, tc.qtype)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkReply(r, tc.answer); err != nil {
				t.Errorf("%v\n%s", err, r)
			}
		})
	}
	t.Run("a config file change is picked up", func(t *testing.T) {
		const name = "new.example.test."
		if err := expectA(coredns, name, realV4); err != nil {
			t.Fatalf("before the change: %v", err)
		}
		replaceFile(t, w.config, snigateYAML("pull.example.test", "new.example.test"))
		if err := eventuallyA(coredns, name, gatewayV4, 30*time.Second); err != nil {
			t.Fatalf("after the change: %v\ncoredns output:\n%s", err, coredns.output())
		}
	})
}

// TestExamples checks that every Corefile in examples/, the plugin and
// the stock-CoreDNS alternatives, answers the routed names with the
// gateway, leaks none of the upstream's records for them, and forwards
// the rest.
func TestExamples(t *testing.T) {
	w := newWorld(t)
	queries := []struct {
		qname  string
		qtype  uint16
		answer string
	}{
		{"registry.example.test.", dns.TypeA, gatewayV4},
		{"registry.example.test.", dns.TypeAAAA, gatewayV6},
		{"registry.example.test.", dns.TypeHTTPS, "nodata"},
		{"eu.mirror.example.test.", dns.TypeA, gatewayV4},
		{"eu.mirror.example.test.", dns.TypeAAAA, gatewayV6},
		{"eu.mirror.example.test.", dns.TypeHTTPS, "nodata"},
		{"other.example.test.", dns.TypeA, realV4},
		{"other.example.test.", dns.TypeAAAA, realV6},
		{"other.example.test.", dns.TypeHTTPS, "https"},
	}
	for _, example := range []string{"Corefile.plugin", "Corefile.hosts", "Corefile.template", "Corefile.forward", "Corefile.rewrite"} {
		t.Run(example, func(t *testing.T) {
			p := w.start(t, example)
			for _, q := range queries {
				r, err := query(p, "udp", q.qname, q.qtype)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkReply(r, q.answer); err != nil {
					t.Errorf("%s %s: %v\n%s", q.qname, dns.TypeToString[q.qtype], err, r)
				}
			}
		})
	}
}

// checkReply checks r against want: an address; "https" for the
// upstream's HTTPS record; "nodata" for NOERROR with no answer; "soa" for
// that with snigate's SOA and AA.
func checkReply(r *dns.Msg, want string) error {
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("rcode %s, want NOERROR", dns.RcodeToString[r.Rcode])
	}
	switch want {
	case "nodata", "soa":
		if len(r.Answer) != 0 {
			return errors.New("want no answer records")
		}
		if want == "nodata" {
			return nil
		}
		if soa, ok := firstSOA(r); !ok || soa.Ns != dnsresponder.SOAMname || !r.Authoritative {
			return errors.New("want an authoritative reply with snigate's SOA")
		}
		return nil
	case "https":
		if len(r.Answer) != 1 || r.Answer[0].Header().Rrtype != dns.TypeHTTPS {
			return errors.New("want the upstream's HTTPS record")
		}
		return nil
	}
	if len(r.Answer) != 1 {
		return fmt.Errorf("%d answers, want 1", len(r.Answer))
	}
	if got := answerAddr(r.Answer[0]); got != want {
		return fmt.Errorf("answer %s, want %s", got, want)
	}
	if name := r.Answer[0].Header().Name; !strings.EqualFold(name, r.Question[0].Name) {
		return fmt.Errorf("answer owner %s, want the name asked, %s", name, r.Question[0].Name)
	}
	return nil
}

func firstSOA(r *dns.Msg) (*dns.SOA, bool) {
	if len(r.Ns) != 1 {
		return nil, false
	}
	soa, ok := r.Ns[0].(*dns.SOA)
	return soa, ok
}

func answerAddr(rr dns.RR) string {
	switch rr := rr.(type) {
	case *dns.A:
		return rr.A.String()
	case *dns.AAAA:
		return rr.AAAA.String()
	}
	return rr.String()
}

func query(p *process, network, qname string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(qname, qtype)
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, p.addr)
	return r, err
}

// expectA queries qname A once and checks the answer is addr.
func expectA(p *process, qname, addr string) error {
	r, err := query(p, "udp", qname, dns.TypeA)
	if err != nil {
		return err
	}
	return checkReply(r, addr)
}

// eventuallyA polls until qname A is answered with addr, for at most limit.
func eventuallyA(p *process, qname, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := expectA(p, qname, addr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still not %s after %v: %w", addr, limit, err)
		}
		<-tick.C
	}
}

// world is what the example Corefiles refer to, running on loopback.
type world struct {
	bin       string // the CoreDNS binary
	dir       string
	config    string // snigate.yaml, for `config /etc/snigate/snigate.yaml`
	upstream  string // for /etc/resolv.conf
	responder string // snigate's responder, for 192.0.2.53:53
}

func newWorld(t *testing.T) *world {
	t.Helper()
	if testing.Short() && os.Getenv("SNIGATE_REQUIRE_E2E") == "" {
		t.Skip("builds and runs CoreDNS; skipped with -short")
	}
	w := &world{bin: coreDNSBinary(t), dir: t.TempDir()}
	w.config = writeFile(t, w.dir, "snigate.yaml", snigateYAML("pull.example.test"))
	w.upstream = serveDNS(t, dns.HandlerFunc(resolve))
	w.responder = serveDNS(t, newResponder(t, w.upstream))
	return w
}

// start runs CoreDNS with examples/name, its addresses and files replaced
// by the world's and its servers bound to a free loopback port; a port
// taken between choosing it and CoreDNS binding it is retried.
func (w *world) start(t *testing.T, name string, replace ...string) *process {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("examples", name))
	if err != nil {
		t.Fatal(err)
	}
	local := strings.NewReplacer(replace...).Replace(w.localize(string(text)))
	corefile := writeFile(t, w.dir, name, local)
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		p, err := startProcess(w.bin, "-conf", corefile, "-dns.port", strconv.Itoa(port))
		if err == nil {
			t.Cleanup(p.stop)
			p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			return p
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 {
			t.Fatalf("start coredns with %s: %v", name, err)
		}
		t.Logf("port %d was taken, trying another", port)
	}
}

// localize points an example Corefile at the world and binds each of its
// server blocks (unindented lines opening a block) to loopback.
func (w *world) localize(corefile string) string {
	r := strings.NewReplacer(
		"/etc/resolv.conf", w.upstream,
		"192.0.2.53:53", w.responder,
		"/etc/snigate/snigate.yaml", w.config,
	)
	var b strings.Builder
	for line := range strings.Lines(r.Replace(corefile)) {
		b.WriteString(line)
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "#") && strings.HasSuffix(line, "{\n") {
			b.WriteString("    bind 127.0.0.1\n")
		}
	}
	return b.String()
}

// The binary is built once per test run into buildDir, which TestMain
// removes.
var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// coreDNSBinary builds ./cmd/coredns once per test run.
func coreDNSBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "snigate-coredns-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "coredns")
		cmd := exec.Command("go", "build", "-o", builtBin, "./cmd/coredns")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/coredns: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// freePort returns a loopback port that was free for both UDP and TCP a
// moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return 0
}

// newResponder is snigate's embedded responder as a deployment runs it
// beside stock CoreDNS: the routed names plus the gateway's own name.
func newResponder(t *testing.T, upstream string) dns.Handler {
	t.Helper()
	var routed names.Table[struct{}]
	for _, n := range []string{"registry.example.test", "*.mirror.example.test", "gateway.snigate.internal"} {
		if err := routed.Add(n, struct{}{}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := dnsresponder.New(dnsresponder.Config{
		Names:   &routed,
		Answer:  []netip.Addr{netip.MustParseAddr(gatewayV4), netip.MustParseAddr(gatewayV6)},
		TTL:     30 * time.Second,
		Forward: []string{upstream},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// serveDNS serves h over UDP on loopback until the test ends and returns
// its address.
func serveDNS(t *testing.T, h dns.Handler) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: func() { close(started) }}
	done := make(chan error, 1)
	go serve(srv, done)
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("serve DNS: %v", err)
	}
	t.Cleanup(func() {
		srv.Shutdown()
		<-done
	})
	return pc.LocalAddr().String()
}

func serve(srv *dns.Server, done chan<- error) { done <- srv.ActivateAndServe() }

// resolve is the upstream resolver: every name has A realV4, AAAA realV6
// and an HTTPS record, which must never reach a client for a routed name.
func resolve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	q := r.Question[0]
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Rrtype: q.Qtype, Ttl: 60}
	switch q.Qtype {
	case dns.TypeA:
		m.Answer = []dns.RR{&dns.A{Hdr: hdr, A: net.ParseIP(realV4)}}
	case dns.TypeAAAA:
		m.Answer = []dns.RR{&dns.AAAA{Hdr: hdr, AAAA: net.ParseIP(realV6)}}
	case dns.TypeHTTPS:
		m.Answer = []dns.RR{&dns.HTTPS{SVCB: dns.SVCB{Hdr: hdr, Priority: 1, Target: "."}}}
	}
	w.WriteMsg(m)
}
