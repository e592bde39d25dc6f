package snigate

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/snigate/snigate/internal/pki"
)

// TestEndToEndTwoGateways runs examples/Corefile.gateways in CoreDNS with
// two gateway addresses, 127.0.0.1 and 127.0.0.2 on one port: only the
// one that answers a ClientHello for the file's routed name is given;
// once the other starts serving, both are; once the first stops, only
// the second.
func TestEndToEndTwoGateways(t *testing.T) {
	w := newWorld(t)
	first := listenGateway(t, "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(first.addr())
	coredns := w.start(t, "Corefile.gateways",
		"192.0.2.21", "127.0.0.1", "192.0.2.22", "127.0.0.2",
		"port 443 interval 2s timeout 1s fall 2 rise 2", "port "+port+" interval 200ms timeout 200ms fall 2 rise 1")
	const name = "pull.example.test." // the file's first routed name
	steps := []struct {
		what   string
		change func()
		want   []string
	}{
		{what: "one gateway down", want: []string{"127.0.0.1"}},
		{what: "the second one serving", change: func() { listenGateway(t, "127.0.0.2:"+port) }, want: []string{"127.0.0.1", "127.0.0.2"}},
		{what: "the first one stopped", change: first.close, want: []string{"127.0.0.2"}},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change()
		}
		if err := eventuallyAnswers(coredns, name, st.want, 20*time.Second); err != nil {
			t.Fatalf("%s: %v\ncoredns output:\n%s", st.what, err, coredns.output())
		}
	}
}

// eventuallyAnswers polls until qname's A records are want (in order).
func eventuallyAnswers(p *process, qname string, want []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		r, err := query(p, "udp", qname, dns.TypeA)
		var got []string
		if err == nil {
			for _, rr := range r.Answer {
				got = append(got, answerAddr(rr))
			}
			if slices.Equal(got, want) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("answers %v (err %v) after %v, want %v", got, err, limit, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// gateway stands in for snigate on one address: a TLS server for the
// routed names.
type gateway struct {
	ln   net.Listener
	wg   sync.WaitGroup
	once sync.Once
}

func listenGateway(t *testing.T, addr string) *gateway {
	t.Helper()
	ca, err := pki.NewAuthority("gateway CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, _, _, err := ca.Leaf("gateway", "pull.example.test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	g := &gateway{ln: ln}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	g.wg.Go(func() { g.accept(cfg) })
	t.Cleanup(g.close)
	return g
}

func (g *gateway) addr() string { return g.ln.Addr().String() }

func (g *gateway) accept(cfg *tls.Config) {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.wg.Go(func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			tls.Server(c, cfg).Handshake() //nolint:errcheck // the check stops after the ServerHello
		})
	}
}

func (g *gateway) close() {
	g.once.Do(func() { g.ln.Close(); g.wg.Wait() })
}
