package sni

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
	"github.com/snigate/snigate/internal/testkit"
)

// Hostile clients: each case holds many connections open (or feeds them
// badly), asserts that the gateway's memory and goroutines stay bounded
// while they last, that a legitimate TLS connection is served meanwhile,
// and that everything is released once they are gone.

// hostileHelloTimeout is the ClientHello timeout of these worlds: short,
// so that the floods end quickly, and long enough that a whole flood is
// dialed and accepted before its first connections time out, which the
// checks of what a flood holds while it lasts need. At 300ms a loaded
// machine (race detector, busy CPUs) took 230ms to open 500 connections.
const hostileHelloTimeout = 2 * time.Second

// goroutineSlack absorbs goroutines the runtime and net poller start on
// their own.
const goroutineSlack = 10

// hostile is a world with one splice route to a TLS echo server and a
// client that trusts it.
type hostile struct {
	*world
	client *tls.Config
	base   int // goroutines once the world is up and idle
}

func newHostile(tb testing.TB, cfg Config) *hostile {
	tb.Helper()
	ca := newPKI(tb, "hostile CA")
	up := newTLSUpstream(tb, &tls.Config{Certificates: []tls.Certificate{ca.leaf(tb, registryName)}})
	cfg.ClientHelloTimeout = hostileHelloTimeout
	if cfg.MaxConnectionsPerClient == 0 {
		// These floods come from one address; they measure what a flood
		// holds when max_connections_per_client does not cut it short.
		cfg.MaxConnectionsPerClient = -1
	}
	h := &hostile{
		world:  newWorld(tb, cfg, "", registryRoute(tb, up.addr)),
		client: &tls.Config{ServerName: registryName, RootCAs: ca.pool},
	}
	h.pull(tb) // warm up: pools, poller, upstream
	h.waitSessions(tb, 0)
	h.base = runtime.NumGoroutine()
	return h
}

// pull is the legitimate client: a TLS handshake with the upstream
// through the gateway and an echo.
func (h *hostile) pull(tb testing.TB) {
	tb.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	tc := tls.Client(c, h.client)
	if _, err := tc.Write([]byte("legit")); err != nil {
		tb.Fatalf("legitimate TLS connection during the attack: %v", err)
	}
	tc.CloseWrite()
	if got, err := io.ReadAll(tc); string(got) != "legit" {
		tb.Fatalf("legitimate TLS connection during the attack: echo %q, %v", got, err)
	}
}

// released waits until the server holds no connection and the goroutine
// count is back to the baseline, and returns it.
func (h *hostile) released(tb testing.TB) int {
	tb.Helper()
	h.waitSessions(tb, 0)
	var n int
	testkit.Poll(tb, "goroutines back to the baseline", func() bool {
		n = runtime.NumGoroutine()
		return n <= h.base+goroutineSlack
	})
	return n
}

// heapInuse returns the live heap after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// dialFrom opens n connections to addr from local address from (nil: any)
// and sends first on each.
func dialFrom(tb testing.TB, addr string, from net.IP, n int, first []byte) []net.Conn {
	tb.Helper()
	d := net.Dialer{}
	if from != nil {
		d.LocalAddr = &net.TCPAddr{IP: from}
	}
	conns := make([]net.Conn, 0, n)
	tb.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		if len(first) > 0 {
			if _, err := c.Write(first); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return conns
}

// closedByServer checks that the server closed every connection (EOF or
// reset, not the client's own read deadline) and returns what they read.
func closedByServer(tb testing.TB, conns []net.Conn) []byte {
	tb.Helper()
	var got []byte
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(waitLimit))
		b, err := io.ReadAll(c)
		if isTimeout(err) {
			tb.Fatalf("connection %s still open after %v", c.LocalAddr(), waitLimit)
		}
		got = append(got, b...)
		c.Close()
	}
	return got
}

func TestHostileSilentFlood(t *testing.T) {
	const n = 500
	h := newHostile(t, Config{})
	heap0 := heapInuse()
	start := time.Now()
	conns := dialFrom(t, h.addr, nil, n, nil)
	h.waitSessions(t, n)
	during, heap := runtime.NumGoroutine(), heapInuse()
	h.pull(t)
	closedByServer(t, conns)
	elapsed := time.Since(start)
	after := h.released(t)
	t.Logf("%d silent connections: goroutines %d -> %d -> %d; heap in use +%d KiB (%d B per connection); all closed after %v",
		n, h.base, during, after, (heap-heap0)>>10, int(heap-heap0)/n, elapsed.Round(time.Millisecond))
	// One goroutine per connection on the gateway, nothing more.
	if during > h.base+n+goroutineSlack {
		t.Errorf("%d goroutines with %d silent connections; want at most %d", during, n, h.base+n+goroutineSlack)
	}
	if per := int(heap-heap0) / n; heap > heap0 && per > 6<<10 {
		t.Errorf("heap grew by %d bytes per silent connection; want at most 6 KiB", per)
	}
	if c := h.counter(t, h.m.connections, h.addr, "", "timeout"); c != n {
		t.Errorf("connections{result=timeout} = %v, want %d", c, n)
	}
}

// TestHostileSlowDrip: a ClientHello sent one byte at a time is cut at
// timeouts.client_hello, which bounds the whole hello, not each read.
func TestHostileSlowDrip(t *testing.T) {
	const n, every = 20, 10 * time.Millisecond
	h := newHostile(t, Config{})
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	conns := dialFrom(t, h.addr, nil, n, nil)
	sent := make(chan int, n)
	for _, c := range conns {
		go drip(c, hello, every, sent)
	}
	h.pull(t)
	closedByServer(t, conns)
	for range n {
		// At one byte per 10ms the hello needs ~15s; it must be cut after
		// hostileHelloTimeout, long before it is complete.
		if k := <-sent; k >= len(hello)/2 {
			t.Errorf("a dripping client sent %d of %d bytes before the gateway closed it", k, len(hello))
		}
	}
	h.released(t)
	if c := h.counter(t, h.m.connections, h.addr, "", "timeout"); c != n {
		t.Errorf("connections{result=timeout} = %v, want %d", c, n)
	}
	line := h.logs.wait(t, "msg=connection", "result=timeout", "ClientHello incomplete")
	t.Logf("drip: %s", line)
}

// drip writes b one byte per interval until a write fails, and reports
// how many bytes were written.
func drip(c net.Conn, b []byte, every time.Duration, sent chan<- int) {
	t := time.NewTicker(every)
	defer t.Stop()
	k := 0
	for ; k < len(b); k++ {
		if _, err := c.Write(b[k : k+1]); err != nil {
			break
		}
		<-t.C
	}
	sent <- k
}

// TestHostileHugeLength: lengths claimed by record and handshake headers
// cost nothing until the bytes arrive; impossible ones are refused at once.
func TestHostileHugeLength(t *testing.T) {
	tests := []struct {
		name   string
		first  []byte
		result string
		perMax int // heap bytes per connection while they are open
	}{
		{name: "message of 16 MiB", result: "too_large",
			first: []byte{recordTypeHandshake, 3, 1, 0x40, 0x00, handshakeClientHello, 0xff, 0xff, 0xff}},
		{name: "record of 64 KiB", result: "too_large", first: []byte{recordTypeHandshake, 3, 1, 0xff, 0xff}},
		{name: "largest allowed record and message, then silence", result: "timeout", perMax: 6 << 10,
			first: []byte{recordTypeHandshake, 3, 1, 0x40, 0x00, handshakeClientHello, 0x01, 0x00, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 200
			h := newHostile(t, Config{})
			heap0 := heapInuse()
			conns := dialFrom(t, h.addr, nil, n, tt.first)
			if tt.perMax > 0 {
				h.waitSessions(t, n)
				heap := heapInuse()
				per := (int(heap) - int(heap0)) / n
				t.Logf("%d connections claiming a 64 KiB hello: heap +%d KiB (%d B per connection)", n, (int(heap)-int(heap0))>>10, per)
				if per > tt.perMax {
					t.Errorf("heap grew by %d bytes per connection; want at most %d (a claimed length must not be allocated)", per, tt.perMax)
				}
			}
			h.pull(t)
			closedByServer(t, conns)
			h.released(t)
			if c := h.counter(t, h.m.connections, h.addr, "", tt.result); c != n {
				t.Errorf("connections{result=%s} = %v, want %d", tt.result, c, n)
			}
		})
	}
}

// TestHostileGarbageAfterHello: bytes after a valid ClientHello are the
// upstream's business in splice mode (carried unchanged) and end the
// handshake in bridge mode; the gateway serves on.
func TestHostileGarbageAfterHello(t *testing.T) {
	hello := captureHello(t, &tls.Config{ServerName: registryName})
	garbage := make([]byte, 1<<20)
	io.ReadFull(randStream(7), garbage)
	t.Run("splice carries it", func(t *testing.T) {
		got := make(chan [32]byte, 1)
		up := newTCPUpstream(t, func(c *net.TCPConn) {
			b, _ := io.ReadAll(c)
			got <- sha256.Sum256(b)
		})
		w := newWorld(t, Config{}, "", registryRoute(t, up.addr))
		c := w.dial(t)
		c.Write(append(append([]byte{}, hello...), garbage...))
		c.CloseWrite()
		readAll(t, c)
		if <-got != sha256.Sum256(append(append([]byte{}, hello...), garbage...)) {
			t.Error("the upstream did not receive the ClientHello and the garbage unchanged")
		}
		w.logs.wait(t, "msg=connection", "result=ok", "bytes_up="+strconv.Itoa(len(hello)+len(garbage)))
	})
	t.Run("bridge ends the handshake", func(t *testing.T) {
		p := newBridgePKI(t)
		w := newWorld(t, Config{}, "", p.route(t, newTLSUpstream(t, p.upstreamConfig()).addr))
		c := w.dial(t)
		c.Write(append(append([]byte{}, hello...), garbage[:4096]...))
		readAll(t, c)
		w.logs.wait(t, "msg=connection", "mode=bridge", "result=client_error")
		if _, err := ping(t, w, p.nodeConfig()); err != nil {
			t.Fatalf("a legitimate client after the garbage: %v", err)
		}
	})
}

// TestHostileProxyHeaderFlood: PROXY headers from untrusted sources are
// refused at once; from a trusted balancer, a header that claims the
// largest size and stalls holds bounded memory until the deadline.
func TestHostileProxyHeaderFlood(t *testing.T) {
	balancer := net.IPv4(127, 0, 0, 2)
	v2 := func(length uint16) []byte {
		b := append([]byte{}, proxyproto.SIGV2...)
		return append(b, 0x21, 0x11, byte(length>>8), byte(length)) // PROXY, TCP4
	}
	tests := []struct {
		name    string
		trusted bool
		first   []byte
		result  string
		perMax  int
	}{
		{name: "v1 from an untrusted source", first: []byte("PROXY TCP4 203.0.113.7 192.0.2.10 5555 443\r\n"), result: "proxy_header_error"},
		{name: "v2 from an untrusted source", first: v2(12), result: "proxy_header_error"},
		{name: "v1 without an end", trusted: true, first: append([]byte("PROXY TCP4 "), bytes.Repeat([]byte("9"), 300)...), result: "proxy_header_error"},
		{name: "v2 claiming more than allowed", trusted: true, first: v2(65535), result: "proxy_header_error"},
		{name: "v2 claiming the most allowed, then silence", trusted: true, first: v2(proxyproto.MaxV2HeaderSize), result: "timeout", perMax: 10 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 200
			var cfg Config
			if tt.trusted {
				cfg.ProxyProtocolFrom = prefixes("127.0.0.2/32") // the legitimate client, 127.0.0.1, sends none
			}
			h := newHostile(t, cfg)
			heap0 := heapInuse()
			conns := dialFrom(t, h.addr, balancer, n, tt.first)
			if tt.perMax > 0 {
				h.waitSessions(t, n)
				heap := heapInuse()
				per := (int(heap) - int(heap0)) / n
				t.Logf("%d stalled PROXY v2 headers claiming %d bytes: heap +%d KiB (%d B per connection)", n, proxyproto.MaxV2HeaderSize, (int(heap)-int(heap0))>>10, per)
				if per > tt.perMax {
					t.Errorf("heap grew by %d bytes per connection; want at most %d", per, tt.perMax)
				}
			}
			h.pull(t)
			if got := closedByServer(t, conns); len(got) != 0 {
				t.Errorf("PROXY header senders got %q, want a close", got[:min(len(got), 64)])
			}
			h.released(t)
			if c := h.counter(t, h.m.connections, h.addr, "", tt.result); c != n {
				t.Errorf("connections{result=%s} = %v, want %d", tt.result, c, n)
			}
		})
	}
}
