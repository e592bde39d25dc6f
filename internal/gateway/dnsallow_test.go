package gateway

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSAllowFollowsConfigAndReload: the DNS responder used to answer
// (and, with dns.forward, recurse for) any client whatever listen.allow
// said. listen.allow now applies to DNS, dns.allow replaces it, and a
// reload applies a changed list to the next query, over UDP and TCP.
func TestDNSAllowFollowsConfigAndReload(t *testing.T) {
	w := newWorld(t, "")
	a := startEcho(t, w.leaf("a.test"), nil)
	cfg := func(dnsAllow string) string {
		return fmt.Sprintf(`listen:
  tls: ["127.0.0.1:0"]
  dns: "127.0.0.1:0"
  allow: ["127.0.0.1/32"]
dns:
  answer: ["127.0.0.1"]
%sroutes:
%s`, dnsAllow, spliceRoute("a", "a.test", a.addr()))
	}
	w.writeConfig(cfg(""))
	w.start()
	ask := func(network, from string) int {
		t.Helper()
		return dnsRcodeFrom(t, network, from, w.addrs.DNS.String(), "a.test.")
	}
	steps := []struct {
		name     string
		dnsAllow string // dns.allow line to reload with; "" keeps the file
		want     map[string]int
	}{
		{name: "listen.allow applies", want: map[string]int{"127.0.0.1": dns.RcodeSuccess, "127.0.0.2": dns.RcodeRefused}},
		{name: "dns.allow replaces it", dnsAllow: "  allow: [\"127.0.0.2/32\"]\n",
			want: map[string]int{"127.0.0.1": dns.RcodeRefused, "127.0.0.2": dns.RcodeSuccess}},
	}
	for _, st := range steps {
		if st.dnsAllow != "" {
			w.writeConfig(cfg(st.dnsAllow))
			if err := w.g.Reload(t.Context(), "test"); err != nil {
				t.Fatalf("Reload: %v", err)
			}
			<-w.reloaded
		}
		for from, rcode := range st.want {
			for _, network := range []string{"udp", "tcp"} {
				if got := ask(network, from); got != rcode {
					t.Errorf("%s: %s query from %s: rcode %s, want %s", st.name, network, from, dns.RcodeToString[got], dns.RcodeToString[rcode])
				}
			}
		}
	}
}

// dnsRcodeFrom asks addr for name's A record over network from the local
// address from, and returns the reply's rcode.
func dnsRcodeFrom(t *testing.T, network, from, addr, name string) int {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	if network == "tcp" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	} else {
		d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(from)}
	}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second, Dialer: d}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s query from %s to %s: %v", network, from, addr, err)
	}
	return r.Rcode
}
