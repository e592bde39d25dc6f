package httpbridge

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snigate/snigate/internal/testnet"
	"github.com/snigate/snigate/upstream"
)

// TestIdleConnectionEnds: a node connection with no request in flight
// for timeouts.idle is closed at a request boundary, and its connection
// line says result=idle.
func TestIdleConnectionEnds(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			p := newTestPKI(t)
			up, _ := echoUpstream(t, p)
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, idle: 50 * time.Millisecond})
			if resp, _ := do(t, w.node(t, proto), "GET", "/v2/", nil); resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			w.logs.Wait(t, "msg=connection", "result=idle", "no request for 50ms")
		})
	}
}

// gatedUpstream answers /v2/slow only once release is closed, after
// signalling started.
func gatedUpstream(tb testing.TB, p *testPKI) (addr string, started, release chan struct{}) {
	started, release = make(chan struct{}), make(chan struct{})
	up := startUpstream(tb, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/team/app/manifests/slow" {
			close(started)
			<-release
		}
		_, _ = io.WriteString(w, "done")
	}))
	return up.addr, started, release
}

// getAsync starts a GET and returns where its answer will arrive.
func getAsync(c *http.Client, path string) <-chan *http.Response {
	ch := make(chan *http.Response, 1)
	go func() {
		resp, err := c.Get("https://" + registryName + path)
		if err != nil {
			ch <- nil
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		ch <- resp
	}()
	return ch
}

// TestDrainFinishesInFlight: when the gateway drains, a request in flight
// is answered in full and its connection then closes (HTTP/1.1:
// Connection: close; HTTP/2: GOAWAY), so Shutdown returns without force.
func TestDrainFinishesInFlight(t *testing.T) {
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			p := newTestPKI(t)
			addr, started, release := gatedUpstream(t, p)
			w := newWorld(t, p, worldOpts{addrs: []string{addr}})
			node := w.node(t, proto)
			answer := getAsync(node, "/v2/team/app/manifests/slow")
			<-started
			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
				defer cancel()
				shut <- w.srv.Shutdown(ctx)
			}()
			w.logs.Wait(t, "closes at the next request boundary", "reason=draining")
			close(release)
			resp := <-answer
			if resp == nil || resp.StatusCode != 200 {
				t.Fatalf("in-flight answer %v, want 200", resp)
			}
			if body, _ := io.ReadAll(resp.Body); string(body) != "done" {
				t.Errorf("body %q", body)
			}
			if proto == "http/1.1" && !resp.Close {
				t.Error("the in-flight HTTP/1.1 answer does not close its connection")
			}
			if err := <-shut; err != nil {
				t.Errorf("Shutdown: %v (connections not closed at the request boundary)", err)
			}
		})
	}
}

// TestCloseRetiresBridge: Close (a reload replaced the route) closes an
// idle keep-alive connection at once, lets one in flight finish and then
// close, and a connection that arrives afterwards gets one answer.
func TestCloseRetiresBridge(t *testing.T) {
	p := newTestPKI(t)
	addr, started, release := gatedUpstream(t, p)
	w := newWorld(t, p, worldOpts{addrs: []string{addr}})
	idle := w.node(t, "http/1.1")
	if resp, _ := do(t, idle, "GET", "/v2/", nil); resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	busy := w.node(t, "h2")
	answer := getAsync(busy, "/v2/team/app/manifests/slow")
	<-started
	w.bridge.Close()
	w.logs.Wait(t, "msg=connection", "result=ok") // the idle one
	close(release)
	if resp := <-answer; resp == nil || resp.StatusCode != 200 {
		t.Fatalf("in-flight answer %v", resp)
	}
	late := w.node(t, "http/1.1")
	resp, _ := do(t, late, "GET", "/v2/", nil)
	if resp.StatusCode != 200 || !resp.Close {
		t.Errorf("late connection: %d close=%v, want one answer, then close", resp.StatusCode, resp.Close)
	}
}

// TestProbe: GET /v2/ through the route's own client.
func TestProbe(t *testing.T) {
	p := newTestPKI(t)
	up, seen, _ := newRegistry(t, p, "h2")
	w := newWorld(t, p, worldOpts{addrs: []string{up.addr}})
	status, _, err := w.bridge.Probe(context.Background())
	if err != nil || status != 200 {
		t.Fatalf("Probe: %d, %v", status, err)
	}
	if r := seen.all()[0]; r.URL.Path != "/v2/" || r.Host != registryName || r.UserAgent() != probeUserAgent {
		t.Errorf("registry saw %s %s Host %q UA %q", r.Method, r.URL.Path, r.Host, r.UserAgent())
	}

	down := newWorld(t, p, worldOpts{addrs: []string{testnet.ClosedAddr(t)}})
	if _, _, err := down.bridge.Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Probe of a dead upstream: %v", err)
	}
}

// TestNewErrors: New says what is wrong, all at once.
func TestNewErrors(t *testing.T) {
	pool, err := upstream.New(upstream.Config{Route: "r", Addrs: []string{"127.0.0.1:1"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "no route, no pool", cfg: Config{}, want: []string{"route: want", "upstreams: want"}},
		{name: "bad method", cfg: Config{Route: "r", Upstreams: pool, Methods: []string{"get"}}, want: []string{`methods[0] "get": want an HTTP method in upper case`}},
		{name: "bad patterns", cfg: Config{Route: "r", Upstreams: pool, Repositories: []string{"ok/*", "a/**/b", "A"}},
			want: []string{`repositories[1]: "a/**/b"`, `repositories[2]: "A"`}},
		{name: "bad redirects", cfg: Config{Route: "r", Upstreams: pool, Redirects: "always"}, want: []string{`redirects "always": want follow or pass`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestDrainClosesSilentConnection: a node connection that has sent
// nothing is closed when the gateway drains, instead of holding the drain
// until a timeout (HTTP/1.1: the read header timeout; HTTP/2: x/net's
// 10s wait for the preface, so the drain's deadline is below it).
func TestDrainClosesSilentConnection(t *testing.T) {
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			p := newTestPKI(t)
			up, _ := echoUpstream(t, p)
			w := newWorld(t, p, worldOpts{addrs: []string{up.addr}, cfg: Config{ReadHeaderTimeout: time.Hour}, noFirstRequest: true})
			c, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: p.ca.Pool(), ServerName: registryName, NextProtos: []string{proto},
				MaxVersion: tls.VersionTLS12}) // the server's handshake ends before the client's
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetReadDeadline(time.Now().Add(waitLimit))
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit/2)
			defer cancel()
			if err := w.srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v (the silent connection held the drain)", err)
			}
			if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Error("the silent connection is still open")
			}
		})
	}
}
