package snigate

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
)

// BenchmarkServeDNS: the cost snigate adds to a query it answers, and to
// one it passes on.
func BenchmarkServeDNS(b *testing.B) {
	for _, bc := range []struct{ name, qname string }{
		{"routed", "registry.example.test."},
		{"wildcard", "eu.mirror.example.test."},
		{"passed on", "other.example.test."},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var calls int
			h := newTestHandler(b, issueStanza, []string{"."}, &calls)
			h.Next = test.NextHandler(dns.RcodeSuccess, nil)
			m := new(dns.Msg)
			m.SetQuestion(bc.qname, dns.TypeA)
			w := &test.ResponseWriter{}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeDNS(ctx, w, m)
			}
		})
	}
}
