// Package sni is snigate's TLS front: it accepts connections, reads the
// whole TLS ClientHello (bounded, deadlined, record after record), routes
// on its server name (exact names beat one-label wildcards, then the
// default route, else a TLS unrecognized_name alert), and hands the
// connection to its route's target:
//
//   - splice: the raw bytes go to an upstream (optionally after a PROXY
//     v1/v2 header); TLS stays end to end. On Linux, the connections of a
//     listener from Listen or WrapListener run in the server's event loops
//     (one per GOMAXPROCS, epoll on raw descriptors, no goroutine or
//     timer per connection); anything off the common path goes to a
//     goroutine per connection with the bytes read so far. Bytes are
//     copied through the loop's buffer in small bursts and spliced
//     (splice(2), a pooled pipe held only while bytes are queued) in
//     streams, so an idle tunnel holds its two sockets, no pipe and no
//     goroutine. Listen's connections skip Go's default TCP keepalive.
//   - bridge: the client's TLS is terminated with the route's serving
//     certificate; during that handshake a TLS connection to the upstream
//     is opened with the client's ALPN list and the edge's client
//     certificate, and the client gets the protocol the upstream chose.
//     Then Route.BridgeFunc, or a plain copy, moves the bytes. A route
//     with a Handler (BridgeHandler) dials nothing per connection: the
//     handler serves the terminated connection (the HTTP-aware bridge).
//     With Route.ClientAuth the client must present a certificate that
//     chains to its CAs (clientAuth, valid, not revoked, named like Names),
//     checked in VerifyConnection for resumed sessions too; the node's
//     identity (NodeIdentity) then appears as node= in the log line.
//
// ServeConnect accepts "CONNECT host:port" only for a routed name on a
// TLS listener port, answers 200, then handles the tunnel exactly as a TLS
// listener connection whose ClientHello must name that host; it is never
// an open proxy.
//
// Upstreams are tried in the order the route's pool gives
// (upstream.Pool.Candidates), the next one after a failed dial or
// handshake, within Config.ConnectTimeout. Targets implement
// tcpproxy.Target and receive a *tcpproxy.Conn holding the peeked bytes.
//
// Usage:
//
//	metrics := sni.NewMetrics(prometheus.DefaultRegisterer) // once per process
//	routes, err := sni.NewTable([]*sni.Route{{
//		Name: "registry", SNI: []string{"registry.example.com"},
//		Mode: sni.ModeBridge, Pool: pool, // *upstream.Pool
//		Serve:       keyPair,            // GetCertificate: certinel-style source
//		UpstreamTLS: &tls.Config{RootCAs: registryCAs, GetClientCertificate: edge.GetClientCertificate},
//	}}, "" /* no default route */)
//	srv, err := sni.New(sni.Config{Logger: logger, Metrics: metrics}, routes)
//	ln, err := net.Listen("tcp", ":443")
//	go srv.Serve(ln)         // once per listener; returns ErrServerClosed
//	go srv.ServeConnect(cln) // optional: HTTP CONNECT to the same routes (listen.connect)
//	srv.SetRoutes(newRoutes) // on reload: new connections only
//	srv.SetConfig(newCfg)    // on reload: timeouts, limits, allow-lists for new connections
//	srv.Shutdown(ctx)        // stop accepting, wait for tunnels until ctx, then close them
//
// The caller opens the listeners; Serve closes its listener when it
// returns. A Route belongs to the Table built from it and must not change
// afterwards. Each connection ends with one Info log line (to
// Config.AccessLog, else Logger), its keys always
// in the order listener client sni route mode upstream result bytes_up
// bytes_down duration conn (then err); client faults also get a Warn line,
// rate-limited per kind, that says what to change.
package sni
