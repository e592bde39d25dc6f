package sni

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"testing"
)

var quiet = slog.New(slog.DiscardHandler)

// drainUpstream discards everything after the ClientHello and reports the
// byte count when the client half-closes.
func drainUpstream(tb testing.TB, done chan<- int64) *tcpUpstream {
	return newTCPUpstream(tb, func(c *net.TCPConn) {
		readHelloThen(c)
		c.Write([]byte("ok"))
		n, _ := io.Copy(io.Discard, c)
		done <- n
	})
}

// BenchmarkSpliceCopy measures one spliced tunnel's throughput, client to
// upstream, 1 MiB per operation; allocs/op are the whole process's.
func BenchmarkSpliceCopy(b *testing.B) {
	done := make(chan int64, 1)
	up := drainUpstream(b, done)
	w := newWorld(b, Config{Logger: quiet}, "", registryRoute(b, up.addr))
	c := w.dial(b)
	c.Write(captureHello(b, &tls.Config{ServerName: registryName}))
	readAtMost(b, c, 2)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	<-done
}

// BenchmarkSpliceConnection measures a short spliced connection: accept,
// ClientHello, route, dial, replay, a 2-byte answer, close.
func BenchmarkSpliceConnection(b *testing.B) {
	up := sinkUpstream(b)
	w := newWorld(b, Config{Logger: quiet}, "", registryRoute(b, up.addr))
	hello := captureHello(b, &tls.Config{ServerName: registryName})
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			b.Fatal(err)
		}
		c.Write(hello)
		if got := readAtMost(b, c, 2); string(got) != "ok" {
			b.Fatalf("got %q", got)
		}
		c.Close()
	}
}

// BenchmarkBridgeCopy measures one bridged tunnel's throughput (TLS
// terminated, re-encrypted to an mTLS upstream), 1 MiB per operation.
func BenchmarkBridgeCopy(b *testing.B) {
	p := newBridgePKI(b)
	done := make(chan int64, 1)
	up := newTCPUpstream(b, func(c *net.TCPConn) {
		tc := tls.Server(c, p.upstreamConfig("http/1.1"))
		n, _ := io.Copy(io.Discard, tc)
		done <- n
	})
	w := newWorld(b, Config{Logger: quiet}, "", p.route(b, up.addr))
	tc := tls.Client(w.dial(b), p.nodeConfig("http/1.1"))
	if err := tc.Handshake(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tc.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	tc.CloseWrite()
	<-done
}

// BenchmarkBridgeConnection measures bridged connections: both handshakes,
// an echo, close; "resumed" resumes the node's session, "full" does not
// (the upstream leg resumes in both once the route's cache is warm).
func BenchmarkBridgeConnection(b *testing.B) {
	for _, resume := range []bool{false, true} {
		name := "full"
		if resume {
			name = "resumed"
		}
		b.Run(name, func(b *testing.B) {
			p := newBridgePKI(b)
			up := newTLSUpstream(b, p.upstreamConfig("h2"))
			w := newWorld(b, Config{Logger: quiet}, "", p.route(b, up.addr))
			node := p.nodeConfig("h2")
			if resume {
				node.ClientSessionCache = tls.NewLRUClientSessionCache(1)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ping(b, w, node); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
