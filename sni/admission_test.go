package sni

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
	"github.com/snigate/snigate/internal/testkit"
)

// attackerIP is the slowloris's source; legitimate clients dial from
// 127.0.0.1 (Linux routes all of 127/8 on lo).
var attackerIP = net.IPv4(127, 0, 0, 2)

// slowloris holds n sockets to addr from attackerIP, each writing payload
// one byte per tick, and opens a new socket as soon as the gateway closes
// one (the "immediate reconnect" form of the attack), until stop.
type slowloris struct {
	addr    string
	payload []byte
	dialed  atomic.Int64 // sockets opened, reconnects included
	stop    chan struct{}
	wg      sync.WaitGroup
}

// dripEvery paces the attack's bytes; it is load, not synchronisation.
const dripEvery = 200 * time.Millisecond

func startSlowloris(tb testing.TB, addr string, payload []byte, n int) *slowloris {
	tb.Helper()
	a := &slowloris{addr: addr, payload: payload, stop: make(chan struct{})}
	for range n {
		a.wg.Go(a.socket)
	}
	tb.Cleanup(a.end)
	return a
}

func (a *slowloris) end() {
	select {
	case <-a.stop:
	default:
		close(a.stop)
	}
	a.wg.Wait()
}

// socket is one attacking socket's loop: dial, drip, redial when closed.
func (a *slowloris) socket() {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: attackerIP}}
	t := time.NewTicker(dripEvery)
	defer t.Stop()
	for {
		c, err := d.Dial("tcp", a.addr)
		if err != nil {
			return
		}
		a.dialed.Add(1)
		a.drip(c, t.C)
		c.Close()
		select {
		case <-a.stop:
			return
		default:
		}
	}
}

// drip writes the payload one byte per tick until a write fails (the
// gateway closed the socket) or stop.
func (a *slowloris) drip(c net.Conn, tick <-chan time.Time) {
	for k := 0; ; k = (k + 1) % len(a.payload) {
		if _, err := c.Write(a.payload[k : k+1]); err != nil {
			return
		}
		select {
		case <-a.stop:
			return
		case <-tick:
		}
	}
}

// pullConnect is a legitimate client of the CONNECT listener: the request,
// then a TLS echo through the tunnel.
func (h *hostile) pullConnect(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(c, "CONNECT "+registryName+":443 HTTP/1.1\r\nHost: "+registryName+":443\r\n\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CONNECT: status %d", resp.StatusCode)
	}
	return echoTLS(&bufConn{Conn: c, r: br}, h.client)
}

// pullTLS is a legitimate client of the TLS listener; unlike pull it
// returns the failure, so that a probe can count them.
func (h *hostile) pullTLS() error {
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	return echoTLS(c, h.client)
}

func echoTLS(c net.Conn, cfg *tls.Config) error {
	tc := tls.Client(c, cfg)
	if _, err := tc.Write([]byte("legit")); err != nil {
		return err
	}
	tc.CloseWrite()
	got, err := io.ReadAll(tc)
	if string(got) != "legit" {
		return fmt.Errorf("echo %q: %v", got, err)
	}
	return nil
}

// probe runs n legitimate exchanges with pull, four at a time, and
// returns the failures.
func probe(n int, pull func() error) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range 4 {
		wg.Go(func() {
			for range next {
				if err := pull(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errs
}

// TestSlowHandshakesCannotFillTheHouse is the regression test of a
// slowloris: max_connections counted every socket from accept, the TLS
// and CONNECT listeners shared it, and nothing limited one source, so 500
// sockets dribbling a ClientHello at one byte a second made 86% of
// legitimate handshakes fail (100% with immediate reconnects) and a
// slowloris on the CONNECT port took the TLS port down too. Here 300
// sockets from one address dribble a ClientHello on the TLS listener and
// 300 a CONNECT request on the CONNECT listener, reconnecting at once when
// closed, against max_connections 400 (which they would fill) with no
// per-client limit: the handshake budget of each listener closes the
// slowloris's oldest sockets to make room, and at least 99% of the
// legitimate handshakes on both listeners succeed.
func TestSlowHandshakesCannotFillTheHouse(t *testing.T) {
	const attackers, legit, budget = 300, 200, 64
	h := newHostile(t, Config{MaxConnections: 400, MaxHandshakes: budget})
	connectAddr := h.serveConnect(t)
	tlsAttack := startSlowloris(t, h.addr, captureHello(t, &tls.Config{ServerName: registryName}), attackers)
	connectAttack := startSlowloris(t, connectAddr, []byte("CONNECT "+registryName+":443 HTTP/1.1\r\nHost: "+registryName+"\r\nX-Pad: "), attackers)
	testkit.Poll(t, "the slowloris to fill both handshake budgets", func() bool {
		return h.srv.pendingHandshakes(kindTLS) >= budget && h.srv.pendingHandshakes(kindConnect) >= budget &&
			tlsAttack.dialed.Load() >= attackers && connectAttack.dialed.Load() >= attackers
	})

	tlsErrs := probe(legit, h.pullTLS)
	connectErrs := probe(legit/4, func() error { return h.pullConnect(connectAddr) })
	pendingTLS, pendingConnect := h.srv.pendingHandshakes(kindTLS), h.srv.pendingHandshakes(kindConnect)
	tlsAttack.end()
	connectAttack.end()

	t.Logf("TLS: %d of %d legitimate handshakes failed; CONNECT: %d of %d; the slowloris opened %d + %d sockets",
		len(tlsErrs), legit, len(connectErrs), legit/4, tlsAttack.dialed.Load(), connectAttack.dialed.Load())
	for _, errs := range [][]error{tlsErrs, connectErrs} {
		if len(errs) > 0 {
			t.Logf("first failure: %v", errs[0])
		}
	}
	if len(tlsErrs) > legit/100 {
		t.Errorf("%d of %d legitimate TLS handshakes failed during the slowloris; want at most 1%%", len(tlsErrs), legit)
	}
	if len(connectErrs) > 0 {
		t.Errorf("%d of %d legitimate CONNECT tunnels failed during the slowloris; want none", len(connectErrs), legit/4)
	}
	if pendingTLS > budget || pendingConnect > budget {
		t.Errorf("pending handshakes tls %d, connect %d; want at most max_handshakes %d each", pendingTLS, pendingConnect, budget)
	}
	h.released(t)
	evicted := h.counter(t, h.m.connections, h.addr, "", resultHandshakeLimit)
	if evicted < attackers-budget {
		t.Errorf("snigate_connections_total{result=handshake_limit} = %v on the TLS listener, want at least %d", evicted, attackers-budget)
	}
	if n := countLines(h.logs.String(), "msg=connection", "listener="+h.addr, "result=handshake_limit"); n > 2 {
		t.Errorf("%d connection lines for %v sockets closed to make room, want them rate-limited (1, or 2 if the attack outlasted the interval)", n, evicted)
	}
	h.logs.wait(t, "level=WARN", "max_handshakes connections were waiting", "max_handshakes="+fmt.Sprint(budget))
}

// TestMaxConnectionsPerClient: one address (a node in a reconnect loop, a
// slowloris) cannot hold more than max_connections_per_client
// connections, keyed by the PROXY header's source for a trusted
// balancer's connections, while other clients keep being served.
func TestMaxConnectionsPerClient(t *testing.T) {
	const limit, n = 20, 100
	header := func(ip string) []byte {
		src := &net.TCPAddr{IP: net.ParseIP(ip), Port: 5555}
		b, err := proxyproto.HeaderProxyFromAddrs(1, src, &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 443}).Format()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	balancer := net.IPv4(127, 0, 0, 3)
	tests := []struct {
		name  string
		from  net.IP
		first []byte
		other func(h *hostile) error // another client of the same gateway
	}{
		{name: "direct", from: attackerIP, other: (*hostile).pullTLS},
		{name: "through a trusted balancer", from: balancer, first: header("203.0.113.7"),
			other: func(h *hostile) error { return h.pullVia(balancer, header("203.0.113.8")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHostile(t, Config{MaxConnectionsPerClient: limit, ProxyProtocolFrom: prefixes("127.0.0.3/32")})
			conns := dialFrom(t, h.addr, tt.from, n, tt.first)
			testkit.Poll(t, "the refusals beyond the limit", func() bool {
				return h.counter(t, h.m.connections, h.addr, "", resultClientLimit) == n-limit
			})
			if err := tt.other(h); err != nil {
				t.Fatalf("another client while one is at its limit: %v", err)
			}
			closedByServer(t, conns)
			h.released(t)
			if got := h.counter(t, h.m.connections, h.addr, "", resultClientLimit); got != n-limit {
				t.Errorf("connections{result=client_limit} = %v, want %d", got, n-limit)
			}
			h.logs.wait(t, "level=WARN", "max_connections_per_client connections open", "max_connections_per_client=20")
		})
	}
}

// pullVia is a legitimate client behind a trusted balancer: the balancer's
// PROXY header, then the TLS echo.
func (h *hostile) pullVia(balancer net.IP, header []byte) error {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: balancer}}
	c, err := d.Dial("tcp", h.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	if _, err := c.Write(header); err != nil {
		return err
	}
	return echoTLS(c, h.client)
}

// TestBalancerConnectionsCountOnceAdmitted is the regression test of
// counting before admission: a connection from a trusted balancer took a
// max_connections slot from accept, before its PROXY header said who the
// client was (and before listen.allow could refuse that client), so a few
// stalled balancer connections filled the gateway. Now they are pending
// handshakes only, cut at the PROXY header's own deadline, and a client
// the header names outside listen.allow never takes a slot.
func TestBalancerConnectionsCountOnceAdmitted(t *testing.T) {
	balancer := net.IPv4(127, 0, 0, 3)
	denied := []byte("PROXY TCP4 10.9.9.9 192.0.2.10 5555 443\r\n")
	tests := []struct {
		name   string
		first  []byte
		result string
	}{
		{name: "stalled before the header", result: resultTimeout},
		{name: "header names a client outside listen.allow", first: denied, result: resultDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 10
			h := newHostile(t, Config{
				MaxConnections:    2,
				MaxHandshakes:     n + 1,
				ProxyProtocolFrom: prefixes("127.0.0.3/32"),
				Allow:             prefixes("127.0.0.1/32", "203.0.113.0/24"),
			})
			// Far beyond the test's own wait limit: only the PROXY
			// header's deadline can end the stalled connections in time.
			cfg := h.srv.Config()
			cfg.ClientHelloTimeout, cfg.ProxyHeaderTimeout = time.Minute, 2*time.Second
			if err := h.srv.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			conns := dialFrom(t, h.addr, balancer, n, tt.first)
			if tt.first == nil {
				h.waitSessions(t, n) // held while the legitimate clients pass
			} else {
				testkit.Poll(t, "the denials", func() bool { return h.counter(t, h.m.connections, h.addr, "", tt.result) == n })
			}
			if err := h.pullTLS(); err != nil {
				t.Fatalf("a legitimate client beside %d balancer connections at max_connections 2: %v", n, err)
			}
			if err := h.pullVia(balancer, []byte("PROXY TCP4 203.0.113.7 192.0.2.10 5555 443\r\n")); err != nil {
				t.Fatalf("a legitimate client through the balancer: %v", err)
			}
			closedByServer(t, conns)
			h.released(t)
			if got := h.counter(t, h.m.connections, h.addr, "", tt.result); got != n {
				t.Errorf("connections{result=%s} = %v, want %d", tt.result, got, n)
			}
			if got := h.counter(t, h.m.connections, h.addr, "", resultLimit); got != 0 {
				t.Errorf("connections{result=limit} = %v, want 0: balancer connections took slots", got)
			}
		})
	}
}

// TestHandshakeBudgetVictim: the connection closed to make room is the
// oldest of the source with the most pending; among equal sources, the
// oldest overall; never one that has left.
func TestHandshakeBudgetVictim(t *testing.T) {
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
	t0 := time.Unix(1000, 0)
	type pend struct {
		src   netip.Addr
		at    int // seconds after t0
		leave bool
	}
	tests := []struct {
		name    string
		pending []pend
		limit   int
		victim  int // index into pending; -1: none
	}{
		{name: "below the limit", pending: []pend{{a, 0, false}}, limit: 2, victim: -1},
		{name: "no limit", pending: []pend{{a, 0, false}, {a, 1, false}}, limit: -1, victim: -1},
		{name: "source with the most", pending: []pend{{b, 0, false}, {a, 1, false}, {a, 2, false}}, limit: 3, victim: 1},
		{name: "tie: the oldest", pending: []pend{{a, 1, false}, {b, 0, false}, {c, 2, false}}, limit: 3, victim: 1},
		{name: "left ones do not count", pending: []pend{{a, 0, true}, {a, 1, true}, {b, 2, false}, {a, 3, false}}, limit: 2, victim: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bud handshakeBudget
			sessions := make([]*session, len(tt.pending))
			for i, p := range tt.pending {
				sessions[i] = &session{start: t0.Add(time.Duration(p.at) * time.Second)}
				if v := bud.enter(sessions[i], p.src, 0); v != nil {
					t.Fatalf("enter without a limit closed %v", v.start)
				}
			}
			for i, p := range tt.pending {
				if p.leave && !bud.leave(sessions[i]) {
					t.Fatalf("pending %d was not pending", i)
				}
			}
			newcomer := &session{start: t0.Add(time.Hour)}
			got := bud.enter(newcomer, c, tt.limit)
			var want *session
			if tt.victim >= 0 {
				want = sessions[tt.victim]
			}
			if got != want {
				t.Errorf("victim %v, want pending %d", got, tt.victim)
			}
			if want != nil && bud.leave(want) {
				t.Error("the victim is still pending")
			}
			if !bud.leave(newcomer) {
				t.Error("the newcomer is not pending")
			}
		})
	}
}

// BenchmarkHandshakeUnderSlowloris measures what a slowloris costs the
// legitimate handshakes of issue 14 (target: at least 99% succeed, p99
// within 2x of the same gateway unattacked). Each iteration is one
// legitimate TLS exchange through the gateway while 300 + 300
// reconnecting slow sockets hold the TLS and CONNECT handshake budgets;
// the baseline is 200 exchanges before the attack starts. Reported:
// p99-ratio (attacked p99 / unattacked p99) and failed-% .
//
//	go test -run '^$' -bench HandshakeUnderSlowloris -benchtime 400x ./sni/
func BenchmarkHandshakeUnderSlowloris(b *testing.B) {
	const attackers, budget, baseline = 300, 64, 200
	// The defaults but a smaller handshake budget: max_connections 10000,
	// max_connections_per_client 256 (the attack comes from one address).
	h := newHostile(b, Config{MaxHandshakes: budget, MaxConnectionsPerClient: DefaultMaxConnectionsPerClient})
	connectAddr := h.serveConnect(b)
	base := timedPulls(baseline, h.pullTLS)
	tlsAttack := startSlowloris(b, h.addr, captureHello(b, &tls.Config{ServerName: registryName}), attackers)
	connectAttack := startSlowloris(b, connectAddr, []byte("CONNECT "+registryName+":443 HTTP/1.1\r\nHost: "+registryName+"\r\nX-Pad: "), attackers)
	testkit.Poll(b, "the slowloris to fill both handshake budgets", func() bool {
		return h.srv.pendingHandshakes(kindTLS) >= budget && h.srv.pendingHandshakes(kindConnect) >= budget
	})
	var attacked []time.Duration
	failed := 0
	for b.Loop() {
		start := time.Now()
		if err := h.pullTLS(); err != nil {
			failed++
			continue
		}
		attacked = append(attacked, time.Since(start))
	}
	b.StopTimer()
	tlsAttack.end()
	connectAttack.end()
	b.ReportMetric(float64(p99(attacked))/float64(p99(base.ok)), "p99-ratio")
	b.ReportMetric(100*float64(failed)/float64(failed+len(attacked)), "failed-%")
	b.ReportMetric(100*float64(base.failed)/float64(baseline), "baseline-failed-%")
}

type pullTimes struct {
	ok     []time.Duration
	failed int
}

// timedPulls runs pull n times, one after the other, timing each success.
func timedPulls(n int, pull func() error) pullTimes {
	var r pullTimes
	for range n {
		start := time.Now()
		if err := pull(); err != nil {
			r.failed++
			continue
		}
		r.ok = append(r.ok, time.Since(start))
	}
	return r
}

// p99 is the 99th percentile of ds (sorted in place); 0 for none.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*99/100)]
}
