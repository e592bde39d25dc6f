package httpbridge

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// pipeConn is a pooled connection over net.Pipe and the peer end, which
// reads io.EOF once the pool closes it.
func pipeConn(p *upPool, addr string) (*upConn, net.Conn) {
	a, b := net.Pipe()
	return newUpConn(p, addr, a), b
}

// closedPeer: peer's Read returns EOF, the pool closed its connection.
func closedPeer(peer net.Conn) bool {
	_ = peer.SetReadDeadline(time.Now().Add(waitLimit)) // a failure deadline
	_, err := peer.Read(make([]byte, 1))
	return err == io.EOF
}

// TestUpstreamPoolPerAddressLIFOBounded: idle connections are kept per
// upstream address, at most maxIdle each (a further one is closed), and
// the most recently idled is taken first.
func TestUpstreamPoolPerAddressLIFOBounded(t *testing.T) {
	p := newUpPool(nil, nil)
	p.maxIdle = 2
	a1, _ := pipeConn(p, "a:443")
	a2, _ := pipeConn(p, "a:443")
	a3, peer3 := pipeConn(p, "a:443")
	b1, _ := pipeConn(p, "b:443")
	for _, pc := range []*upConn{a1, a2, b1, a3} {
		p.put(pc)
	}
	if !closedPeer(peer3) {
		t.Errorf("a third idle connection to a:443 stayed open beyond maxIdle 2")
	}
	for i, want := range []*upConn{a2, a1, nil} {
		if got := p.get("a:443"); got != want {
			t.Fatalf("get %d of a:443: %p, want %p (LIFO)", i, got, want)
		}
	}
	if got := p.get("b:443"); got != b1 {
		t.Errorf("b:443's idle connection: %p, want %p", got, b1)
	}
}

// TestUpstreamPoolRetiredClosesAtBoundary: closeIdle closes the idle
// connections at once; after retire, a busy connection given back at its
// request's end is closed, not pooled.
func TestUpstreamPoolRetiredClosesAtBoundary(t *testing.T) {
	p := newUpPool(nil, nil)
	idle, idlePeer := pipeConn(p, "a:443")
	busy, busyPeer := pipeConn(p, "a:443")
	p.put(idle)
	p.retire()
	if !closedPeer(idlePeer) {
		t.Errorf("an idle connection of a retired pool stayed open")
	}
	p.put(busy)
	if !closedPeer(busyPeer) || p.idleCount("a:443") != 0 {
		t.Errorf("a busy connection of a retired pool was pooled at its request's end")
	}
}

// TestHTTP1IdleConnectionExpires: a pooled connection unused for the
// pool's idle timeout is closed by the gateway, whether the registry
// still holds it open or closed it while it idled (which left it in
// CLOSE_WAIT on the gateway's side: no goroutine reads it).
func TestHTTP1IdleConnectionExpires(t *testing.T) {
	for _, registryCloses := range []bool{false, true} {
		name := map[bool]string{false: "registry keeps it", true: "registry closed it"}[registryCloses]
		t.Run(name, func(t *testing.T) {
			p := newTestPKI(t)
			reg := startRawRegistry(t, p, func(c net.Conn, _ *http.Request) bool { return write(c, okAnswer) })
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			u := w.bridge.client
			pool := u.current().h1
			expired := make(chan struct{}, 1)
			pool.idleTimeout, pool.expiredFunc = time.Millisecond, func() { expired <- struct{}{} }
			if registryCloses {
				pool.idleTimeout = time.Hour // until the registry has closed it
			}
			req, _ := http.NewRequest("GET", "https://"+registryName+"/v2/", nil)
			roundTripOK(t, u, req)
			if registryCloses {
				reg.closeConn(0)
				reg.waitClosed(t, 0, "the registry closed it")
				pool.mu.Lock()
				pool.idleTimeout = time.Millisecond
				pool.idle[reg.addr][0].idleTimer.Reset(time.Millisecond)
				pool.mu.Unlock()
			}
			select {
			case <-expired:
			case <-time.After(waitLimit):
				t.Fatalf("the idle connection was not closed %v after its idle timeout", waitLimit)
			}
			reg.waitClosed(t, 0, "it idled out")
			if n := pool.idleCount(reg.addr); n != 0 {
				t.Errorf("%d idle connections after the idle timeout, want 0", n)
			}
		})
	}
}

// TestHTTP1AnswerEndsConnection: an answer with Connection: close, to a
// request with Connection: close, or whose body ends when the registry
// closes, is the last on its connection: the gateway closes it, and the
// next request is answered on a new one. An HTTP/1.1 answer with a
// length, and one after 100 and 103 informational answers, leave it
// pooled.
func TestHTTP1AnswerEndsConnection(t *testing.T) {
	tests := []struct {
		name, answer string
		reqClose     bool
		registryEnds bool // the registry closes after answering (a close-delimited body)
		wantConns    int
	}{
		{name: "length", answer: okAnswer, wantConns: 1},
		{name: "1xx first", answer: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </v2/>\r\n\r\n" + okAnswer, wantConns: 1},
		{name: "connection close", answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", wantConns: 2},
		{name: "request close", answer: okAnswer, reqClose: true, wantConns: 2},
		{name: "close-delimited", answer: "HTTP/1.1 200 OK\r\n\r\nok", registryEnds: true, wantConns: 2},
		{name: "HTTP/1.0", answer: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", wantConns: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			reg := startRawRegistry(t, p, func(c net.Conn, r *http.Request) bool {
				if r.URL.Path == "/v2/" {
					return write(c, okAnswer)
				}
				return write(c, tc.answer) && !tc.registryEnds
			})
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			u := w.bridge.client
			req, _ := http.NewRequest("GET", "https://"+registryName+"/v2/team/app/manifests/v1", nil)
			req.Close = tc.reqClose
			resp, err := u.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("got %d %q, want 200 ok", resp.StatusCode, body)
			}
			if tc.wantConns == 2 {
				reg.waitClosed(t, 0, "its last answer")
			}
			req, _ = http.NewRequest("GET", "https://"+registryName+"/v2/", nil)
			roundTripOK(t, u, req)
			if n := reg.accepted(); n != tc.wantConns {
				t.Errorf("the registry accepted %d connections, want %d", n, tc.wantConns)
			}
		})
	}
}
