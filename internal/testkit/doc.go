// Package testkit is what the packages' tests share: a log sink a test
// waits on for a line (bounded by WaitLimit or the test's own context),
// metric readers (one value, a gathered sum, every series), a static
// certificate source and a poll with a failure deadline. It imports nothing of snigate's, and only
// tests import it.
//
// Usage:
//
//	logs := testkit.NewLogSink()
//	srv := newServer(Config{Logger: logs.Logger()})
//	line := logs.Wait(t, "connection", "result=timeout")
//	n := testkit.Value(t, m.connections.WithLabelValues("tls", "registry", "ok"))
//	v, ok := testkit.Gathered(t, reg, "snigate_connections_total", map[string]string{"result": "ok"})
//	for _, s := range testkit.AllSeries(t, reg, "snigate_upstream_up") { fmt.Println(s) } // name{k=v} value
//	testkit.Poll(t, "the connection set to empty", func() bool { return srv.Conns() == 0 })
package testkit

import "time"

// WaitLimit bounds every wait in Wait and Poll: a failure deadline for a
// busy machine, never a synchronisation delay.
const WaitLimit = 10 * time.Second
