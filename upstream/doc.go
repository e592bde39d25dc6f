// Package upstream keeps, for each snigate route, the pool of upstream
// hosts: their health (active tcp, tls or http checks with rise/fall
// counting), their administrative state (ready, drain, maint), their active
// connections, and the order in which a new connection tries them
// (roundrobin or leastconn). It also probes upstreams step by step for
// `snigate check --probe`.
//
// Usage:
//
//	pool, err := upstream.New(upstream.Config{
//		Route:         "registry",
//		Addrs:         []string{"10.1.0.10:443", "10.1.0.11:443"},
//		Balance:       upstream.RoundRobin,
//		Check:         upstream.Check{Kind: upstream.CheckTLS, Fall: 3, Rise: 2},
//		TLSConfigFunc: func() *tls.Config { return bridgeClientConfig }, // same SNI and client cert as traffic
//		Logger:        logger,
//		Metrics:       metrics, // upstream.NewMetrics(reg), once per process
//	})
//	pool.Adopt(previousPool)  // on reload: keep health, states and counts
//	go pool.Run(ctx)          // checks now, then every Interval, until ctx ends
//
//	// per new connection: try the candidates in order, each attempt
//	// within its share of timeouts.connect
//	a := upstream.NewAttempts(pool.Candidates(), time.Now(), connectTimeout, pool)
//	for {
//		h, until, ok := a.Next(time.Now())
//		if !ok {
//			break
//		}
//		conn, err := dial(ctx, until, h.Addr())
//		if err != nil {
//			a.Failed(err) // passive health; nothing forwarded yet: try the next one
//			continue
//		}
//		a.Succeeded()
//		return conn, a.Keep(), nil // the caller releases when the connection ends
//	}
//	return nil, nil, a.Err() // wraps upstream.ErrNoHealthy when there was no candidate
//
// Hosts start healthy and ready, as in HAProxy, so traffic flows before the
// first round of checks (which Run starts at once) confirms it. A host gets
// new connections only while it is healthy and ready. Health changes after
// Fall consecutive failed checks or Rise consecutive passes. StateDrain
// keeps checking; StateMaint pauses checks until the host leaves it.
//
// The tls check is a full handshake with a clone of the configuration real
// connections use, so a server that refuses our client certificate fails
// it, TLS 1.3 included (see the README). The http check sends GET Path over
// such a session with Host set to the server name.
//
// The caller owns the *Pool and stops Run through its context; a *Host may
// outlive its Pool (Adopt moves it), and every release func must be called
// once the connection it counts has ended.
package upstream
