// Package dnsresponder is snigate's embedded DNS responder: it answers the
// routed names (every route's SNI names plus dns.names) with the gateway's
// addresses, authoritatively, and forwards every other name to the
// configured resolvers.
//
// The pieces, CoreDNS style:
//
//   - Policy: the answer for a routed name (A/AAAA from the configured
//     addresses, NOERROR with an SOA for every other type). It knows no
//     transport and is shared with the CoreDNS plugin (coredns-plugin/).
//   - Handler: a dns.Handler that checks the client (Config.Allow: others
//     get REFUSED) and the query, asks the Policy, and forwards the rest
//     (in order, failing over on timeout, network error or SERVFAIL); it
//     handles EDNS0 and truncation and counts every query.
//   - Server: UDP and TCP on sockets the caller opened, with a handler
//     that can be swapped on reload. UDP has its own loop: one reading
//     goroutine answering batches of queries (recvmmsg/sendmmsg on Linux),
//     a routed name's reply built straight from the query's bytes (no
//     dns.Msg, no allocation), forwarded queries on bounded goroutines.
//     TCP is miekg/dns's server behind a limit of MaxTCPConns (the one idle
//     longest makes room for a new one) and MaxTCPConnsPerClient.
//   - AnswerCheck (dns.answer_check): checks every answer address (TCP,
//     then a ClientHello answered with a ServerHello) and gives a Policy
//     built with NewCheckedPolicy only the ones that are up (all of them
//     when none is), without the ones LeaveOut names (a draining
//     gateway's own). The CoreDNS plugin shares it too.
//
// Usage:
//
//	var routed names.Table[struct{}] // Add refuses an invalid or repeated pattern
//	routed.Add("registry.example.com", struct{}{})
//	routed.Add("*.registry.example.com", struct{}{})
//	h, err := dnsresponder.New(dnsresponder.Config{
//		Names:   &routed,
//		Answer:  []netip.Addr{netip.MustParseAddr("192.0.2.10")},
//		TTL:     30 * time.Second,
//		Forward: []string{"10.96.0.10:53"},
//		Metrics: dnsresponder.NewMetrics(prometheus.DefaultRegisterer), // once per process
//	})
//	if err != nil { ... }
//	pc, _ := net.ListenPacket("udp", ":53") // the caller opens, Shutdown closes
//	ln, _ := net.Listen("tcp", ":53")
//	srv := dnsresponder.NewServer(h, logger)
//	go srv.ServeUDP(pc)
//	go srv.ServeTCP(ln)
//	...
//	srv.SetHandler(h2) // reload: queries from now on use h2
//	...
//	srv.Shutdown(ctx) // stop reading, answer what is in flight, close the sockets
//
// With dns.answer_check:
//
//	check, err := dnsresponder.NewAnswerCheck(dnsresponder.AnswerCheckConfig{
//		Answer: answer, Port: 443, ServerName: dnsresponder.CheckServerName(firstRoutedName),
//		Metrics: metrics.Answers(),
//	})
//	h, err := dnsresponder.New(dnsresponder.Config{Names: &routed, AnswerCheck: check, ...})
//	go check.Run(ctx)           // the caller runs and stops it
//	check.LeaveOut(ownAddrs)    // draining: stop sending nodes here
//
// The CoreDNS plugin uses only the Policy:
//
//	if reply, ok := policy.Answer(r); ok { w.WriteMsg(reply); return dns.RcodeSuccess, nil }
//	return plugin.NextOrFailure(...)
package dnsresponder
