package gateway

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testnet"
)

// answersConfig: the gateway on 127.0.0.1:PORT, and a second gateway
// address, 127.0.0.2, on which nothing listens.
const answersConfig = `listen:
  tls: [%[1]q]
  dns: "127.0.0.1:0"
  admin: "127.0.0.1:0"
timeouts:
  drain: 1m
dns:
  answer: ["127.0.0.1", "127.0.0.2"]
  answer_check:
    port: %[2]s
    interval: 200ms
    timeout: 200ms
    fall: 2
    rise: 1
routes:
%[3]s`

// TestAnswerCheckInTheGateway: the responder answers only the gateway
// address that serves; on SIGTERM it leaves its own address out at once,
// keeps answering DNS while a transfer finishes, and the admin API lists
// the addresses.
func TestAnswerCheckInTheGateway(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	listen := testnet.HeldAddr(t)
	_, port, _ := net.SplitHostPort(listen)
	w.writeConfig(fmt.Sprintf(answersConfig, listen, port, spliceRoute("a", "a.test", a.addr())))
	w.start()
	testkit.Poll(t, "127.0.0.2 to be found down", func() bool {
		return w.logs.Contains(`msg="dns: answer address down, left out of the answers" address=127.0.0.2`)
	})
	if !w.logs.Contains(`own=[127.0.0.1]`) || w.logs.Contains("none of dns.answer is this gateway's own") {
		t.Errorf("the start log does not name 127.0.0.1 as the gateway's own answer address")
	}
	if got := answerA(t, w.addrs.DNS.String(), "a.test."); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("answers with one gateway down: %v, want [127.0.0.1]", got)
	}
	code, body := w.adminGet("/api/answers")
	var st []dnsresponder.AnswerStatus
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil || len(st) != 2 || !st[0].Healthy || st[1].Healthy {
		t.Errorf("/api/answers = %d %s (%v)", code, body, err)
	}

	tunnel, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatal(err)
	}
	echoRoundTrip(t, tunnel, "before")
	w.cancel() // as SIGTERM does
	testkit.Poll(t, "the own address to be left out", func() bool {
		return w.logs.Contains(`msg="dns: own answer address left out of the answers while draining" address=127.0.0.1`)
	})
	// The only other address is down: it is all there is to answer.
	if got := answerA(t, w.addrs.DNS.String(), "a.test."); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("answers while draining: %v, want [127.0.0.2] (own address left out)", got)
	}
	echoRoundTrip(t, tunnel, "the transfer goes on while draining")
	tunnel.Close()
	<-w.done
	if w.runErr != nil {
		t.Errorf("Run = %v, want nil", w.runErr)
	}
}

// TestAnswersWithoutCheck: without dns.answer_check the admin API says so.
func TestAnswersWithoutCheck(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	w.writeConfig(fmt.Sprintf(spliceConfig, "1s", spliceRoute("a", "a.test", a.addr())))
	w.start()
	if code, body := w.adminGet("/api/answers"); code != 404 || !strings.Contains(body, "no dns.answer_check") {
		t.Errorf("/api/answers = %d %s, want 404 naming dns.answer_check", code, body)
	}
}

// TestOwnAddrsAreTheListenersAddresses is the regression test of two
// gateways on one host: a gateway owned every address of the host's
// interfaces, so the one that drained left out the other's address too
// (and with none left, the fallback answered both, itself included). A
// listener bound to a specific address owns that address only; the
// interface addresses are owned through a wildcard listener.
func TestOwnAddrsAreTheListenersAddresses(t *testing.T) {
	p := netip.MustParseAddr
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	local := func() []netip.Addr {
		return []netip.Addr{p("127.0.0.1"), p("127.0.0.2"), p("127.0.0.3"), p("10.0.0.5")}
	}
	tests := []struct {
		name  string
		bound []net.Addr
		want  []netip.Addr
	}{
		{name: "one specific address", bound: []net.Addr{tcp("127.0.0.2:8443")}, want: []netip.Addr{p("127.0.0.2")}},
		{name: "two specific addresses", bound: []net.Addr{tcp("127.0.0.2:443"), tcp("[::ffff:10.0.0.6]:8443")},
			want: []netip.Addr{p("127.0.0.2"), p("10.0.0.6")}},
		{name: "wildcard", bound: []net.Addr{tcp("0.0.0.0:443")}, want: local()},
		{name: "IPv6 wildcard", bound: []net.Addr{tcp("[::]:443")}, want: local()},
		{name: "specific and wildcard", bound: []net.Addr{tcp("10.0.0.5:443"), tcp("0.0.0.0:8443")},
			want: []netip.Addr{p("10.0.0.5"), p("127.0.0.1"), p("127.0.0.2"), p("127.0.0.3")}},
		{name: "no listener", bound: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownAddrs(tt.bound, local); !slices.Equal(got, tt.want) {
				t.Errorf("ownAddrs(%v) = %v, want %v", tt.bound, got, tt.want)
			}
		})
	}
}

// TestOwnAnswers: the answer addresses that are the gateway's own.
func TestOwnAnswers(t *testing.T) {
	p := netip.MustParseAddr
	tests := []struct {
		name              string
		answer, own, want []netip.Addr
	}{
		{name: "one own", answer: []netip.Addr{p("10.0.0.5"), p("10.0.0.6")}, own: []netip.Addr{p("127.0.0.1"), p("10.0.0.6")}, want: []netip.Addr{p("10.0.0.6")}},
		{name: "none own", answer: []netip.Addr{p("10.0.0.5")}, own: []netip.Addr{p("127.0.0.1")}},
		{name: "mapped answer", answer: []netip.Addr{p("::ffff:10.0.0.5")}, own: []netip.Addr{p("10.0.0.5")}, want: []netip.Addr{p("::ffff:10.0.0.5")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownAnswers(tc.answer, tc.own); !slices.Equal(got, tc.want) {
				t.Errorf("ownAnswers = %v, want %v", got, tc.want)
			}
		})
	}
}

// answerA asks addr for name's A records.
func answerA(t *testing.T, addr, name string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s: %v", addr, err)
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return out
}

// TestAnswerCheckAcrossReload: a reload keeps what the check found (a
// gateway that hangs, found down, is not answered again while the new
// check's first round waits for its timeout), and a reload that removes
// dns.answer_check deletes snigate_dns_answer_up.
func TestAnswerCheckAcrossReload(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	// The same port on 127.0.0.2 (answer_check.port is one port for
	// every address): another test may hold it there, so try a few.
	var listen, port string
	var hang func()
	for i := 0; hang == nil; i++ {
		listen = testnet.HeldAddr(t)
		_, port, _ = net.SplitHostPort(listen)
		var err error
		if hang, err = listenHanging("127.0.0.2:" + port); err != nil && i == 20 {
			t.Fatal(err)
		}
	}
	defer hang()
	cfg := func(ttl string) string {
		c := fmt.Sprintf(answersConfig, listen, port, spliceRoute("a", "a.test", a.addr()))
		c = strings.Replace(c, "    interval: 200ms\n    timeout: 200ms\n    fall: 2\n", "    interval: 1s\n    timeout: 1s\n    fall: 1\n", 1)
		return strings.Replace(c, "  answer_check:", "  ttl: "+ttl+"\n  answer_check:", 1)
	}
	w.writeConfig(cfg("30s"))
	w.start()
	testkit.Poll(t, "127.0.0.2 to be found down", func() bool {
		return w.logs.Contains(`msg="dns: answer address down, left out of the answers" address=127.0.0.2`)
	})
	w.writeConfig(cfg("20s"))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	if got := answerA(t, w.addrs.DNS.String(), "a.test."); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("answers right after a reload: %v, want [127.0.0.1] (the hanging gateway stays down)", got)
	}
	if !strings.Contains(w.scrape(), `snigate_dns_answer_up{address="127.0.0.2"} 0`) {
		t.Error("snigate_dns_answer_up of 127.0.0.2 is not 0 after the reload")
	}
	w.writeConfig(fmt.Sprintf(spliceConfig, "1m", spliceRoute("a", "a.test", a.addr())))
	if err := w.g.Reload(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	<-w.reloaded
	if text := w.scrape(); strings.Contains(text, "snigate_dns_answer_up{") {
		t.Errorf("dns.answer_check removed, /metrics still has:\n%s", grepLines(text, "snigate_dns_answer_up"))
	}
}

// hangingListener accepts on addr and never answers, until stop.
func hangingListener(t *testing.T, addr string) (stop func()) {
	t.Helper()
	stop, err := listenHanging(addr)
	if err != nil {
		t.Fatal(err)
	}
	return stop
}

// listenHanging is hangingListener returning its error.
func listenHanging(addr string) (stop func(), _ error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	return func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	}, nil
}

// TestReadySwitchLeavesOwnAnswersOut: with the readiness switch off the
// gateway leaves its own address out of its DNS answers (as a drain does)
// while it serves, and answers it again once the switch is on.
func TestReadySwitchLeavesOwnAnswersOut(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	listen := testnet.HeldAddr(t)
	_, port, _ := net.SplitHostPort(listen)
	w.writeConfig(fmt.Sprintf(answersConfig, listen, port, spliceRoute("a", "a.test", a.addr())))
	w.start()
	testkit.Poll(t, "127.0.0.2 to be found down", func() bool {
		return w.logs.Contains(`msg="dns: answer address down, left out of the answers" address=127.0.0.2`)
	})
	dnsAddr := w.addrs.DNS.String()
	if got := answerA(t, dnsAddr, "a.test."); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Fatalf("answers before: %v, want [127.0.0.1]", got)
	}
	w.g.SetReadySwitch(false)
	// Its own address left out and the other down: all there is is the other.
	if got := answerA(t, dnsAddr, "a.test."); !slices.Equal(got, []string{"127.0.0.2"}) {
		t.Errorf("answers with the switch off: %v, want [127.0.0.2] (own address left out)", got)
	}
	c, err := w.dialTLS("a.test")
	if err != nil {
		t.Fatalf("switched off, the gateway must still serve: %v", err)
	}
	echoRoundTrip(t, c, "still serving")
	c.Close()
	w.g.SetReadySwitch(true)
	if got := answerA(t, dnsAddr, "a.test."); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("answers with the switch on again: %v, want [127.0.0.1]", got)
	}
}
