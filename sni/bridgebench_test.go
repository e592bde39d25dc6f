package sni

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
)

// benchHandshakeParallelism is the bridge handshake benchmarks' number of
// concurrent clients per GOMAXPROCS: enough to keep every core busy
// through the round trips, as bench/'s closed loop of 32 does.
const benchHandshakeParallelism = 8

// BenchmarkBridgeHandshakeFull measures bridged connections at
// concurrency as bench/'s bridge-full does: Go's default client (no
// ALPN, no session cache: a full handshake on the node leg), an echo
// through an upstream that requires the edge's client certificate, close.
// The upstream leg resumes once the route's cache is warm, as HAProxy's
// and nginx's do. ns/op is the whole process's (node, gateway, upstream).
func BenchmarkBridgeHandshakeFull(b *testing.B) { benchBridgeHandshake(b, false) }

// BenchmarkBridgeHandshakeResumed is BenchmarkBridgeHandshakeFull with
// the node resuming its session, as bench/'s bridge-resumed.
func BenchmarkBridgeHandshakeResumed(b *testing.B) { benchBridgeHandshake(b, true) }

func benchBridgeHandshake(b *testing.B, resume bool) {
	p := newBridgePKI(b)
	up := newTLSUpstream(b, p.upstreamConfig())
	r := p.route(b, up.addr)
	r.MaxDialsPerClient = -1 // every client is 127.0.0.1
	w := newWorld(b, Config{Logger: quiet}, "", r)
	node := p.nodeConfig()
	if resume {
		node.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	}
	if err := benchEcho(w.addr, node); err != nil { // warms the caches
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(benchHandshakeParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := benchEcho(w.addr, node); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchEcho is one bridged connection: dial, handshake, a 4-byte echo,
// close. Unlike ping it registers no cleanup, so that it can run from
// RunParallel's goroutines millions of times.
func benchEcho(addr string, cfg *tls.Config) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	tc := tls.Client(c, cfg)
	defer tc.Close()
	if _, err := tc.Write([]byte("ping")); err != nil {
		return err
	}
	var buf [4]byte
	_, err = io.ReadFull(tc, buf[:])
	return err
}
