package deploy

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver" // the "dns" server type
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/template"
	"github.com/miekg/dns"
)

// Addresses of the fake world the Corefile examples are run against.
const (
	gatewayA   = "192.0.2.10"
	gatewayB   = "192.0.2.11"
	realA      = "203.0.113.99" // what a leak to the site's DNS would return
	realAAAA   = "2001:db8::99"
	routedName = "registry.example.test."
)

// corefileInput is a Corefile for caddy.Start.
type corefileInput string

func (c corefileInput) Body() []byte       { return []byte(c) }
func (c corefileInput) Path() string       { return "Corefile" }
func (c corefileInput) ServerType() string { return "dns" }

// startDNS runs a miekg/dns UDP server on 127.0.0.1:0 until the test ends.
func startDNS(t *testing.T, h dns.HandlerFunc) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: func() { close(started) }}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return pc.LocalAddr().String()
}

// siteDNS answers every name with "real" records of every type: anything
// that reaches it for a routed name is a leak.
func siteDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	q := r.Question[0]
	var rr string
	switch q.Qtype {
	case dns.TypeA:
		rr = q.Name + " 60 IN A " + realA
	case dns.TypeAAAA:
		rr = q.Name + " 60 IN AAAA " + realAAAA
	case dns.TypeHTTPS:
		rr = q.Name + ` 60 IN HTTPS 1 . alpn="h2" ipv6hint=` + realAAAA
	}
	if rr != "" {
		m.Answer = append(m.Answer, dns.Copy(mustRR(rr)))
	}
	_ = w.WriteMsg(m)
}

// gatewayDNS behaves like snigate's responder for the routed names.
func gatewayDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	q := r.Question[0]
	switch {
	case !strings.HasSuffix(q.Name, "example.test."):
		m.Rcode = dns.RcodeRefused
	case q.Qtype == dns.TypeA:
		m.Answer = append(m.Answer, mustRR(q.Name+" 30 IN A "+gatewayA), mustRR(q.Name+" 30 IN A "+gatewayB))
	default:
		m.Ns = append(m.Ns, mustRR("example.test. 30 IN SOA ns.example.test. hostmaster.example.test. 1 7200 1800 86400 30"))
	}
	_ = w.WriteMsg(m)
}

func mustRR(s string) dns.RR {
	rr, err := dns.NewRR(s)
	if err != nil {
		panic(err)
	}
	return rr
}

var (
	zonePort  = regexp.MustCompile(`(\S):53(\s)`)
	forwardTo = regexp.MustCompile(`(?m)^\s*forward \. ([^{\n]+)`)
	port53    = regexp.MustCompile(`:53(\D|$)`)
)

// startCorefile runs a Corefile example with its port and upstreams
// replaced by test servers, and returns the address to query.
func startCorefile(t *testing.T, path string) string {
	t.Helper()
	site := startDNS(t, siteDNS)
	gw := startDNS(t, gatewayDNS)
	src := strings.ReplaceAll(string(readFile(t, path)), gatewayA+":53 "+gatewayB+":53", gw)
	src = strings.ReplaceAll(src, "/etc/resolv.conf", site)
	src = zonePort.ReplaceAllString(src, "$1:0$2")
	// Never let an example's real addresses become a target from here.
	for _, m := range forwardTo.FindAllStringSubmatch(src, -1) {
		for _, to := range strings.Fields(m[1]) {
			if !strings.HasPrefix(to, "127.0.0.1:") {
				t.Fatalf("%s: forward to %s left after substitution; the test only sends to loopback", path, to)
			}
		}
	}
	// ":53" not followed by a digit: the test's own servers listen on
	// random ports, some of which start with 53.
	if loc := port53.FindStringIndex(src); loc != nil {
		t.Fatalf("%s: a port 53 the test did not replace: %q", path, src[max(0, loc[0]-40):loc[1]])
	}
	caddy.Quiet, dnsserver.Quiet = true, true
	inst, err := caddy.Start(corefileInput(src))
	if err != nil {
		t.Fatalf("%s: CoreDNS refuses it: %v", path, err)
	}
	t.Cleanup(func() { _ = inst.Stop(); inst.ShutdownCallbacks() })
	return inst.Servers()[0].LocalAddr().String()
}

func query(t *testing.T, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	c := &dns.Client{Timeout: 5 * time.Second}
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	return r
}

// TestCorefileExamples runs each CoreDNS example for real and checks the
// promise its comment makes: A gets the gateways, AAAA and HTTPS get an
// empty NOERROR (nothing real leaks), other names are not captured.
func TestCorefileExamples(t *testing.T) {
	for _, path := range []string{"coredns/Corefile.hosts", "coredns/Corefile.template", "coredns/Corefile.forward"} {
		t.Run(path, func(t *testing.T) {
			srv := startCorefile(t, path)
			for _, name := range []string{routedName, "blobs.example.test."} {
				checkGatewayA(t, query(t, srv, name, dns.TypeA))
				for _, qt := range []uint16{dns.TypeAAAA, dns.TypeHTTPS} {
					checkNoData(t, query(t, srv, name, qt))
				}
			}
			if path != "coredns/Corefile.forward" {
				r := query(t, srv, "www.example.test.", dns.TypeA)
				if len(r.Answer) != 1 || !strings.Contains(r.Answer[0].String(), realA) {
					t.Errorf("unrouted www.example.test: want the site DNS's answer, got %v", r.Answer)
				}
			}
		})
	}
}

func checkGatewayA(t *testing.T, r *dns.Msg) {
	t.Helper()
	got := map[string]bool{}
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got[a.A.String()] = true
		}
	}
	if r.Rcode != dns.RcodeSuccess || len(got) != 2 || !got[gatewayA] || !got[gatewayB] {
		t.Errorf("%s A: want both gateways, got rcode %s %v", r.Question[0].Name, dns.RcodeToString[r.Rcode], r.Answer)
	}
}

func checkNoData(t *testing.T, r *dns.Msg) {
	t.Helper()
	q := r.Question[0]
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Errorf("%s %s: want NOERROR with no records (nothing real may leak), got %s %v",
			q.Name, dns.TypeToString[q.Qtype], dns.RcodeToString[r.Rcode], r.Answer)
	}
}
