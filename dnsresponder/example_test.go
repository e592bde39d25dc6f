package dnsresponder_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"
	"github.com/snigate/snigate/dnsresponder"
	"github.com/snigate/snigate/names"
)

// Example_server shows the lifecycle: build a Handler from the routed
// names, serve it on sockets the caller opened, swap it on reload, shut
// down.
func Example_server() {
	var routed names.Table[struct{}]
	for _, p := range []string{"registry.example.com", "*.registry.example.com"} {
		if err := routed.Add(p, struct{}{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	logger := slog.New(slog.DiscardHandler)
	h, err := dnsresponder.New(dnsresponder.Config{
		Names:  &routed,
		Answer: []netip.Addr{netip.MustParseAddr("192.0.2.10")},
		TTL:    30 * time.Second,
		Logger: logger,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := dnsresponder.NewServer(h, logger)
	done := make(chan error, 1)
	go func() { done <- srv.ServeUDP(pc) }()

	ask := func(name string, qtype uint16) {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		r, err := dns.Exchange(m, pc.LocalAddr().String())
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(dns.RcodeToString[r.Rcode], r.Answer, r.Ns)
	}
	ask("mirror.registry.example.com.", dns.TypeA)
	ask("registry.example.com.", dns.TypeHTTPS)
	ask("example.org.", dns.TypeA) // no forwarders configured

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(srv.Shutdown(ctx), <-done)
	// Output:
	// NOERROR [mirror.registry.example.com.	30	IN	A	192.0.2.10] []
	// NOERROR [] [registry.example.com.	30	IN	SOA	snigate.invalid. hostmaster.snigate.invalid. 1 3600 600 86400 30]
	// REFUSED [] []
	// <nil> <nil>
}

// Example_answerCheck shows dns.answer_check: a check of every gateway,
// a Handler that answers with the ones up, the check run by its caller,
// and a draining gateway leaving its own address out.
func Example_answerCheck() {
	var routed names.Table[struct{}]
	if err := routed.Add("registry.example.com", struct{}{}); err != nil {
		fmt.Println(err)
		return
	}
	gateways := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")}
	check, err := dnsresponder.NewAnswerCheck(dnsresponder.AnswerCheckConfig{
		Answer:     gateways,
		Port:       443,
		ServerName: dnsresponder.CheckServerName("registry.example.com"),
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := dnsresponder.New(dnsresponder.Config{Names: &routed, AnswerCheck: check})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = h                        // served by a Server, as in Example_server
	fmt.Println(check.Current()) // every address starts up
	check.LeaveOut(gateways[:1]) // this gateway (192.0.2.10) drains
	fmt.Println(check.Current()) // the others only, at once
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(check.Run(ctx)) // Run checks every Interval until ctx is done
	// Output:
	// [192.0.2.10 192.0.2.11]
	// [192.0.2.11]
	// <nil>
}
