// Package httpbridge is the HTTP-aware bridge of snigate's http routes
// (routes[].http): it serves the node's HTTP on a bridge route's
// terminated TLS connection (HTTP/2 and HTTP/1.1 by ALPN, with net/http
// and golang.org/x/net/http2) and forwards what the route's policy admits
// to the registry over one pool of mTLS connections per route, on the
// healthy upstreams in the pool's balance order.
//
// A Bridge is an sni.BridgeHandler: put it in the route's Handler and sni
// hands it every node connection once its TLS is terminated.
//
// Usage:
//
//	metrics := httpbridge.NewMetrics(reg) // once per process
//	audits := new(httpbridge.AuditFiles)  // one per generation of routes
//	audit, err := audits.Open(path, log, metrics) // optional; shared per file
//	audits.Adopt(prevAudits)              // a reload: one writer per file across generations
//	b, err := httpbridge.New(httpbridge.Config{
//		Route:         "registry",
//		Upstreams:     pool, // *upstream.Pool: candidates and passive health
//		UpstreamTLS:   edgeClientConfig, // func() *tls.Config, one per dial
//		Forwarded:     true,
//		Repositories:  []string{"team/*"},
//		RedirectRoots: roots, // system roots plus upstream_tls.ca
//		Audit:         audit,
//		Metrics:       metrics,
//		Log:           log,
//	})
//	route := &sni.Route{Name: "registry", Mode: sni.ModeBridge, Pool: pool, Serve: certs, Handler: b}
//
//	// on SIGHUP: audit.Reopen(); when a reload replaced the route:
//	old.Close()      // node connections close at their next request boundary
//	prevAudits.Close() // a file stays open while another handle uses its writer
//
// Each request is checked in the contract's order: Host against the
// connection's SNI (421), method (405), repository (403); a refusal gets
// an OCI error body with code DENIED and never reaches the registry. The
// URL is parsed once (oci.ParseURL) into an oci.API value that policy,
// audit and the links of the chain read. Admitted requests go down the
// chain Config.Chain builds (the cache: package httpcache) to the proxy;
// the links report the facts of the audit record in the request's
// oci.Annotation. A GET or HEAD whose upstream fails before answering is
// sent to the next candidate; with no healthy upstream the node gets 503,
// when all fail 502, both with an OCI error body UNAVAILABLE. Bodies are
// streamed with bounded buffers both ways; a node going away cancels the
// upstream request; an upstream failing mid-body aborts the node's
// response (HTTP/1.1: the connection closes before Content-Length is
// reached; HTTP/2: RST_STREAM), never a short 200.
//
// Nothing is opened by New; ServeBridge serves one connection and
// returns when it is closed; Close retires a bridge without waiting.
package httpbridge
