package gateway

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/internal/testkit"
	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/sni"
)

// pairConfig is one of two gateways on one host: its TLS listener on
// %[1]s (127.0.0.1 or 127.0.0.2) at port %[2]s, both addresses in
// dns.answer with the answer check, and a bridge route to %[3]s.
const pairConfig = `listen:
  tls: ["%[1]s:%[2]s"]
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
  - name: registry
    sni: ["registry.test"]
    mode: bridge
    upstreams: [%[3]q]
    serve: {cert: serve.crt, key: serve.key}
    upstream_tls: {cert: edge.crt, key: edge.key, ca: ca.crt}
`

// gatewayPair starts two gateways on one host, one on 127.0.0.1 and one
// on 127.0.0.2 (the same port: answer_check.port is one port), each in
// front of its own echo upstream, and waits until each answers both.
func gatewayPair(t *testing.T) (one, two *world) {
	t.Helper()
	port := pairPort(t)
	start := func(ip string) *world {
		w := newWorld(t, "")
		up := startEcho(t, w.leaf("registry.test"), nil)
		_, err := w.ca.WriteLeaf(w.dir, "serve", "registry.test", "registry.test")
		must(t, err)
		w.writeConfig(fmt.Sprintf(pairConfig, ip, port, up.addr()))
		w.start()
		return w
	}
	one, two = start("127.0.0.1"), start("127.0.0.2")
	for _, w := range []*world{one, two} {
		testkit.Poll(t, "both gateways answered", func() bool {
			return slices.Equal(answerA(t, w.addrs.DNS.String(), "registry.test."), []string{"127.0.0.1", "127.0.0.2"})
		})
	}
	return one, two
}

// pairPort is a port held free on 127.0.0.1 (testnet.HeldAddr) that is
// also held on 127.0.0.2, both with SO_REUSEADDR so that the gateways'
// listeners can take them until the test ends.
func pairPort(t *testing.T) string {
	t.Helper()
	for range 20 {
		_, port, _ := net.SplitHostPort(testnet.HeldAddr(t))
		if holdOn(t, [4]byte{127, 0, 0, 2}, port) {
			return port
		}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2")
	return ""
}

// holdOn binds a socket with SO_REUSEADDR to ip:port without listening,
// until the test ends; false when the port is taken there.
func holdOn(t *testing.T, ip [4]byte, port string) bool {
	p, err := strconv.Atoi(port)
	must(t, err)
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	must(t, err)
	syscall.CloseOnExec(fd)
	must(t, syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1))
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: ip, Port: p}); err != nil {
		syscall.Close(fd)
		return false
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return true
}

// TestDrainingGatewayAnswersTheOtherOnOneHost is the regression test of
// two gateways on one host: the draining one left out every address of
// the host's interfaces, the other gateway's (127.0.0.1) included, and
// with none left the fallback answered both, itself included. Its own
// address is now its TLS listener's (127.0.0.2): it answers the other.
func TestDrainingGatewayAnswersTheOtherOnOneHost(t *testing.T) {
	one, two := gatewayPair(t)
	if !two.logs.Contains(`own=[127.0.0.2]`) {
		t.Errorf("the gateway on 127.0.0.2 does not log 127.0.0.2 alone as its own answer address")
	}
	resp, err := http.Post("http://"+two.addrs.Admin.String()+"/api/ready", "application/json", strings.NewReader(`{"ready":false}`))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /api/ready = %d", resp.StatusCode)
	}
	if got := answerA(t, two.addrs.DNS.String(), "registry.test."); !slices.Equal(got, []string{"127.0.0.1"}) {
		t.Errorf("the draining gateway answers %v, want only the other gateway, [127.0.0.1]", got)
	}
	if two.logs.Contains(`left out of the answers while draining" address=127.0.0.1`) {
		t.Errorf("the draining gateway left out the other gateway's address")
	}
	if got := answerA(t, one.addrs.DNS.String(), "registry.test."); !slices.Equal(got, []string{"127.0.0.1", "127.0.0.2"}) {
		t.Errorf("the other gateway answers %v, want both (the drained one still accepts)", got)
	}
}

// TestAnswerChecksAreNotClientErrors is the regression test of the
// gateways' own answer checks logged as client_error connection lines
// (35 %% of one access log) and counted as failures: each check leaves
// after the ServerHello, which a bridge route counted as a client whose
// handshake failed. They are now result=answer_check, at Debug.
func TestAnswerChecksAreNotClientErrors(t *testing.T) {
	one, two := gatewayPair(t)
	for _, w := range []*world{one, two} {
		// Each gateway checks both addresses: its own and the other's.
		testkit.Poll(t, "answer checks counted", func() bool {
			return connections(t, w, "answer_check")+connections(t, w, "client_error") >= 4
		})
		if n := connections(t, w, "client_error"); n != 0 {
			t.Errorf("%s: %v connections counted as client_error, want 0 (all are answer checks)", w.addrs.TLS[0], n)
		}
		for line := range strings.Lines(w.logs.String()) {
			if strings.Contains(line, "result=client_error") || strings.Contains(line, "client TLS handshake failed") {
				t.Errorf("%s: a check logged as a client error: %s", w.addrs.TLS[0], line)
				break
			}
		}
		if !regexp.MustCompile(`level=DEBUG msg=connection .*sni=registry.test .*result=answer_check`).MatchString(w.logs.String()) {
			t.Errorf("%s: no Debug connection line with result=answer_check", w.addrs.TLS[0])
		}
	}
	// A node's failed handshake (it does not trust the serving
	// certificate) is still a client error.
	if c, err := tls.Dial("tcp", one.addrs.TLS[0].String(), &tls.Config{ServerName: "registry.test", NextProtos: []string{"h2"}}); err == nil {
		c.Close()
		t.Fatal("a client that does not trust the world's CA completed its handshake")
	}
	testkit.Poll(t, "the node's failure counted", func() bool { return connections(t, one, "client_error") == 1 })
}

// connections is snigate_connections_total{route="registry",result} of w
// (0 while the series is absent).
func connections(t *testing.T, w *world, result string) float64 {
	t.Helper()
	n, _ := testkit.Gathered(t, w.g.registry, "snigate_connections_total", map[string]string{"route": "registry", "result": result})
	return n
}

// The two names are one: the check offers what the gateways recognise.
func TestAnswerCheckProtocolIsTheOneSNIRecognises(t *testing.T) {
	if dnsresponder.CheckALPN != sni.AnswerCheckALPN {
		t.Errorf("dnsresponder.CheckALPN %q != sni.AnswerCheckALPN %q", dnsresponder.CheckALPN, sni.AnswerCheckALPN)
	}
}
