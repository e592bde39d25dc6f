package sni

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/snigate/snigate/upstream"
)

// TestWalkCountsOnlyTheConnectedHost: on both engines, the walk over the
// candidates (upstream.Attempts) gives back the active count of a
// candidate that refused, holds the connected one's while the tunnel
// lasts, and gives it back when the connection ends.
func TestWalkCountsOnlyTheConnectedHost(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			refused := closedAddr(t)
			release := make(chan struct{})
			up := newTCPUpstream(t, func(c *net.TCPConn) {
				readHelloThen(c)
				c.Write([]byte("ok"))
				<-release
			})
			r := spliceRoute(t, "registry", []string{"registry.example.com"}, refused, up.addr)
			w := newWorldWith(t, e.setup, Config{}, "", r)
			checkEngine(t, w, e.loop)
			c := w.dial(t)
			c.Write(captureHello(t, &tls.Config{ServerName: "registry.example.com"}))
			if got := readAtMost(t, c, 2); string(got) != "ok" {
				t.Fatalf("client got %q", got)
			}
			pool := r.Pool.(*upstream.Pool)
			wantActive(t, pool, map[string]int64{refused: 0, up.addr: 1})
			if n := w.counter(t, w.m.dialFailures, "registry", refused); n != 1 {
				t.Errorf("dial failures for %s = %v, want 1 (the refused candidate was tried first)", refused, n)
			}
			close(release)
			c.Close()
			w.logs.wait(t, "msg=connection", "upstream="+up.addr, "result=ok")
			if err := w.srv.Shutdown(shutdownCtx(t, waitLimit)); err != nil { // waits for the connection's end
				t.Fatal(err)
			}
			wantActive(t, pool, map[string]int64{refused: 0, up.addr: 0})
		})
	}
}

func wantActive(t *testing.T, p *upstream.Pool, want map[string]int64) {
	t.Helper()
	for _, s := range p.Status() {
		if s.ActiveConnections != want[s.Upstream] {
			t.Errorf("%s: %d active connections, want %d", s.Upstream, s.ActiveConnections, want[s.Upstream])
		}
	}
}
