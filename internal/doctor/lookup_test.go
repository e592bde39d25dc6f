package doctor

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestResolveTakesAWhenAAAAIsRefused: a server that answers A but refuses
// AAAA (dnsmasq with only an IPv4 address for the name) resolves the name,
// as the node's resolver library sees it. The bug: doctor reported the
// refused AAAA as the answer and missed the address a client would use.
func TestResolveTakesAWhenAAAAIsRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		if req.Question[0].Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.IPv4(10, 77, 2, 10)}}
		} else {
			m.Rcode = dns.RcodeRefused
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ActivateAndServe() }()
	<-started
	defer func() { _ = srv.Shutdown(); <-done }()

	got, err := resolve(context.Background(), pc.LocalAddr().String(), "registry.test", time.Second)
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("10.77.2.10") {
		t.Fatalf("resolve = %v, %v; want 10.77.2.10", got, err)
	}
}

// TestParseNameDockerHub: docker.io references are checked against the
// registry a pull reaches, with library/ for one-component repositories.
func TestParseNameDockerHub(t *testing.T) {
	tests := []struct {
		name, in, host, repo string
	}{
		{name: "docker.io library", in: "docker.io/alpine:3", host: "registry-1.docker.io", repo: "library/alpine"},
		{name: "docker.io org", in: "docker.io/org/app:1", host: "registry-1.docker.io", repo: "org/app"},
		{name: "index.docker.io", in: "index.docker.io/library/alpine:3", host: "registry-1.docker.io", repo: "library/alpine"},
		{name: "registry-1 as it is", in: "registry-1.docker.io/alpine:3", host: "registry-1.docker.io", repo: "alpine"},
		{name: "other registries untouched", in: "ghcr.io/app:1", host: "ghcr.io", repo: "app"},
		{name: "docker.io on another port untouched", in: "docker.io:5000/alpine:3", host: "docker.io", repo: "alpine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseName(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.host != tt.host || got.repo != tt.repo {
				t.Errorf("parseName(%q) = host %q repo %q, want %q %q", tt.in, got.host, got.repo, tt.host, tt.repo)
			}
		})
	}
}
