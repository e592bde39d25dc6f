package sni

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/snigate/snigate/internal/testkit"
	"net"
	"testing"
	"time"
)

// Regression (issue 26 item 8): a connection left the handshake budget
// (max_handshakes) once its ClientHello was read, so on a bridge route a
// whole hello and then silence was held 10 s, and a completed TLS
// handshake with no request until timeouts.idle, outside any budget: 8
// addresses holding such connections filled max_connections and every
// legitimate client was refused. They stay in the budget now until the
// first byte of the first request, and the budget closes the oldest of
// the address with the most, so all 80 legitimate clients (each from its
// own address) get through while the silent ones keep arriving.
func TestBridgeSilentConnectionsCompeteForTheBudget(t *testing.T) {
	p := newBridgePKI(t)
	up := newCountingUpstream(t, p.upstreamConfig("h2", "http/1.1"))
	const (
		sources, perSource = 8, 40
		budget             = 32
		legit              = 80
	)
	w := newWorld(t, Config{MaxConnections: sources * perSource, MaxHandshakes: budget, MaxConnectionsPerClient: -1}, "", p.route(t, up.addr))
	node := p.nodeConfig("h2", "http/1.1")
	if _, err := ping(t, w, node); err != nil {
		t.Fatal(err)
	}
	hello := captureHello(t, node)
	for i := range perSource {
		for s := range sources {
			local := fmt.Sprintf("127.0.0.%d", 2+s)
			if i%2 == 0 {
				silentAfterHello(t, w, local, hello)
			} else {
				silentAfterHandshake(t, w, local, node)
			}
		}
	}
	if n := w.srv.pendingHandshakes(kindTLS); n > budget {
		t.Errorf("%d connections pending, over max_handshakes %d", n, budget)
	}
	failed := 0
	for i := range legit {
		if _, err := pingFrom(t, w, node, fmt.Sprintf("127.0.1.%d", 1+i)); err != nil {
			failed++
			t.Logf("legitimate client %d: %v", i+1, err)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d legitimate clients failed beside %d silent connections from %d addresses", failed, legit, sources*perSource, sources)
	}
	testkit.Poll(t, "silent connections closed to make room (result handshake_limit)", func() bool {
		return w.result(t, "registry", resultHandshakeLimit) > 0
	})
}

// silentAfterHello sends a whole ClientHello from local, waits for the
// gateway's answer and then says nothing more. A refusal is no failure:
// the attack goes on.
func silentAfterHello(tb testing.TB, w *world, local string, hello []byte) {
	c := w.dialFrom(tb, local)
	if _, err := c.Write(hello); err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(waitLimit))
	c.Read(make([]byte, 1))
	c.SetReadDeadline(time.Time{})
}

// silentAfterHandshake completes a TLS handshake from local and then says
// nothing.
func silentAfterHandshake(tb testing.TB, w *world, local string, cfg *tls.Config) {
	tc := tls.Client(w.dialFrom(tb, local), cfg)
	tc.SetDeadline(time.Now().Add(waitLimit))
	tc.Handshake()
	tc.SetDeadline(time.Time{})
}

// readerHandler is a BridgeHandler that reads the node as net/http does:
// it arms a long read deadline of its own, then waits for a request.
type readerHandler struct{}

func (readerHandler) NextProtos() []string { return []string{"http/1.1"} }

func (readerHandler) ServeBridge(_ context.Context, c *BridgeConn) error {
	c.SetReadDeadline(time.Now().Add(time.Hour))
	_, err := c.Read(make([]byte, 1))
	return err
}

// Regression (issue 26 item 8): a TLS connection with no request was held
// 30 s on the HTTP-aware bridge (its read header timeout) and until
// timeouts.idle on a plain bridge route. A connection whose client sends
// no request within timeouts.first_request of its handshake is closed now
// (result timeout), whatever deadline the handler set itself.
func TestBridgeFirstRequestTimeout(t *testing.T) {
	for _, handler := range []bool{false, true} {
		t.Run(fmt.Sprintf("handler=%v", handler), func(t *testing.T) {
			p := newBridgePKI(t)
			up := newCountingUpstream(t, p.upstreamConfig("http/1.1"))
			r := p.route(t, up.addr)
			if handler {
				r.Handler = readerHandler{}
			}
			w := newWorld(t, Config{FirstRequestTimeout: 200 * time.Millisecond}, "", r)
			tc := tls.Client(w.dial(t), p.nodeConfig("http/1.1"))
			if err := tc.Handshake(); err != nil {
				t.Fatal(err)
			}
			tc.SetReadDeadline(time.Now().Add(waitLimit))
			_, err := tc.Read(make([]byte, 1))
			if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
				t.Fatalf("silent after its handshake: read %v, want the connection closed by the gateway", err)
			}
			w.logs.wait(t, "msg=connection", "result=timeout", "no request after the TLS handshake", "timeouts.first_request")
			w.waitSessions(t, 0)
			if n := w.srv.pendingHandshakes(kindTLS); n != 0 {
				t.Errorf("%d connections still pending after the silent one closed", n)
			}
		})
	}
}
