package httpbridge

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snigate/snigate/upstream"
)

// connLog is a registry's view of its connections, from its ConnState:
// the order they were accepted in, and a channel closed when each closes.
type connLog struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed map[net.Conn]chan struct{}
	idle   chan net.Conn // each connection going idle, when a test waits for it
}

func (l *connLog) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew:
		l.conns = append(l.conns, c)
		l.closed[c] = make(chan struct{})
	case http.StateIdle:
		if l.idle != nil {
			select {
			case l.idle <- c:
			default:
			}
		}
	case http.StateClosed, http.StateHijacked:
		if ch, ok := l.closed[c]; ok {
			close(ch)
			delete(l.closed, c)
		}
	}
}

// accepted is how many connections the registry accepted.
func (l *connLog) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// waitClosed waits for the i-th accepted connection to close.
func (l *connLog) waitClosed(tb testing.TB, i int, why string) {
	tb.Helper()
	l.mu.Lock()
	ch, ok := l.closed[l.conns[i]]
	l.mu.Unlock()
	if !ok {
		return
	}
	select {
	case <-ch:
	case <-time.After(waitLimit):
		tb.Fatalf("registry connection %d still open %v after %s", i, waitLimit, why)
	}
}

// protoRegistry is a registry offering h2 and http/1.1 whose ConnState
// feeds log; it answers "ok" and records each request's protocol, and
// /v2/team/app/manifests/slow only once release is closed, after
// signalling started.
type protoRegistry struct {
	*testUpstream
	log              *connLog
	protos           chan string
	started, release chan struct{}
}

func startProtoRegistry(tb testing.TB, p *testPKI, h http.HandlerFunc) *protoRegistry {
	r := &protoRegistry{log: &connLog{closed: map[net.Conn]chan struct{}{}, idle: make(chan net.Conn, 1)}, protos: make(chan string, 64), started: make(chan struct{}), release: make(chan struct{})}
	r.testUpstream = startUpstreamWith(tb, p.upstreamTLS("h2", "http/1.1"), http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.protos <- req.Proto
		if req.URL.Path == "/v2/team/app/manifests/slow" {
			close(r.started)
			<-r.release
		}
		if h != nil {
			h(w, req)
			return
		}
		_, _ = io.WriteString(w, "ok")
	}), func(s *http.Server) { s.ConnState = r.log.state })
	return r
}

// TestHTTP1UpstreamReusesOneConnection: with upstream_protocol http1
// (and auto, the default) the requests reach a registry that offers h2
// over HTTP/1.1, and sequential requests share one kept-alive connection
// instead of a dial each. Before the HTTP/1.1 pool the bridge always
// offered h2, so the registry saw HTTP/2.0.
func TestHTTP1UpstreamReusesOneConnection(t *testing.T) {
	tests := []struct {
		name, protocol, path, want string
	}{
		{name: "http1 manifests", protocol: UpstreamHTTP1, path: "/v2/team/app/manifests/v1", want: "HTTP/1.1"},
		{name: "http1 blobs", protocol: UpstreamHTTP1, path: "/v2/team/app/blobs/" + dgst, want: "HTTP/1.1"},
		{name: "auto blobs", protocol: UpstreamAuto, path: "/v2/team/app/blobs/" + dgst, want: "HTTP/1.1"},
		{name: "default manifests", path: "/v2/team/app/manifests/v1", want: "HTTP/1.1"},
		{name: "h2 manifests", protocol: UpstreamH2, path: "/v2/team/app/manifests/v1", want: "HTTP/2.0"},
		{name: "h2 blobs", protocol: UpstreamH2, path: "/v2/team/app/blobs/" + dgst, want: "HTTP/2.0"},
	}
	for _, tc := range tests {
		for _, node := range []string{"http/1.1", "h2"} {
			t.Run(tc.name+"/"+node, func(t *testing.T) {
				p := newTestPKI(t)
				reg := startProtoRegistry(t, p, nil)
				w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: tc.protocol}})
				c := w.node(t, node)
				const n = 10
				for i := range n {
					if resp, body := do(t, c, "GET", tc.path, nil); resp.StatusCode != 200 || body != "ok" {
						t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
					}
					if got := <-reg.protos; got != tc.want {
						t.Fatalf("request %d reached the registry as %s, want %s", i, got, tc.want)
					}
				}
				if got := reg.log.accepted(); got != 1 {
					t.Errorf("%d sequential requests opened %d upstream connections, want 1", n, got)
				}
			})
		}
	}
}

// TestStaleHTTP1ConnectionRetried: a GET given a pooled HTTP/1.1
// connection that the registry closed while it was idle, or closes as
// the request arrives (its keep-alive timeout firing then), is sent
// again on a new connection: the node gets the answer, not an error,
// and the upstream is not reported down.
func TestStaleHTTP1ConnectionRetried(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, reg *protoRegistry, drop *atomic.Bool)
		wantNew int
	}{
		{name: "closed while idle", wantNew: 2, setup: func(t *testing.T, reg *protoRegistry, _ *atomic.Bool) {
			reg.log.mu.Lock()
			first := reg.log.conns[0]
			reg.log.mu.Unlock()
			_ = first.Close()
			reg.log.waitClosed(t, 0, "the registry closed it")
		}},
		{name: "closed as the request arrives", wantNew: 2, setup: func(_ *testing.T, _ *protoRegistry, drop *atomic.Bool) {
			drop.Store(true)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPKI(t)
			var drop atomic.Bool
			reg := startProtoRegistry(t, p, func(w http.ResponseWriter, r *http.Request) {
				if drop.CompareAndSwap(true, false) {
					hijackClose(t, w)
					return
				}
				_, _ = io.WriteString(w, "ok")
			})
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: UpstreamHTTP1}})
			node := w.node(t, "http/1.1")
			if resp, _ := do(t, node, "GET", "/v2/", nil); resp.StatusCode != 200 {
				t.Fatalf("first GET: %d", resp.StatusCode)
			}
			<-reg.log.idle // the connection is back in the registry's keep-alive wait
			tc.setup(t, reg, &drop)
			resp, body := do(t, node, "GET", "/v2/team/app/manifests/v1", nil)
			if resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("GET on the stale connection: %d %q, want the registry's 200 ok", resp.StatusCode, body)
			}
			if got := reg.log.accepted(); got != tc.wantNew {
				t.Errorf("registry accepted %d connections, want %d (the stale one and its replacement)", got, tc.wantNew)
			}
			if c := w.pool.Candidates(); len(c) != 1 {
				t.Errorf("the upstream was reported down for a stale pooled connection")
			}
		})
	}
}

// hijackClose closes the connection of w without an answer, as a
// registry whose keep-alive timeout fires as the request arrives.
func hijackClose(t *testing.T, w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Errorf("the request came as %T, not HTTP/1.1", w)
		return
	}
	c, _, err := hj.Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	_ = c.Close()
}

// TestRotationRetiresPooledConnections: after a rotation of the upstream
// identity, a pooled connection that was busy with a request then is
// closed when that request ends, and the next requests go over a new
// one. Before, the retired pool put it back among its idle connections,
// where it stayed open, under the old certificate, until
// DefaultUpstreamIdleTimeout.
func TestRotationRetiresPooledConnections(t *testing.T) {
	for _, protocol := range []string{UpstreamHTTP1, UpstreamH2} {
		t.Run(protocol, func(t *testing.T) {
			p := newTestPKI(t)
			reg := startProtoRegistry(t, p, nil)
			var identity atomic.Value
			identity.Store("edge-1")
			w := newWorld(t, p, worldOpts{addrs: []string{reg.addr}, cfg: Config{UpstreamProtocol: protocol,
				UpstreamIdentity: func() string { return identity.Load().(string) }}})
			node := w.node(t, "h2")
			if resp, _ := do(t, node, "GET", "/v2/", nil); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			<-reg.protos
			slow := getAsync(node, "/v2/team/app/manifests/slow")
			<-reg.started
			<-reg.protos
			identity.Store("edge-2")
			if resp, _ := do(t, node, "GET", "/v2/", nil); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			<-reg.protos
			if got := reg.log.accepted(); got != 2 {
				t.Fatalf("after the rotation the registry has %d connections, want 2 (the busy old one, a new one)", got)
			}
			close(reg.release)
			if resp := <-slow; resp == nil || resp.StatusCode != 200 {
				t.Fatalf("the request in flight across the rotation: %v", resp)
			}
			reg.log.waitClosed(t, 0, "its request ended in a retired pool")
			if resp, _ := do(t, node, "GET", "/v2/", nil); resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
			if got := reg.log.accepted(); got != 2 {
				t.Errorf("the registry accepted %d connections, want 2: the new pool's connection is reused", got)
			}
		})
	}
}

// TestDrainedUpstreamClosesPooledConnections: an upstream set to drain
// gets no new requests, and its pooled connection closes at the end of
// the request it was carrying, not when it has idled out. Before, the
// connection went back to the pool and stayed open.
func TestDrainedUpstreamClosesPooledConnections(t *testing.T) {
	for _, protocol := range []string{UpstreamHTTP1, UpstreamH2} {
		t.Run(protocol, func(t *testing.T) {
			p := newTestPKI(t)
			a, b := startProtoRegistry(t, p, nil), startProtoRegistry(t, p, nil)
			w := newWorld(t, p, worldOpts{addrs: []string{a.addr, b.addr}, cfg: Config{UpstreamProtocol: protocol}})
			node := w.node(t, "http/1.1")
			slow := getAsync(node, "/v2/team/app/manifests/slow")
			draining, other := a, b
			select {
			case <-a.started:
			case <-b.started:
				draining, other = b, a
			}
			<-draining.protos
			if err := w.pool.SetState(draining.addr, upstream.StateDrain); err != nil {
				t.Fatal(err)
			}
			close(draining.release)
			if resp := <-slow; resp == nil || resp.StatusCode != 200 {
				t.Fatalf("the request in flight when the drain began: %v", resp)
			}
			draining.log.waitClosed(t, 0, "its upstream was drained and its request ended")
			for i := range 3 {
				resp, _ := do(t, node, "GET", "/v2/", nil)
				if resp.StatusCode != 200 {
					t.Fatal(resp.Status)
				}
				<-other.protos
				if i == 0 && draining.log.accepted() != 1 {
					t.Errorf("the drained upstream got a new connection")
				}
			}
		})
	}
}
