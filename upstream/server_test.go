package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// testUpstream is a TLS HTTP server on 127.0.0.1 that can be stopped and
// started again on the same address. It answers every request with status
// (default 200) and counts the requests.
type testUpstream struct {
	t        testing.TB
	addr     string
	tls      *tls.Config
	status   atomic.Int64
	requests atomic.Int64
	srv      *http.Server
	done     chan struct{}
}

func startUpstream(t testing.TB, cfg *tls.Config) *testUpstream {
	t.Helper()
	u := &testUpstream{t: t, addr: holdPort(t), tls: cfg}
	u.status.Store(http.StatusOK)
	u.start()
	t.Cleanup(u.stop)
	return u
}

func (u *testUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	w.WriteHeader(int(u.status.Load()))
}

// holdPort binds a TCP socket with SO_REUSEADDR to a free loopback port,
// without listening, until the test ends, and returns the address. The
// test's listeners bind it again and again (a stopped upstream started on
// its old address); between them connecting is refused, and neither
// bind(0) nor connect elsewhere on the machine picks the port. Without the
// hold, a port freed by stop could be taken before start bound it again.
func holdPort(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// TestStoppedUpstreamKeepsItsPort: while a test upstream is stopped its
// port refuses connections and no other socket can take it; start binds it
// again. The port used to be free between stop and start, and a socket
// elsewhere on the machine taking it made start fail.
func TestStoppedUpstreamKeepsItsPort(t *testing.T) {
	u := startUpstream(t, serverConfig(newPKI(t).server, nil, 0))
	u.stop()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	ap := netip.MustParseAddrPort(u.addr)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}); err == nil {
		t.Fatalf("another socket bound %s while the upstream was stopped", u.addr)
	}
	if c, err := net.Dial("tcp", u.addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial the stopped upstream: %v, want connection refused", err)
	}
	u.start()
	c, err := net.Dial("tcp", u.addr)
	if err != nil {
		t.Fatalf("dial the restarted upstream: %v", err)
	}
	c.Close()
}

// start listens on u.addr (the same port after a stop) and serves.
func (u *testUpstream) start() {
	u.t.Helper()
	ln, err := net.Listen("tcp", u.addr)
	if err != nil {
		u.t.Fatalf("listen on %s: %v", u.addr, err)
	}
	u.addr = ln.Addr().String()
	u.srv = &http.Server{Handler: u, ErrorLog: log.New(io.Discard, "", 0)}
	u.done = make(chan struct{})
	go u.serve(tls.NewListener(ln, u.tls), u.srv, u.done)
}

func (u *testUpstream) serve(ln net.Listener, srv *http.Server, done chan struct{}) {
	defer close(done)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		u.t.Errorf("serve %s: %v", u.addr, err)
	}
}

// stop closes the listener and every connection; connecting then fails.
func (u *testUpstream) stop() {
	if u.srv == nil {
		return
	}
	_ = u.srv.Close()
	<-u.done
	u.srv = nil
}

// logBuffer collects log lines for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the logged lines that contain msg.
func (b *logBuffer) lines(msg string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for l := range strings.Lines(b.buf.String()) {
		if strings.Contains(l, msg) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// mustPool builds a pool or fails the test.
func mustPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	if cfg.Route == "" {
		cfg.Route = "registry"
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rounds runs n health rounds.
func rounds(p *Pool, n int) {
	for range n {
		p.CheckOnce(context.Background())
	}
}

// addrsOf returns the addresses of hosts.
func addrsOf(hosts []*Host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Addr()
	}
	return out
}

// listenSilent listens on addr and accepts connections that never get an
// answer; they are closed at cleanup.
func listenSilent(t testing.TB, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	conns := make(chan net.Conn, 16)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}
