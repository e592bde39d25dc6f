package e2e

import (
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestNodeDNS asks the gateway's DNS responder, from the node, what the
// node's resolv.conf makes every client ask: routed names resolve to the
// bastion and nothing else leaks; other names are refused (dns.forward is
// empty in this world).
func TestNodeDNS(t *testing.T) {
	w := getWorld(t)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		rcode   int
		answers []string // A records wanted, in any order
	}{
		{"routed bridge name A", registryHost, dns.TypeA, dns.RcodeSuccess, []string{bastionAddr}},
		{"routed splice name A", mirrorHost, dns.TypeA, dns.RcodeSuccess, []string{bastionAddr}},
		{"routed name AAAA is empty", registryHost, dns.TypeAAAA, dns.RcodeSuccess, nil},
		{"routed name HTTPS is empty", registryHost, dns.TypeHTTPS, dns.RcodeSuccess, nil},
		{"routed name is case-insensitive", "Registry.Example.TEST", dns.TypeA, dns.RcodeSuccess, []string{bastionAddr}},
		{"unrouted name is refused", unroutedHost, dns.TypeA, dns.RcodeRefused, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, network := range []string{"udp", "tcp"} {
				resp, err := w.queryGateway(network, tt.qname, tt.qtype)
				if err != nil {
					t.Fatalf("%s query %s %s: %v", network, tt.qname, dns.TypeToString[tt.qtype], err)
				}
				if resp.Rcode != tt.rcode {
					t.Fatalf("%s: rcode %s, want %s\n%s", network, dns.RcodeToString[resp.Rcode], dns.RcodeToString[tt.rcode], resp)
				}
				var got []string
				for _, rr := range resp.Answer {
					a, ok := rr.(*dns.A)
					if !ok {
						t.Fatalf("%s: unexpected answer %s\n%s", network, rr, resp)
					}
					got = append(got, a.A.String())
				}
				slices.Sort(got)
				if !slices.Equal(got, tt.answers) {
					t.Fatalf("%s: answers %v, want %v\n%s", network, got, tt.answers, resp)
				}
			}
		})
	}
}

// queryGateway sends one query to the gateway's DNS responder from the node.
func (w *world) queryGateway(network, qname string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(qname), qtype)
	c := &dns.Client{Net: network, Timeout: 3 * time.Second}
	var resp *dns.Msg
	err := w.node.do(func() (err error) {
		resp, _, err = c.Exchange(m, bastionAddr+":53")
		return err
	})
	return resp, err
}
