package admin

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitView is what the limiter counts, for tests.
type limitView struct {
	accepted, open, busy, reserved int
	perClient                      map[string]int
}

func (l *connLimiter) view() limitView {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := limitView{accepted: l.accepted, open: len(l.conns), reserved: l.reserved, perClient: map[string]int{}}
	for _, e := range l.conns {
		if e.busy {
			v.busy++
		}
	}
	for c, n := range l.clients {
		v.perClient[c] = n
	}
	return v
}

// limitedServer is a server on 127.0.0.1:0 whose limiter signals every
// change, so that a test waits for what the server saw, not for a time.
type limitedServer struct {
	s       *Server
	addr    string
	changed chan struct{}
}

func startLimited(t *testing.T, cfg Config, tweak func(*Server)) *limitedServer {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	ls := &limitedServer{s: New(cfg), changed: make(chan struct{}, 1)}
	ls.s.lim.changed = func() {
		select {
		case ls.changed <- struct{}{}:
		default:
		}
	}
	if tweak != nil {
		tweak(ls.s)
	}
	ln, err := Listen("127.0.0.1:0")
	must(t, err)
	ls.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- ls.s.Serve(ln) }()
	t.Cleanup(func() {
		ls.s.Close() // connections held in a request would make Shutdown wait
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ls
}

// waitFor waits until cond holds for the limiter's counts; the bound only
// turns a hang into a failure.
func (ls *limitedServer) waitFor(t *testing.T, what string, cond func(limitView) bool) limitView {
	t.Helper()
	bound := time.NewTimer(30 * time.Second)
	defer bound.Stop()
	for {
		v := ls.s.lim.view()
		if cond(v) {
			return v
		}
		select {
		case <-ls.changed:
		case <-bound.C:
			t.Fatalf("waiting for %s: limiter at %+v", what, v)
		}
	}
}

// dialFrom connects to addr from the loopback address src (127.0.0.x).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	must(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// clientFrom is an HTTP client whose connections come from src; its
// timeout bounds a request the server would otherwise leave queued.
func clientFrom(src string) *http.Client {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(body)
}

// TestIdleConnectionsCannotStarveHealth is the regression test of 64 idle
// local connections starving the admin API: the listener let 64
// connections in and left the rest in the listen queue, so 200 connections
// that sent nothing delayed /healthz by 14.5 s (three rounds of the header
// timeout). Here the header timeout is an hour: /healthz must be answered
// while the idle connections are still open, and a Prometheus scrape from
// another address too.
func TestIdleConnectionsCannotStarveHealth(t *testing.T) {
	reg := prometheus.NewRegistry()
	ls := startLimited(t, Config{Gatherer: reg, Metrics: NewMetrics(reg)}, func(s *Server) {
		s.http.ReadHeaderTimeout = time.Hour
	})
	sources := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}
	const idle = 200
	for i := range idle {
		dialFrom(t, sources[i%len(sources)], ls.addr)
	}
	v := ls.waitFor(t, "the idle connections accepted", func(v limitView) bool { return v.accepted == idle })
	if v.open > DefaultMaxConns {
		t.Errorf("%d connections open, want at most %d", v.open, DefaultMaxConns)
	}
	for client, n := range v.perClient {
		if n > DefaultMaxConnsPerClient {
			t.Errorf("client %s holds %d connections, want at most %d", client, n, DefaultMaxConnsPerClient)
		}
	}
	if code, body := get(t, clientFrom("127.0.0.1"), "http://"+ls.addr+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz beside %d idle connections = %d %q, want 200 ok", idle, code, body)
	}
	code, body := get(t, clientFrom("127.0.0.9"), "http://"+ls.addr+"/metrics")
	if code != 200 || !strings.Contains(body, `snigate_admin_connections_shed_total{reason="waiting_closed"}`) {
		t.Errorf("/metrics from another address = %d, want 200 with the shed counter; body %.300s", code, body)
	}
}

// busyRequest holds a connection in a request: a POST whose body never
// comes, read by the handler until the (raised) read timeout.
const busyRequest = "POST /api/upstreams/registry/10.1.0.10:443 HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
	"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"

// TestHealthAnsweredWhenEveryConnectionIsBusy: when every connection is
// in a request, nothing can be closed to make room; /healthz and /readyz
// are still answered (on a reserved connection), other paths get a 503,
// and past the reserve a new connection gets a 503 at once.
func TestHealthAnsweredWhenEveryConnectionIsBusy(t *testing.T) {
	const maxConns = 8
	ls := startLimited(t, Config{Upstreams: newFake(), MaxConns: maxConns, Gatherer: prometheus.NewRegistry()}, func(s *Server) {
		s.http.ReadTimeout = time.Hour
	})
	for i := range maxConns {
		src := "127.0.0.1"
		if i%2 == 1 {
			src = "127.0.0.2"
		}
		_, err := io.WriteString(dialFrom(t, src, ls.addr), busyRequest)
		must(t, err)
	}
	ls.waitFor(t, "every connection in a request", func(v limitView) bool { return v.busy == maxConns })
	c := clientFrom("127.0.0.3")
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, _ := get(t, c, "http://"+ls.addr+path); code != 200 {
			t.Errorf("%s with every connection busy = %d, want 200", path, code)
		}
	}
	if code, body := get(t, c, "http://"+ls.addr+"/metrics"); code != 503 || !strings.Contains(body, "only /healthz and /readyz") {
		t.Errorf("/metrics past the cap = %d %q, want 503 naming what is answered", code, body)
	}
	ls.waitFor(t, "the reserved connections closed", func(v limitView) bool { return v.reserved == 0 })

	for range DefaultReservedConns {
		dialFrom(t, "127.0.0.4", ls.addr) // hold the reserve, sending nothing
	}
	ls.waitFor(t, "the reserve held", func(v limitView) bool { return v.reserved == DefaultReservedConns })
	if line := statusLine(t, dialFrom(t, "127.0.0.5", ls.addr)); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("past the reserve: %q, want a 503 at once", line)
	}
	// The reserve's header deadline frees it; health is answered again.
	ls.waitFor(t, "the idle reserved connections timed out", func(v limitView) bool { return v.reserved == 0 })
	if code, _ := get(t, c, "http://"+ls.addr+"/healthz"); code != 200 {
		t.Errorf("/healthz after the reserve was freed = %d, want 200", code)
	}
}

// TestClientShareRefusesBusyClient: an address whose whole share is in
// requests gets a 503 for one more, while another address is served.
func TestClientShareRefusesBusyClient(t *testing.T) {
	ls := startLimited(t, Config{Upstreams: newFake(), MaxConnsPerClient: 2}, func(s *Server) {
		s.http.ReadTimeout = time.Hour
	})
	for range 2 {
		_, err := io.WriteString(dialFrom(t, "127.0.0.2", ls.addr), busyRequest)
		must(t, err)
	}
	ls.waitFor(t, "the share in requests", func(v limitView) bool { return v.busy == 2 })
	c := dialFrom(t, "127.0.0.2", ls.addr)
	if line := statusLine(t, c); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("one over the share: %q, want a 503", line)
	}
	if code, _ := get(t, clientFrom("127.0.0.3"), "http://"+ls.addr+"/api/upstreams"); code != 200 {
		t.Errorf("another address = %d, want 200", code)
	}
}

// statusLine reads the first line the server sends on c.
func statusLine(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	return strings.TrimSpace(line)
}
