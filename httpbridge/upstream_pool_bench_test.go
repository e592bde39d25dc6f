package httpbridge

import (
	"net"
	"testing"
)

// BenchmarkUpstreamPoolPutGet is what the idle bookkeeping costs a request:
// one put (the idle timer reset) and one get (stopped).
func BenchmarkUpstreamPoolPutGet(b *testing.B) {
	p := newUpPool(nil, nil)
	pc, _ := pipeConn(p, "a:443")
	b.ReportAllocs()
	for b.Loop() {
		p.put(pc)
		if p.get("a:443") != pc {
			b.Fatal("lost the connection")
		}
	}
}

// BenchmarkUpstreamProbe is the look into an idle connection's socket a reuse
// costs (upProbe: one recv with MSG_PEEK on loopback TCP).
func BenchmarkUpstreamProbe(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	probe := newUpProbe(c)
	b.ReportAllocs()
	for b.Loop() {
		if !probe.idle() {
			b.Fatal("a quiet connection looked busy")
		}
	}
}
