// Package admin is snigate's admin listener (listen.admin) and the client
// of its runtime API that `snigate ctl` uses.
//
// The server answers
//
//	GET  /healthz                            200 "ok" while the process runs
//	GET  /readyz                             200 "ready", or 503 "not ready: starting|draining"
//	GET  /metrics                            Prometheus text format from Config.Gatherer
//	GET  /api/upstreams                      JSON array of upstream.Status
//	POST /api/upstreams/{route}/{upstream}   body {"state":"ready"|"drain"|"maint"}: 200 and the new upstream.Status
//	GET  /api/answers                        JSON array of dnsresponder.AnswerStatus (dns.answer_check); 404 without one
//
// Errors are JSON {"error": "..."}: 404 for an unknown route or upstream (the
// gateway's error wraps ErrNotFound or upstream.ErrUnknownUpstream), 400
// for a bad body or state, 413 for a body over MaxBodyBytes, 405 with an
// Allow header for a wrong method. The {upstream} segment is a host:port;
// send it verbatim ("10.1.0.10:443") or escaped ("10.1.0.10%3A443",
// "%5B2001:db8::1%5D:443"). The API has no authentication: keep it on
// loopback or a unix socket (IsLoopbackAddr tells the gateway when to warn).
//
// Usage, in the gateway:
//
//	ln, err := admin.Listen(cfg.Listen.Admin) // "127.0.0.1:9090" or "unix:/run/snigate/admin.sock" (mode 0600)
//	if err != nil { ... }
//	srv := admin.New(admin.Config{
//		Upstreams: gw,          // Upstreams() []upstream.Status; SetUpstreamState(route, upstream, state) (upstream.Status, error)
//		ReadyFunc: gw.Ready,    // false while starting and while draining
//		Gatherer:  registry,    // *prometheus.Registry
//		Logger:    logger,
//		Metrics:   admin.NewMetrics(registry),
//	})
//	go srv.Serve(ln)              // returns nil after Shutdown; closes ln
//	...
//	srv.Shutdown(ctx)             // also removes the unix socket file
//
// and in `snigate ctl`:
//
//	c := &admin.Client{Addr: flagAdmin} // "" means DefaultAddr
//	st, err := c.Upstreams(ctx)
//	admin.WriteUpstreamTable(os.Stdout, st)
//	st1, err := c.SetState(ctx, "registry", "10.1.0.10:443", upstream.StateDrain)
package admin
