package sni

import (
	"crypto/tls"
	"fmt"
	"github.com/snigate/snigate/internal/testkit"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// randomALPN is a made-up ALPN list, different on every call.
func randomALPN(extra ...string) []string {
	return append([]string{fmt.Sprintf("x-%x", rand.Uint64()), fmt.Sprintf("y-%x", rand.Uint64())}, extra...)
}

// Regression (issue 26 item 6): the dial waited for the node's Finished
// only when the ALPN memory knew the exact list offered, so 1,000 hellos
// with made-up lists cost about 1,000 upstream mTLS handshakes, and their
// answers evicted the real lists from the memory. Now the upstream is
// dialed only once the client's handshake is done: a flood of hellos with
// random lists (sent then closed, or sent then silent) costs none, the
// real list is still remembered, and h2 and http/1.1 clients still get
// the protocol the upstream chose.
func TestBridgeRandomALPNHellosBuyNoUpstream(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	r := p.route(t, up.addr)
	w := newWorld(t, Config{MaxConnectionsPerClient: -1}, "", r)
	real := []string{"h2", "http/1.1"}
	if st, err := ping(t, w, p.nodeConfig(real...)); err != nil || st.NegotiatedProtocol != "h2" {
		t.Fatalf("first connection: %v, protocol %q", err, st.NegotiatedProtocol)
	}
	<-up.protos
	const flood = 4 * alpnMemorySize
	var stalled []net.Conn
	for i := range flood {
		c := w.dialFrom(t, "127.0.0.2")
		if _, err := c.Write(captureHello(t, p.nodeConfig(randomALPN("http/1.1")...))); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			c.Close()
			continue
		}
		if typ, _ := firstRecord(t, c); typ != recordTypeHandshake {
			t.Fatalf("hello %d: gateway answered a record of type %d, want its ServerHello", i, typ)
		}
		stalled = append(stalled, c)
	}
	if n := up.accepted.Load(); n != 1 {
		t.Errorf("the upstream accepted %d connections for 1 real connection and %d hellos with random ALPN lists; want 1", n, flood)
	}
	if _, ok := r.alpn.recall(real); !ok {
		t.Errorf("the flood of random lists evicted the real list %q from the ALPN memory", real)
	}
	for _, c := range stalled {
		c.Close()
	}
	for _, tt := range []struct {
		name   string
		client []string
		want   string
	}{
		{name: "h2 and http/1.1 client", client: real, want: "h2"},
		{name: "http/1.1 client", client: []string{"http/1.1"}, want: "http/1.1"},
		{name: "h2 client", client: []string{"h2"}, want: "h2"},
		{name: "no ALPN", client: nil, want: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := pingFrom(t, w, p.nodeConfig(tt.client...), "127.0.0.3")
			if err != nil {
				t.Fatal(err)
			}
			if got := <-up.protos; st.NegotiatedProtocol != tt.want || got != tt.want {
				t.Errorf("node got %q, upstream %q; want %q on both", st.NegotiatedProtocol, got, tt.want)
			}
		})
	}
}

// Regression (issue 26 item 6): on a route with serve.client_ca, 500
// hellos without a client certificate cost about 500 upstream handshakes
// (their lists were unknown, so the upstream was dialed during their
// handshake). Now the dial waits for a verified certificate: nodes without
// one, offering lists never seen, complete their handshakes as far as the
// gateway lets them and cost no upstream handshake, cold memory or warm,
// while a node with its certificate still gets through.
func TestBridgeClientCADialsOnlyVerifiedNodes(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			p := newNodePKI(t)
			up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
			w := newWorld(t, Config{MaxConnectionsPerClient: -1}, "", p.route(t, up.addr))
			good := p.node(kubelet(t, p.nodeCA, "good"), tls.VersionTLS13)
			var accepted int64
			if warm {
				if _, err := nodePing(t, w, good); err != nil {
					t.Fatal(err)
				}
				accepted = 1
			}
			const flood = 100
			for i := range flood {
				cfg := p.node(nil, tls.VersionTLS13)
				cfg.NextProtos = randomALPN("http/1.1")
				if i%2 == 0 {
					cfg.MaxVersion, cfg.MinVersion = tls.VersionTLS12, tls.VersionTLS12
				}
				if _, err := nodePing(t, w, cfg); err == nil {
					t.Fatalf("node %d without a certificate got through", i)
				}
			}
			w.logs.wait(t, "msg=connection", "result=client_cert_refused")
			if n := up.accepted.Load(); n != accepted {
				t.Errorf("the upstream accepted %d connections for %d nodes without a certificate; want %d", n, flood, accepted)
			}
			if _, err := nodePing(t, w, good); err != nil {
				t.Fatalf("a node with its certificate after the flood: %v", err)
			}
		})
	}
}

// Regression (issue 26 item 6): a client that completes its handshakes
// (a route without client_ca lets anyone) bought an upstream handshake for
// each, as fast as it could open them, since only dials in flight were
// bounded. Its dials are bounded in rate now (dial_rate_per_client): the
// flood's dials beyond the rate are refused with result dial_limit, and
// another client still gets through.
func TestBridgeDialRatePerClient(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	r := p.route(t, up.addr)
	const rate = 2
	r.DialRatePerClient, r.dialWait = rate, 10*time.Millisecond
	w := newWorld(t, Config{MaxConnectionsPerClient: -1}, "", r)
	real := []string{"h2", "http/1.1"}
	for range 2 {
		if st, err := ping(t, w, p.nodeConfig(real...)); err != nil || st.NegotiatedProtocol != "h2" {
			t.Fatalf("real connection: %v, protocol %q", err, st.NegotiatedProtocol)
		}
	}
	before := up.accepted.Load()
	const flood = 3 * alpnMemorySize
	start := time.Now()
	for range flood {
		tc := tls.Client(w.dialFrom(t, "127.0.0.2"), p.nodeConfig(randomALPN("http/1.1")...))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("flood handshake: %v", err)
		}
		tc.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		tc.CloseWrite()
		io.ReadAll(tc)
		tc.Close()
	}
	elapsed := time.Since(start)
	testkit.Poll(t, "every flood connection counted", func() bool {
		return w.result(t, "registry", "ok")+w.result(t, "registry", resultDialLimit) == 2+flood
	})
	// The bucket starts full (rate) and refills at rate a second.
	allowed := int64(rate + rate*elapsed.Seconds() + 1)
	if n := up.accepted.Load() - before; n > allowed {
		t.Errorf("%d flood connections in %v bought %d upstream handshakes; want at most %d (dial_rate_per_client %d)", flood, elapsed, n, allowed, rate)
	}
	w.logs.wait(t, "msg=connection", "result=dial_limit", "dial_rate_per_client")
	if st, err := pingFrom(t, w, p.nodeConfig(real...), "127.0.0.3"); err != nil || st.NegotiatedProtocol != "h2" {
		t.Fatalf("another client during the flood: %v, protocol %q", err, st.NegotiatedProtocol)
	}

}

// Regression (issue 26 item 6): the ALPN memory forgot the least recently
// used list, so a client cycling through made-up lists, each answered by
// the upstream once, evicted the lists real clients send. It forgets the
// least often used now: lists used once evict each other.
func TestBridgeALPNMemoryKeepsListsInUse(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	r := p.route(t, up.addr)
	r.DialRatePerClient = -1 // the memory is under test here, not the rate
	w := newWorld(t, Config{MaxConnectionsPerClient: -1}, "", r)
	real := []string{"h2", "http/1.1"}
	for range 2 {
		if _, err := ping(t, w, p.nodeConfig(real...)); err != nil {
			t.Fatal(err)
		}
	}
	const flood = 3 * alpnMemorySize
	for range flood {
		if _, err := pingFrom(t, w, p.nodeConfig(randomALPN("http/1.1")...), "127.0.0.2"); err != nil {
			t.Fatalf("connection with a made-up list: %v", err)
		}
	}
	if _, ok := r.alpn.recall(real); !ok {
		t.Errorf("%d lists used once each evicted the real list %q, used on every connection", flood, real)
	}
}

// The dial rate's token bucket: a full burst, then one dial per 1/rate,
// a wait up to the queue wait, a refusal beyond it (taking nothing), and
// per client address; full buckets are dropped once many are kept.
func TestDialRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
		r := &dialRate{perSecond: 4}
		now := time.Now()
		for i := range 4 {
			if wait, ok := r.reserve(a, now, 0); !ok || wait != 0 {
				t.Fatalf("dial %d of the burst: wait %v, %v", i+1, wait, ok)
			}
		}
		if _, ok := r.reserve(a, now, 0); ok {
			t.Fatal("a fifth dial at once, with no wait allowed, was let through")
		}
		if wait, ok := r.reserve(a, now, time.Second); !ok || wait != 250*time.Millisecond {
			t.Fatalf("a fifth dial that may wait 1s: wait %v, %v; want 250ms", wait, ok)
		}
		if wait, ok := r.reserve(b, now, 0); !ok || wait != 0 {
			t.Fatalf("another client: wait %v, %v; want its own burst", wait, ok)
		}
		if wait, ok := r.reserve(a, now.Add(time.Second), 0); !ok || wait != 0 {
			t.Fatalf("a second later: wait %v, %v", wait, ok)
		}
		later := now.Add(time.Hour)
		for i := range dialRateSources - 2 {
			r.reserve(netip.MustParseAddr(fmt.Sprintf("10.0.%d.%d", i/256, i%256)), now, 0)
		}
		r.reserve(netip.MustParseAddr("198.51.100.1"), later, 0)
		if n := len(r.buckets); n > 1 {
			t.Errorf("%d buckets kept an hour after they were used; want the full ones dropped", n)
		}
	})
}

// A route that dials only after the node's handshake (client_ca) offers a
// list it has never seen the predicted protocol; an upstream that prefers
// another is dialed again offering the promised one alone, so node and
// upstream agree, and the next node gets the upstream's own choice.
func TestBridgePromiseKeptByARedial(t *testing.T) {
	p := newNodePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	w := newWorld(t, Config{}, "", p.route(t, up.addr))
	node := p.node(kubelet(t, p.nodeCA, "good"), tls.VersionTLS13)
	node.NextProtos = []string{"h2", "http/1.1"}
	for _, want := range []string{"http/1.1", "h2"} {
		st, err := nodePing(t, w, node)
		if err != nil {
			t.Fatal(err)
		}
		got := <-up.protos
		if want == "http/1.1" {
			// The first dial chose h2, the redial offered http/1.1 alone;
			// the upstream reports the two in either order.
			if other := <-up.protos; got == "h2" {
				got = other
			} else if other != "h2" {
				t.Errorf("the first dial chose %q, want h2", other)
			}
		}
		if st.NegotiatedProtocol != want || got != want {
			t.Errorf("node got %q, upstream %q; want %q on both", st.NegotiatedProtocol, got, want)
		}
	}
}
